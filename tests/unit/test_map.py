"""Swarm.map: many tasks through one flow, bounded concurrency, input order, failure isolation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from swarmcore import Agent, AgentError, ModelError, Swarm, SwarmResult, UserError
from swarmcore._batch import MapProgress, run_batch
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply
from tests.helpers import agents


def ours(tasks: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks minus litellm's process-wide logging worker, which outlives every call by design."""
    return {t for t in tasks if "LoggingWorker" not in getattr(t.get_coro(), "__qualname__", "")}


def task_model(
    delays: Mapping[str, float] | None = None, fail: frozenset[str] = frozenset()
) -> FunctionModel:
    """Answers '<agent> on <task>' after a delay keyed on the task; Fail(400) for ``fail`` tasks."""

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if request.user in fail and who != "a":  # in a two-agent flow, the second agent fails
            return Fail(400, f"cannot do {request.user}")
        return Reply(text=f"{who} on {request.user}", delay=(delays or {}).get(request.user, 0.0))

    return FunctionModel(answer)


class Tracker:
    """An async responder that counts runs in flight and remembers the peak."""

    def __init__(self, hold: float = 0.02) -> None:
        self.hold = hold
        self.in_flight = 0
        self.peak = 0
        self.log: list[str] = []
        self.model = FunctionModel(self.answer)

    async def answer(self, request: RecordedRequest) -> Reply:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.log.append(f"start {request.user}")
        try:
            await asyncio.sleep(self.hold)
        finally:
            self.in_flight -= 1
            self.log.append(f"end {request.user}")
        return Reply(text=f"done {request.user}")


def succeeded(outcome: SwarmResult | BaseException) -> SwarmResult:
    assert isinstance(outcome, SwarmResult), outcome
    return outcome


# --- order and isolation ---------------------------------------------------------------


async def test_results_follow_input_order_even_when_later_tasks_finish_first() -> None:
    model = task_model(delays={"slow": 0.1, "medium": 0.05, "fast": 0.0})
    [a] = agents(model.model, "a")
    finished: list[int] = []
    results = await Swarm(a).map(
        ["slow", "medium", "fast"], concurrency=3, progress=lambda p: finished.append(p.index)
    )
    assert finished == [2, 1, 0]  # they finished in reverse
    assert [succeeded(r).output for r in results] == ["a on slow", "a on medium", "a on fast"]


async def test_a_failing_task_leaves_the_others_intact_and_keeps_its_partial() -> None:
    model = task_model(fail=frozenset({"bad"}))
    a, b = agents(model.model, "a", "b")
    results = await Swarm(a >> b).map(["one", "bad", "three"], concurrency=2)
    assert succeeded(results[0]).output == "b on one"
    assert succeeded(results[2]).output == "b on three"
    error = results[1]
    assert isinstance(error, ModelError)
    assert isinstance(error, AgentError)
    assert error.agent_name == "b"
    assert error.status_code == 400
    assert isinstance(error.partial, SwarmResult)
    assert error.partial.context == {"a": "a on bad"}  # what finished before the failure
    assert [f.agent_name for f in error.partial.failures] == ["b"]


async def test_each_run_gets_its_own_run_id_and_context() -> None:
    model = task_model()
    a, b = agents(model.model, "a", "b")
    results = [succeeded(r) for r in await Swarm(a >> b).map(["w", "x", "y", "z"])]
    assert len({r.run_id for r in results}) == 4
    assert all(r.run_id for r in results)
    assert [r.context for r in results] == [
        {"a": f"a on {t}", "b": f"b on {t}"} for t in ["w", "x", "y", "z"]
    ]


async def test_tasks_may_be_any_iterable() -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    results = await Swarm(a).map(t for t in ("p", "q"))
    assert [succeeded(r).output for r in results] == ["a on p", "a on q"]


# --- concurrency -----------------------------------------------------------------------


async def test_no_more_than_concurrency_runs_are_in_flight() -> None:
    tracker = Tracker()
    results = await Swarm(Agent("a", "x", model=tracker.model.model)).map(
        [f"t{i}" for i in range(8)], concurrency=3
    )
    assert tracker.peak == 3
    assert [succeeded(r).output for r in results] == [f"done t{i}" for i in range(8)]


async def test_concurrency_one_runs_the_tasks_one_after_another_in_order() -> None:
    tracker = Tracker(hold=0.005)
    await Swarm(Agent("a", "x", model=tracker.model.model)).map(["t0", "t1", "t2"], concurrency=1)
    assert tracker.peak == 1
    assert tracker.log == ["start t0", "end t0", "start t1", "end t1", "start t2", "end t2"]


