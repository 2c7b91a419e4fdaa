"""The DBOS engine against a real PostgreSQL: same results as in process, durable across processes.

The session fixture ``postgres`` starts one server; each test gets a database
of its own, so DBOS state never leaks between tests. DBOS is one instance per
process: each in-process test launches a fresh engine and shuts it down.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, DBOSClient, EnqueueOptions
from pydantic import BaseModel

from swarmcore import Agent, Flow, Swarm, SwarmResult, loop, route
from swarmcore.durable import idempotency_key
from swarmcore.engines import Engine
from swarmcore.engines.dbos import (
    AGENT_WORKFLOW,
    RUN_WORKFLOW,
    AgentMisplaced,
    DBOSEngine,
    RecordedOutcome,
    RecordSerializer,
    flow_version,
)
from swarmcore.errors import ModelError
from swarmcore.testing import (
    Call,
    Fail,
    FunctionModel,
    MockOpenAIServer,
    OfflineModel,
    RecordedRequest,
    Reply,
    TemporaryPostgres,
)
from tests.integration._dbos_flow import build

HERE = Path(__file__).parent
FLOW_FILE = HERE / "_dbos_flow.py"
WAIT = 90.0
_NONCE = re.compile(r'id="[0-9a-f]{8,}"')


def same_text(text: str) -> str:
    """``text`` with the context frames' per-run random ids blanked out."""
    return _NONCE.sub('id="-"', text)


def outline(result: SwarmResult) -> dict[str, Any]:
    """What a run produced, free of timings and random ids, to compare two runs."""
    return {
        "output": same_text(result.output),
        "context": {name: same_text(text) for name, text in result.context.items()},
        "agents": sorted(r.agent_name for r in result.history),
        "first": result.history[0].agent_name,
        "last": result.history[-1].agent_name,
        "calls": {
            r.agent_name: (
                len(r.llm_calls),
                [(c.tool_name, c.arguments, same_text(c.result or "")) for c in r.tool_calls],
                r.parsed.model_dump() if isinstance(r.parsed, BaseModel) else r.parsed,
            )
            for r in result.history
        },
        "decisions": [(d.kind, d.step, d.value, d.by) for d in result.decisions],
        "failures": [(f.agent_name, f.error_type, f.message, f.cancelled) for f in result.failures],
    }


async def client_for(url: str) -> DBOSClient:
    return await asyncio.to_thread(
        lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
    )


# --- in process: the engine gives what the in-process engine gives -----------------------


def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def diamond(model: str, tool: Callable[..., Any]) -> Flow:
    a = Agent("a", "a gathers the facts.", model=model, tools=[tool])
    b, c, d = (Agent(n, f"{n} does its part.", model=model) for n in "bcd")
    return a >> (b | c) >> d


async def test_a_diamond_with_a_tool_runs_as_in_process_with_agents_as_workflows(
    engine: DBOSEngine,
) -> None:
    tool_calls: list[str] = []

    def counted(text: str) -> int:
        """Count the words in a text."""
        tool_calls.append(text)
        return word_count(text)

    here, there = OfflineModel(), OfflineModel()  # models live while referenced
    expected = await Swarm(diamond(here.model, counted)).run("plan the trip")
    assert len(tool_calls) == 1
    result = await Swarm(diamond(there.model, counted), engine=engine).run(
        "plan the trip", run_id="diamond"
    )
    assert len(tool_calls) == 2  # the engine called the tool once too
    assert outline(result) == outline(expected)
    assert result.run_id == "diamond"

    client = await client_for(engine.database_url)
    try:
        workflows = await client.list_workflows_async(workflow_id_prefix="diamond")
        by_id = {w.workflow_id: w for w in workflows}
        assert set(by_id) == {"diamond", "diamond/a/1", "diamond/b/1", "diamond/c/1", "diamond/d/1"}
        assert {w.status for w in workflows} == {"SUCCESS"}
        assert by_id["diamond"].name == RUN_WORKFLOW
        assert {by_id[f"diamond/{n}/1"].name for n in "abcd"} == {AGENT_WORKFLOW}
        for agent in result.history:
            steps = await client.list_workflow_steps_async(f"diamond/{agent.agent_name}/1")
            names = [s["function_name"] for s in steps]
            assert names[0] == "model"
            assert names[-1] == "model"
            assert Counter(names) == Counter(
                ["model"] * len(agent.llm_calls) + [f"tool:{c.tool_name}" for c in agent.tool_calls]
            )
        a_steps = await client.list_workflow_steps_async("diamond/a/1")
        assert [s["function_name"] for s in a_steps] == ["model", "tool:counted", "model"]
    finally:
        await asyncio.to_thread(client.destroy)


