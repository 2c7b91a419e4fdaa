"""The engine seam is declared: an engine's capabilities are protocols, not attribute names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, Swarm, SwarmResult, UserError, function_tool
from swarmcore._walk import FlowSetup, Run
from swarmcore.engines import (
    ApprovalInbox,
    Budget,
    CanApprove,
    CanEnqueue,
    CanMap,
    CanRequeue,
    DurableEngine,
    Engine,
    Execution,
    LocalEngine,
    Subscriber,
)
from swarmcore.store import RunReader, SQLiteStore
from tests.helpers import agents, echo_model


class Counting:
    """An engine of its own that implements only :class:`Engine`: the in-process walk, counted."""

    def __init__(self) -> None:
        self.local = LocalEngine()
        self.runs: list[str] = []

    async def execute(
        self,
        setup: FlowSetup,
        run: Run,
        subscribers: Sequence[Subscriber],
        *,
        limits: Budget,
        text_deltas: bool = False,
        checkpoint: Callable[[], None] | None = None,
    ) -> SwarmResult:
        self.runs.append(run.task)
        return await self.local.execute(
            setup,
            run,
            subscribers,
            limits=limits,
            text_deltas=text_deltas,
            checkpoint=checkpoint,
        )


@dataclass(frozen=True)
class Inputs:
    task: str
    variables: Mapping[str, object]
    metadata: Mapping[str, Any]


class Recorded(Counting):
    """A durable engine of its own, by structure alone: it keeps each run's inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[str, Inputs] = {}
        self.attached: list[Swarm] = []

    def attach(self, swarm: Swarm) -> None:
        self.attached.append(swarm)

    async def execute(
        self,
        setup: FlowSetup,
        run: Run,
        subscribers: Sequence[Subscriber],
        *,
        limits: Budget,
        text_deltas: bool = False,
        checkpoint: Callable[[], None] | None = None,
    ) -> SwarmResult:
        self.kept[run.run_id] = Inputs(run.task, dict(run.options.variables), dict(run.metadata))
        return await super().execute(
            setup,
            run,
            subscribers,
            limits=limits,
            text_deltas=text_deltas,
            checkpoint=checkpoint,
        )

    async def reopen(self, swarm: Swarm, run_id: str) -> Inputs:
        if run_id not in self.kept:
            raise UserError(f"No run {run_id!r} in this engine's records.")
        return self.kept[run_id]


async def test_an_engine_implementing_only_the_base_protocol_runs_flows() -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    engine = Counting()
    assert isinstance(engine, Engine)
    assert not isinstance(engine, DurableEngine | CanEnqueue | CanApprove | CanMap)
    swarm = Swarm(a >> b, engine=engine)
    assert swarm.engine is engine
    result = await swarm.run("first")
    assert result.output == "b output"
    mapped = await swarm.map(["second", "third"])
    assert [r.output for r in mapped if isinstance(r, SwarmResult)] == ["b output"] * 2
    assert sorted(engine.runs) == ["first", "second", "third"]


async def test_durable_calls_on_an_engine_without_the_capability_say_which_protocol() -> None:
    model = echo_model()
    (a,) = agents(model.model, "a")
    swarm = Swarm(a, engine=Counting())
    with pytest.raises(UserError, match=r"enqueue\(\) needs a durable engine.*CanEnqueue"):
        await swarm.enqueue("task")
    with pytest.raises(
        UserError, match=r"pending_approvals\(\) needs a durable engine.*CanApprove"
    ):
        await swarm.pending_approvals("run-1")
    with pytest.raises(UserError, match=r"decide\(\) needs a durable engine.*CanApprove"):
        await swarm.decide("run-1", "call-1", True)
    with pytest.raises(UserError, match=r"map\(key=\.\.\.\) needs a durable engine.*CanMap"):
        await swarm.map(["task"], key=["run-1"])
    # Not durable: resume reads a run store, and this Swarm has none.
    with pytest.raises(UserError, match="store"):
        await swarm.resume("run-1")


async def test_a_tool_requiring_approval_needs_a_callback_unless_the_engine_can_wait() -> None:
    def wipe() -> str:
        """Wipe everything."""
        return "wiped"

    model = echo_model()
    a = Agent(
        "a", "a tidies up.", model=model.model, tools=[function_tool(wipe, requires_approval=True)]
    )
    # An engine that cannot hold a run waiting for a decision: refused before any model call.
    with pytest.raises(UserError, match="approve"):
        await Swarm(a, engine=Counting()).run("task")
    assert model.requests == []


async def test_a_durable_engine_by_structure_serves_and_resumes_from_its_own_records() -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    engine = Recorded()
    assert isinstance(engine, DurableEngine)
    swarm = Swarm(a >> b, engine=engine)
    assert engine.attached == [swarm]
    first = await swarm.run("task", variables={"x": 1}, metadata={"who": "me"}, run_id="run-1")
    again = await swarm.resume("run-1")  # no store: the engine's records say what the run was
    assert again.output == first.output == "b output"
    assert engine.runs == ["task", "task"]
    assert engine.kept["run-1"] == Inputs("task", {"x": "1"}, {"who": "me"})
    with pytest.raises(UserError, match="No run 'zzz'"):
        await swarm.resume("zzz")


def test_the_dbos_engine_declares_every_durable_capability() -> None:
    dbos = pytest.importorskip("swarmcore.engines.dbos")
    for protocol in (Engine, DurableEngine, CanEnqueue, CanApprove, CanMap):
        assert issubclass(dbos.DBOSEngine, protocol), protocol.__name__
    assert not issubclass(LocalEngine, DurableEngine | CanEnqueue | CanApprove | CanMap)


async def test_a_durable_engine_walks_a_recorded_run_itself_with_the_swarms_hooks_and_store(
    tmp_path: Path,
) -> None:
    """What a durable engine does with a run its records hold (recovered, or enqueued)."""
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    seen: list[str] = []
    store = SQLiteStore(tmp_path / "runs.db")
    engine = Counting()

    class NoRunAgain(Swarm):
        async def run(self, *args: Any, **kwargs: Any) -> SwarmResult:
            raise AssertionError("an engine never calls back into Swarm.run")

    swarm = NoRunAgain(
        a >> b, engine=engine, store=store, hooks=[lambda e: seen.append(type(e).__name__)]
    )
    execution = swarm.execution("task", variables={"x": 1}, metadata={"who": "me"}, run_id="r1")
    assert isinstance(execution, Execution)
    assert (execution.run.run_id, execution.run.task) == ("r1", "task")
    result = await execution.walk(engine)
    assert result.output == "b output"
    assert engine.runs == ["task"]
    assert seen[0] == "RunStarted"
    assert seen[-1] == "RunFinished"
    stored = store.get_run("r1")  # settled: the Swarm's store recorded the run's end
    assert stored is not None
    assert stored.status == "succeeded"
    assert stored.settings["metadata"] == {"who": "me"}
    with pytest.raises(UserError, match="empty"):  # checked as run() checks it
        swarm.execution("", run_id="r2")
    store.close()


def test_only_a_reader_declaring_the_inbox_offers_the_viewer_approvals(tmp_path: Path) -> None:
    history = pytest.importorskip("swarmcore.engines.dbos._history")
    assert issubclass(history.DBOSHistory, ApprovalInbox)
    assert issubclass(history.DBOSHistory, RunReader)
    assert issubclass(history.DBOSHistory, CanRequeue)  # swarmcore runs resume --database-url
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        assert isinstance(store, RunReader)
        assert not isinstance(store, ApprovalInbox | CanRequeue)
    finally:
        store.close()
