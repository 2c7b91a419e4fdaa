"""One connection to an MCP server: a client session owned by a task of its own.

The SDK's transports must be entered and exited by the same task, so each
connection lives in a task it owns; agents in any task call through it. A
server that dies mid-call turns the call into an error, and the next call
restarts it once.

A server may quote the credentials it was given (its headers, its
environment) or any other in an error, so every error text made here is
redacted with them and the environment's (``redaction.env_secrets``), and a
cause that would print one in a traceback is not chained.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from swarmcore._tools import ToolReportedError
from swarmcore.errors import AgentError, UserError
from swarmcore.llm._redaction import carries_secret, env_secrets, redact
from swarmcore.mcp._elicit import Asker, decline_unasked
from swarmcore.mcp._tasks import TaskFollower
from swarmcore.mcp._tasks import extension as tasks_extension

logger = logging.getLogger("swarmcore.mcp")

_INSTALL_HINT = (
    "MCP servers need the official mcp SDK: pip install 'swarmcore[mcp]' "
    "(or uv add 'swarmcore[mcp]')."
)

_E = TypeVar("_E", bound=BaseException)


@dataclass(frozen=True, slots=True)
class CallSide:
    """What one tool call brings to its connection: who answers, who follows a task."""

    asker: Asker
    follower: TaskFollower


_calling: contextvars.ContextVar[CallSide | None] = contextvars.ContextVar(
    "swarmcore_mcp_calling", default=None
)
"""The call in progress in this task, for the SDK's callbacks (elicitation, the task
claim): the SDK calls them in the call's task or a child of it, naming no call."""

_MAX_PAGES = 100
"""The most pages of a paginated tool list followed (a cursor that never ends stops here)."""


class MCPError(AgentError):
    """An MCP server could not be reached, listed or restarted.

    An agent error like a model's: the agent whose tools it serves fails (and is
    recorded in ``error.partial.failures``), and its name is ``agent_name``.

    Args:
        message: What happened and what to do.
        agent_name: The agent that needed the server; set by the agent's run, so
            empty only outside one (``async with server`` failing to connect).
    """

    def __init__(self, message: str, *, agent_name: str = "") -> None:
        super().__init__(message, agent_name=agent_name)


