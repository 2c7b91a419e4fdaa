"""Routing: run one of several branches, chosen by a predicate or a router agent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import override

from swarmcore import events
from swarmcore._flow import ControlNode, Flow, FlowNode, chain
from swarmcore._flow.shape import RouteShape
from swarmcore.control._common import (
    Predicate,
    as_flow,
    call_predicate,
    describe_flow,
    field_of,
    is_agent,
    once,
    variant,
)
from swarmcore.errors import UserError
from swarmcore.results import Decision

if TYPE_CHECKING:
    from swarmcore._walk import Position, Walk
    from swarmcore.agent import Agent


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Route(ControlNode):
    """Runs one of ``branches``, chosen by ``by``. Build one with :func:`route`."""

    name: str
    branches: Mapping[str, Flow]
    by: Any
    """A predicate returning a branch name, or a router Agent."""
    default: str | None = None
    _agents: tuple[FlowNode, ...] = field(init=False)
    _variants: dict[str, Any] = field(init=False, default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        router = (self.by,) if is_agent(self.by) else ()
        agents = router + tuple(a for f in self.branches.values() for a in f.agents)
        object.__setattr__(self, "_agents", agents)

    @property
    def router(self) -> Agent | None:
        """The router agent, when an agent chooses."""
        return self.by if is_agent(self.by) else None

    @override
    def inner_agents(self) -> tuple[FlowNode, ...]:
        return self._agents

    @override
    def inner_flows(self) -> tuple[Flow, ...]:
        return tuple(self.branches.values())

    @override
    def entry_agents(self) -> tuple[FlowNode, ...]:
        if self.router is not None:
            return (self.router,)
        return tuple(a for f in self.branches.values() for a in f.entries())

    @override
    def exit_agents(self) -> tuple[FlowNode, ...]:
        return tuple(a for f in self.branches.values() for a in f.exits())

    @override
    def rebuild(self, flow: Callable[[Flow], Flow], agent: Callable[[FlowNode], FlowNode]) -> Route:
        by = agent(self.by) if is_agent(self.by) else self.by
        branches = {k: flow(v) for k, v in self.branches.items()}
        return Route(self.name, branches, by, self.default)

    @override
    def shape(self) -> RouteShape:
        router = self.by.name if is_agent(self.by) else None
        return RouteShape(
            self.name, router, tuple((k, v.shape()) for k, v in self.branches.items())
        )

    def __repr__(self) -> str:
        return f"Route({self.label()})"


def route(
    branches: Mapping[str, object],
    *,
    by: Predicate | Agent,
    default: str | None = None,
    name: str | None = None,
) -> Flow:
    """A step that runs one of ``branches``, chosen by a predicate or a router agent.

    Args:
        branches: Branch name to an Agent or Flow. Names are what the chooser picks.
        by: A function of the shared context (sync or async) returning a
            branch name, or a router Agent: it runs with the branch names as
            its only allowed answers (structured output) and its result is
            kept in the history.
        default: The branch to run when a predicate returns None.
        name: The step's name (unique in the flow); the router's name, or "route".

    Raises:
        UserError: No branches, a bad branch name or member, ``by`` neither a
            function nor an Agent, or an unknown ``default``.
    """
    from swarmcore._tools import validate_name

    if not isinstance(branches, Mapping) or not branches:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError("route() needs a dict of branch name to Agent or Flow.")
    flows: dict[str, Flow] = {}
    for key, value in branches.items():
        validate_name(key, "Branch")
        flows[key] = as_flow(value, f"route() branch {key!r}")
    if not (callable(by) or is_agent(by)):
        raise UserError("route(by=...) takes a function of the context or a router Agent.")
    if default is not None and default not in flows:
        raise UserError(f"route(default={default!r}) is not a branch; branches: {list(flows)}.")
    router: Any = by
    step_name = name or (f"{router.name}_route" if is_agent(by) else "route")
    node = Route(validate_name(step_name, "Route"), flows, by, default)
    return chain(node)


def router_of(node: Route) -> Agent:
    """The router agent with the branch names as its only allowed answers."""

    def build() -> Agent:
        from pydantic import Field, create_model

        router = node.router
        assert router is not None
        allowed: Any = Literal[tuple(node.branches)]  # pyright: ignore[reportInvalidTypeArguments] -- built at run time
        choice = create_model(
            f"{node.name}_choice",
            branch=(allowed, Field(description="The branch to run next.")),
            reason=(str, Field(default="", description="Why, in one sentence.")),
        )
        menu = "\n".join(
            f"- {key}: {describe_flow(branch)}" for key, branch in node.branches.items()
        )
        instructions = (
            f"{router.instructions}\n\nChoose which branch runs next. The branches:\n{menu}"
        )
        return variant(router, instructions=instructions, output_type=choice)

    return once(node._variants, "router", build)  # pyright: ignore[reportPrivateUsage] -- its own node


async def run_route(step: Route, walk: Walk, at: Position) -> Position:
    """Choose the branch (predicate or router agent), record the decision, run it."""
    run = walk.run
    reason = ""
    if step.router is not None:
        router = router_of(step)
        await walk.agent(router, at)
        answer = run.results[router.name]
        choice, reason = field_of(answer, "branch"), field_of(answer, "reason")
        at, by = at.seeing(router.name), router.name
    else:
        try:
            choice = await call_predicate(step.by, run.context.subset(at.seen))
        except Exception as exc:
            raise UserError(
                f"Route {step.name!r}: its predicate raised {type(exc).__name__}: {exc}"
            ) from exc
        by = "predicate"
        if choice is None:
            choice = step.default
    if not isinstance(choice, str) or choice not in step.branches:
        raise UserError(
            f"Route {step.name!r}: the {by} chose {choice!r}, which is not a branch; "
            f"return one of {list(step.branches)} (or set default=)."
        )
    run.decide(Decision(kind="route", step=step.name, value=choice, by=by, detail=reason))
    walk.scope.emit(events.RouteChosen, route=step.name, branch=choice, by=by, reason=reason)
    return await walk.steps(step.branches[choice].step_tuple, at)
