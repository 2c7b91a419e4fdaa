"""The MCPServer definition (stdio, HTTP, in-process; select) and the tools it serves."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from pydantic import BaseModel

from swarmcore._checks import check_number
from swarmcore._tools import (
    AnswerNeeded,
    TaskPending,
    Tool,
    ToolArgumentsError,
    ToolReportedError,
    Toolset,
    validate_name,
)
from swarmcore.errors import UserError
from swarmcore.llm._redaction import secret_values
from swarmcore.mcp._connection import CallSide, Connection, StreamableTransport
from swarmcore.mcp._elicit import Asker, Elicitor
from swarmcore.mcp._results import render_result, schema_validator
from swarmcore.mcp._scope import current_scope
from swarmcore.mcp._tasks import TaskFollower
from swarmcore.scope import current_call

if TYPE_CHECKING:
    from typing import Self


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
        timeout: Seconds to connect and list tools; a positive finite number.
        elicit: Answers the questions the server asks while its tools run (MCP
            elicitation: a form to fill, a URL to open). Without it the run's approval
            callback answers, and with neither swarmcore declines and tells the server
            why. See :mod:`swarmcore.mcp._elicit`.

    Raises:
        UserError: An invalid name or ``timeout``.
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
        elicit: Elicitor | None = None,
        _origin: MCPServer | None = None,
        _secrets: Sequence[str] = (),
    ) -> None:
        self.name = validate_name(name, "MCP server")
        # No inf: a server that never answers is what this timeout is there to catch.
        check_number(f"MCP server {self.name!r}", "timeout", timeout)
        self._origin = _origin
        self._target = target
        self._include = None if include is None else frozenset(include)
        self._exclude = frozenset(exclude)
        self._predicate = predicate
        self._prefix = prefix
        self.timeout = timeout
        self.elicit = elicit
        # Credentials the server is given (headers, environment), redacted from its errors.
        self._secrets = tuple(_secrets)
        self._shared: Connection | None = None
        self._shared_users = 0
        # One lock per event loop: an asyncio.Lock belongs to the loop that first waits on it.
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
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``,
                ``elicit``.

        Returns:
            The server, not yet started.
        """
        arguments, environment = list(args), None if env is None else dict(env)

        def target() -> Any:
            from mcp import StdioServerParameters

            from swarmcore.mcp._stdio import StdioTransport

            params = StdioServerParameters(
                command=command, args=arguments, env=environment, cwd=cwd
            )
            return StdioTransport(params)

        # `python server.py` / `node server.js` are named after the script, not the interpreter.
        script = next((a for a in arguments if a.endswith((".py", ".js", ".mjs", ".ts"))), None)
        default = _stem(script or command) or "mcp"
        # An API key handed to the server in its environment may come back in its errors.
        secrets = secret_values(settings=environment or {})
        return cls(target, name=name or _identifier(default), _secrets=secrets, **options)

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
            name: The server's name; defaults to the URL's host and port as one
                identifier (``localhost:8931`` -> ``localhost_8931``; an IP address
                gets ``mcp_`` before it: ``127.0.0.1:8931`` -> ``mcp_127_0_0_1_8931``).
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``,
                ``elicit``.

        Returns:
            The server, not yet connected.

        Raises:
            UserError: ``url`` is not an http(s) URL with a host and a valid port.
        """
        host, port = _endpoint(url)
        fixed = dict(headers or {})

        def target() -> Any:
            return StreamableTransport(url, fixed) if fixed else url

        # Every header value counts as a credential: a server may quote it in an error.
        secrets = secret_values(settings={"headers": fixed})
        return cls(target, name=name or _http_name(host, port), _secrets=secrets, **options)

    @classmethod
    def in_process(cls, server: Any, *, name: str | None = None, **options: Any) -> MCPServer:
        """A server object in this process (the SDK's ``MCPServer`` or ``Server``), for tests.

        Args:
            server: The SDK server instance.
            name: The server's name; defaults to the server's own.
            **options: ``include``, ``exclude``, ``predicate``, ``prefix``, ``timeout``,
                ``elicit``.

        Returns:
            The server, not yet connected.
        """
        default = str(getattr(server, "name", None) or "mcp")
        return cls(lambda: server, name=name or _identifier(default), **options)

    def select(self, *names: str, prefix: str | None = None) -> MCPServer:
        """This server offering only the tools ``names`` (one connection with the original).

        Args:
            *names: The tools to offer.
            prefix: Replaces this server's ``prefix`` when given.

        Returns:
            A server sharing this one's connection.
        """
        return MCPServer(
            self._target,
            name=self.name,
            include=names,
            exclude=self._exclude,
            predicate=self._predicate,
            prefix=self._prefix if prefix is None else prefix,
            timeout=self.timeout,
            elicit=self.elicit,
            _origin=self._origin_server(),
            _secrets=self._secrets,
        )

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
                origin._shared = await origin._open()
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
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def _open(self) -> Connection:
        return await Connection.open(self.name, self._target, self.timeout, self._secrets)

    async def _connection(self) -> Connection:
        """The connection ``async with`` opened, else the run's one to this (origin) server."""
        if self._shared is not None:  # in a run or not: the block's connection serves both
            return self._shared
        scope = current_scope()
        if scope is None:
            raise UserError(
                f"MCP server {self.name!r} was used outside a run and with no connection open: "
                "open it first (async with server: tools = await server.tools()), or use it "
                "in an agent's tools and call agent.run() or swarm.run()."
            )
        return await scope.get(self, self._open)

    # --- tools -----------------------------------------------------------------------

    async def tools(self) -> list[Tool]:
        """This server's tools (after include/exclude/prefix).

        Inside ``async with server:`` (in a run or not) they come over that
        block's connection; else over the run's, so outside both there is none.
        A listed tool calls through its connection, and only while it is open.

        Returns:
            The tools to offer the model.

        Raises:
            MCPError: The server could not be started, connected or listed.
            UserError: A selected tool does not exist, a tool's name is one models refuse,
                or no connection is open (outside a run and outside ``async with``).
        """
        connection = await self._origin_server()._connection()
        listed = await connection.list_tools()
        chosen: list[Tool] = [
            MCPTool.build(
                spec,
                server=self.name,
                prefix=self._prefix,
                connection=connection,
                elicit=self.elicit,
            )
            for spec in listed
            if self._offers(str(spec.name), str(spec.description or ""))
        ]
        missing = (self._include or frozenset()) - {str(s.name) for s in listed}
        if missing:
            raise UserError(
                f"MCP server {self.name!r} has no tool named {', '.join(sorted(missing))}; "
                f"it offers {', '.join(sorted(str(s.name) for s in listed)) or 'none'}."
            )
        return chosen

    def _offers(self, name: str, description: str) -> bool:
        if self._include is not None and name not in self._include:
            return False
        if name in self._exclude:
            return False
        return self._predicate is None or self._predicate(name, description)


@dataclass(frozen=True, eq=False, kw_only=True)
class MCPTool(Tool):
    """A tool served by an MCP server: its JSON schema goes to the model as it is."""

    server: str = field(repr=False)
    """The name of the server that serves the tool."""
    _remote_name: str = field(repr=False)
    _connection: Connection = field(repr=False)
    _validator: Callable[[dict[str, Any]], str | None] = field(repr=False)
    _elicit: Elicitor | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        spec: Any,
        *,
        server: str,
        prefix: str,
        connection: Connection,
        elicit: Elicitor | None = None,
    ) -> MCPTool:
        """A Tool for the MCP tool ``spec``.

        Args:
            spec: The SDK's ``Tool``, as the server listed it.
            server: The server's name.
            prefix: Prepended to the tool's name.
            connection: The connection calls go through.
            elicit: The server's ``elicit`` callback, if any.

        Returns:
            The tool.

        Raises:
            UserError: The prefixed name is not one model providers accept.
        """
        schema: dict[str, Any] = dict(spec.input_schema or {"type": "object", "properties": {}})
        remote = str(spec.name)
        name = f"{prefix}{remote}"
        try:
            validate_name(name, "MCP tool")
        except UserError:
            # MCP allows names (dots, 128 characters) that model providers refuse.
            raise UserError(
                f"MCP server {server!r} offers a tool named {name!r}, which models cannot "
                "call (1 to 64 letters, digits, '_' or '-', starting with a letter or '_'); "
                f"leave it out with exclude=[{remote!r}] or select() the tools you need."
            ) from None
        description = str(spec.description or remote.replace("_", " "))
        return cls(
            name=name,
            description=description + _output_note(getattr(spec, "output_schema", None)),
            parameters=schema,
            fn=_never,
            _args_model=cast("type[BaseModel]", _NoModel),
            server=server,
            _remote_name=remote,
            _connection=connection,
            _validator=schema_validator(schema),
            _elicit=elicit,
        )

    async def invoke(self, arguments: str) -> str:
        """Validate ``arguments`` against the server's schema, call the tool, and render the result.

        Args:
            arguments: The arguments the model sent, as JSON text.

        Returns:
            The tool's result as text for the model.

        Raises:
            ToolArgumentsError: Invalid JSON, or arguments the schema rejects.
            ToolReportedError: The server reported an error, or stopped (restarted on the
                next call).
            MCPError: The server stopped and could not be restarted.
        """
        values = self.validate_arguments(arguments)
        connection, call = self._connection, current_call()
        asker = Asker(self.server, self.name, self._elicit, call, connection.redact)
        follower = TaskFollower(self.server, self.name, call, asker)
        side = CallSide(asker, follower)
        if call is not None and call.task_id is not None:  # a durable engine's recorded task
            result = await connection.follow(call.task_id, self.name, side)
            return render_result(result, self.name, self.server, connection.redact)
        result: Any = None
        try:
            result = await connection.call(self._remote_name, values, self.name, side)
        except ToolReportedError:
            if asker.deferred is None:
                raise
        if asker.deferred is not None:  # a durable engine waits for the answer, then calls again
            raise AnswerNeeded(asker.deferred)
        if follower.pending is not None:  # a durable engine records the task, then follows it
            raise TaskPending(follower.pending)
        if asker.failure is not None:  # a callback's mistake: the agent stops and says so
            raise asker.failure
        return render_result(result, self.name, self.server, connection.redact)

    def timeout_note(self) -> str:
        """Which earlier calls that ran out of time the server may still be busy with."""
        return self._connection.busy_note(self.name)

    def validate_arguments(self, arguments: str) -> dict[str, Any]:
        """Parse the JSON ``arguments`` and check them against the server's schema.

        Args:
            arguments: The arguments as JSON text; empty text means none.

        Returns:
            The arguments, as sent to the server.

        Raises:
            ToolArgumentsError: The arguments are not a JSON object or the schema rejects them.
        """
        values = self.json_object(arguments)
        problem = self._validator(values)
        if problem:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: invalid arguments: {problem}. Fix them and call again."
            )
        return values


