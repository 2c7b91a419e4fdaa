"""What routes, loops and plans share: predicates, agent variants, structured fields."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from swarmcore._flow import Flow, FlowNode, chain
from swarmcore.errors import UserError
from swarmcore.results import AgentKey, AgentResult

if TYPE_CHECKING:
    from swarmcore.agent import Agent
    from swarmcore.context import SharedContext


Predicate = Callable[["SharedContext"], "Any | Awaitable[Any]"]
"""A function of the shared context (what the node's first agent would see), sync or async."""


def is_agent(value: object) -> bool:
    from swarmcore.agent import Agent

    return isinstance(value, Agent)


def as_flow(value: object, where: str) -> Flow:
    if isinstance(value, Flow):
        return value
    if isinstance(value, FlowNode):
        return chain(value)
    raise UserError(f"{where} must be an Agent or a Flow, got {type(value).__name__}.")


async def call_predicate(fn: Callable[..., Any], context: SharedContext) -> Any:
    """Call a route or loop predicate, sync or async."""
    value = fn(context)
    if inspect.isawaitable(value):
        value = await value
    return value


def once(variants: dict[str, Any], role: str, build: Callable[[], Agent]) -> Agent:
    """A node's router, judge or planner variant: built on first use, kept in ``variants``."""
    variant: Agent | None = variants.get(role)
    if variant is None:
        variant = variants[role] = build()
    return variant


def variant(agent: Agent, **changes: Any) -> Agent:
    """``agent.clone(**changes)``, for agents renamed for a loop iteration (``triage#2``) too."""
    key = AgentKey.parse(agent.name)
    if key.iteration is None:
        return agent.clone(**changes)
    return agent.renamed(key.base).clone(**changes).renamed(agent.name)


def describe_agent(agent: Any) -> str:
    first = str(agent.instructions).strip().split("\n", 1)[0]
    return first[:200] or agent.name


def describe_flow(flow: Flow) -> str:
    first = flow.agents[0]
    return f"{flow.expression()} ({describe_agent(first)})"


def field_of(result: AgentResult, name: str) -> Any:
    """A field of a structured result: the parsed object's, or the stored JSON's (on resume)."""
    parsed = result.parsed
    if parsed is None:
        try:
            parsed = json.loads(result.output)
        except ValueError:
            return None
    if isinstance(parsed, dict):
        return typing.cast(dict[str, Any], parsed).get(name)
    return getattr(parsed, name, None)
