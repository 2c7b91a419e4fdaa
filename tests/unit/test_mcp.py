"""MCP servers as toolsets, against in-process SDK servers (no subprocess, no network)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.server import Server as LowLevelServer
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListToolsResult, TextContent
from mcp.types import Tool as SpecTool
from pydantic import BaseModel

from swarmcore import Agent, Swarm, UserError, events
from swarmcore.mcp import MCPError, MCPServer, MCPTool
from swarmcore.testing import Call, FunctionModel, RecordedRequest, Reply, ScriptedModel


@pytest.fixture(autouse=True)
def _keep_logging() -> Iterator[None]:
    """The SDK's MCPServer() calls logging.basicConfig; leave the root logger as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def ours(tasks: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks minus litellm's process-wide logging worker, which outlives every call by design."""
    return {t for t in tasks if "LoggingWorker" not in getattr(t.get_coro(), "__qualname__", "")}


class Point(BaseModel):
    x: int
    y: int


class Calc(SDKServer[Any]):
    """An SDK server that counts listings, calls and connections (from the server's side)."""

    def __init__(self, name: str = "calc", *, hang_on_connect: bool = False) -> None:
        self.list_calls = 0
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.opened = 0
        self.closed = 0
        self.connecting = asyncio.Event()
        self.hang_on_connect = hang_on_connect

        @asynccontextmanager
        async def lifespan(_: SDKServer[Any]) -> AsyncIterator[dict[str, Any]]:
            self.opened += 1
            self.connecting.set()
            try:
                if self.hang_on_connect:
                    await asyncio.Event().wait()
                yield {}
            finally:
                self.closed += 1

        super().__init__(name, log_level="ERROR", lifespan=lifespan)
        self._register()

    def _register(self) -> None:
        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two whole numbers."""
            return a + b

        @self.tool(structured_output=False)
        def echo(text: str) -> str:
            """Send the text back."""
            return text

        @self.tool()
        def point(x: int) -> Point:
            """A point on the line y = 2x."""
            return Point(x=x, y=2 * x)

        @self.tool(structured_output=False)
        def refuse(reason: str) -> str:
            """Always refuses."""
            raise ToolError(f"refused: {reason}")

        @self.tool(structured_output=False)
        def crash() -> str:
            """Raises an unexpected exception."""
            raise ValueError("secret internals")

        @self.tool(structured_output=False)
        def long_text(n: int) -> str:
            """Returns n characters."""
            return "x" * n

    async def list_tools(self) -> Any:
        self.list_calls += 1
        return await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self.calls.append((name, dict(arguments)))
        return await super().call_tool(name, arguments, context)


def done_model() -> FunctionModel:
    return FunctionModel(lambda _: Reply(text="done"))


async def offered(server: MCPServer) -> list[str]:
    """The tool names an agent with ``server`` offers its model."""
    model = done_model()
    await Agent("a", "x", model=model.model, tools=[server]).run("go")
    return model.requests[0].tool_names


# --- listing ---------------------------------------------------------------------------------


async def test_schemas_go_to_the_model_as_the_server_lists_them() -> None:
    calc = Calc()
    listed = {t.name: t for t in await SDKServer.list_tools(calc)}
    model = done_model()
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    result = await agent.run("go")
    assert result.output == "done"
    sent = {t["function"]["name"]: t["function"] for t in model.requests[0].tools}
    assert list(sent) == list(listed)
    for name, spec in listed.items():
        assert sent[name]["parameters"] == spec.input_schema
        # What the tool returns follows its description (see the output schema test).
        assert sent[name]["description"].startswith(str(spec.description))
    assert sent["echo"]["description"] == "Send the text back."


def test_servers_are_named_after_what_they_run() -> None:
    script = "/srv/tools/_weather_server.py"
    assert MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-memory"]).name == "npx"
    assert MCPServer.stdio(sys.executable, [script]).name == "weather_server"
    assert MCPServer.stdio("node", ["build/index.js"], name="files").name == "files"
    assert MCPServer.in_process(Calc()).name == "calc"
    assert MCPServer.in_process(Calc(), name="maths").select("add").name == "maths"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://127.0.0.1:8931/mcp", "mcp_127_0_0_1_8931"),
        ("http://192.168.1.20/mcp", "mcp_192_168_1_20"),
        ("http://[::1]:8931/mcp", "mcp_ipv6_1_8931"),
        ("https://[2001:db8::1]/mcp", "mcp_ipv6_2001_db8_1"),
        ("http://localhost:8931/mcp", "localhost_8931"),
        ("https://mcp.example.com/mcp", "mcp_example_com"),
        ("https://Tools.Example.com:8443/v1/mcp", "tools_example_com_8443"),
        ("http://files-01.internal/mcp", "files-01_internal"),
        ("http://alice:hunter2@10.0.0.5/mcp", "mcp_10_0_0_5"),  # never the user name
    ],
)
def test_an_http_server_is_named_after_its_host_and_port(url: str, name: str) -> None:
    assert MCPServer.http(url).name == name
    assert MCPServer.http(url, name="web").name == "web"


@pytest.mark.parametrize(
    "url",
    ["127.0.0.1:8931/mcp", "ftp://files.example.com/mcp", "http:///mcp", "http://[::1/mcp"],
)
def test_an_url_that_is_no_http_endpoint_says_what_to_give(url: str) -> None:
    with pytest.raises(UserError, match=r"http:// or https:// URL with a host.*127\.0\.0\.1"):
        MCPServer.http(url)


def test_a_bad_url_keeps_its_password_out_of_the_error() -> None:
    with pytest.raises(UserError) as caught:
        MCPServer.http("http://alice:hunter2@example.com:99999/mcp")
    assert "hunter2" not in str(caught.value)
    assert "Port out of range" in str(caught.value)


async def test_tools_outside_a_run_and_outside_async_with_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"outside a run.*async with server"):
        await MCPServer.in_process(Calc()).tools()


async def test_async_with_lists_the_tools_outside_a_run() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc, prefix="calc_")
    async with server:
        tools = await server.tools()
        assert [t.name for t in tools] == [
            "calc_add",
            "calc_echo",
            "calc_point",
            "calc_refuse",
            "calc_crash",
            "calc_long_text",
        ]
        assert [t.name for t in await server.select("echo").tools()] == ["calc_echo"]
        assert {t.server for t in tools if isinstance(t, MCPTool)} == {"calc"}
        add = tools[0]
        assert json.loads(await add.invoke('{"a": 2, "b": 40}')) == {"result": 42}
    assert calc.opened == calc.closed == 1
    assert calc.list_calls == 1
    # The block's connection is gone: the listed tool says so and starts no new one.
    with pytest.raises(UserError, match=r"has been closed.*list the tools again"):
        await add.invoke('{"a": 1, "b": 1}')
    assert calc.opened == 1
    assert calc.calls == [("add", {"a": 2, "b": 40})]


async def test_a_select_entered_alone_lists_its_tools_outside_a_run() -> None:
    calc = Calc()
    echo = MCPServer.in_process(calc).select("echo")
    async with echo:
        assert [t.name for t in await echo.tools()] == ["echo"]
    assert calc.opened == calc.closed == 1


async def test_a_paginated_tool_list_is_followed_to_the_end() -> None:
    names = ["one", "two", "three"]

    async def list_tools(_: Any, params: Any) -> ListToolsResult:
        cursor = getattr(params, "cursor", None)
        index = int(cursor) if cursor else 0
        tool = SpecTool(name=names[index], input_schema={"type": "object", "properties": {}})
        more = str(index + 1) if index + 1 < len(names) else None
        return ListToolsResult(tools=[tool], next_cursor=more)

    async def call_tool(_: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"ran {params.name}")])

    server = LowLevelServer("pages", on_list_tools=list_tools, on_call_tool=call_tool)
    model = ScriptedModel([Reply(tool_calls=[Call("three")]), Reply(text="done")])
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(server)])
    result = await agent.run("go")
    assert model.requests[0].tool_names == names
    assert result.tool_calls[0].result == "ran three"


# --- calling ---------------------------------------------------------------------------------


async def test_text_and_structured_results_reach_the_model() -> None:
    calc = Calc()
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    Call("add", {"a": 2, "b": 40}),
                    Call("echo", {"text": "héllo"}),
                    Call("point", {"x": 3}),
                ]
            ),
            Reply(text="done"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    result = await agent.run("go")
    model.assert_consumed()
    assert [r.error for r in result.tool_calls] == [None, None, None]
    add, echo, point = (r.result for r in result.tool_calls)
    assert json.loads(add) == {"result": 42}  # structured content, rendered as JSON
    assert echo == "héllo"  # plain text content
    assert json.loads(point) == {"x": 3, "y": 6}
    seen = [m["content"] for m in model.requests[1].tool_results]
    assert seen == [add, echo, point]
    assert calc.calls == [
        ("add", {"a": 2, "b": 40}),
        ("echo", {"text": "héllo"}),
        ("point", {"x": 3}),
    ]


async def test_server_side_errors_become_tool_errors_the_model_sees() -> None:
    calc = Calc()
    model = ScriptedModel(
        [
            Reply(tool_calls=[Call("refuse", {"reason": "no way"}), Call("crash")]),
            Reply(text="done"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    result = await agent.run("go")
    refused, crashed = result.tool_calls
    # Told as the server's own report (isError): nothing on our side raised anything.
    assert refused.error is not None
    assert refused.error.startswith("Tool 'refuse': the MCP server 'calc' reported an error: ")
    assert refused.error.endswith("refused: no way")
    assert crashed.error is not None
    assert crashed.error.startswith("Tool 'crash': the MCP server 'calc' reported an error: ")
    assert "raised" not in refused.error + crashed.error
    assert [m["content"] for m in model.requests[1].tool_results] == [
        refused.error,
        crashed.error,
    ]
    assert result.output == "done"


async def test_is_error_from_a_low_level_server_is_a_tool_error() -> None:
    async def list_tools(_: Any, __: Any) -> ListToolsResult:
        schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
        return ListToolsResult(tools=[SpecTool(name="search", input_schema=schema)])

    async def call_tool(_: Any, params: Any) -> CallToolResult:
        text = f"index offline for {params.arguments['q']}"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    server = LowLevelServer("idx", on_list_tools=list_tools, on_call_tool=call_tool)
    model = ScriptedModel([Reply(tool_calls=[Call("search", {"q": "cats"})]), Reply(text="ok")])
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(server)])
    record = (await agent.run("go")).tool_calls[0]
    assert record.error is not None
    assert "index offline for cats" in record.error
    assert model.requests[1].tool_results[0]["content"] == record.error


async def test_arguments_the_schema_rejects_never_reach_the_server() -> None:
    calc = Calc()
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    Call("add", {"a": "two", "b": 1}),
                    Call("add", {"a": 1}),
                    Call("add", "{not json"),
                    Call("add", "[1, 2]"),
                ]
            ),
            Reply(text="done"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    result = await agent.run("go")
    wrong_type, missing, malformed, not_object = (r.error or "" for r in result.tool_calls)
    assert "invalid arguments" in wrong_type
    assert "'two' is not of type 'integer'" in wrong_type
    assert "invalid arguments" in missing
    assert "'b' is a required property" in missing
    assert "not valid JSON" in malformed
    assert "must be a JSON object" in not_object
    assert calc.calls == []
    seen = [m["content"] for m in model.requests[1].tool_results]
    assert seen == [wrong_type, missing, malformed, not_object]


async def test_long_results_are_truncated_like_any_tool() -> None:
    calc = Calc()
    model = ScriptedModel([Reply(tool_calls=[Call("long_text", {"n": 500})]), Reply(text="ok")])
    agent = Agent(
        "a", "x", model=model.model, tools=[MCPServer.in_process(calc)], max_tool_result_chars=40
    )
    record = (await agent.run("go")).tool_calls[0]
    assert record.truncated_from == 500
    assert record.result.startswith("x" * 40 + "\n\n[truncated: showing the first 40 of 500")
    assert model.requests[1].tool_results[0]["content"] == record.result


# --- choosing tools --------------------------------------------------------------------------


async def test_include_exclude_predicate_and_prefix() -> None:
    calc = Calc()
    assert await offered(MCPServer.in_process(calc, include=["add", "echo"])) == ["add", "echo"]
    every = ["add", "echo", "point", "refuse", "crash", "long_text"]
    assert await offered(MCPServer.in_process(calc, exclude=["crash", "refuse"])) == [
        n for n in every if n not in ("crash", "refuse")
    ]
    numbers = MCPServer.in_process(calc, predicate=lambda _name, doc: "number" in doc)
    assert await offered(numbers) == ["add"]
    assert await offered(MCPServer.in_process(calc, prefix="calc_")) == [f"calc_{n}" for n in every]
    both = MCPServer.in_process(calc, include=["add", "point", "crash"], exclude=["crash"])
    assert await offered(both) == ["add", "point"]


async def test_select_with_a_prefix_calls_the_remote_name() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc, name="maths")
    model = ScriptedModel([Reply(tool_calls=[Call("m_add", {"a": 1, "b": 2})]), Reply(text="ok")])
    agent = Agent("a", "x", model=model.model, tools=[server.select("add", prefix="m_")])
    result = await agent.run("go")
    assert model.requests[0].tool_names == ["m_add"]
    assert result.tool_calls[0].tool_name == "m_add"
    assert json.loads(result.tool_calls[0].result) == {"result": 3}
    assert result.tool_calls[0].server == "maths"
    assert calc.calls == [("add", {"a": 1, "b": 2})]
    assert await offered(server.select("echo", "point")) == ["echo", "point"]


async def test_select_of_an_unknown_tool_names_the_available_ones() -> None:
    server = MCPServer.in_process(Calc())
    model = done_model()
    agent = Agent("a", "x", model=model.model, tools=[server.select("add", "divide")])
    with pytest.raises(UserError, match="no tool named divide") as caught:
        await agent.run("go")
    assert "add, crash, echo, long_text, point, refuse" in str(caught.value)
    assert model.requests == []


async def test_a_tool_name_models_cannot_call_says_how_to_leave_it_out() -> None:
    calc = Calc()
    calc.add_tool(lambda path: path, name="files.read", description="Read a file.")
    model = done_model()
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    with pytest.raises(UserError, match=r"'calc' offers a tool named 'files\.read'") as caught:
        await agent.run("go")
    assert "exclude=['files.read']" in str(caught.value)
    assert "files.read" not in await offered(MCPServer.in_process(calc, exclude=["files.read"]))


async def test_a_clash_with_a_python_tool_suggests_a_prefix() -> None:
    def add(a: int, b: int) -> int:
        """Python's own add."""
        return a + b

    calc = Calc()
    model = done_model()
    agent = Agent("a", "x", model=model.model, tools=[add, MCPServer.in_process(calc)])
    with pytest.raises(UserError, match="prefix=") as caught:
        await agent.run("go")
    assert "'add'" in str(caught.value)
    assert "'calc'" in str(caught.value)
    assert model.requests == []
    # The suggested fix works.
    fixed = Agent("a", "x", model=model.model, tools=[add, MCPServer.in_process(calc, prefix="c_")])
    await fixed.run("go")
    assert "add" in model.requests[0].tool_names
    assert "c_add" in model.requests[0].tool_names


async def test_a_clash_between_two_mcp_servers_suggests_a_prefix_naming_both() -> None:
    model = done_model()
    servers = [MCPServer.in_process(Calc("calc")), MCPServer.in_process(Calc("mathx"))]
    agent = Agent("a", "x", model=model.model, tools=servers)
    with pytest.raises(UserError, match="prefix=") as caught:
        await agent.run("go")
    message = str(caught.value)
    assert "two MCP servers offering a tool named 'add': 'calc' and 'mathx'" in message
    assert "function_tool" not in message
    assert "extra_tools" not in message
    assert model.requests == []
    # The suggested fix works.
    servers[1] = MCPServer.in_process(Calc("mathx"), prefix="mathx_")
    await Agent("a", "x", model=model.model, tools=servers).run("go")
    assert {"add", "mathx_add"} <= set(model.requests[0].tool_names)


# --- records and events ----------------------------------------------------------------------


async def test_records_and_events_carry_the_server_name() -> None:
    def local(text: str) -> str:
        """A Python tool."""
        return text

    calc = Calc()
    model = ScriptedModel(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 1}), Call("local", {"text": "t"})]),
            Reply(text="done"),
        ]
    )
    seen: list[events.Event] = []
    agent = Agent(
        "a", "x", model=model.model, tools=[local, MCPServer.in_process(calc, name="maths")]
    )
    result = await Swarm(agent, hooks=[seen.append]).run("go")
    records = {r.tool_name: r for r in result.history[0].tool_calls}
    assert records["add"].server == "maths"
    assert records["local"].server is None
    started = {e.tool_name: e for e in seen if isinstance(e, events.ToolCallStarted)}
    finished = {e.tool_name: e for e in seen if isinstance(e, events.ToolCallFinished)}
    assert started["add"].server == finished["add"].server == "maths"
    assert started["local"].server is None
    assert finished["local"].server is None
    assert finished["add"].error is None