async def gather_tools(owner: str, toolsets: Iterable[Toolset]) -> list[Tool]:
    """The tools of every toolset of an agent, each name offered once.

    Args:
        owner: The agent's name, for errors.
        toolsets: Its toolsets (MCP servers, or any :class:`~swarmcore._tools.Toolset`).

    Returns:
        Their tools, in toolset order.

    Raises:
        UserError: Two toolsets offer a tool of the same name.
    """
    gathered: dict[str, tuple[Tool, str]] = {}
    for toolset in toolsets:
        for tool in await toolset.tools():
            source = str(getattr(tool, "server", None) or toolset.name)
            if tool.name in gathered:
                raise UserError(_clash(owner, tool.name, gathered[tool.name][1], source))
            gathered[tool.name] = (tool, source)
    return [tool for tool, _ in gathered.values()]


def _clash(owner: str, tool: str, first: str, second: str) -> str:
    if first == second:  # one server passed twice (two select()s of it, say)
        return (
            f"Agent {owner!r} gets the tool {tool!r} twice from MCP server {first!r}; pass the "
            "server once, or select() each tool in one place."
        )
    return (
        f"Agent {owner!r} has two MCP servers offering a tool named {tool!r}: {first!r} and "
        f"{second!r}; give one of them a prefix (MCPServer.stdio(..., prefix={second + '_'!r}), "
        f"or .select(..., prefix={second + '_'!r})) or leave the tool out with exclude=[{tool!r}]."
    )


