"""MCP tool servers: the tools of any Model Context Protocol server, beside Python functions.

```python
from swarmcore.mcp import MCPServer

files = MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])
agent = Agent("clerk", "You manage files.", tools=[files.select("read_file", "list_directory")])
```

Connections follow the run: a server is connected the first time an agent of
the run needs its tools, shared by every agent of that run (parallel ones
included), and closed when the run ends, fails or is cancelled. Open the
server yourself (``async with files: ...``) to share one connection across
runs. The tool list is fetched once per connection.

Each connection lives in a task of its own, because the SDK's transports must
be entered and exited by the same task; agents in any task call through it. A
server that dies mid-run turns the call into a tool error the model sees, the
next call restarts the server once, and if that fails the agent stops with an
:class:`MCPError`.

The official ``mcp`` SDK (v2) is imported only when a server is connected.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from swarmcore.errors import SwarmError, UserError
from swarmcore.tools import Tool, ToolArgumentsError, validate_name

if TYPE_CHECKING:
    from typing import Self

__all__ = ["MCPError", "MCPServer", "MCPTool"]

logger = logging.getLogger("swarmcore.mcp")

_INSTALL_HINT = (
    "MCP servers need the official mcp SDK: pip install 'swarmcore[mcp]' "
    "(or uv add 'swarmcore[mcp]')."
)


_MAX_PAGES = 100
"""The most pages of a paginated tool list followed (a cursor that never ends stops here)."""


class MCPError(SwarmError):
    """An MCP server could not be reached, listed or restarted."""


class MCPServer:
    """A Model Context Protocol server whose tools agents can use.

    Build one with :meth:`stdio`, :meth:`http` or :meth:`in_process`; pass it
    (or :meth:`select` of it) in an Agent's ``tools``.

    Args:
        target: What the SDK's ``Client`` connects to.
        name: The server's name in errors, events and tool records.
        include: Tool names to offer (all when None).
        exclude: Tool names never to offer.
        predicate: Offer only tools for which ``predicate(name, description)`` is true.
        prefix: Prepended to every tool name (``files_`` -> ``files_read_file``),
            to avoid clashes with other tools.
        timeout: Seconds to connect and list tools.
    """

    def __init__(
        self,
        target: Callable[[], Any],
        *,
        name: str,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        predicate: Callable[[str, str], bool] | None = None,
        prefix: str = "",
        timeout: float = 30.0,
        _origin: MCPServer | None = None,
    ) -> None:
        self.name = validate_name(name, "MCP server")
        self._origin = _origin
        self._target = target
        self._include = None if include is None else frozenset(include)
        self._exclude = frozenset(exclude)
        self._predicate = predicate
        self._prefix = prefix
        self.timeout = timeout
        self._shared: _Connection | None = None
        self._shared_users = 0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    # --- construction ----------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server launched as a subprocess, spoken to over its stdin and stdout.

        Args:
            command: The program, e.g. ``"npx"`` or ``sys.executable``.
            args: Its arguments.
            env: Environment for the process (the SDK's safe default when None).
            cwd: Its working directory.
            name: The server's name; defaults to the command's base name.
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``.
        """
        arguments, environment = list(args), None if env is None else dict(env)

        def target() -> Any:
            from mcp import StdioServerParameters

            return StdioServerParameters(command=command, args=arguments, env=environment, cwd=cwd)

        # `python server.py` / `node server.js` are named after the script, not the interpreter.
        script = next((a for a in arguments if a.endswith((".py", ".js", ".mjs", ".ts"))), None)
        default = _stem(script or command) or "mcp"
        return cls(target, name=name or _identifier(default), **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server at a streamable-HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.

        Args:
            url: The endpoint.
            headers: Sent with every request (an ``Authorization`` header, say).
            name: The server's name; defaults to the URL's host.
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``.
        """
        fixed = dict(headers or {})

        def target() -> Any:
            return _StreamableTransport(url, fixed) if fixed else url

        host = url.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        return cls(target, name=name or _identifier(host), **options)

    @classmethod
    def in_process(cls, server: Any, *, name: str | None = None, **options: Any) -> MCPServer:
        """A server object in this process (the SDK's ``MCPServer`` or ``Server``), for tests.

        Args:
            server: The SDK server instance.
            name: The server's name; defaults to the server's own.
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``.
        """
        default = str(getattr(server, "name", None) or "mcp")
        return cls(lambda: server, name=name or _identifier(default), **options)

    def select(self, *names: str, prefix: str | None = None) -> MCPServer:
        """This server offering only the tools ``names`` (one connection with the original)."""
        chosen = MCPServer(
            self._target,
            name=self.name,
            include=names,
            exclude=self._exclude,
            predicate=self._predicate,
            prefix=self._prefix if prefix is None else prefix,
            timeout=self.timeout,
            _origin=self._origin_server(),
        )
        return chosen

    def _origin_server(self) -> MCPServer:
        return self._origin or self

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r})"

    # --- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Connect now and keep the connection for every run until the block ends."""
        origin = self._origin_server()
        async with origin._sharing_lock():  # concurrent entries open one connection
            if origin._shared is None:
                origin._shared = await _Connection.open(origin)
            origin._shared_users += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        origin = self._origin_server()
        async with origin._sharing_lock():
            origin._shared_users -= 1
            if origin._shared_users == 0 and origin._shared is not None:
                shared, origin._shared = origin._shared, None
                await shared.close()

    def _sharing_lock(self) -> asyncio.Lock:
        # One lock per event loop: an asyncio.Lock belongs to the loop that first waits on it.
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def tools(self) -> list[Tool]:
        """This server's tools (after include/exclude/prefix), over the run's connection.

        Raises:
            MCPError: The server could not be started, connected or listed.
        """
        connection = await _connection_for(self._origin_server())
        listed = await connection.list_tools()
        chosen: list[Tool] = []
        for spec in listed:
            name = str(spec.name)
            description = str(spec.description or "")
            if self._include is not None and name not in self._include:
                continue
            if name in self._exclude or (
                self._predicate is not None and not self._predicate(name, description)
            ):
                continue
            chosen.append(MCPTool.build(self, connection, spec))
        missing = (self._include or frozenset()) - {str(s.name) for s in listed}
        if missing:
            raise UserError(
                f"MCP server {self.name!r} has no tool named {', '.join(sorted(missing))}; "
                f"it offers {', '.join(sorted(str(s.name) for s in listed)) or 'none'}."
            )
        return chosen


class MCPTool(Tool):
    """A tool served by an MCP server: its JSON schema goes to the model as it is."""

    __slots__ = ("_connection", "_remote_name", "_validator", "server")

    @classmethod
    def build(cls, server: MCPServer, connection: _Connection, spec: Any) -> MCPTool:
        """A Tool for the MCP tool ``spec`` of ``server``."""
        schema: dict[str, Any] = dict(spec.input_schema or {"type": "object", "properties": {}})
        remote = str(spec.name)
        name = f"{server._prefix}{remote}"  # pyright: ignore[reportPrivateUsage]
        try:
            validate_name(name, "MCP tool")
        except UserError:
            # MCP allows names (dots, 128 characters) that model providers refuse.
            raise UserError(
                f"MCP server {server.name!r} offers a tool named {name!r}, which models cannot "
                "call (1 to 64 letters, digits, '_' or '-', starting with a letter or '_'); "
                f"leave it out with exclude=[{remote!r}] or select() the tools you need."
            ) from None
        tool = cls(
            name=name,
            description=str(spec.description or remote.replace("_", " ")),
            parameters=schema,
            fn=_never,
            _args_model=cast("type[BaseModel]", _NoModel),
        )
        object.__setattr__(tool, "server", server.name)
        object.__setattr__(tool, "_remote_name", remote)
        object.__setattr__(tool, "_connection", connection)
        object.__setattr__(tool, "_validator", _validator(schema))
        return tool

    async def invoke(self, arguments: str) -> str:
        """Validate ``arguments`` against the server's schema, call the tool, and render the result.

        Raises:
            ToolArgumentsError: Invalid JSON, or arguments the schema rejects.
            RuntimeError: The server reported an error, or stopped (restarted on the next call).
            MCPError: The server stopped and could not be restarted.
        """
        values = self._arguments(arguments)
        connection: _Connection = self._connection  # pyright: ignore[reportAttributeAccessIssue]
        result = await connection.call(self._remote_name, values, self.name)  # pyright: ignore[reportAttributeAccessIssue]
        return _render(result, self.name)

    def _arguments(self, arguments: str) -> dict[str, Any]:
        try:
            raw = json.loads(arguments.strip() or "{}")
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments are not valid JSON ({exc.msg} at position "
                f"{exc.pos}). Send one JSON object matching the tool's parameters."
            ) from exc
        if not isinstance(raw, dict):
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments must be a JSON object, "
                f"got {type(raw).__name__}."
            )
        values: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
        problem = self._validator(values)  # pyright: ignore[reportAttributeAccessIssue]
        if problem:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: invalid arguments: {problem}. Fix them and call again."
            )
        return values