# --- connections -----------------------------------------------------------------------------


async def test_tools_are_listed_once_per_connection_across_turns_and_parallel_agents() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc)

    def answer(request: RecordedRequest) -> Reply:
        turns = sum(1 for m in request.messages if m.get("role") == "assistant")
        if turns < 3:
            return Reply(tool_calls=[Call("add", {"a": turns, "b": 1})])
        return Reply(text="done")

    model = FunctionModel(answer)
    a, b, c = (
        Agent(n, f"{n} x", model=model.model, tools=[t])
        for n, t in (("a", server), ("b", server), ("c", server.select("add")))
    )
    d = Agent("d", "d x", model=model.model, tools=[server])
    result = await Swarm((a | b | c) >> d).run("go")
    assert len(model.requests) == 16  # 4 agents x (3 tool turns + 1 answer)
    assert sum(len(r.tool_calls) for r in result.history) == 12
    assert calc.list_calls == 1
    assert calc.opened == calc.closed == 1


async def test_each_run_has_its_own_connection() -> None:
    calc = Calc()
    model = FunctionModel(
        lambda r: Reply(text="done") if r.tool_results else Reply.tool("add", a=1, b=2)
    )
    swarm = Swarm(Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)]))
    await swarm.run("one")
    assert calc.opened == calc.closed == 1
    await swarm.run("two")
    assert calc.opened == calc.closed == 2
    assert calc.list_calls == 2
    assert len(calc.calls) == 2


