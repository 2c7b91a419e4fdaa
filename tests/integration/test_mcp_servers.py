"""MCP servers in real processes: stdio subprocesses (crash, restart, cancel), streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, Swarm, UserError, events
from swarmcore.mcp import MCPError, MCPServer
from swarmcore.testing import Call, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.helpers import script_server

HERE = Path(__file__).parent
STDIO_SERVER = HERE / "_mcp_stdio_server.py"
HTTP_SERVER = HERE / "_mcp_http_server.py"


def ours(tasks: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks minus litellm's process-wide logging worker, which outlives every call by design."""
    return {t for t in tasks if "LoggingWorker" not in getattr(t.get_coro(), "__qualname__", "")}


def calc(pid_file: Path, **options: Any) -> MCPServer:
    """The test stdio server, recording the pid of every process it starts in ``pid_file``."""
    env = {"MCP_TEST_PID_FILE": str(pid_file), **options.pop("env", {})}
    return MCPServer.stdio(sys.executable, [str(STDIO_SERVER)], env=env, name="calc", **options)


def started(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_gone(pids: list[int], within: float = 5.0) -> None:
    """Fail unless every process in ``pids`` has ended within ``within`` seconds."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            pytest.fail(f"server processes still alive: {[p for p in pids if alive(p)]}")
        await asyncio.sleep(0.05)


# --- stdio -----------------------------------------------------------------------------------


async def test_an_agent_uses_a_stdio_server_end_to_end(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    Call("add", {"a": 2, "b": 40}),
                    Call("echo", {"text": "bonjour"}),
                    Call("point", {"x": 4}),
                    Call("fail", {"reason": "testing"}),
                    Call("add", {"a": "x", "b": 1}),
                    Call("sleep", {"seconds": 30}),
                ]
            ),
            Reply(tool_calls=[Call("pid")]),
            Reply(text="all done"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[calc(pid_file)], tool_timeout=0.5)
    seen: list[events.Event] = []
    result = await Swarm(agent, hooks=[seen.append]).run("go")
    model.assert_consumed()
    assert result.output == "all done"
    add, echo, point, fail, bad, slow, pid = result.history[0].tool_calls
    assert json.loads(add.result) == {"result": 42}
    assert echo.result == "bonjour"
    assert json.loads(point.result) == {"x": 4, "y": 8}
    assert fail.error is not None
    assert "failed on purpose: testing" in fail.error
    assert bad.error is not None
    assert "invalid arguments" in bad.error
    assert slow.error is not None
    assert "did not finish within 0.5s" in slow.error
    # A timed-out call leaves the connection usable: same process, no restart.
    assert started(pid_file) == [int(pid.result)]
    assert {r.server for r in result.history[0].tool_calls} == {"calc"}
    finished = [e for e in seen if isinstance(e, events.ToolCallFinished)]
    assert len(finished) == 7
    assert {e.server for e in finished} == {"calc"}
    assert [m["content"] for m in model.requests[1].tool_results] == [
        add.result,
        echo.result,
        point.result,
        fail.error,
        bad.error,
        slow.error,
    ]
    # The run closed its connection, which ends the server process.
    await wait_gone(started(pid_file))


async def test_async_with_lists_a_stdio_servers_tools_outside_a_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    server = calc(pid_file)
    async with server:
        tools = await server.tools()
        assert [t.name for t in tools] == [
            "add",
            "echo",
            "point",
            "fail",
            "sleep",
            "block",
            "hog",
            "crash",
            "pid",
        ]
        assert [t.name for t in await server.select("pid").tools()] == ["pid"]
        pid = next(t for t in tools if t.name == "pid")
        assert started(pid_file) == [int(await pid.invoke("{}"))]  # one process, still up
    await wait_gone(started(pid_file))  # the block's end stopped it
    with pytest.raises(UserError, match="has been closed"):
        await pid.invoke("{}")
    assert len(started(pid_file)) == 1  # and a late call started no other


async def test_a_call_stuck_behind_a_timed_out_one_is_told_why_not_to_simplify(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    model = ScriptedModel(
        [
            Reply(tool_calls=[Call("hog", {"seconds": 2})]),  # holds the server past its limit
            Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]),  # waits behind it, times out too
            Reply(text="done"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[calc(pid_file)], tool_timeout=0.5)
    hog, add = (await agent.run("go")).tool_calls
    assert hog.error is not None
    assert add.error is not None
    for error in (hog.error, add.error):
        assert "did not finish within 0.5s" in error
        assert "tool_timeout" in error
        assert "simpler arguments" not in error
    assert "busy" not in hog.error
    assert "MCP server 'calc' may still be busy with 'hog'" in add.error
    await wait_gone(started(pid_file))


async def test_a_crashed_server_is_a_tool_error_and_restarts_for_the_next_call(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    model = ScriptedModel(
        [
            Reply(tool_calls=[Call("pid")]),
            Reply(tool_calls=[Call("crash")]),
            Reply(tool_calls=[Call("add", {"a": 1, "b": 2})]),
            Reply(tool_calls=[Call("pid")]),
            Reply(text="recovered"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[calc(pid_file)])
    result = await agent.run("go")
    model.assert_consumed()
    first, crash, add, second = result.tool_calls
    assert crash.error is not None
    assert "'calc' stopped while running 'crash'" in crash.error
    assert "restarted for the next call" in crash.error
    assert model.requests[2].tool_results[-1]["content"] == crash.error
    assert add.error is None
    assert json.loads(add.result) == {"result": 3}
    assert started(pid_file) == [int(first.result), int(second.result)]
    assert first.result != second.result
    assert result.output == "recovered"
    await wait_gone(started(pid_file))


async def test_a_server_that_cannot_restart_stops_the_agent_with_mcp_error(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    server = calc(pid_file, env={"MCP_TEST_MAX_STARTS": "1"})
    model = ScriptedModel(
        [Reply(tool_calls=[Call("crash")]), Reply(tool_calls=[Call("add", {"a": 1, "b": 2})])]
    )
    agent = Agent("a", "x", model=model.model, tools=[server])
    with pytest.raises(MCPError, match="'calc' stopped and could not be restarted") as caught:
        await agent.run("go")
    assert "'add' cannot run" in str(caught.value)
    model.assert_consumed()
    assert "stopped while running 'crash'" in model.requests[1].tool_results[0]["content"]
    assert len(started(pid_file)) == 1
    await wait_gone(started(pid_file))


async def test_a_server_command_that_exits_at_once_is_a_clear_mcp_error() -> None:
    quitter = MCPServer.stdio(
        sys.executable, ["-c", "import sys; sys.exit(3)"], name="quitter", timeout=20
    )
    model = ScriptedModel([])
    agent = Agent("a", "x", model=model.model, tools=[quitter])
    began = time.monotonic()
    with pytest.raises(MCPError, match="MCP server 'quitter' could not be started") as caught:
        await Swarm(agent).run("go")
    assert time.monotonic() - began < 10
    assert "before the MCP handshake" in str(caught.value)
    assert "ExceptionGroup" not in str(caught.value)
    assert model.requests == []


async def test_a_missing_server_command_is_a_clear_mcp_error(tmp_path: Path) -> None:
    ghost = MCPServer.stdio(str(tmp_path / "no-such-server"), name="ghost")
    agent = Agent("a", "x", model=ScriptedModel([]).model, tools=[ghost])
    with pytest.raises(MCPError, match="'ghost' could not be started: FileNotFoundError"):
        await agent.run("go")


async def test_cancelling_a_run_during_a_slow_call_ends_the_server_promptly(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    model = ScriptedModel([Reply(tool_calls=[Call("sleep", {"seconds": 60})])])
    agent = Agent("a", "x", model=model.model, tools=[calc(pid_file)])
    calling = asyncio.Event()

    def on_event(event: events.Event) -> None:
        if isinstance(event, events.ToolCallStarted):
            calling.set()

    before = ours(asyncio.all_tasks())
    run = asyncio.create_task(Swarm(agent, hooks=[on_event]).run("go"))
    async with asyncio.timeout(30):
        await calling.wait()
    await asyncio.sleep(0.3)  # the request reaches the server, which starts sleeping
    [pid] = started(pid_file)
    assert alive(pid)
    began = time.monotonic()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert time.monotonic() - began < 5
    await wait_gone([pid], within=3)
    assert ours(asyncio.all_tasks()) == before


@pytest.mark.parametrize(
    "tool",
    [
        pytest.param("block", id="sync-tool-in-a-thread"),
        pytest.param("hog", id="async-tool-holding-the-loop"),
    ],
)
async def test_cancelling_a_run_ends_a_server_that_ignores_the_cancellation(
    tmp_path: Path, tool: str
) -> None:
    # Such a server never reads the end of its stdin; the spec's idle grace (the SDK
    # waits 2 s before terminating) is not for calls nobody waits for any more.
    pid_file = tmp_path / "pids"
    model = ScriptedModel([Reply(tool_calls=[Call(tool, {"seconds": 60})])])
    agent = Agent("a", "x", model=model.model, tools=[calc(pid_file)])
    calling = asyncio.Event()

    def on_event(event: events.Event) -> None:
        if isinstance(event, events.ToolCallStarted):
            calling.set()

    run = asyncio.create_task(Swarm(agent, hooks=[on_event]).run("go"))
    async with asyncio.timeout(30):
        await calling.wait()
    await asyncio.sleep(0.3)  # the request reaches the server, which starts blocking
    [pid] = started(pid_file)
    run.cancel()
    # Counted from the cancellation (the run unwinds meanwhile): a bound against waiting
    # out the SDK's seconds, not a measure of our speed.
    await wait_gone([pid], within=1.5)
    with pytest.raises(asyncio.CancelledError):
        await run


async def test_cancelling_a_run_while_the_server_starts_ends_the_server(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    agent = Agent("a", "x", model=ScriptedModel([]).model, tools=[calc(pid_file)])
    before = ours(asyncio.all_tasks())
    run = asyncio.create_task(Swarm(agent).run("go"))
    deadline = time.monotonic() + 30
    while not started(pid_file):  # the process exists, the handshake is not done yet
        assert time.monotonic() < deadline, "the server never started"
        await asyncio.sleep(0.005)
    [pid] = started(pid_file)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await wait_gone([pid], within=5)
    assert ours(asyncio.all_tasks()) == before


# --- streamable HTTP ---------------------------------------------------------------------------

TOKEN = "t"


@pytest.fixture
def http_url() -> Iterator[str]:
    """The test HTTP server in a subprocess: its MCP endpoint, stopped after the test."""
    with script_server(HTTP_SERVER, TOKEN) as url:
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


async def test_an_agent_uses_a_streamable_http_server_with_headers(http_url: str) -> None:
    server = MCPServer.http(http_url, headers={"Authorization": f"Bearer {TOKEN}"})
    name = f"mcp_127_0_0_1_{port_of(http_url)}"  # the address and port, readable
    assert server.name == name

    def answer(request: RecordedRequest) -> Reply:
        if not request.tool_results:
            return Reply(tool_calls=[Call("add", {"a": 20, "b": 22}), Call("authorization")])
        return Reply(text="ok")

    model = FunctionModel(answer)
    agent = Agent("a", "x", model=model.model, tools=[server])
    result = await Swarm(agent).run("go")
    add, auth = result.history[0].tool_calls
    assert json.loads(add.result) == {"result": 42}
    assert auth.result == f"Bearer {TOKEN}"  # the header reached the server
    assert {add.server, auth.server} == {name}
    assert model.requests[0].tool_names == ["add", "authorization", "refuse"]


async def test_async_with_lists_an_http_servers_tools_outside_a_run(http_url: str) -> None:
    server = MCPServer.http(http_url, headers={"Authorization": f"Bearer {TOKEN}"})
    async with server:
        tools = await server.tools()
        assert [t.name for t in tools] == ["add", "authorization", "refuse"]
        auth = next(t for t in tools if t.name == "authorization")
        assert await auth.invoke("{}") == f"Bearer {TOKEN}"


async def test_an_http_server_refusing_the_credentials_is_an_mcp_error(http_url: str) -> None:
    for headers in ({"Authorization": "Bearer wrong"}, None):
        server = MCPServer.http(http_url, headers=headers, name="web", timeout=10)
        agent = Agent("a", "x", model=ScriptedModel([]).model, tools=[server])
        with pytest.raises(MCPError, match="'web' could not be started"):
            await agent.run("go")
