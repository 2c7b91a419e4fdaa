"""MCP tool calls answered with a task (the tasks extension), against a real server process.

The server (the official SDK's ``MCPServer`` with a tasks extension) answers
``crunch`` with a task handle; swarmcore polls it to its result, within the
tool's timeout, cancels it on the server when the call is stopped, and
publishes its status changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, Swarm, events
from swarmcore.mcp import MCPServer
from swarmcore.testing import Call, Reply, ScriptedModel
from tests.helpers import script_server

SERVER = Path(__file__).parent / "_mcp_tasks_server.py"


def works_stdio(runs: Path) -> MCPServer:
    env = {"MCP_TEST_RUNS": str(runs)}
    return MCPServer.stdio(sys.executable, [str(SERVER), "stdio"], env=env, name="works")


@pytest.fixture
def works_url(tmp_path: Path) -> Iterator[str]:
    """The server over streamable HTTP in a subprocess: its endpoint, stopped after the test."""
    env = {"MCP_TEST_RUNS": str(tmp_path / "runs"), "PATH": ""}
    with script_server(SERVER, "http", env=env) as url:
        yield url


def lines(runs: Path) -> list[str]:
    return [line.split()[0] for line in runs.read_text().splitlines()] if runs.exists() else []


async def crunch(
    server: MCPServer, seconds: float, **agent_options: Any
) -> tuple[Any, list[events.MCPTaskStatus]]:
    model = ScriptedModel(
        [Reply(tool_calls=[Call("crunch", {"seconds": seconds})]), Reply(text="done")]
    )
    agent = Agent("cruncher", "x", model=model.model, tools=[server], **agent_options)
    seen: list[events.MCPTaskStatus] = []
    swarm = Swarm(agent)
    swarm.on(events.MCPTaskStatus)(seen.append)
    result = await swarm.run("crunch")
    return result.history[-1].tool_calls[0], seen


async def test_a_task_is_polled_to_its_structured_result_over_stdio(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    record, seen = await crunch(works_stdio(runs), 0.4)

    assert record.error is None
    assert json.loads(record.result) == {"crunched": 400}  # structured content, as JSON
    assert [(e.status, e.message) for e in seen] == [
        ("working", ""),
        ("working", "half way"),
        ("completed", ""),
    ]
    assert {e.task_id for e in seen} == {seen[0].task_id}
    assert (seen[0].server, seen[0].tool_name, seen[0].call_id) == (
        "works",
        "crunch",
        record.call_id,
    )
    assert lines(runs) == ["start", "done"]


async def test_the_tool_timeout_bounds_the_wait_and_cancels_the_task(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    record, _ = await crunch(works_stdio(runs), 60, tool_timeout=0.5)

    assert record.error is not None
    assert "did not finish within 0.5s" in record.error
    assert lines(runs) == ["start", "cancelled"]  # the server was told to stop


async def test_cancelling_the_run_cancels_the_task_on_the_server(
    works_url: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    model = ScriptedModel([Reply(tool_calls=[Call("crunch", {"seconds": 60})]), "done"])
    swarm = Swarm(Agent("cruncher", "x", model=model.model, tools=[MCPServer.http(works_url)]))
    made = asyncio.Event()
    swarm.on(events.MCPTaskStatus)(lambda _: made.set())
    running = asyncio.create_task(swarm.run("crunch"))
    await asyncio.wait_for(made.wait(), 30)  # the task is made, and its id known here
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    deadline = time.monotonic() + 30
    while lines(runs) != ["start", "cancelled"]:
        assert time.monotonic() < deadline, f"the task was not cancelled: {lines(runs)}"
        await asyncio.sleep(0.02)


async def test_a_task_over_streamable_http(works_url: str, tmp_path: Path) -> None:
    record, seen = await crunch(MCPServer.http(works_url, name="works"), 0.2)
    assert json.loads(record.result) == {"crunched": 200}
    assert seen[-1].status == "completed"
    assert lines(tmp_path / "runs") == ["start", "done"]