async def test_concurrent_async_with_opens_one_connection() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc)
    entered = asyncio.Event()
    leave = asyncio.Event()

    async def user() -> None:
        async with server:
            entered.set()
            await leave.wait()

    users = [asyncio.create_task(user()) for _ in range(3)]
    await asyncio.wait_for(entered.wait(), 10)
    await asyncio.sleep(0.05)
    assert calc.opened == 1
    leave.set()
    await asyncio.gather(*users)
    assert calc.opened == calc.closed == 1


async def test_async_with_shares_one_connection_across_runs() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc)
    model = FunctionModel(
        lambda r: Reply(text="done") if r.tool_results else Reply.tool("add", a=1, b=2)
    )
    swarm = Swarm(Agent("a", "x", model=model.model, tools=[server.select("add")]))
    async with server:
        assert calc.opened == 1
        await swarm.run("one")
        await swarm.run("two")
        await Agent("b", "y", model=model.model, tools=[server]).run("three")
        assert calc.opened == 1
        assert calc.closed == 0
        assert calc.list_calls == 1
    assert calc.opened == calc.closed == 1
    assert len(calc.calls) == 3
    await swarm.run("after the block: a connection of its own")
    assert calc.opened == calc.closed == 2


async def test_nested_async_with_keeps_the_connection_until_the_last_exit() -> None:
    calc = Calc()
    server = MCPServer.in_process(calc)
    async with server, server.select("add"):
        assert calc.opened == 1
    assert calc.opened == calc.closed == 1


