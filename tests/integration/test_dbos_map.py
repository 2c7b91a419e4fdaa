"""``swarm.map`` on the DBOS engine: one durable run per input, keyed, collected in input order."""

from __future__ import annotations

import pytest

from swarmcore import Agent, Flow, MapProgress, Swarm, SwarmResult
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.errors import ModelError, UserError
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply


def two_step(model: str) -> Flow:
    return Agent("a", "a reads.", model=model) >> Agent("b", "b writes.", model=model)


def answers() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        task = str(request.messages[1]["content"])
        if who == "b" and "boom" in task:
            return Fail(400, "b cannot write about explosions")
        topic = task.split()[-1].strip(".")
        return Reply(text=f"{who} on {topic}\n<summary>{who} on {topic}</summary>")

    return FunctionModel(answer)


async def test_map_enqueues_one_run_per_key_and_collects_them_in_input_order(
    engine: DBOSEngine,
) -> None:
    model = answers()
    swarm = Swarm(two_step(model.model), engine=engine)
    await engine.launch(queues=[engine.queue_name(swarm)], concurrency=3)  # this process serves
    seen: list[MapProgress] = []
    tasks = ["write on alpha", "write on boom", "write on gamma", "write on alpha"]

    results = await swarm.map(tasks, key=lambda task: task.replace(" ", "-"), progress=seen.append)

    first, failed, third, fourth = results
    assert isinstance(first, SwarmResult)
    assert isinstance(third, SwarmResult)
    assert isinstance(fourth, SwarmResult)
    assert (first.run_id, third.run_id) == ("write-on-alpha", "write-on-gamma")
    assert first.output == "b on alpha"
    assert third.output == "b on gamma"
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
    again = await swarm.map(tasks, key=[t.replace(" ", "-") for t in tasks])
    assert len(model.requests) == calls
    assert [r.output if isinstance(r, SwarmResult) else type(r) for r in again] == [
        "b on alpha",
        ModelError,
        "b on gamma",
        "b on alpha",
    ]


async def test_map_refuses_a_bad_key_before_anything_is_enqueued(engine: DBOSEngine) -> None:
    model = answers()
    swarm = Swarm(two_step(model.model), engine=engine)
    with pytest.raises(UserError, match="key has 1 run ids but there are 2 tasks"):
        await swarm.map(["one", "two"], key=["only-one"])
    with pytest.raises(UserError, match="a run id is a non-empty string without '/'"):
        await swarm.map(["one", "two"], key=lambda task: f"a/{task}")
    assert model.requests == []


async def test_a_key_needs_a_durable_engine() -> None:
    swarm = Swarm(two_step(answers().model))
    with pytest.raises(UserError, match=r"map\(key=\.\.\.\) needs a durable engine"):
        await swarm.map(["one"], key=["one"])