class Verdict(BaseModel):
    title: str
    score: int


async def test_an_auto_mode_run_on_the_engine_sends_what_it_sends_in_process(
    engine: DBOSEngine,
) -> None:
    """Auto mode's budgeted hints reach each agent the same way in an agent workflow."""
    here, there = OfflineModel(), OfflineModel()
    # 150 tokens: too few for the outputs in full, so the budget shows in every hint.
    settings: dict[str, Any] = {"context_mode": "auto", "context_budget": 150}
    expected = await Swarm(diamond(here.model, word_count), **settings).run("plan the trip")
    result = await Swarm(diamond(there.model, word_count), engine=engine, **settings).run(
        "plan the trip", run_id="auto-diamond"
    )
    assert outline(result) == outline(expected)
    # The same prompts (b and c, in parallel, may ask in either order).
    assert sorted(r.system for r in there.requests) == sorted(r.system for r in here.requests)
    default = OfflineModel()  # ...and not what the default budget would send
    await Swarm(diamond(default.model, word_count), context_mode="auto").run("plan the trip")
    assert sorted(r.system for r in default.requests) != sorted(r.system for r in here.requests)


def control_flow(model: str) -> Flow:
    def agent(name: str, **options: Any) -> Agent:
        return Agent(name, f"{name} does its part.", model=model, **options)

    chosen = route({"quick": agent("answerer"), "deep": agent("researcher")}, by=agent("router"))
    drafting = loop(agent("writer"), until=agent("judge"), max_iterations=3)
    return agent("intake") >> chosen >> drafting >> agent("grader", output_type=Verdict)


def control_model() -> FunctionModel:
    """Router picks ``deep``; the judge approves the second draft; the grader grades."""
    judged: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "router":
            return Reply(text='{"branch": "deep", "reason": "it needs research"}')
        if who == "judge":
            judged.append(who)
            done = "true" if len(judged) == 2 else "false"
            return Reply(text=f'{{"done": {done}, "feedback": "tighter, please"}}')
        if who == "grader":
            return Reply(text='{"title": "the answer", "score": 7}')
        return Reply(text=f"{who} wrote this\n<summary>{who} summary</summary>")

    return FunctionModel(answer)


async def test_a_route_a_loop_and_structured_output_behave_as_in_process(
    engine: DBOSEngine,
) -> None:
    result, again = await control_flow_behaves_as_in_process(engine, "control")
    assert [r.agent_name for r in again.history] == [r.agent_name for r in result.history]


async def control_flow_behaves_as_in_process(
    engine: Engine, run_id: str
) -> tuple[SwarmResult, SwarmResult]:
    """A route, a loop and structured output on ``engine``: the same outcome as in process.

    Then the same run id again: the outcome the engine recorded, output_type values
    rebuilt, with no model call. Shared by every durable engine's tests; both results.
    """
    here = control_model()
    expected = await Swarm(control_flow(here.model)).run("answer the ticket")
    model = control_model()
    result = await Swarm(control_flow(model.model), engine=engine).run(
        "answer the ticket", run_id=run_id
    )
    assert outline(result) == outline(expected)
    assert [r.agent_name for r in result.history] == [
        "intake",
        "router",
        "researcher",
        "writer#1",
        "judge#1",
        "writer#2",
        "judge#2",
        "grader",
    ]
    assert result["grader"].parsed == Verdict(title="the answer", score=7)
    assert [(d.kind, d.value) for d in result.decisions] == [("route", "deep"), ("loop", "2")]
    assert len(model.requests) == 8  # one call per agent run, answerer never asked
    assert result["router"].parsed.branch == "deep"  # the router's own type, not a dict
    with pytest.warns(RecordedOutcome, match=r"returned the outcome recorded for it \(succeeded\)"):
        again = await Swarm(control_flow(model.model), engine=engine).run(
            "answer the ticket", run_id=run_id
        )
    assert len(model.requests) == 8
    assert again["grader"].parsed == Verdict(title="the answer", score=7)
    assert again.context == result.context
    return result, again


