"""Swarm.resume_sync: resume from synchronous code, as run_sync runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from swarmcore import AgentError, Swarm, UserError
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply
from tests.helpers import agents


def flaky(failing: set[str]) -> tuple[FunctionModel, Counter[str]]:
    """A model on which the agents in ``failing`` fail (400) while they are in it."""
    calls: Counter[str] = Counter()

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        calls[who] += 1
        if who in failing:
            return Fail(400, f"{who} is down")
        return Reply(text=f"{who} output")

    return FunctionModel(answer), calls


def failed_run(swarm: Swarm) -> str:
    with pytest.raises(AgentError) as failed:
        swarm.run_sync("go")
    assert failed.value.partial is not None
    return failed.value.partial.run_id


def test_resume_sync_resumes_a_failed_run_from_synchronous_code(tmp_path: Path) -> None:
    failing = {"b"}
    model, calls = flaky(failing)
    a, b, c = agents(model.model, "a", "b", "c")
    swarm = Swarm(a >> b >> c, store=tmp_path / "runs.db")
    run_id = failed_run(swarm)
    assert calls == {"a": 1, "b": 1}
    failing.clear()

    result = swarm.resume_sync(run_id)

    assert result.run_id == run_id
    assert result.output == "c output"
    assert calls == {"a": 1, "b": 2, "c": 1}  # a was not run again
    with pytest.raises(UserError, match="already succeeded; nothing to resume"):
        swarm.resume_sync(run_id)


async def test_resume_sync_inside_a_running_loop_runs_on_a_thread(tmp_path: Path) -> None:
    failing = {"b"}
    model, calls = flaky(failing)
    a, b = agents(model.model, "a", "b")
    swarm = Swarm(a >> b, store=tmp_path / "runs.db")
    with pytest.raises(AgentError) as failed:
        await swarm.run("go")
    assert failed.value.partial is not None
    failing.clear()

    result = swarm.resume_sync(failed.value.partial.run_id)  # as a notebook cell would

    assert result.output == "b output"
    assert calls == {"a": 1, "b": 2}


def test_resume_sync_without_a_store_says_what_to_do() -> None:
    model, _ = flaky(set())
    with pytest.raises(UserError, match="store"):
        Swarm(agents(model.model, "a")[0]).resume_sync("nope")
