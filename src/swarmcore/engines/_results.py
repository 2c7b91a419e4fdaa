"""How a durable engine stores results: ``parsed`` values as JSON data, rebuilt on the way out.

An agent's ``output_type`` may be a class made at run time (a router's choice,
a judge's verdict) that no record names, so what a durable engine records holds ``parsed``
as plain JSON data, and what the engine hands back has it as the agent's type again.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING

from swarmcore.agent import Agent
from swarmcore.errors import SwarmError
from swarmcore.results import AgentKey
from swarmcore.store._restore import reparsed as stored_reparsed

if TYPE_CHECKING:
    from swarmcore._flow import Flow
    from swarmcore.models import AgentResult, SwarmResult


def plain(result: AgentResult) -> AgentResult:
    """``result`` with ``parsed`` as JSON data, which a durable engine can store.

    An ``output_type`` may be a class made at run time (a router's choice, a
    judge's verdict) that no record names; ``output`` holds the same value as
    JSON, and :func:`reparsed` makes it the agent's type again.
    """
    if result.parsed is None:
        return result
    try:
        parsed: object = json.loads(result.output)
    except ValueError:
        parsed = None
    return result.model_copy(update={"parsed": parsed})


def reparsed(result: AgentResult, agent: Agent) -> AgentResult:
    """``result`` (as :func:`plain` left it) with ``parsed`` of ``agent``'s output_type."""
    return stored_reparsed(result, agent.output_spec)


def reparsed_run(result: SwarmResult, flow: Flow) -> SwarmResult:
    """A recorded run's result with each flow agent's ``parsed`` of its output_type again."""
    agents = {a.name: a for a in flow.agents if isinstance(a, Agent)}
    history = [
        reparsed(r, agents[base]) if (base := AgentKey.parse(r.agent_name).base) in agents else r
        for r in result.history
    ]
    return result.model_copy(update={"history": history})


def storable(result: SwarmResult) -> SwarmResult:
    """``result`` with every agent's ``parsed`` as JSON data (see :func:`plain`)."""
    return result.model_copy(update={"history": [plain(r) for r in result.history]})


def storable_error(error: SwarmError) -> SwarmError:
    """A copy of ``error`` whose ``partial`` a durable engine can store (see :func:`plain`)."""
    if error.partial is None:
        return error
    stored = copy.copy(error)
    stored.partial = storable(error.partial)
    return stored
