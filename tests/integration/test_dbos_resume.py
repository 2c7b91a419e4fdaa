"""Resuming a failed run of the DBOS engine: same run id, finished agents never run again."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from dbos import DBOSClient

from swarmcore import Agent, Flow, Swarm
from swarmcore.engines.dbos import DBOSEngine, RecordedOutcome, RecordSerializer
from swarmcore.errors import ModelError, UserError
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply

WAIT = 90.0


def diamond(model: str, instructions: str = "does its part.") -> Flow:
    a, b, c, d = (Agent(n, f"{n} {instructions}", model=model) for n in "abcd")
    return a >> (b | c) >> d


class Flaky:
    """A model on which the agents named in ``failing`` fail (400) until they are removed.

    A failure comes ``fail_after`` seconds late, so a parallel sibling has surely
    finished: a failing branch cancels a sibling still in flight, which then
    (rightly) runs again on resume, and these tests count calls.
    """

    def __init__(self, *failing: str, fail_after: float = 1.5) -> None:
        self.failing = set(failing)
        self.fail_after = fail_after
        self.model = FunctionModel(self.answer)

    def answer(self, request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who in self.failing:
            return Fail(400, f"{who} is broken today", delay=self.fail_after)
        return Reply(text=f"{who} did it\n<summary>{who} did it</summary>")

    def asked(self) -> Counter[str]:
        return Counter(r.system.split()[0] for r in self.model.requests)


async def statuses(url: str, run_id: str) -> dict[str, str]:
    client = await asyncio.to_thread(
        lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
    )
    try:
        found = await client.list_workflows_async(workflow_id_prefix=run_id, load_input=False)
    finally:
        await asyncio.to_thread(client.destroy)
    return {w.workflow_id: str(w.status) for w in found}


async def test_resume_runs_only_the_failed_agent_and_what_follows_under_the_same_run_id(
    engine: DBOSEngine,
) -> None:
    flaky = Flaky("c")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError) as failed:
        await swarm.run("plan the trip", run_id="trip")
    assert failed.value.agent_name == "c"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 1}

    flaky.failing.clear()  # fixed
    result = await swarm.resume("trip")

    assert result.run_id == "trip"
    assert sorted(r.agent_name for r in result.history) == ["a", "b", "c", "d"]
    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 2, "d": 1}  # a and b were not asked again
    assert await statuses(engine.database_url, "trip") == {
        "trip": "SUCCESS",
        "trip/a/1": "SUCCESS",
        "trip/b/1": "SUCCESS",
        "trip/c/1": "ERROR",  # the first generation's failure stays on record
        "trip/c/1~1": "SUCCESS",
        "trip/d/1~1": "SUCCESS",
    }
    with pytest.raises(UserError, match="already succeeded; nothing to resume"):
        await swarm.resume("trip")

    from swarmcore.engines.dbos import DBOSHistory

    history = DBOSHistory(engine.database_url)  # what runs show and the viewer read
    try:
        record = history.get_run("trip")
    finally:
        history.close()
    assert record is not None
    assert (record.status, record.failures) == ("succeeded", [])
    (earlier,) = record.earlier  # the failure before the resume stays visible
    assert earlier.status == "failed"
    assert [(f.agent_name, f.error_type) for f in earlier.failures] == [("c", "ModelError")]
    assert "c is broken today" in earlier.failures[0].message


async def test_a_run_resumed_twice_keeps_each_generations_work(engine: DBOSEngine) -> None:
    flaky = Flaky("b", "d")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="twice")
    flaky.failing.discard("b")
    with pytest.raises(ModelError) as again:
        await swarm.resume("twice")
    assert again.value.agent_name == "d"
    flaky.failing.clear()
    result = await swarm.resume("twice")

    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 2, "c": 1, "d": 2}
    found = await statuses(engine.database_url, "twice")
    assert (found["twice/b/1~1"], found["twice/d/1~1"], found["twice/d/1~2"]) == (
        "SUCCESS",
        "ERROR",
        "SUCCESS",
    )


async def test_resume_refuses_what_it_cannot_resume(engine: DBOSEngine) -> None:
    flaky = Flaky("b")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)
    with pytest.raises(UserError, match="No run 'nothing' in the engine's database"):
        await swarm.resume("nothing")
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="other")
    changed = Swarm(diamond(flaky.model.model, "does something else."), engine=engine)
    with pytest.raises(UserError, match=r"made by flow version .* resume it with the same flow"):
        await changed.resume("other")
    assert (await statuses(engine.database_url, "other"))["other"] == "ERROR"  # left as it was


async def test_runs_resume_hands_a_failed_run_back_to_the_workers(engine: DBOSEngine) -> None:
    flaky = Flaky("c")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)
    await engine.launch(queues=[engine.queue_name(swarm)])  # this process is the worker
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="handed")
    flaky.failing.clear()

    command = [sys.executable, "-m", "swarmcore.cli", "runs", "resume", "handed"]
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, "--database-url", engine.database_url],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "run handed handed back to the workers of flow version" in done.stdout

    result = await asyncio.wait_for((await engine.handle("handed")).result(), WAIT)
    assert result.output == "d did it"
    assert flaky.asked() == {"a": 1, "b": 1, "c": 2, "d": 1}


async def test_runs_resume_refuses_a_run_no_live_worker_would_take(engine: DBOSEngine) -> None:
    flaky = Flaky("c")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)  # run here: no worker serves it
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="orphan")
    flaky.failing.clear()

    command = [sys.executable, "-m", "swarmcore.cli", "runs", "resume", "orphan"]
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, "--database-url", engine.database_url],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert done.stderr.startswith("swarmcore: error: No live worker serves flow version ")
    assert "so the run would wait for ever; it is left as it was" in done.stderr
    assert "swarmcore worker FILE:NAME --database-url URL" in done.stderr
    assert (await statuses(engine.database_url, "orphan"))["orphan"] == "ERROR"  # untouched

    result = await swarm.resume("orphan")  # still resumable, here, with its flow
    assert result.output == "d did it"


async def test_running_a_failed_run_id_again_after_a_fix_says_it_returned_the_recorded_failure(
    engine: DBOSEngine,
) -> None:
    flaky = Flaky("c")
    swarm = Swarm(diamond(flaky.model.model), engine=engine)
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="fixed")
    flaky.failing.clear()  # fixed; run again under the same id
    with (
        pytest.raises(ModelError, match="c is broken today"),
        pytest.warns(RecordedOutcome) as said,
    ):
        await swarm.run("plan the trip", run_id="fixed")
    assert flaky.asked() == {"a": 1, "b": 1, "c": 1}  # nothing ran again
    message = str(said[0].message)
    assert "returned the outcome recorded for it (failed) and ran nothing again" in message
    assert "give a new run id" in message
    assert "swarm.resume('fixed')" in message
    assert said[0].filename == __file__  # pointed at the caller's line

    anew = await swarm.run("plan the trip")  # as the warning says: a new id runs
    assert anew.output == "d did it"


# docs/durable-runs.md: "fix what failed (a model, a key, a tool) and resume". On the run
# store, the model may change; on the DBOS engine the flow version (models, instructions,
# tool names) may not, and what is outside it (settings, keys, a tool's code) may.


def on_model(flow: Flow, model: str) -> Flow:
    return flow.map_agents(
        lambda node: node.clone(model=model) if isinstance(node, Agent) else node
    )


async def test_change_the_model_and_resume_on_the_run_store(tmp_path: Path) -> None:
    broken, fixed = Flaky("c"), Flaky()
    swarm = Swarm(diamond(broken.model.model), store=tmp_path / "runs.db")
    with pytest.raises(ModelError) as failed:
        await swarm.run("plan the trip")
    assert failed.value.partial is not None
    run_id = failed.value.partial.run_id

    moved = Swarm(on_model(diamond(broken.model.model), fixed.model.model), store=swarm.store)
    result = await moved.resume(run_id)

    assert result.output == "d did it"
    assert fixed.asked() == {"c": 1, "d": 1}  # the new model ran what was left
    assert broken.asked() == {"a": 1, "b": 1, "c": 1}


async def test_change_the_model_and_resume_is_refused_on_the_dbos_engine(
    engine: DBOSEngine,
) -> None:
    broken, fixed = Flaky("c"), Flaky()
    swarm = Swarm(diamond(broken.model.model), engine=engine)
    with pytest.raises(ModelError):
        await swarm.run("plan the trip", run_id="moved")

    moved = Swarm(on_model(diamond(broken.model.model), fixed.model.model), engine=engine)
    with pytest.raises(UserError, match=r"made by flow version .* resume it with the same flow"):
        await moved.resume("moved")
    assert fixed.asked() == {}
    assert (await statuses(engine.database_url, "moved"))["moved"] == "ERROR"  # left as it was


async def test_change_the_model_settings_and_resume_on_the_dbos_engine(
    engine: DBOSEngine,
) -> None:
    asked: list[dict[str, object]] = []

    def answer(request: RecordedRequest) -> Reply | Fail:
        asked.append(request.params)
        who = request.system.split()[0]
        if who == "c" and request.params.get("temperature") == 2.5:
            return Fail(400, "temperature must be at most 2")
        return Reply(text=f"{who} did it\n<summary>{who} did it</summary>")

    model = FunctionModel(answer)
    hot = diamond(model.model).map_agents(
        lambda node: (
            node.clone(model_settings={"temperature": 2.5})
            if isinstance(node, Agent) and node.name == "c"
            else node
        )
    )
    with pytest.raises(ModelError, match="temperature must be at most 2"):
        await Swarm(hot, engine=engine).run("plan the trip", run_id="settings")

    result = await Swarm(diamond(model.model), engine=engine).resume("settings")

    assert result.output == "d did it"
    assert len(asked) == 3 + 2  # a, b, c; then c and d