_MAX_OUTPUT_SCHEMA_CHARS = 2000
"""Longer output schemas stay off the description: they would cost tokens on every call."""


def _output_note(schema: Mapping[str, Any] | None) -> str:
    """What the tool returns, for its description: function tools have no field for it.

    A tool's ``outputSchema`` tells the model the shape of its structured result
    (which reaches it as JSON); model APIs take no output schema for a function,
    so it goes in the description, compact, when it is short enough.
    """
    if not schema:
        return ""
    shown = json.dumps(dict(schema), ensure_ascii=False, separators=(",", ":"))
    if len(shown) > _MAX_OUTPUT_SCHEMA_CHARS:
        return ""
    return f"\n\nReturns JSON fitting this schema: {shown}"


def _stem(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1].split(".")[0]


def _endpoint(url: str) -> tuple[str, int | None]:
    """The host and port (None when the URL gives none) of an MCP server's URL.

    Raises:
        UserError: ``url`` is not an http(s) URL with a host and a valid port.
    """
    shown = re.sub(r"//[^/@]*@", "//***@", url)  # a user:password in the URL stays out
    problem = f"MCP server URL {shown!r} is not an http:// or https:// URL with a host"
    example = "such as http://127.0.0.1:8000/mcp"
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except (ValueError, TypeError) as exc:  # a bad IPv6 literal, a port out of range
        raise UserError(f"{problem} ({exc}); give one {example}.") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise UserError(f"{problem}; give one {example}.")
    return host, port


def _http_name(host: str, port: int | None) -> str:
    """A readable default name for a server at ``host`` and ``port``, as an identifier.

    A host name keeps its words (``mcp.example.com`` -> ``mcp_example_com``); an IP
    address gets ``mcp_`` (``mcp_ipv6_`` for v6) before its numbers, as a name starts
    with a letter. The port, when the URL gives one, tells apart servers on one machine.
    """
    try:
        version: int | None = ipaddress.ip_address(host).version
    except ValueError:
        version = None
    words = [w for w in re.split(r"[^0-9A-Za-z-]+", host) if w]
    if port is not None:
        words.append(str(port))
    lead = {None: "", 4: "mcp_", 6: "mcp_ipv6_"}[version]
    return _identifier(lead + "_".join(words)) if words else "mcp"


def _identifier(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in text).strip("_-")
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = f"mcp_{cleaned}"
    return cleaned[:64]


def _never(*_: object, **__: object) -> str:
    raise RuntimeError("MCP tools run through their server")


class _NoModel:
    """Placeholder: MCP tools validate with the server's JSON schema, not a pydantic model."""
