"""What a durable engine's records say of a run's flow: its version, and a summary of it."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from swarmcore.agent import Agent

if TYPE_CHECKING:
    from swarmcore._flow import Flow
    from swarmcore._swarm import Swarm


def flow_version(swarm: Swarm) -> str:
    """A short hash of what a run of ``swarm`` depends on: shape, agents, models, tools.

    A worker serves only runs of the version it has, so a run started by one
    version of the code is never continued by another.
    """
    agents = [
        {
            "name": a.name,
            "model": a.model,
            "instructions": a.instructions,
            "tools": sorted(getattr(t, "name", getattr(t, "__name__", "")) for t in a.tools),
        }
        for a in swarm.flow.agents
        if isinstance(a, Agent)
    ]
    spec: dict[str, object] = {
        "shape": swarm.flow.shape(),
        "mode": swarm.context_mode,
        "agents": agents,
    }
    if swarm.context_budget is not None:  # only auto has one; others keep their version
        spec["budget"] = swarm.context_budget
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def about(
    flow: Flow, version: str, mode: tuple[str, int | None], generation: int = 0
) -> dict[str, Any]:
    """What a run's workflow input says of its flow (version, expression, size, shape) and itself.

    The shape (JSON) is what ``swarmcore ui`` draws an engine run's flow from; the
    context mode (and auto mode's budget) is what a case made of the run
    (``swarmcore eval add``) replays with, as a stored run's settings say it.
    """
    context_mode, context_budget = mode
    about = {
        "version": version,
        "flow": flow.expression(),
        "agents": len(flow.names),
        "shape": flow.shape().to_json(),
        "context_mode": context_mode,
    }
    budget = {} if context_budget is None else {"context_budget": context_budget}
    return about | budget | ({"generation": generation} if generation else {})
