"""An MCP server's question waits durably on the DBOS engine, like an approval.

With no callback to answer it, the question is listed with the run's pending
approvals and answered with ``swarm.decide`` (or ``swarmcore runs approve``)
from any process; a worker killed while it waits leaves it waiting, and the
server's tool body runs once, after the answer (counted on the server's side).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from dbos import DBOS, DBOSClient

from swarmcore import Agent, Approval, Swarm, UserError
from swarmcore.engines.dbos import DBOSEngine, RecordSerializer
from swarmcore.engines.dbos._approvals import waiting
from swarmcore.mcp import MCPServer
from swarmcore.testing import (
    Call,
    FunctionModel,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
    TemporaryPostgres,
)
from tests.integration.test_dbos_approvals import eventually
from tests.integration.test_dbos_engine import WAIT, recovered, script, spawn, until, who_asked

SERVER = Path(__file__).parent / "_mcp_elicit_server.py"


def booking_model() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a" and "book" not in request.called_tools:
            return Reply.tool("book", room="12")
        last = str(request.messages[-1].get("content") or "")
        return Reply(text=f"{who} done: {last[:80]}\n<summary>{who} done</summary>")

    return FunctionModel(answer)


def desk(bookings: Path) -> MCPServer:
    env = {"MCP_TEST_BOOKINGS": str(bookings)}
    return MCPServer.stdio(sys.executable, [str(SERVER), "stdio"], env=env, name="desk")


async def test_a_servers_question_waits_for_a_decision_and_the_tool_runs_once(
    engine: DBOSEngine, tmp_path: Path
) -> None:
    bookings = tmp_path / "bookings"
    model = booking_model()
    swarm = Swarm(Agent("a", "a books.", model=model.model, tools=[desk(bookings)]), engine=engine)
    running = asyncio.create_task(swarm.run("book room 12", run_id="ask"))

    (request,) = await eventually(lambda: swarm.pending_approvals("ask"), "the question")
    assert request.elicitation is not None
    assert (request.elicitation.server, request.elicitation.mode) == ("desk", "form")
    assert request.tool_name == "book"
    assert request.call_id.endswith("#elicitation1")
    assert not running.done()
    assert not bookings.exists()  # the tool body waits for its answer

    with pytest.raises(UserError, match="does not fit its form"):
        await swarm.decide("ask", request.call_id, Approval.edit({"name": "Ada"}))
    await swarm.decide("ask", request.call_id, Approval.edit({"name": "Ada", "nights": 2}))
    result = await asyncio.wait_for(running, WAIT)

    assert bookings.read_text() == "12 Ada\n"
    (call,) = result["a"].tool_calls
    assert call.result == "booked 12 for Ada, 2 nights"
    (asked,) = call.elicitations
    assert (asked.action, asked.answered_by) == ("accept", "decide")
    assert json.loads(asked.content or "") == {"name": "Ada", "nights": 2}
    assert await swarm.pending_approvals("ask") == []


async def test_a_declined_question_goes_back_to_the_server_with_its_reason(
    engine: DBOSEngine, tmp_path: Path
) -> None:
    bookings = tmp_path / "bookings"
    model = booking_model()
    swarm = Swarm(Agent("a", "a books.", model=model.model, tools=[desk(bookings)]), engine=engine)
    running = asyncio.create_task(swarm.run("book room 12", run_id="no"))
    (request,) = await eventually(lambda: swarm.pending_approvals("no"), "the question")
    await swarm.decide("no", request.call_id, Approval.deny("fully booked"))
    result = await asyncio.wait_for(running, WAIT)
    assert result["a"].tool_calls[0].result == "not booked (decline): fully booked"
    assert not bookings.exists()


async def test_a_question_waiting_survives_kill_9_and_the_tool_runs_once(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, bookings = postgres.new_database(), tmp_path / "bookings"

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a" and "book" not in request.called_tools:
            return Reply.tool("book", room="12")
        return Reply(text=f"{who} finished\n<summary>{who} finished</summary>")

    with MockOpenAIServer(responder=answer) as server:
        env = {
            "SWARMCORE_TEST_API_BASE": server.url,
            "SWARMCORE_TEST_MCP": str(SERVER),
            "MCP_TEST_BOOKINGS": str(bookings),
        }
        await asyncio.to_thread(DBOS.migrate, url)
        client = await asyncio.to_thread(
            lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
        )
        first = spawn(processes, script("run", url), env, stderr=subprocess.DEVNULL)
        try:
            await asyncio.to_thread(
                until, lambda: bool(waiting(client, "killed")), "the question", first
            )
            first.kill()  # SIGKILL while the question waits (its MCP server dies with it)
            first.communicate()
            (request,) = await asyncio.to_thread(waiting, client, "killed")
        finally:
            await asyncio.to_thread(client.destroy)
        assert request.elicitation is not None
        assert request.tool_name == "book"
        assert not bookings.exists()

        # Answered while no worker runs: the answer waits in the database.
        engine = DBOSEngine(url)
        try:
            swarm = Swarm(Agent("a", "x", model="openai/x"), engine=engine)
            await swarm.decide(
                "killed", request.call_id, Approval.edit({"name": "Bo", "nights": 1})
            )
        finally:
            await engine.shutdown()

        context = await recovered(processes, url, env)
        assert context["a"] == "a finished"
        assert bookings.read_text() == "12 Bo\n"  # the server's tool body ran once
        assert who_asked(server)["a"] == 2  # a's first model call was not made again


async def test_parallel_calls_questions_wait_one_at_a_time_in_call_order(
    engine: DBOSEngine, tmp_path: Path
) -> None:
    bookings = tmp_path / "bookings"
    model = ScriptedModel(
        [Reply(tool_calls=[Call("book", {"room": "1"}), Call("book", {"room": "2"})]), "done"]
    )
    agent = Agent("a", "a books.", model=model.model, tools=[desk(bookings)])
    swarm = Swarm(agent, engine=engine)
    running = asyncio.create_task(swarm.run("book two rooms", run_id="two"))

    names = iter(["Ada", "Bo"])
    for _ in range(2):
        (request,) = await eventually(lambda: swarm.pending_approvals("two"), "a question")
        await swarm.decide(
            "two", request.call_id, Approval.edit({"name": next(names), "nights": 1})
        )
        await eventually(lambda r=request: _gone(swarm, r.call_id), "the question to be answered")
    result = await asyncio.wait_for(running, WAIT)

    assert [c.result for c in result["a"].tool_calls] == [
        "booked 1 for Ada, 1 nights",
        "booked 2 for Bo, 1 nights",
    ]
    assert bookings.read_text().splitlines() == ["1 Ada", "2 Bo"]


async def _gone(swarm: Swarm, call_id: str) -> bool:
    return all(r.call_id != call_id for r in await swarm.pending_approvals("two"))
