"""Planning: a planner agent writes the flow to run from the agents it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from typing_extensions import override

from swarmcore import events
from swarmcore._checks import check_number
from swarmcore._flow import ControlNode, Flow, FlowNode, chain
from swarmcore._flow.shape import PlanShape
from swarmcore.control._common import (
    describe_agent,
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
    from swarmcore._tools import validate_name

    if not is_agent(planner):
        raise UserError(f"plan() needs a planner Agent, got {type(planner).__name__}.")
    listed = tuple(agents)
    if not listed or not all(is_agent(a) for a in listed):
        raise UserError("plan() needs a non-empty list of Agents for the planner to use.")
    check_number("plan()", "max_attempts", max_attempts, whole=True)
    node = Plan(
        validate_name(name or f"{planner.name}_plan", "Plan"), planner, listed, max_attempts
    )
    return chain(node)


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
        catalogue = "\n".join(f"- {a.name}: {describe_agent(a)}" for a in node.agents)
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
        return variant(
            planner,
            instructions=instructions,
            output_type=answer,
            output_validators=(*planner.output_validators, parses),
            output_retries=node.max_attempts - 1,
        )

    return once(node._variants, "planner", build)  # pyright: ignore[reportPrivateUsage] -- its own node


async def run_plan(step: Plan, walk: Walk, at: Position) -> Position:
    """Ask the planner for a flow, record it as a decision, and run it."""
    run = walk.run
    planner = planner_of(step)
    await walk.agent(planner, at)
    answer = run.results[planner.name]
    planned = Flow.parse(str(field_of(answer, "flow")), step.agents)  # its validator accepted it
    attempts = 1 + answer.rejections
    start = walk.setup.positions[planner.name]
    run.context.place({n: (start, i + 1) for i, n in enumerate(planned.names)})
    reason = str(field_of(answer, "reason") or "")
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
    walk.scope.emit(
        events.PlanMade,
        plan=step.name,
        planner=planner.name,
        expression=planned.expression(),
        attempts=attempts,
        reason=reason,
    )
    return await walk.steps(planned.step_tuple, at.seeing(planner.name))