async def test_agent_run_outside_a_swarm_opens_and_closes_its_own_connection() -> None:
    calc = Calc()
    before = ours(asyncio.all_tasks())
    model = ScriptedModel([Reply(tool_calls=[Call("add", {"a": 2, "b": 40})]), Reply(text="ok")])
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    result = await agent.run("go")
    assert json.loads(result.tool_calls[0].result) == {"result": 42}
    assert calc.opened == calc.closed == 1
    assert ours(asyncio.all_tasks()) == before


async def test_no_tasks_are_left_after_a_swarm_run() -> None:
    calc = Calc()
    before = ours(asyncio.all_tasks())
    model = ScriptedModel([Reply(tool_calls=[Call("echo", {"text": "t"})]), Reply(text="ok")])
    await Swarm(Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])).run("go")
    assert ours(asyncio.all_tasks()) == before
    assert calc.opened == calc.closed == 1


async def test_a_server_that_fails_to_start_raises_mcp_error_naming_it() -> None:
    @asynccontextmanager
    async def broken(_: SDKServer[Any]) -> AsyncIterator[None]:
        raise RuntimeError("database unreachable")
        yield

    sdk = SDKServer[Any]("db", log_level="ERROR", lifespan=broken)
    agent = Agent("a", "x", model=done_model().model, tools=[MCPServer.in_process(sdk)])
    with pytest.raises(MCPError, match="'db' could not be started") as caught:
        await agent.run("go")
    assert "RuntimeError: database unreachable" in str(caught.value)