# --- connections --------------------------------------------------------------------------


class _Connection:
    """One live client session, owned by a task of its own."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._client: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._tools: list[Any] | None = None
        self._lock = asyncio.Lock()
        self._broken = False
        self._cancel: Any = None  # the owner's anyio CancelScope, to abandon a slow connect

    @classmethod
    async def open(cls, server: MCPServer) -> _Connection:
        connection = cls(server)
        await connection._start()
        return connection

    async def _start(self) -> None:
        import anyio

        self._ready.clear()
        self._stop.clear()
        self._failure = None
        self._broken = False
        self._tools = None
        # Cancelled by close() while still connecting: a server that never answers the
        # handshake (or a caller cancelled meanwhile) must not keep the process alive.
        self._cancel = anyio.CancelScope()
        # A fresh context: the connection must not inherit the opening agent's event span.
        self._owner = asyncio.get_running_loop().create_task(
            self._own(self._cancel), context=contextvars.Context()
        )
        try:
            async with asyncio.timeout(self.server.timeout):
                await self._ready.wait()
        except TimeoutError:
            await self.close()
            raise MCPError(
                f"MCP server {self.server.name!r} did not connect within "
                f"{self.server.timeout:g}s; check its command or URL."
            ) from None
        except BaseException:  # cancelled while connecting: end the half-open connection
            await self.close()
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
            raise MCPError(
                f"MCP server {self.server.name!r} could not be started: "
                f"{type(cause).__name__}: {cause}{hint}"
            ) from failure

    async def _own(self, cancel: Any) -> None:
        try:
            with cancel:
                client_type = _client_class()
                target = self.server._target()  # pyright: ignore[reportPrivateUsage]
                async with AsyncExitStack() as stack:
                    self._client = await stack.enter_async_context(client_type(target))
                    self._ready.set()
                    await self._stop.wait()
        except Exception as exc:  # reported to whoever waits for the connection
            self._failure = exc
            self._broken = True
        finally:
            self._client = None
            self._ready.set()

    async def close(self) -> None:
        """Close the session and end the server process, if any; idempotent."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
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
        async with self._lock:
            if self._tools is None:
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
                    raise MCPError(
                        f"MCP server {self.server.name!r} could not list its tools: {exc}"
                    ) from exc
                self._tools = tools
            return self._tools

    def _live_client(self) -> Any:
        if self._client is None:
            raise MCPError(f"MCP server {self.server.name!r} is not connected.")
        return self._client

    async def call(self, remote: str, arguments: dict[str, Any], shown: str) -> Any:
        async with self._lock:
            if self._broken or self._client is None:
                await self._restart(shown)
            client: Any = self._client
        try:
            return await client.call_tool(remote, arguments)
        except Exception as exc:
            # A dead process or a dropped connection leaves the owner task waiting, so
            # the error itself says the server is gone.
            if self._alive() and not _connection_lost(exc):
                raise RuntimeError(f"MCP server {self.server.name!r}: {exc}") from exc
            self._broken = True
            raise RuntimeError(
                f"MCP server {self.server.name!r} stopped while running {shown!r} "
                f"({type(exc).__name__}: {exc}); it will be restarted for the next call."
            ) from exc

    def _alive(self) -> bool:
        return self._owner is not None and not self._owner.done() and not self._broken

    async def _restart(self, shown: str) -> None:
        logger.warning("MCP server %s stopped; restarting it", self.server.name)
        await self.close()
        try:
            await self._start()
        except MCPError as exc:
            raise MCPError(
                f"MCP server {self.server.name!r} stopped and could not be restarted, so "
                f"{shown!r} cannot run: {exc}"
            ) from exc


