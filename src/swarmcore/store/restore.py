"""Putting a stored run back into a fresh Run, so ``Swarm.resume`` goes on from there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from swarmcore.agent import Agent
from swarmcore.models import AgentResult
from swarmcore.walk import FlowSetup, Run, iteration_ranks

if TYPE_CHECKING:
    from swarmcore.store.base import RunRecord
    from swarmcore.structured import OutputSpec

__all__ = ["reparsed", "restore"]


def restore(run: Run, record: RunRecord, setup: FlowSetup, agents: Sequence[Agent]) -> None:
    """Put a stored run's results and decisions back into ``run``, to go on from there."""
    run.resumed = True
    run.stored_decisions = list(record.decisions)
    names = [r.agent_name for r in record.results]
    run.context.place(iteration_ranks(setup.flow, setup.positions, names))
    specs = {a.name: a.output_spec for a in agents}
    for result in record.results:
        if result.agent_name.partition("#")[0] in setup.positions:
            run.finish(reparsed(result, specs.get(result.agent_name)))


def reparsed(result: AgentResult, spec: OutputSpec | None) -> AgentResult:
    """A stored result whose ``parsed`` is the agent's output_type again, not plain JSON."""
    if spec is None or result.parsed is None:
        return result
    try:
        return result.model_copy(update={"parsed": spec.adapter.validate_json(result.output)})
    except ValueError:  # the type changed since: keep what was stored
        return result