async def test_a_run_failing_with_mcp_error_names_and_records_the_agent() -> None:
    @asynccontextmanager
    async def broken(_: SDKServer[Any]) -> AsyncIterator[None]:
        raise RuntimeError("database unreachable")
        yield

    drafter = ScriptedModel([Reply(text="drafted")])
    first = Agent("first", "x", model=drafter.model)
    sdk = SDKServer[Any]("db", log_level="ERROR", lifespan=broken)
    needs_db = Agent("lookup", "x", model=done_model().model, tools=[MCPServer.in_process(sdk)])
    with pytest.raises(MCPError, match="'db' could not be started") as caught:
        await Swarm(first >> needs_db).run("go")
    # Like a ModelError: the failing agent is named, recorded, and what finished is kept.
    assert caught.value.agent_name == "lookup"
    partial = caught.value.partial
    assert partial is not None
    assert [(f.agent_name, f.error_type) for f in partial.failures] == [("lookup", "MCPError")]
    assert "'db' could not be started" in partial.failures[0].message
    assert [r.output for r in partial.history] == ["drafted"]


async def test_a_connect_timeout_gives_up_promptly() -> None:
    calc = Calc(hang_on_connect=True)
    model = done_model()
    server = MCPServer.in_process(calc, timeout=0.2)
    before = ours(asyncio.all_tasks())
    started = asyncio.get_running_loop().time()
    with pytest.raises(MCPError, match=r"'calc' did not connect within 0\.2s"):
        await Agent("a", "x", model=model.model, tools=[server]).run("go")
    assert asyncio.get_running_loop().time() - started < 2
    assert calc.opened == calc.closed == 1
    assert ours(asyncio.all_tasks()) == before
    assert model.requests == []


async def test_cancelling_a_run_while_connecting_closes_the_connection() -> None:
    calc = Calc(hang_on_connect=True)
    model = done_model()
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    before = ours(asyncio.all_tasks())
    run = asyncio.create_task(Swarm(agent).run("go"))
    async with asyncio.timeout(10):
        await calc.connecting.wait()
    run.cancel()
    async with asyncio.timeout(2):
        with pytest.raises(asyncio.CancelledError):
            await run
    assert calc.closed == 1
    assert ours(asyncio.all_tasks()) == before


async def test_a_tools_output_schema_is_shown_to_the_model_in_its_description() -> None:
    calc = Calc()
    model = ScriptedModel([Reply(text="done")])
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.in_process(calc)])
    await agent.run("go")
    described = {
        t["function"]["name"]: t["function"]["description"] for t in model.requests[0].tools
    }
    note = "\n\nReturns JSON fitting this schema: "
    point = described["point"]
    assert point.startswith("A point on the line y = 2x." + note)
    schema = json.loads(point.split(note, 1)[1])
    assert schema["required"] == ["x", "y"]
    assert schema["properties"]["y"]["type"] == "integer"
    assert described["echo"] == "Send the text back."  # no structured output: no note