class _StreamableTransport:
    """Streamable HTTP with fixed headers, in the SDK's Transport shape.

    The SDK leaves an ``http_client`` it is given open, so this owns and closes it.
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


# --- the run's connections ----------------------------------------------------------------


class ConnectionScope:
    """The MCP connections of one run: opened on first use, closed together at the end."""

    def __init__(self) -> None:
        self._connections: dict[int, _Connection] = {}
        self._opening: dict[int, asyncio.Lock] = {}

    async def get(self, server: MCPServer) -> _Connection:
        if server._shared is not None:  # pyright: ignore[reportPrivateUsage]
            return server._shared  # pyright: ignore[reportPrivateUsage]
        key = id(server)
        lock = self._opening.setdefault(key, asyncio.Lock())
        async with lock:  # parallel agents needing one server open it once
            if key not in self._connections:
                self._connections[key] = await _Connection.open(server)
            return self._connections[key]

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


_scope: contextvars.ContextVar[ConnectionScope | None] = contextvars.ContextVar(
    "swarmcore_mcp_scope", default=None
)


def current_scope() -> ConnectionScope | None:
    """The MCP connections of the run in this context, if any."""
    return _scope.get()


def enter_scope(scope: ConnectionScope) -> contextvars.Token[ConnectionScope | None]:
    """Make ``scope`` the run's connection scope; undo with :func:`exit_scope`."""
    return _scope.set(scope)