async def test_concurrency_above_the_task_count_runs_them_all_at_once() -> None:
    tracker = Tracker()
    await Swarm(Agent("a", "x", model=tracker.model.model)).map(["t0", "t1"], concurrency=50)
    assert tracker.peak == 2


async def test_a_large_batch_keeps_only_a_pool_of_workers() -> None:
    before = len(asyncio.all_tasks())
    peak = 0

    async def run(task: str, _: Mapping[str, object] | None) -> SwarmResult:
        nonlocal peak
        peak = max(peak, len(asyncio.all_tasks()) - before)
        await asyncio.sleep(0)
        return SwarmResult(output=task, context={}, history=[])

    tasks = [str(i) for i in range(2000)]
    results = await run_batch(run, tasks, concurrency=4, variables=None, progress=None)
    assert [succeeded(r).output for r in results] == tasks
    assert peak == 4  # four workers, never a task per input


# --- failures that are not SwarmErrors -------------------------------------------------


async def test_a_bug_in_one_run_is_its_result_not_the_batch_failure() -> None:
    async def run(task: str, _: Mapping[str, object] | None) -> SwarmResult:
        if task == "boom":
            raise RuntimeError("bug")
        if task == "stray":
            raise asyncio.CancelledError  # raised by the run itself, nobody cancelled the batch
        return SwarmResult(output=task, context={}, history=[])

    results = await run_batch(
        run, ["ok", "boom", "stray", "fine"], concurrency=2, variables=None, progress=None
    )
    assert succeeded(results[0]).output == "ok"
    assert isinstance(results[1], RuntimeError)
    assert isinstance(results[2], asyncio.CancelledError)
    assert succeeded(results[3]).output == "fine"


# --- progress ---------------------------------------------------------------------------


async def test_progress_reports_each_run_with_running_counts() -> None:
    model = task_model(fail=frozenset({"bad"}))
    a, b = agents(model.model, "a", "b")
    updates: list[MapProgress] = []
    tasks = ["t0", "bad", "t2", "t3", "t4"]
    results = await Swarm(a >> b).map(tasks, concurrency=2, progress=updates.append)
    assert [u.done for u in updates] == [1, 2, 3, 4, 5]
    assert {u.total for u in updates} == {5}
    assert sorted(u.index for u in updates) == [0, 1, 2, 3, 4]
    assert (updates[-1].succeeded, updates[-1].failed) == (4, 1)
    assert all(u.succeeded + u.failed == u.done for u in updates)
    assert [u.elapsed_seconds for u in updates] == sorted(u.elapsed_seconds for u in updates)
    for update in updates:
        if update.index == 1:
            assert update.result is None
            assert update.error is results[1]
            assert isinstance(update.error, ModelError)
        else:
            assert update.error is None
            assert update.result is results[update.index]
    assert updates[-1].remaining == 0


async def test_async_progress_is_awaited() -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    seen: list[int] = []

    async def progress(update: MapProgress) -> None:
        await asyncio.sleep(0.001)
        seen.append(update.done)

    await Swarm(a).map(["x", "y", "z"], concurrency=3, progress=progress)
    assert sorted(seen) == [1, 2, 3]


async def test_a_progress_callback_that_raises_is_logged_and_the_batch_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = task_model()
    [a] = agents(model.model, "a")

    async def progress(update: MapProgress) -> None:
        raise RuntimeError(f"progress broke at {update.done}")

    with caplog.at_level(logging.ERROR, logger="swarmcore.batch"):
        results = await Swarm(a).map(["x", "y", "z"], concurrency=1, progress=progress)
    assert [succeeded(r).output for r in results] == ["a on x", "a on y", "a on z"]
    logged = [r for r in caplog.records if r.name == "swarmcore.batch"]
    assert len(logged) == 3
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in logged)


