"""Approvals that wait, on the DBOS engine: a run parks until someone decides, from anywhere.

A run with no approval callback waits at a call to a tool that requires
approval; ``swarm.decide`` (or ``swarmcore runs approve``) from any process
sends the decision, and the wait survives a kill -9 of the worker.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from dbos import DBOS, DBOSClient

from swarmcore import Agent, Approval, ApprovalRequest, Flow, Swarm, function_tool
from swarmcore.engines.dbos import DBOSEngine, RecordSerializer
from swarmcore.engines.dbos._approvals import waiting
from swarmcore.errors import UserError
from swarmcore.testing import (
    FunctionModel,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    TemporaryPostgres,
)
from tests.integration.test_dbos_engine import (
    FINISHED,
    WAIT,
    recovered,
    responder,
    script,
    spawn,
    until,
    who_asked,
)

T = TypeVar("T")


def payer(paid: list[int]) -> Callable[[int], str]:
    def pay(amount: int) -> str:
        """Pay the invoice.

        Args:
            amount: Euros to pay.
        """
        paid.append(amount)
        return f"paid {amount}"

    return pay


def paying_flow(model: str, paid: list[int]) -> Flow:
    pay = function_tool(payer(paid), requires_approval=True)
    return Agent("a", "a pays the invoice.", model=model, tools=[pay]) >> Agent(
        "b", "b reports.", model=model
    )


def paying_model() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a" and "pay" not in request.called_tools:
            return Reply.tool("pay", amount=120)
        last = str(request.messages[-1].get("content") or "")
        return Reply(text=f"{who} done: {last[:80]}\n<summary>{who} done</summary>")

    return FunctionModel(answer)


async def eventually(check: Callable[[], Awaitable[T]], what: str) -> T:
    deadline = time.monotonic() + WAIT
    while not (found := await check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return found


async def test_a_run_with_no_callback_waits_until_someone_edits_the_call(
    engine: DBOSEngine,
) -> None:
    paid: list[int] = []
    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine)
    running = asyncio.create_task(swarm.run("pay the invoice", run_id="pay"))

    requests = await eventually(lambda: swarm.pending_approvals("pay"), "the approval request")
    assert [(r.agent_name, r.tool_name, r.arguments) for r in requests] == [
        ("a", "pay", {"amount": 120})
    ]
    assert not running.done()
    assert paid == []  # nothing runs before the decision
    with pytest.raises(UserError, match=r"no call 'nope' waiting for approval \(waiting: "):
        await swarm.decide("pay", "nope", True)

    decided = await swarm.decide("pay", requests[0].call_id, Approval.edit({"amount": 100}))
    result = await asyncio.wait_for(running, WAIT)

    assert decided == requests[0]
    assert paid == [100]
    (call,) = result["a"].tool_calls
    assert (call.approval, json.loads(call.arguments), call.result) == (
        "edited",
        {"amount": 100},
        "paid 100",
    )
    assert [r.agent_name for r in result.history] == ["a", "b"]
    assert await swarm.pending_approvals("pay") == []
    with pytest.raises(UserError, match="no call"):  # decided once: nothing waits now
        await swarm.decide("pay", requests[0].call_id, True)


async def test_a_denied_call_never_runs_and_the_model_is_told_why(engine: DBOSEngine) -> None:
    paid: list[int] = []
    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine)
    running = asyncio.create_task(swarm.run("pay the invoice", run_id="deny"))
    (request,) = await eventually(lambda: swarm.pending_approvals("deny"), "the request")
    await swarm.decide("deny", request.call_id, Approval.deny("over the limit"))
    result = await asyncio.wait_for(running, WAIT)

    assert paid == []
    assert result["a"].tool_calls[0].approval == "denied"
    told = [r for r in model.requests if r.system.startswith("a") and "pay" in r.called_tools]
    assert "over the limit" in str(told[-1].messages[-1]["content"])


async def test_a_callback_on_the_engine_is_asked_once_and_its_answer_recorded(
    engine: DBOSEngine,
) -> None:
    paid: list[int] = []
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine, approve=approve)
    result = await swarm.run("pay the invoice", run_id="callback")
    assert paid == [120]
    assert len(asked) == 1
    assert result["a"].tool_calls[0].approval == "allowed"
    client = await asyncio.to_thread(
        lambda: DBOSClient(system_database_url=engine.database_url, serializer=RecordSerializer())
    )
    try:
        steps = await client.list_workflow_steps_async("callback/a/1")
    finally:
        await asyncio.to_thread(client.destroy)
    # The callback's answer is a step of its own: a replay after a crash does not ask again.
    assert [s["function_name"] for s in steps] == ["model", "approval", "tool:pay", "model"]


async def test_deciding_needs_a_durable_engine() -> None:
    swarm = Swarm(paying_flow(paying_model().model, []))
    with pytest.raises(UserError, match=r"decide\(\) needs a durable engine"):
        await swarm.decide("run", "call", True)
    with pytest.raises(UserError, match=r"pending_approvals\(\) needs a durable engine"):
        await swarm.pending_approvals("run")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarmcore.cli", "runs", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


async def test_an_approval_wait_survives_kill_9_and_is_decided_from_the_cli(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, marker = postgres.new_database(), tmp_path / "marks.txt"
    with MockOpenAIServer(responder=responder(threading.Event())) as server:
        env = {
            "SWARMCORE_TEST_API_BASE": server.url,
            "SWARMCORE_TEST_MARKER": str(marker),
            "SWARMCORE_TEST_APPROVAL": "1",
        }
        await asyncio.to_thread(DBOS.migrate, url)  # a client needs DBOS's tables
        client = await asyncio.to_thread(
            lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
        )
        first = spawn(processes, script("run", url), env, stderr=subprocess.DEVNULL)
        try:

            def parked() -> bool:
                return bool(waiting(client, "killed"))

            await asyncio.to_thread(until, parked, "the run to wait for approval", first)
            first.kill()  # SIGKILL while the run waits
            first.communicate()
            (request,) = await asyncio.to_thread(waiting, client, "killed")
        finally:
            await asyncio.to_thread(client.destroy)
        assert (request.agent_name, request.tool_name) == ("a", "mark")
        assert who_asked(server) == {"a": 1}
        assert not marker.exists()

        shown = await asyncio.to_thread(cli, "show", "killed", "--database-url", url)
        assert shown.returncode == 0, shown.stderr
        assert "waiting for approval" in shown.stdout
        assert f"{request.call_id}  a: mark(" in shown.stdout
        # Decided while no worker runs it: the message waits in the database.
        decided = await asyncio.to_thread(
            cli,
            "approve",
            "killed",
            request.call_id,
            "--edit",
            '{"note": "approved"}',
            "--database-url",
            url,
        )
        assert decided.returncode == 0, decided.stderr
        assert decided.stdout.startswith("edit: mark")

        assert await recovered(processes, url, env) == FINISHED
        # a's first call (made before the kill) was not made again; the tool ran once.
        assert who_asked(server) == {"a": 2, "b": 1}
        assert marker.read_text().splitlines() == ["approved"]

        unknown = await asyncio.to_thread(cli, "approve", "killed", "nope", "--database-url", url)
        assert unknown.returncode == 2
        assert "has no call 'nope' waiting for approval" in unknown.stderr