async def test_the_same_run_id_again_returns_the_recorded_result_without_a_model_call(
    engine: DBOSEngine,
) -> None:
    model = OfflineModel()
    first = await Swarm(diamond(model.model, word_count), engine=engine).run(
        "plan the trip", run_id="again"
    )
    calls = len(model.requests)
    assert calls > 0
    with pytest.warns(RecordedOutcome, match="Run 'again' was already in the engine's database"):
        second = await Swarm(diamond(model.model, word_count), engine=engine).run(
            "plan the trip", run_id="again"
        )
    assert len(model.requests) == calls
    assert second.run_id == "again"
    assert second.output == first.output  # the very same run, random ids included
    assert second.context == first.context


async def test_an_agent_workflow_taken_by_a_process_not_walking_its_run_is_run_again(
    postgres: TemporaryPostgres,
) -> None:
    # DBOS hands a dead worker's workflows to any live worker of the flow: an agent
    # workflow can land where no walk reaches it. Made here with DBOS's own client.
    url = postgres.new_database()
    engine = DBOSEngine(url, agent_wait=0.5)
    try:
        model = OfflineModel()
        swarm = Swarm(diamond(model.model, word_count), engine=engine)
        await asyncio.to_thread(DBOS.migrate, url)
        client = await client_for(url)
        options: EnqueueOptions = {
            "queue_name": engine.queue_name(swarm),
            "workflow_name": AGENT_WORKFLOW,
            "workflow_id": "lost/a/1",
            "app_version": flow_version(swarm),
            "application_name": engine.app_name,
        }
        await client.enqueue_async(options, "lost/a/1")
        await engine.launch(queues=[engine.queue_name(swarm)])
        stray = await client.retrieve_workflow_async("lost/a/1")
        deadline = time.monotonic() + WAIT
        while (status := await stray.get_status()).status != "ERROR":
            assert time.monotonic() < deadline, status.status
            await asyncio.sleep(0.1)
        assert isinstance(status.error, AgentMisplaced)
        assert model.requests == []  # the stray ran nothing

        result = await swarm.run("plan the trip", run_id="lost")

        assert [r.agent_name for r in result.history] == ["a", "b", "c", "d"]
        again = await (await client.retrieve_workflow_async("lost/a/1.2")).get_status()
        assert again.status == "SUCCESS"
        await asyncio.to_thread(client.destroy)
    finally:
        await engine.shutdown()


async def test_a_tool_gets_an_idempotency_key_on_the_engine_and_none_in_process(
    engine: DBOSEngine,
) -> None:
    key = await idempotency_key_on(engine, "pay")
    assert key is not None
    assert key.startswith("pay/a/1/")  # its step's place in the agent's workflow


async def idempotency_key_on(engine: Engine, run_id: str) -> str | None:
    """The idempotency key a tool of run ``run_id`` on ``engine`` is given (None in process)."""
    keys: list[str | None] = []

    def charge(customer: str) -> str:
        """Charge a customer.

        Args:
            customer: Who.
        """
        keys.append(idempotency_key())
        return "charged"

    model = OfflineModel()
    flow = Agent("a", "a charges.", model=model.model, tools=[charge])
    await Swarm(flow).run("charge Ada")
    await Swarm(flow, engine=engine).run("charge Ada", run_id=run_id)
    assert keys[0] is None  # in process: nothing to key a retry by
    return keys[1]


def failing_flow(model: str) -> Flow:
    a, b, c = (Agent(n, f"{n} does its part.", model=model) for n in "abc")
    return a >> b >> c


def failing_model() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "b":
            return Fail(400, "b's request is malformed")
        return Reply(text=f"{who} finished\n<summary>{who} summary</summary>")

    return FunctionModel(answer)


async def test_a_failing_agent_fails_the_run_as_in_process(engine: DBOSEngine) -> None:
    await failing_run_fails_as_in_process(engine, "failing")