def exit_scope(token: contextvars.Token[ConnectionScope | None]) -> None:
    """Undo :func:`enter_scope`."""
    _scope.reset(token)


async def _connection_for(server: MCPServer) -> _Connection:
    scope = _scope.get()
    if scope is None:
        raise UserError(
            f"MCP server {server.name!r} was used outside a run; call agent.run() or swarm.run()."
        )
    return await scope.get(server)


# --- helpers --------------------------------------------------------------------------------


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


def _render(result: Any, shown: str) -> str:
    """A CallToolResult as text for the model; a server-flagged error raises."""
    parts: list[str] = []
    for item in list(getattr(result, "content", None) or []):
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(item.text))
        elif kind == "resource":
            resource = getattr(item, "resource", None)
            parts.append(str(getattr(resource, "text", None) or f"[resource {resource}]"))
        else:
            mime = getattr(item, "mime_type", None) or getattr(item, "mimeType", None) or kind
            parts.append(f"[{kind or 'content'}: {mime}]")
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        raise RuntimeError(f"the server reported an error: {text or 'no details'}")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False, default=str)
    return text


def _validator(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], str | None]:
    """Check arguments against the tool's JSON schema (with jsonschema, which mcp brings)."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - mcp depends on jsonschema
        return lambda _: None
    checker: Any = jsonschema.Draft202012Validator(dict(schema))

    def check(values: dict[str, Any]) -> str | None:
        errors: list[Any] = sorted(checker.iter_errors(values), key=lambda e: list(e.path))
        if not errors:
            return None
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "arguments"
        return f"{where}: {first.message}"

    return check


def _stem(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1].split(".")[0]


def _identifier(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in text).strip("_-")
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = f"mcp_{cleaned}"
    return cleaned[:64]


def _never(*_: object, **__: object) -> str:
    raise RuntimeError("MCP tools run through their server")


class _NoModel:
    """Placeholder: MCP tools validate with the server's JSON schema, not a pydantic model."""