class Connection:
    """One live client session, owned by a task of its own.

    Args:
        name: The server's name, for errors.
        target: Makes what the SDK's ``Client`` connects to (called on each start).
        connect_timeout: Seconds to connect.
        secrets: The credentials the server is given, redacted from every error.
    """

    def __init__(
        self,
        name: str,
        target: Callable[[], Any],
        connect_timeout: float,
        secrets: Sequence[str] = (),
    ) -> None:
        self.name = name
        self._target = target
        self._secrets = tuple(secrets)
        self._connect_timeout = connect_timeout
        self._client: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._tools: list[Any] | None = None
        self._lock = asyncio.Lock()
        self._broken = False
        # Calls abandoned (timed out, cancelled) and not known to be over: a server that
        # ignores the cancellation is still running them, and later calls wait behind them.
        self._abandoned: list[str] = []
        self._sides: list[CallSide] = []  # the calls in progress, oldest first
        self._cancel: Any = None  # the owner's anyio CancelScope, to abandon a slow connect
        self._transport: Any = None
        # Closed for good (its run or `async with` block ended): a tool listed over it
        # and called later must not start a server nobody would stop.
        self._closed = False

    @classmethod
    async def open(
        cls,
        name: str,
        target: Callable[[], Any],
        connect_timeout: float,
        secrets: Sequence[str] = (),
    ) -> Connection:
        """Connect to the server.

        Args:
            name: The server's name, for errors.
            target: Makes what the SDK's ``Client`` connects to.
            connect_timeout: Seconds to connect.
            secrets: The credentials the server is given, redacted from every error.

        Returns:
            The open connection.

        Raises:
            MCPError: The server did not connect in time or could not be started.
            UserError: The ``mcp`` SDK is not installed.
        """
        connection = cls(name, target, connect_timeout, secrets)
        await connection._start()
        return connection

    async def _start(self) -> None:
        import anyio

        self._ready.clear()
        self._stop.clear()
        self._failure = None
        self._broken = False
        self._tools = None
        self._abandoned.clear()
        # Cancelled by close() while still connecting: a server that never answers the
        # handshake (or a caller cancelled meanwhile) must not keep the process alive.
        self._cancel = anyio.CancelScope()
        # A fresh context: the connection must not inherit the opening agent's event span.
        self._owner = asyncio.get_running_loop().create_task(
            self._own(self._cancel), context=contextvars.Context()
        )
        try:
            async with asyncio.timeout(self._connect_timeout):
                await self._ready.wait()
        except TimeoutError:
            await self._shutdown()
            raise MCPError(
                f"MCP server {self.name!r} did not connect within {self._connect_timeout:g}s; "
                "check its command or URL."
            ) from None
        except BaseException:  # cancelled while connecting: end the half-open connection
            await self._shutdown()
            raise
        if self._failure is not None:
            failure, self._owner = self._failure, None
            cause = _leaf(failure)
            hint = (
                " (it closed the connection before the MCP handshake: check that the "
                "command runs an MCP server, and its stderr)"
                if _connection_lost(cause)
                else ""
            )
            raise self.redacted(
                MCPError(
                    f"MCP server {self.name!r} could not be started: "
                    f"{type(cause).__name__}: {cause}{hint}"
                ),
                failure,
            )

    def redact(self, text: str) -> str:
        """``text`` without the credentials this server was given or the environment holds."""
        return redact(text, *self._secrets, *env_secrets())

    def redacted(self, error: _E, cause: BaseException) -> _E:
        """``error`` redacted, caused by ``cause`` unless its traceback shows a credential.

        Raise the result outside any ``except`` block, so that the exception being
        handled does not become its ``__context__``.
        """
        error.args = tuple(self.redact(a) if isinstance(a, str) else a for a in error.args)
        # A cause that quotes a credential would print it in every traceback: cut the chain
        # (the message above keeps its type and its redacted text).
        if carries_secret(cause, [*self._secrets, *env_secrets()]):
            error.__suppress_context__ = True
        else:
            error.__cause__ = cause
        return error

    async def _own(self, cancel: Any) -> None:
        try:
            with cancel:
                client_type = _client_class()
                target = self._transport = self._target()
                async with AsyncExitStack() as stack:
                    client = client_type(
                        target,
                        elicitation_callback=self._on_elicit,
                        extensions=[tasks_extension(self._follower)],
                    )
                    self._client = await stack.enter_async_context(client)
                    self._ready.set()
                    await self._stop.wait()
        except Exception as exc:  # reported to whoever waits for the connection
            self._failure = exc
            self._broken = True
        finally:
            self._client = None
            self._ready.set()

    async def close(self) -> None:
        """Close the session and end the server process, if any, for good; idempotent."""
        self._closed = True
        await self._shutdown()

    async def _shutdown(self) -> None:
        """End the session and the server process (to close, or to restart)."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._abandoned and hasattr(self._transport, "abandon"):
            # Busy with calls nobody waits for (a cancelled run's): no grace to exit idle.
            self._transport.abandon()
        self._stop.set()
        if not self._ready.is_set() and self._cancel is not None:
            self._cancel.cancel()  # still connecting: abandon the handshake
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(owner)
        except TimeoutError:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)

    async def list_tools(self) -> list[Any]:
        """The server's tool specs, fetched once per connection (all pages).

        Returns:
            The SDK's ``Tool`` objects.

        Raises:
            MCPError: The server is not connected or could not list its tools.
        """
        async with self._lock:
            if self._tools is None:
                self._tools = await self._fetch_tools()
            return self._tools

    async def _fetch_tools(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_PAGES):  # follow the pages of a paginating server
                page = await self._live_client().list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except MCPError:
            raise
        except Exception as exc:
            error = self.redacted(
                MCPError(f"MCP server {self.name!r} could not list its tools: {exc}"), exc
            )
        else:
            return tools
        raise error  # outside the except block: the SDK's error is no __context__ of ours

    def _live_client(self) -> Any:
        if self._client is None:
            raise MCPError(f"MCP server {self.name!r} is not connected.")
        return self._client

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """The SDK's elicitation callback: the asking call's :class:`Asker` answers.

        On the 2026-07-28 protocol the question comes back as the call's own result and
        is answered in (a child task of) the caller's task, where :data:`_asking` says
        which call it is. An older server sends it as a request of its own, answered in
        the session's task: then the oldest call in progress answers, since such a
        request over stdio does not say which call it belongs to.
        """
        side = _calling.get() or (self._sides[0] if self._sides else None)
        if side is None:
            return await decline_unasked(context, params)
        return await side.asker.answer(params)

    def _follower(self) -> TaskFollower | None:
        side = _calling.get()
        return None if side is None else side.follower

    async def call(
        self, remote: str, arguments: dict[str, Any], shown: str, side: CallSide | None = None
    ) -> Any:
        """Call the server's tool ``remote``, restarting a server that stopped since.

        Args:
            remote: The tool's name on the server.
            arguments: Its validated arguments.
            shown: The tool's name as the model knows it, for errors.
            side: Answers the questions the server asks during the call, and follows
                the task it may make for it.

        Returns:
            The SDK's ``CallToolResult``.

        Raises:
            ToolReportedError: The server reported an error, or stopped (restarted on the
                next call).
            MCPError: The server had stopped and could not be restarted.
        """
        async with self._lock:
            if self._closed:
                raise UserError(
                    f"Tool {shown!r} was listed over a connection to MCP server {self.name!r} "
                    "that has been closed (its run or `async with` block ended); call it "
                    "inside the block, or list the tools again."
                )
            if self._broken or self._client is None:
                await self._restart(shown)
            client: Any = self._client
        return await self._requesting(shown, side, lambda: client.call_tool(remote, arguments))

    async def follow(self, task_id: str, shown: str, side: CallSide) -> Any:
        """Follow the task ``task_id`` the server made for a call (a durable engine's resume).

        Args:
            task_id: The server's task.
            shown: The tool's name as the model knows it, for errors.
            side: Follows the task and answers its questions.

        Returns:
            The SDK's ``CallToolResult`` the task ended with.

        Raises:
            ToolReportedError: The task failed or was cancelled, or the server stopped.
            MCPError: The server had stopped and could not be restarted.
        """
        async with self._lock:
            if self._broken or self._client is None:
                await self._restart(shown)
            client: Any = self._client
        return await self._requesting(
            shown, side, lambda: side.follower.follow(client.session, task_id)
        )

    async def _requesting(
        self, shown: str, side: CallSide | None, request: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Make ``request`` for the call ``side``; the server's failures become tool errors."""
        token = _calling.set(side)
        if side is not None:
            self._sides.append(side)
        try:
            result = await request()
        except asyncio.CancelledError:
            self._abandoned.append(shown)
            raise
        except Exception as exc:
            # A dead process or a dropped connection leaves the owner task waiting, so
            # the error itself says the server is gone.
            if self._alive() and not _connection_lost(exc):
                error = ToolReportedError(f"Tool {shown!r}: MCP server {self.name!r}: {exc}")
            else:
                self._broken = True
                error = ToolReportedError(
                    f"MCP server {self.name!r} stopped while running {shown!r} "
                    f"({type(exc).__name__}: {exc}); it will be restarted for the next call."
                )
            error = self.redacted(error, exc)
        else:
            self._abandoned.clear()  # the server answered: it is not stuck on earlier calls
            return result
        finally:
            _calling.reset(token)
            if side is not None:
                self._sides.remove(side)
        raise error  # outside the except block: the SDK's error is no __context__ of ours

    def busy_note(self, shown: str) -> str:
        """For a timed-out call of ``shown``: the earlier abandoned calls it may wait behind."""
        earlier = list(self._abandoned)
        if shown in earlier:
            earlier.remove(shown)  # this call's own entry
        if not earlier:
            return ""
        names = ", ".join(repr(n) for n in dict.fromkeys(earlier))
        return (
            f" MCP server {self.name!r} may still be busy with {names}, which ran out of time "
            "before it and were never answered; later calls wait until the server is done."
        )

    def _alive(self) -> bool:
        return self._owner is not None and not self._owner.done() and not self._broken

    async def _restart(self, shown: str) -> None:
        logger.warning("MCP server %s stopped; restarting it", self.name)
        await self._shutdown()
        try:
            await self._start()
        except MCPError as exc:
            raise MCPError(
                f"MCP server {self.name!r} stopped and could not be restarted, so "
                f"{shown!r} cannot run: {exc}"
            ) from exc


class StreamableTransport:
    """Streamable HTTP with fixed headers, in the SDK's Transport shape.

    The SDK leaves an ``http_client`` it is given open, so this owns and closes it.

    Args:
        url: The endpoint.
        headers: Sent with every request.
    """

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self._url = url
        self._headers = headers
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Any:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import (  # pyright: ignore[reportPrivateUsage]
            create_mcp_http_client,
        )

        async with AsyncExitStack() as stack:
            http: Any = await stack.enter_async_context(create_mcp_http_client(self._headers))
            streams = await stack.enter_async_context(
                streamable_http_client(self._url, http_client=http)
            )
            self._stack = stack.pop_all()
        return streams

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stack.__aexit__(*exc)


def _client_class() -> Any:
    try:
        from mcp import Client
    except ImportError as exc:
        raise UserError(_INSTALL_HINT) from exc
    return Client


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as anyio task groups raise them."""
    while isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if not group.exceptions:
            return group
        exc = group.exceptions[0]
    return exc


def _connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection to the server is gone (not a failed request)."""
    import anyio

    exc = _leaf(exc)
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        return True
    try:
        from mcp.types import CONNECTION_CLOSED
    except ImportError:  # pragma: no cover - the SDK is there whenever a call was made
        return False
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == CONNECTION_CLOSED