async def failing_run_fails_as_in_process(engine: Engine, run_id: str) -> None:
    """A failing agent fails the run on ``engine`` as in process, partials kept; then the
    same run id again gives the recorded error (as JSON) with no model call."""
    model = failing_model()
    with pytest.raises(ModelError) as in_process:
        await Swarm(failing_flow(model.model)).run("do it")
    model.requests.clear()
    with pytest.raises(ModelError) as on_engine:
        await Swarm(failing_flow(model.model), engine=engine).run("do it", run_id=run_id)
    expected, error = in_process.value, on_engine.value
    assert str(error) == str(expected)
    assert (error.agent_name, error.status_code, error.retryable) == ("b", 400, False)
    assert (expected.agent_name, expected.status_code) == ("b", 400)
    assert error.partial is not None
    assert expected.partial is not None
    assert error.partial.run_id == run_id
    assert list(error.partial.context) == ["a"]
    assert outline(error.partial) == outline(expected.partial)
    assert [f.agent_name for f in error.partial.failures] == ["b"]
    assert [r.system.split()[0] for r in model.requests] == ["a", "b"]  # c never ran

    # Again under the same id: the error the engine recorded, with no model call.
    with (
        pytest.raises(ModelError) as recorded,
        pytest.warns(RecordedOutcome, match=r"recorded for it \(failed\)"),
    ):
        await Swarm(failing_flow(model.model), engine=engine).run("do it", run_id=run_id)
    again = recorded.value
    assert again is not error
    assert (str(again), again.agent_name, again.status_code) == (str(error), "b", 400)
    assert again.partial is not None
    assert outline(again.partial) == outline(error.partial)
    assert len(model.requests) == 2


# --- across processes: kill -9 and recovery; enqueue and a worker ------------------------


def who_asked(server: MockOpenAIServer) -> Counter[str]:
    return Counter(r.system.split()[0] for r in list(server.requests))


