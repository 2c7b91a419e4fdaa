"""An MCP tool call answered with a task, on the DBOS engine: the handle is recorded.

The recorded call ends once the server made the task, and the agent follows the
task in a recorded call of its own: a worker killed while it polls resumes
polling the same task, and the server never runs the tool a second time
(counted on the server's side).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from dbos import DBOS, DBOSClient

from swarmcore import Agent, Swarm
from swarmcore.engines.dbos import DBOSEngine, RecordSerializer
from swarmcore.mcp import MCPServer
from swarmcore.testing import (
    Call,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
    TemporaryPostgres,
)
from tests.integration.test_dbos_engine import recovered, script, spawn, until, who_asked
from tests.integration.test_mcp_tasks import lines
from tests.integration.test_mcp_tasks import works_url as works_url  # the fixture


async def steps(url: str, workflow: str) -> list[str]:
    client = await asyncio.to_thread(
        lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
    )
    try:
        return [s["function_name"] for s in await client.list_workflow_steps_async(workflow)]
    finally:
        await asyncio.to_thread(client.destroy)


async def test_the_task_handle_is_a_recorded_step_and_the_task_is_followed_after_it(
    engine: DBOSEngine, works_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([Reply(tool_calls=[Call("crunch", {"seconds": 0.3})]), "done"])
    agent = Agent("a", "x", model=model.model, tools=[MCPServer.http(works_url, name="works")])
    result = await Swarm(agent, engine=engine).run("crunch", run_id="task")

    (call,) = result["a"].tool_calls
    assert json.loads(call.result) == {"crunched": 300}
    assert lines(tmp_path / "runs") == ["start", "done"]
    # The first tool step ends with the handle; the second follows the task to its result.
    assert await steps(engine.database_url, "task/a/1") == [
        "model",
        "tool:crunch",
        "tool:crunch",
        "model",
    ]


async def test_a_worker_killed_while_it_polls_resumes_the_same_task(
    postgres: TemporaryPostgres,
    processes: list[subprocess.Popen[str]],
    works_url: str,
    tmp_path: Path,
) -> None:
    url, runs = postgres.new_database(), tmp_path / "runs"

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a" and "crunch" not in request.called_tools:
            return Reply.tool("crunch", seconds=4)
        return Reply(text=f"{who} finished\n<summary>{who} finished</summary>")

    with MockOpenAIServer(responder=answer) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_MCP_URL": works_url}
        await asyncio.to_thread(DBOS.migrate, url)
        first = spawn(processes, script("run", url), env, stderr=subprocess.DEVNULL)

        def recorded() -> bool:  # the handle's step is written: the worker polls now
            done = asyncio.run(steps(url, "killed/a/1"))
            return done.count("tool:crunch") >= 1

        await asyncio.to_thread(until, lambda: lines(runs) == ["start"], "the task", first)
        await asyncio.to_thread(until, recorded, "the recorded task handle", first)
        first.kill()  # SIGKILL while the worker polls the task
        first.communicate()
        assert lines(runs) == ["start"]

        context = await recovered(processes, url, env)
        assert context["a"] == "a finished"
        assert lines(runs) == ["start", "done"]  # one task, never a second call of the tool
        assert who_asked(server)["a"] == 2  # a's first model call was not made again
