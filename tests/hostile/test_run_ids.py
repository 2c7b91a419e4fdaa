"""Hostile run ids: overlong ones, and a finished run's id reused for another task.

An overlong id was reported as a damaged store (SQLite refuses a LIKE pattern
over 50,000 bytes: "Could not read the run store ... LIKE or GLOB pattern too
complex; check the file"), or silently stored; now every place that takes a
run id says it is too long and what the limit is. A finished run's id given
again with another task returned the first task's answer on the DBOS engine,
and on a run store filed the new task's results under the first task; now
both refuse, saying how to run anew.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmcore import Agent, Swarm, UserError
from swarmcore._checks import MAX_RUN_ID
from swarmcore.cli import main
from swarmcore.engines.dbos import DBOSEngine, RecordedOutcome
from swarmcore.store import SQLiteStore
from swarmcore.testing import FunctionModel, RecordedRequest, Reply, TemporaryPostgres

LONG = "r" * 100_000
"""Long enough for SQLite to refuse it as a LIKE pattern (50,000 bytes at most)."""
UNUSED = "postgresql://postgres@127.0.0.1:9/unused"
"""A database never connected to: every check below comes first."""


def answering() -> FunctionModel:
    """Answers each task by name, so a run's answer says which task it was for."""

    def answer(request: RecordedRequest) -> Reply:
        return Reply(text=f"the answer to {request.messages[-1]['content']}")

    return FunctionModel(answer)


def writer(model: FunctionModel) -> Agent:
    return Agent("writer", "Write about {topic}.", model=model.model)


@dataclass(frozen=True)
class Where:
    """A place that takes a run id, called with one."""

    call: Callable[[Swarm, Path, str], Awaitable[object]]


async def _run(swarm: Swarm, path: Path, run_id: str) -> object:
    return await Swarm(swarm.flow, store=path).run(
        "a task", variables={"topic": "x"}, run_id=run_id
    )


async def _stream(swarm: Swarm, path: Path, run_id: str) -> object:
    return [e async for e in swarm.stream("a task", variables={"topic": "x"}, run_id=run_id)]


async def _get(swarm: Swarm, path: Path, run_id: str) -> object:
    return SQLiteStore(path).get_run(run_id)


async def _delete(swarm: Swarm, path: Path, run_id: str) -> object:
    return SQLiteStore(path).delete_run(run_id)


async def _resume(swarm: Swarm, path: Path, run_id: str) -> object:
    return await Swarm(swarm.flow, store=path).resume(run_id)


async def _on_engine(
    call: Callable[[Swarm, DBOSEngine], Awaitable[object]], swarm: Swarm
) -> object:
    engine = DBOSEngine(UNUSED)
    try:
        return await call(Swarm(swarm.flow, engine=engine), engine)
    finally:
        await engine.shutdown()