def responder(slow_b: threading.Event) -> Callable[[RecordedRequest], Reply]:
    """``a`` calls ``mark`` once, then answers; ``b`` answers (after an hour while ``slow_b``)."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a":
            if "mark" not in request.called_tools:
                return Reply.tool("mark", note="a's side effect")
            return Reply(text="a found the facts\n<summary>facts</summary>")
        return Reply(text="b wrote the answer", delay=3600 if slow_b.is_set() else 0)

    return answer


def until(
    check: Callable[[], bool], what: str, process: subprocess.Popen[str] | None = None
) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def script(mode: str, url: str) -> list[str]:
    """``_dbos_flow.py`` running (``run``) or recovering (``recover``) run ``killed`` as w1."""
    return [str(FLOW_FILE), mode, url, "w1", "killed"]


def spawn(
    processes: list[subprocess.Popen[str]], args: list[str], env: dict[str, str], **kwargs: Any
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        text=True,
        **kwargs,
    )
    processes.append(process)
    return process


async def recovered(
    processes: list[subprocess.Popen[str]], url: str, env: dict[str, str]
) -> dict[str, str]:
    """The context of the killed run, finished by a fresh process that recovers it."""
    restart = spawn(processes, script("recover", url), env)
    out, _ = await asyncio.to_thread(restart.communicate, timeout=WAIT)
    assert restart.returncode == 0
    return json.loads(out.strip().splitlines()[-1])


FINISHED = {"a": "a found the facts", "b": "b wrote the answer"}


async def test_a_run_killed_mid_agent_finishes_on_restart_without_repeating_finished_work(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, marker = postgres.new_database(), tmp_path / "marks.txt"
    slow_b = threading.Event()
    slow_b.set()
    with MockOpenAIServer(responder=responder(slow_b)) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_MARKER": str(marker)}
        first = spawn(processes, script("run", url), env, stderr=subprocess.DEVNULL)
        # a finished (its workflow's result is recorded) before b's first call.
        await asyncio.to_thread(until, lambda: who_asked(server)["b"] == 1, "b's call", first)
        first.kill()  # SIGKILL: no cleanup, b's call in flight
        first.communicate()
        assert who_asked(server) == {"a": 2, "b": 1}
        assert marker.read_text().splitlines() == ["a's side effect"]

        slow_b.clear()
        assert await recovered(processes, url, env) == FINISHED
        # a's two model calls and its tool call were not made again; b's call was.
        assert who_asked(server) == {"a": 2, "b": 2}
        assert marker.read_text().splitlines() == ["a's side effect"]


async def test_a_recorded_responses_reply_replays_on_restart_and_its_reasoning_goes_back(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    # a's first model call (a Responses reply with encrypted reasoning and a tool call) and
    # its tool call are recorded steps; the process dies in a's second call.
    url, marker = postgres.new_database(), tmp_path / "marks.txt"
    slow_a = threading.Event()
    slow_a.set()

    def answer(request: RecordedRequest) -> Reply:
        if request.system.split()[0] == "b":
            return Reply(text="b wrote the answer")
        if "mark" not in request.called_tools:
            return Reply(
                tool_calls=(Call("mark", {"note": "once"}, id="m1"),), encrypted_reasoning="enc-a"
            )
        return Reply(text="a found the facts", delay=3600 if slow_a.is_set() else 0)

    with MockOpenAIServer(responder=answer) as server:
        env = {
            "SWARMCORE_TEST_API_BASE": server.url,
            "SWARMCORE_TEST_MARKER": str(marker),
            "SWARMCORE_TEST_API": "responses",
        }
        first = spawn(processes, script("run", url), env, stderr=subprocess.DEVNULL)
        await asyncio.to_thread(
            until, lambda: who_asked(server)["a"] == 2, "a's second call", first
        )
        first.kill()
        first.communicate()
        slow_a.clear()
        assert await recovered(processes, url, env) == FINISHED
    # a's first call replayed from its record, without a request; the tool did not run again.
    assert who_asked(server) == {"a": 3, "b": 1}
    assert marker.read_text().splitlines() == ["once"]
    assert set(server.paths) == {"/v1/responses"}
    # The recorded reply's encrypted reasoning went back with a's call after the restart.
    again: list[dict[str, Any]] = server.raw_bodies[2]["input"]
    assert [i["encrypted_content"] for i in again if i.get("type") == "reasoning"] == ["enc-a"]


async def test_enqueued_runs_are_served_by_a_worker_once_per_run_id_until_sigterm(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, marker, log = postgres.new_database(), tmp_path / "marks.txt", tmp_path / "worker.log"
    with MockOpenAIServer(responder=responder(threading.Event())) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_MARKER": str(marker)}
        command = ["-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow", "--database-url", url]
        with log.open("w") as stderr:
            worker = spawn(processes, [*command, "--worker-id", "w1"], env, stderr=stderr)
        # The worker's launch creates DBOS's database: a client cannot (DBOSClient runs no
        # migrations), so a deployment starts its workers first.
        serving = "worker w1 serving"
        await asyncio.to_thread(until, lambda: serving in log.read_text(), serving, worker)
        # This process only enqueues (a client): it never launches DBOS.
        client_engine = DBOSEngine(url, worker_id="client")
        swarm = Swarm(build(server.url, marker), engine=client_engine)
        try:
            handle = await swarm.enqueue("write the answer", run_id="job-1")
            again = await swarm.enqueue("write the answer", run_id="job-1")
            assert await handle.status() in {"ENQUEUED", "PENDING", "SUCCESS"}
            result = await asyncio.wait_for(handle.result(), WAIT)
            assert result.run_id == "job-1"
            assert result.context == {"a": "a found the facts", "b": "b wrote the answer"}
            assert await handle.status() == "SUCCESS"
            assert (await asyncio.wait_for(again.result(), WAIT)).context == result.context
            # Enqueued twice, run once: a's two calls, its tool call, b's one call.
            assert who_asked(server) == {"a": 2, "b": 1}
            assert marker.read_text().splitlines() == ["a's side effect"]
            late = await swarm.enqueue("write the answer", run_id="job-1")
            assert (await asyncio.wait_for(late.result(), WAIT)).context == result.context
            assert who_asked(server) == {"a": 2, "b": 1}
            runs = await client_engine.handle("job-1")
            assert await runs.status() == "SUCCESS"
        finally:
            await client_engine.shutdown()
        worker.send_signal(signal.SIGTERM)
        await asyncio.to_thread(worker.communicate, timeout=WAIT)
        assert worker.returncode == 0
        assert "worker w1 stopped; runs in flight stay pending" in log.read_text()
