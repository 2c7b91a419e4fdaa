"""Loops: repeat a sub-flow until a predicate or a judge says done, or max_iterations."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from typing_extensions import override

from swarmcore import events
from swarmcore._checks import check_number
from swarmcore._flow import ControlNode, Flow, FlowNode, chain, control_nodes
from swarmcore._flow.shape import LoopShape
from swarmcore.control._common import (
    Predicate,
    as_flow,
    call_predicate,
    field_of,
    is_agent,
    once,
    variant,
)
from swarmcore.control._plan import Plan
from swarmcore.errors import UserError
from swarmcore.results import AgentKey, Decision

if TYPE_CHECKING:
    from swarmcore._walk import Position, Walk
    from swarmcore.agent import Agent


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
        judge = (self.until,) if is_agent(self.until) else ()
        object.__setattr__(self, "_agents", tuple(self.body.agents) + judge)

    @property
    def judge(self) -> Agent | None:
        """The judge agent, when an agent decides."""
        return self.until if is_agent(self.until) else None

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
        until = agent(self.until) if is_agent(self.until) else self.until
        return Loop(self.name, flow(self.body), until, self.max_iterations)

    @override
    def shape(self) -> LoopShape:
        judge = self.until.name if is_agent(self.until) else None
        predicate = self.until is not None and judge is None
        return LoopShape(self.name, self.body.shape(), judge, self.max_iterations, predicate)

    def __repr__(self) -> str:
        return f"Loop({self.label()}, max_iterations={self.max_iterations})"


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
    from swarmcore._tools import validate_name

    flow = as_flow(body, "loop() body")
    for step in flow.step_tuple:
        nested = [s for s in control_nodes((step,)) if isinstance(s, Loop | Plan)]
        if nested:
            raise UserError(
                f"loop() body holds {nested[0]!r}; loops and plans cannot run inside a loop yet."
            )
    if until is not None and not (callable(until) or is_agent(until)):
        raise UserError("loop(until=...) takes a function of the context, a judge Agent or None.")
    check_number("loop()", "max_iterations", max_iterations, whole=True)
    node = Loop(validate_name(name or "loop", "Loop"), flow, until, max_iterations)
    return chain(node)


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
        return variant(judge, instructions=instructions, output_type=Verdict)

    return once(node._variants, "judge", build)  # pyright: ignore[reportPrivateUsage] -- its own node


async def run_loop(step: Loop, walk: Walk, at: Position) -> Position:
    """Run the body as iterations ``name#k`` until the judge, predicate or limit stops it."""
    run = walk.run
    names = step.body.names + ((step.judge.name,) if step.judge else ())
    reason, feedback, done = "max_iterations", "", 0
    for k in range(1, step.max_iterations + 1):
        # Iteration k of `writer` is `writer#k`, placed after iteration k - 1.
        run.context.place(walk.iteration_ranks(str(AgentKey(n, k)) for n in names))
        body = step.body.map_agents(functools.partial(_iteration, k=k))
        walk.scope.emit(
            events.LoopIteration,
            loop=step.name,
            iteration=k,
            max_iterations=step.max_iterations,
            agents=body.names,
        )
        at = await walk.steps(body.step_tuple, at)
        done = k
        if step.judge is not None:
            judge = judge_of(step).renamed(str(AgentKey(step.judge.name, k)))
            await walk.agent(judge, at)
            at = at.seeing(judge.name)
            verdict = run.results[judge.name]
            feedback = str(field_of(verdict, "feedback") or "")
            if field_of(verdict, "done") is True:
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
    walk.scope.emit(
        events.LoopFinished, loop=step.name, iterations=done, reason=reason, feedback=feedback
    )
    return at


def _iteration(node: FlowNode, k: int) -> FlowNode:
    assert is_agent(node)  # loop bodies hold agents and routes (checked by loop())
    return typing.cast("Agent", node).renamed(str(AgentKey(node.name, k)))