async def _enqueue(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(
        lambda on, _: on.enqueue("a task", variables={"topic": "x"}, run_id=run_id), swarm
    )


async def _map_key(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(
        lambda on, _: on.map(["a task"], variables={"topic": "x"}, key=[run_id]), swarm
    )


async def _handle(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(lambda _, engine: engine.handle(run_id), swarm)


async def _engine_resume(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(lambda on, _: on.resume(run_id), swarm)


async def _approvals(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(lambda on, _: on.pending_approvals(run_id), swarm)


async def _decide(swarm: Swarm, path: Path, run_id: str) -> object:
    return await _on_engine(lambda on, _: on.decide(run_id, "call-1", True), swarm)


PLACES = [
    pytest.param(Where(_run), id="swarm-run"),
    pytest.param(Where(_stream), id="swarm-stream"),
    pytest.param(Where(_get), id="store-get-run"),
    pytest.param(Where(_delete), id="store-delete-run"),
    pytest.param(Where(_resume), id="swarm-resume"),
    pytest.param(Where(_enqueue), id="engine-enqueue"),
    pytest.param(Where(_map_key), id="engine-map-key"),
    pytest.param(Where(_handle), id="engine-handle"),
    pytest.param(Where(_engine_resume), id="engine-resume"),
    pytest.param(Where(_approvals), id="engine-pending-approvals"),
    pytest.param(Where(_decide), id="engine-decide"),
]


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[tuple[Swarm, Path]]:
    """A Swarm and a store holding one finished run (so lookups search a real file)."""
    path = tmp_path / "runs.db"
    model = answering()  # referenced until the test ends
    swarm = Swarm(writer(model), store=path)
    await swarm.run("an earlier task", variables={"topic": "x"}, run_id="earlier")
    yield swarm, path
    assert model.requests  # the earlier run asked it


@pytest.mark.parametrize("length", [MAX_RUN_ID + 1, len(LONG)], ids=["257", "100000"])
@pytest.mark.parametrize("where", PLACES)
async def test_an_overlong_run_id_is_said_to_be_too_long_wherever_it_is_given(
    where: Where, length: int, stored: tuple[Swarm, Path]
) -> None:
    swarm, path = stored
    with pytest.raises(UserError) as refused:
        await where.call(swarm, path, "r" * length)
    message = str(refused.value)
    assert f"the run id is too long: {length:,} characters" in message
    assert f"a run id has at most {MAX_RUN_ID}" in message
    assert "r" * 100 not in message  # the id is not echoed whole
    assert SQLiteStore(path).get_run("earlier") is not None  # the store is fine


async def test_a_run_id_of_the_longest_length_runs_and_is_found(
    stored: tuple[Swarm, Path],
) -> None:
    swarm, path = stored
    run_id = "r" * MAX_RUN_ID
    result = await swarm.run("a task", variables={"topic": "x"}, run_id=run_id)
    assert result.run_id == run_id
    record = SQLiteStore(path).get_run(run_id)
    assert record is not None
    assert record.task == "a task"


async def test_an_overlong_search_text_is_said_to_be_too_long(stored: tuple[Swarm, Path]) -> None:
    _, path = stored
    store = SQLiteStore(path)
    for search in (lambda: store.read_runs(text=LONG), lambda: store.count_runs(text=LONG)):
        with pytest.raises(
            UserError, match=r"search text is too long: 100,000 characters, at most"
        ):
            search()


@pytest.mark.parametrize("command", ["show", "resume"])
async def test_an_overlong_run_id_on_the_command_line_is_one_line_and_exit_2(
    command: str, stored: tuple[Swarm, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = stored
    assert main(["runs", command, LONG, "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert "the run id is too long: 100,000 characters" in err
    assert f"at most {MAX_RUN_ID}" in err
    assert "Could not read the run store" not in err
    assert len(err.splitlines()) == 1


# --- a finished run's id, given again ----------------------------------------------


@dataclass(frozen=True)
class Again:
    """A run id given again: with what task and variables, and whether it is refused."""

    task: str
    topic: str
    refused: str | None
    """What the refusal says (None: it runs)."""


AGAIN = [
    pytest.param(
        Again("another task", "x", "another task's run (its task: 'the task')"), id="another-task"
    ),
    pytest.param(
        Again("the task", "y", "a run of this task with other variables"), id="other-variables"
    ),
    pytest.param(Again("the task", "x", None), id="same-task-and-variables"),
]


@pytest.mark.parametrize("again", AGAIN)
async def test_a_stored_run_id_given_again_with_another_task_is_refused_on_a_store(
    again: Again, tmp_path: Path
) -> None:
    model = answering()
    path = tmp_path / "runs.db"
    swarm = Swarm(writer(model), store=path)
    first = await swarm.run("the task", variables={"topic": "x"}, run_id="job")
    calls = len(model.requests)

    if again.refused is None:  # the same run asked again: a store runs it again, as before
        second = await swarm.run(again.task, variables={"topic": again.topic}, run_id="job")
        assert second.output == first.output
        return
    with pytest.raises(UserError) as refused:
        await swarm.run(again.task, variables={"topic": again.topic}, run_id="job")

    message = str(refused.value)
    assert f"Run id 'job' already holds {again.refused}; this task was not run" in message
    assert "give it a new run id" in message
    assert len(model.requests) == calls  # nothing ran
    record = SQLiteStore(path).get_run("job")
    assert record is not None
    assert (record.task, record.earlier) == ("the task", [])  # the stored run is untouched
    assert [r.output for r in record.results] == [first.output]


async def test_a_failed_run_is_still_resumed_under_its_id_on_a_store(tmp_path: Path) -> None:
    failing = True

    def answer(request: RecordedRequest) -> Reply:
        if failing:
            raise RuntimeError("the model is down")
        return Reply(text="written")

    model = FunctionModel(answer)
    swarm = Swarm(writer(model), store=tmp_path / "runs.db")
    with pytest.raises(Exception, match="the model is down"):
        await swarm.run("the task", variables={"topic": "x"}, run_id="job")
    failing = False
    assert (await swarm.resume("job")).output == "written"


@pytest.mark.parametrize("again", AGAIN)
async def test_a_recorded_run_id_given_again_with_another_task_is_refused_on_the_engine(
    again: Again, postgres: TemporaryPostgres
) -> None:
    model = answering()
    engine = DBOSEngine(postgres.new_database())
    try:
        swarm = Swarm(writer(model), engine=engine)
        first = await swarm.run("the task", variables={"topic": "x"}, run_id="job")
        calls = len(model.requests)
        variables = {"topic": again.topic}

        if again.refused is None:  # the same run asked again: its recorded outcome
            with pytest.warns(RecordedOutcome, match="already in the engine's database"):
                second = await swarm.run(again.task, variables=variables, run_id="job")
            assert second.output == first.output
            handle = await swarm.enqueue(again.task, variables=variables, run_id="job")
            assert (await handle.result()).output == first.output
            assert len(model.requests) == calls
            return
        with warnings.catch_warnings():
            warnings.simplefilter("error", RecordedOutcome)  # refused, not returned with a warning
            with pytest.raises(UserError) as by_run:
                await swarm.run(again.task, variables=variables, run_id="job")
        with pytest.raises(UserError) as by_enqueue:
            await swarm.enqueue(again.task, variables=variables, run_id="job")
        with pytest.raises(UserError) as by_map:
            await swarm.map([again.task], variables=variables, key=["job"])

        for refused in (by_run, by_enqueue, by_map):
            message = str(refused.value)
            assert f"Run id 'job' already holds {again.refused}; this task was not run" in message
            assert "give it a new run id" in message
        assert len(model.requests) == calls  # nothing ran
        assert first.output == "the answer to the task"
    finally:
        await engine.shutdown()


async def test_one_map_key_for_two_tasks_is_refused_on_the_engine(
    postgres: TemporaryPostgres,
) -> None:
    engine = DBOSEngine(postgres.new_database())
    try:
        model = answering()
        swarm = Swarm(writer(model), engine=engine)
        with pytest.raises(UserError, match="Run id 'shared' already holds another task's run"):
            await swarm.map(
                ["one task", "another task"], variables={"topic": "x"}, key=["shared"] * 2
            )
    finally:
        await engine.shutdown()