async def test_each_finished_item_is_logged_at_debug_and_nothing_is_printed(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    model = task_model(fail=frozenset({"bad"}))
    a, b = agents(model.model, "a", "b")
    with caplog.at_level(logging.DEBUG, logger="swarmcore.batch"):
        await Swarm(a >> b).map(["ok", "bad"])
    logged = [r.getMessage() for r in caplog.records if r.name == "swarmcore.batch"]
    assert len(logged) == 2
    assert any("item 0 succeeded" in m for m in logged)
    assert any("item 1 failed" in m and "ModelError" in m for m in logged)
    assert capsys.readouterr() == ("", "")


# --- variables --------------------------------------------------------------------------


def topic_model() -> FunctionModel:
    return FunctionModel(lambda r: f"{r.system.splitlines()[0]} / {r.user}")


async def test_one_variables_mapping_is_used_for_every_task() -> None:
    model = topic_model()
    agent = Agent("a", "Write about {topic}.", model=model.model)
    results = await Swarm(agent).map(["x", "y"], variables={"topic": "owls"})
    assert [succeeded(r).output for r in results] == [
        "Write about owls. / x",
        "Write about owls. / y",
    ]


async def test_a_variables_list_gives_each_task_its_own() -> None:
    model = topic_model()
    agent = Agent("a", "Write about {topic}.", model=model.model)
    results = await Swarm(agent).map(
        ["x", "y", "z"], variables=[{"topic": "owls"}, {"topic": "bats"}, {"topic": 3}]
    )
    assert [succeeded(r).output for r in results] == [
        "Write about owls. / x",
        "Write about bats. / y",
        "Write about 3. / z",
    ]


async def test_a_variables_list_of_the_wrong_length_fails_before_any_run() -> None:
    model = topic_model()
    agent = Agent("a", "Write about {topic}.", model=model.model)
    with pytest.raises(UserError, match="variables has 2 entries but there are 3 tasks"):
        await Swarm(agent).map(["x", "y", "z"], variables=[{"topic": "a"}, {"topic": "b"}])
    assert model.requests == []


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ([{"topic": "a"}, "b"], r"variables\[1\] is str"),
        ([{"topic": "a"}, {"not a name": 1}], r"variables\[1\]: Variable names must be"),
        ("topic", "one dict .* or a list of dicts"),
        (42, "one dict .* or a list of dicts"),
        ({"bad name": 1}, "Variable names must be identifiers"),
    ],
)
async def test_bad_variables_fail_before_any_run(variables: Any, message: str) -> None:
    model = topic_model()
    agent = Agent("a", "Write about {topic}.", model=model.model)
    with pytest.raises(UserError, match=message):
        await Swarm(agent).map(["x", "y"], variables=variables)
    assert model.requests == []


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [0, -1, True, 1.5, "2", None])
async def test_concurrency_must_be_a_positive_int(concurrency: Any) -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    with pytest.raises(UserError, match=r"map\(\): concurrency must be a positive whole number"):
        await Swarm(a).map(["x"], concurrency=concurrency)
    assert model.requests == []


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        (["ok", "  ", "x"], r"Task 1 is '  '"),
        (["ok", "x", None], r"Task 2 is None"),
        (["", "x"], r"Task 0 is ''"),
        ("one task", r"wrap it in a list"),
        (7, r"got int"),
    ],
)
async def test_bad_tasks_fail_before_any_run_naming_the_index(tasks: Any, message: str) -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    with pytest.raises(UserError, match=message):
        await Swarm(a).map(tasks)
    assert model.requests == []


async def test_a_progress_that_is_not_callable_fails_before_any_run() -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    with pytest.raises(UserError, match="progress must be a function"):
        await Swarm(a).map(["x"], progress="print")  # pyright: ignore[reportArgumentType]
    assert model.requests == []


async def test_an_empty_task_list_returns_an_empty_list_at_once() -> None:
    model = task_model()
    [a] = agents(model.model, "a")
    calls: list[MapProgress] = []
    assert await Swarm(a).map([], progress=calls.append) == []
    assert await Swarm(a).map(iter(())) == []
    assert model.requests == []
    assert calls == []


async def test_check_refuses_bad_input_before_any_run() -> None:
    started: list[str] = []

    async def run(task: str, _: Mapping[str, object] | None) -> SwarmResult:
        started.append(task)
        return SwarmResult(output=task, context={}, history=[])

    def check(task: str, values: Mapping[str, object] | None) -> None:
        if values is None or "topic" not in values:
            raise UserError(f"task {task!r} has no topic")

    with pytest.raises(UserError, match="task 'y' has no topic"):
        await run_batch(
            run,
            ["x", "y"],
            concurrency=2,
            variables=[{"topic": "a"}, {}],
            progress=None,
            check=check,
        )
    assert started == []


# --- cancellation -------------------------------------------------------------------------


async def test_cancelling_the_map_cancels_every_run_in_flight_and_leaves_no_task() -> None:
    in_flight = 0
    both = asyncio.Event()

    async def answer(request: RecordedRequest) -> Reply:
        nonlocal in_flight
        in_flight += 1
        if in_flight == 2:
            both.set()
        try:
            await asyncio.sleep(30)
        finally:
            in_flight -= 1
        return Reply(text="never")

    model = FunctionModel(answer)
    updates: list[MapProgress] = []
    before = ours(asyncio.all_tasks())
    batch = asyncio.create_task(
        Swarm(Agent("a", "x", model=model.model)).map(
            [f"t{i}" for i in range(5)], concurrency=2, progress=updates.append
        )
    )
    async with asyncio.timeout(5):
        await both.wait()
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert in_flight == 0
    assert len(model.requests) == 2  # no run started after the cancel
    assert updates == []  # a cancelled run is not reported as ended
    assert ours(asyncio.all_tasks()) == before
