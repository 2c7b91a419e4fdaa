"""Putting a stored run back into a fresh Run, so ``Swarm.resume`` goes on from there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from swarmcore._flow import Flow, shape_of
from swarmcore._walk import FlowSetup, Run, iteration_ranks
from swarmcore.agent import Agent
from swarmcore.errors import UserError
from swarmcore.results import AgentKey, AgentResult

if TYPE_CHECKING:
    from swarmcore._structured import OutputSpec
    from swarmcore.store._base import RunRecord, RunStore


def resumable(store: RunStore | None, run_id: str, flow: Flow) -> RunRecord:
    """The stored run ``run_id``, checked that ``flow`` can resume it.

    Raises:
        UserError: No store, no such run, its record is incomplete, it already
            succeeded, or ``flow`` has another shape than the run's.
    """
    if store is None:
        raise UserError("resume() needs a run store: Swarm(flow, store='runs.db').")
    record = store.get_run(run_id)
    if record is None:
        raise UserError(f"No run {run_id!r} in {store!r}; list them with `swarmcore runs list`.")
    if record.status == "incomplete":
        raise UserError(
            f"Run {record.run_id[:12]} cannot be resumed: its record is incomplete (a store "
            "write failed while it ran, and it went on with store_errors='warn'); run its "
            "task again."
        )
    if record.shape != shape_of(flow):
        raise UserError(
            f"Run {record.run_id[:12]} was made by the flow {record.flow!r}, and this Swarm's "
            f"flow {flow.expression()!r} has another shape (agents, groups or "
            "policies differ); resume it with the same flow."
        )
    if record.status == "succeeded":  # resuming would only rewrite its record
        raise UserError(
            f"Run {record.run_id[:12]} already succeeded; nothing to resume. Its results "
            f"are in the store: swarm.store.get_run({record.run_id[:12]!r}), or `swarmcore "
            f"runs show {record.run_id[:12]}`."
        )
    return record


def restore(run: Run, record: RunRecord, setup: FlowSetup, agents: Sequence[Agent]) -> None:
    """Put a stored run's results and decisions back into ``run``, to go on from there."""
    run.resumed = True
    run.stored_decisions = list(record.decisions)
    names = [r.agent_name for r in record.results]
    run.context.place(iteration_ranks(setup.flow, setup.positions, names))
    specs = {a.name: a.output_spec for a in agents}
    for result in record.results:
        base = AgentKey.parse(result.agent_name).base  # a loop's iterations: name#k
        if base in setup.positions:
            run.finish(reparsed(result, specs.get(base)))


def reparsed(result: AgentResult, spec: OutputSpec | None) -> AgentResult:
    """A stored result whose ``parsed`` is the agent's output_type again, not plain JSON."""
    if spec is None or result.parsed is None:
        return result
    try:
        return result.model_copy(update={"parsed": spec.adapter.validate_json(result.output)})
    except ValueError:  # the type changed since: keep what was stored
        return result
