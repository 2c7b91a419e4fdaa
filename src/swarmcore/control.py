"""Control flow nodes: routing, loops and planning, composable with ``>>`` and ``|``.

Each node is a FlowNode, so ``a >> route({...}, by=...) >> d`` is an ordinary
three-step flow. The nodes are data: what to choose between, what to repeat,
whom to ask; :func:`execute` runs them for the walk. The agents inside a node (a
router, branches, a loop body, a judge, a planner and the agents it may use)
are agents of the flow: their names are unique and ``flow.agents`` lists them.

- :func:`route` runs one of several branches, chosen by a Python predicate
  over the context or by a router agent whose answer is constrained to the
  branch names.
- :func:`loop` repeats a sub-flow until a predicate or a judge agent says it
  is done, or ``max_iterations``; iteration ``k`` of agent ``writer`` is
  recorded as ``writer#k``, so every iteration stays visible.
- :func:`plan` asks a planner agent to write a flow in the ``>>``/``|``
  language from the agents it is given, parses and validates it (errors go
  back to the planner), and runs it.
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from typing_extensions import override

from swarmcore import events
from swarmcore.errors import UserError
from swarmcore.flow import ControlNode, Flow, FlowNode, chain, control_nodes
from swarmcore.flow.shape import LoopShape, PlanShape, RouteShape
from swarmcore.models import AgentResult, Decision

if TYPE_CHECKING:
    from swarmcore.agent import Agent
    from swarmcore.context import SharedContext
    from swarmcore.walk import Position, Walk

__all__ = ["Loop", "Plan", "PlanAnswer", "Route", "Verdict", "loop", "plan", "route"]

Predicate = Callable[["SharedContext"], "Any | Awaitable[Any]"]
"""A function of the shared context (what the node's first agent would see), sync or async."""


def _is_agent(value: object) -> bool:
    from swarmcore.agent import Agent

    return isinstance(value, Agent)


def _as_flow(value: object, where: str) -> Flow:
    if isinstance(value, Flow):
        return value
    if isinstance(value, FlowNode):
        return chain(value)
    raise UserError(f"{where} must be an Agent or a Flow, got {type(value).__name__}.")


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
        router = (self.by,) if _is_agent(self.by) else ()
        agents = router + tuple(a for f in self.branches.values() for a in f.agents)
        object.__setattr__(self, "_agents", agents)

    @property
    def router(self) -> Agent | None:
        """The router agent, when an agent chooses."""
        return self.by if _is_agent(self.by) else None

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
        by = agent(self.by) if _is_agent(self.by) else self.by
        branches = {k: flow(v) for k, v in self.branches.items()}
        return Route(self.name, branches, by, self.default)

    @override
    def shape(self) -> RouteShape:
        router = self.by.name if _is_agent(self.by) else None
        return RouteShape(
            self.name, router, tuple((k, v.shape()) for k, v in self.branches.items())
        )

    def __repr__(self) -> str:
        return f"Route({self.label()})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Loop(ControlNode):
    """Repeats ``body`` until ``until`` says done, at most ``max_iterations`` times."""

    name: str
    body: Flow
    until: Any
    """A predicate (True: done), a judge Agent, or None (run every iteration)."""
    max_iterations: int
    _agents: tuple[FlowNode, ...] = field(init=False)
    _variants: dict[str, Any] = field(init=False, default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        judge = (self.until,) if _is_agent(self.until) else ()
        object.__setattr__(self, "_agents", tuple(self.body.agents) + judge)

    @property
    def judge(self) -> Agent | None:
        """The judge agent, when an agent decides."""
        return self.until if _is_agent(self.until) else None

    @override
    def inner_agents(self) -> tuple[FlowNode, ...]:
        return self._agents

    @override
    def inner_flows(self) -> tuple[Flow, ...]:
        return (self.body,)

    @override
    def entry_agents(self) -> tuple[FlowNode, ...]:
        return self.body.entries()

    @override
    def exit_agents(self) -> tuple[FlowNode, ...]:
        return self.body.exits()

    @override
    def rebuild(self, flow: Callable[[Flow], Flow], agent: Callable[[FlowNode], FlowNode]) -> Loop:
        until = agent(self.until) if _is_agent(self.until) else self.until
        return Loop(self.name, flow(self.body), until, self.max_iterations)

    @override
    def shape(self) -> LoopShape:
        judge = self.until.name if _is_agent(self.until) else None
        predicate = self.until is not None and judge is None
        return LoopShape(self.name, self.body.shape(), judge, self.max_iterations, predicate)

    def __repr__(self) -> str:
        return f"Loop({self.label()}, max_iterations={self.max_iterations})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Plan(ControlNode):
    """A planner writes the flow from ``agents``; the flow is parsed, validated and run."""

    name: str
    planner: Any
    """The planner Agent."""
    agents: tuple[Any, ...]
    """The agents the planner may use."""
    max_attempts: int = 3
    _variants: dict[str, Any] = field(init=False, default_factory=dict[str, Any])

    @property
    def planner_agent(self) -> Agent:
        """The planner, typed."""
        return self.planner

    @override
    def inner_agents(self) -> tuple[FlowNode, ...]:
        return (self.planner, *self.agents)

    @override
    def entry_agents(self) -> tuple[FlowNode, ...]:
        return (self.planner,)

    @override
    def exit_agents(self) -> tuple[FlowNode, ...]:
        return self.agents

    @override
    def rebuild(self, flow: Callable[[Flow], Flow], agent: Callable[[FlowNode], FlowNode]) -> Plan:
        return Plan(
            self.name, agent(self.planner), tuple(agent(a) for a in self.agents), self.max_attempts
        )

    @override
    def shape(self) -> PlanShape:
        return PlanShape(self.name, self.planner.name, tuple(a.name for a in self.agents))

    def __repr__(self) -> str:
        return f"Plan({self.name!r}, planner={self.planner.name!r})"


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
    from swarmcore.tools import validate_name

    if not isinstance(branches, Mapping) or not branches:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError("route() needs a dict of branch name to Agent or Flow.")
    flows: dict[str, Flow] = {}
    for key, value in branches.items():
        validate_name(key, "Branch")
        flows[key] = _as_flow(value, f"route() branch {key!r}")
    if not (callable(by) or _is_agent(by)):
        raise UserError("route(by=...) takes a function of the context or a router Agent.")
    if default is not None and default not in flows:
        raise UserError(f"route(default={default!r}) is not a branch; branches: {list(flows)}.")
    router: Any = by
    step_name = name or (f"{router.name}_route" if _is_agent(by) else "route")
    node = Route(validate_name(step_name, "Route"), flows, by, default)
    return chain(node)


def loop(
    body: object,
    *,
    until: Predicate | Agent | None = None,
    max_iterations: int = 3,
    name: str | None = None,
) -> Flow:
    """A step repeating ``body``, e.g. ``loop(writer >> critic, until=judge, max_iterations=4)``.

    Iteration ``k`` of an agent ``writer`` is recorded as ``writer#k`` in the
    context and the history, so later iterations and later agents see every
    draft. After each iteration ``until`` decides whether to stop.

    Args:
        body: An Agent or Flow to repeat (it may contain routes, not loops or plans).
        until: A function of the shared context (sync or async) returning True
            when done (``context.latest("critic")`` reads the newest iteration);
            or a judge Agent, run after each iteration as ``judge#k`` with a
            structured verdict (done, feedback) whose feedback the next
            iteration sees; or None to run ``max_iterations`` times.
        max_iterations: The most iterations; the loop ends there either way.
        name: The step's name (unique in the flow); "loop" by default.

    Raises:
        UserError: A bad body, ``until`` or ``max_iterations``, or a nested loop or plan.
    """
    from swarmcore.tools import validate_name

    flow = _as_flow(body, "loop() body")
    for step in flow.step_tuple:
        nested = [s for s in control_nodes((step,)) if isinstance(s, Loop | Plan)]
        if nested:
            raise UserError(
                f"loop() body holds {nested[0]!r}; loops and plans cannot run inside a loop yet."
            )
    if until is not None and not (callable(until) or _is_agent(until)):
        raise UserError("loop(until=...) takes a function of the context, a judge Agent or None.")
    if (
        isinstance(max_iterations, bool)
        or not isinstance(max_iterations, int)
        or max_iterations < 1
    ):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(f"loop(max_iterations=...) must be 1 or more, got {max_iterations!r}.")
    node = Loop(validate_name(name or "loop", "Loop"), flow, until, max_iterations)
    return chain(node)


def plan(
    planner: Agent,
    agents: Sequence[Agent],
    *,
    max_attempts: int = 3,
    name: str | None = None,
) -> Flow:
    """A step whose flow a planner agent writes from ``agents`` at run time.

    The planner gets the goal (the task) and a description of each agent,
    answers with a flow expression such as ``researcher >> (analyst | critic)
    >> writer``; it is parsed safely (never evaluated) and validated against
    ``agents``, and a parse or validation error goes back to the planner for
    another try, up to ``max_attempts`` answers. The plan is recorded
    (``SwarmResult.decisions``, events, the store) and then run.

    Raises:
        UserError: ``planner`` is not an Agent, ``agents`` is empty or holds
            something else, or ``max_attempts`` is not 1 or more.
    """
    from swarmcore.tools import validate_name

    if not _is_agent(planner):
        raise UserError(f"plan() needs a planner Agent, got {type(planner).__name__}.")
    listed = tuple(agents)
    if not listed or not all(_is_agent(a) for a in listed):
        raise UserError("plan() needs a non-empty list of Agents for the planner to use.")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(f"plan(max_attempts=...) must be 1 or more, got {max_attempts!r}.")
    node = Plan(
        validate_name(name or f"{planner.name}_plan", "Plan"), planner, listed, max_attempts
    )
    return chain(node)


async def call_predicate(fn: Callable[..., Any], context: SharedContext) -> Any:
    """Call a route or loop predicate, sync or async."""
    value = fn(context)
    if inspect.isawaitable(value):
        value = await value
    return value


# --- the agents a control step runs, built once per node -----------------------------


def _once(node: Route | Loop | Plan, role: str, build: Callable[[], Agent]) -> Agent:
    """The node's router, judge or planner variant: built on first use, kept on the node."""
    variant = node._variants.get(role)  # pyright: ignore[reportPrivateUsage] -- same module
    if variant is None:
        variant = node._variants[role] = build()  # pyright: ignore[reportPrivateUsage]
    return variant


def _variant(agent: Agent, **changes: Any) -> Agent:
    """``agent.clone(**changes)``, for agents renamed for a loop iteration (``triage#2``) too."""
    name = agent.name
    if "#" not in name:
        return agent.clone(**changes)
    return agent.renamed(name.partition("#")[0]).clone(**changes).renamed(name)


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
            f"- {key}: {_describe_flow(branch)}" for key, branch in node.branches.items()
        )
        instructions = (
            f"{router.instructions}\n\nChoose which branch runs next. The branches:\n{menu}"
        )
        return _variant(router, instructions=instructions, output_type=choice)

    return _once(node, "router", build)


class Verdict(BaseModel):
    """A loop judge's answer."""

    model_config = ConfigDict(defer_build=True)  # built on first use, not at import

    done: bool = PydanticField(description="True when the work is good enough to stop.")
    feedback: str = PydanticField(
        default="", description="What the next iteration should change, if not done."
    )


def judge_of(node: Loop) -> Agent:
    """The judge agent answering with a :class:`Verdict`."""

    def build() -> Agent:
        judge = node.judge
        assert judge is not None
        instructions = (
            f"{judge.instructions}\n\nJudge the latest iteration of: "
            f"{node.body.expression()}. Say done=true when it is good enough; otherwise "
            "give feedback the next iteration can act on."
        )
        return _variant(judge, instructions=instructions, output_type=Verdict)

    return _once(node, "judge", build)


class PlanAnswer(BaseModel):
    """A planner's answer."""

    model_config = ConfigDict(defer_build=True)

    flow: str = PydanticField(
        description="The flow in the expression language, e.g. 'a >> (b | c) >> d'."
    )
    reason: str = PydanticField(default="", description="Why this plan, in one sentence.")


def planner_of(node: Plan) -> Agent:
    """The planner agent: answers a :class:`PlanAnswer` whose flow must parse."""

    def build() -> Agent:
        from pydantic import Field, create_model

        planner = node.planner_agent
        catalogue = "\n".join(f"- {a.name}: {_describe_agent(a)}" for a in node.agents)
        instructions = (
            f"{planner.instructions}\n\nPlan how to reach the goal (the task) with these "
            f"agents:\n{catalogue}\n\nWrite the plan as a flow expression: agent names joined "
            "by '>>' (one after another: each sees the earlier outputs) and '|' (at the same "
            "time), with parentheses for grouping, e.g. 'a >> (b | c) >> d'. Use each agent "
            "at most once; leave out agents the goal does not need."
        )

        def parses(answer: PlanAnswer) -> str | None:
            try:
                Flow.parse(answer.flow, node.agents)
            except UserError as exc:
                return str(exc)
            return None

        # The example (every agent, in order) is what the offline model answers in dry runs.
        example = " >> ".join(a.name for a in node.agents)
        answer = create_model(
            f"{node.name}_answer",
            __base__=PlanAnswer,
            flow=(
                str,
                Field(description=PlanAnswer.model_fields["flow"].description, examples=[example]),
            ),
        )
        return _variant(
            planner,
            instructions=instructions,
            output_type=answer,
            output_validators=(*planner.output_validators, parses),
            output_retries=node.max_attempts - 1,
        )

    return _once(node, "planner", build)


def _describe_agent(agent: Any) -> str:
    first = str(agent.instructions).strip().split("\n", 1)[0]
    return first[:200] or agent.name


def _describe_flow(flow: Flow) -> str:
    first = flow.agents[0]
    return f"{flow.expression()} ({_describe_agent(first)})"


# --- running a control step (the walk hands each one here) ----------------------------


async def execute(node: ControlNode, walk: Walk, at: Position) -> Position:
    """Run a route, loop or plan at ``at`` of ``walk``; the position after it.

    Raises:
        UserError: A predicate raised or chose no branch, or ``node`` is no control step.
    """
    match node:
        case Route():
            return await _run_route(node, walk, at)
        case Loop():
            return await _run_loop(node, walk, at)
        case Plan():
            return await _run_plan(node, walk, at)
        case _:
            raise UserError(f"Flow step {node!r} is a control step swarmcore cannot run.")


async def _run_route(step: Route, walk: Walk, at: Position) -> Position:
    run = walk.run
    reason = ""
    if step.router is not None:
        router = router_of(step)
        await walk.agent(router, at)
        answer = run.results[router.name]
        choice, reason = _field(answer, "branch"), _field(answer, "reason")
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
    events.emit(events.RouteChosen, route=step.name, branch=choice, by=by, reason=reason)
    return await walk.steps(step.branches[choice].step_tuple, at)


async def _run_loop(step: Loop, walk: Walk, at: Position) -> Position:
    run = walk.run
    names = step.body.names + ((step.judge.name,) if step.judge else ())
    reason, feedback, done = "max_iterations", "", 0
    for k in range(1, step.max_iterations + 1):
        # Iteration k of `writer` is `writer#k`, placed after iteration k - 1.
        run.context.place(walk.iteration_ranks(f"{n}#{k}" for n in names))
        body = step.body.map_agents(functools.partial(_iteration, k=k))
        events.emit(
            events.LoopIteration,
            loop=step.name,
            iteration=k,
            max_iterations=step.max_iterations,
            agents=body.names,
        )
        at = await walk.steps(body.step_tuple, at)
        done = k
        if step.judge is not None:
            judge = judge_of(step).renamed(f"{step.judge.name}#{k}")
            await walk.agent(judge, at)
            at = at.seeing(judge.name)
            verdict = run.results[judge.name]
            feedback = str(_field(verdict, "feedback") or "")
            if _field(verdict, "done") is True:
                reason = "judge"
                break
        elif step.until is not None:
            try:
                finished = await call_predicate(step.until, run.context.subset(at.seen))
            except Exception as exc:
                raise UserError(
                    f"Loop {step.name!r}: its until predicate raised {type(exc).__name__}: {exc}"
                ) from exc
            if finished:
                reason = "until"
                break
    by = reason if reason != "judge" or step.judge is None else step.judge.name
    run.decide(Decision(kind="loop", step=step.name, value=str(done), by=by, detail=feedback))
    events.emit(
        events.LoopFinished, loop=step.name, iterations=done, reason=reason, feedback=feedback
    )
    return at


async def _run_plan(step: Plan, walk: Walk, at: Position) -> Position:
    run = walk.run
    planner = planner_of(step)
    await walk.agent(planner, at)
    answer = run.results[planner.name]
    planned = Flow.parse(str(_field(answer, "flow")), step.agents)  # its validator accepted it
    attempts = 1 + sum(
        1
        for m in answer.messages
        if m.get("role") == "user" and str(m.get("content", "")).startswith("Your answer was")
    )
    start = walk.setup.positions[planner.name]
    run.context.place({n: (start, i + 1) for i, n in enumerate(planned.names)})
    reason = str(_field(answer, "reason") or "")
    run.decide(
        Decision(
            kind="plan",
            step=step.name,
            value=planned.expression(),
            by=planner.name,
            detail=reason,
            attempts=attempts,
        )
    )
    events.emit(
        events.PlanMade,
        plan=step.name,
        planner=planner.name,
        expression=planned.expression(),
        attempts=attempts,
        reason=reason,
    )
    return await walk.steps(planned.step_tuple, at.seeing(planner.name))


def _iteration(node: FlowNode, k: int) -> FlowNode:
    assert _is_agent(node)  # loop bodies hold agents and routes (checked by loop())
    return typing.cast("Agent", node).renamed(f"{node.name}#{k}")


def _field(result: AgentResult, name: str) -> Any:
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
