"""Walking a flow: steps in order, parallel groups with their policies, step retries.

Sequential steps run one after another; a parallel group runs its members at
once in an ``asyncio.TaskGroup`` (structured cancellation: no task is ever left
running or unretrieved). A branch inside a group runs its own steps in order.
What a group needs is its declared policy: every member (the first failure
cancels the rest), best effort (failures are recorded and shown to later
agents), or a quorum (the rest are cancelled once k succeeded). An agent that
fails transiently can be run again (step retries); every agent that fails is
recorded, and a raised error carries the finished results.

Each agent sees the outputs of the agents before it in the flow: every earlier
step, and the earlier agents of its own branch, never a sibling branch that
happens to finish first, so what an agent sees does not depend on timing. Where
the walk is, is one small value (:class:`Position`).

**The seam.** Every agent of a flow runs through one call, an
:data:`AgentRunner`: run one agent at one position of the flow with one context
view, get its AgentResult. :func:`run_in_process` is the default; an engine
that makes runs durable wraps it (each call a durable step).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from typing_extensions import TypeIs

from swarmcore import _loop, events
from swarmcore._flow import ControlNode, Flow, FlowNode, Group, Step, control_nodes
from swarmcore._policies import Quorum
from swarmcore._prompt import render
from swarmcore.agent import Agent
from swarmcore.context import SharedContext
from swarmcore.errors import (
    AgentError,
    BudgetExceeded,
    GroupError,
    SwarmError,
    UserError,
    first_error,
)
from swarmcore.modes import Recipient
from swarmcore.results import AgentFailure, AgentKey, AgentResult, Decision, SwarmResult
from swarmcore.scope import RunScope

if TYPE_CHECKING:
    from swarmcore._settings import AgentDefaults
    from swarmcore.modes import Mode, Prepared

logger = logging.getLogger("swarmcore.swarm")


@dataclass(frozen=True, slots=True)
class Position:
    """Where the walk is: what the next agent sees, and what the last step left."""

    seen: tuple[str, ...] = ()
    """The agents whose outputs (or failures) the next agent sees, in flow order."""
    previous: tuple[str, ...] = ()
    """The last step's exits: what push mode shows in full."""
    retries: int = 0
    """Step retries in force (a group's ``retries`` overrides the Swarm's)."""

    def after(self, *names: str) -> Position:
        """The position once ``names`` ran as a step: seen, and the new previous step."""
        return Position((*self.seen, *names), names, self.retries)

    def seeing(self, *names: str) -> Position:
        """The position with ``names`` seen too, the previous step unchanged (a router's)."""
        return Position((*self.seen, *names), self.previous, self.retries)


@dataclass(frozen=True, slots=True)
class AgentStep:
    """One agent to run at one position of a flow: everything the seam is handed."""

    run_id: str
    agent: Agent
    task: str
    view: SharedContext
    """The outputs this agent sees (the context tools read this, and only this)."""
    prepared: Prepared
    """The context mode's hint and run-local tools for this agent."""
    options: _loop.RunOptions
    attempt: int
    scope: RunScope = field(default_factory=RunScope)
    """The run's scope, nested in this agent's span: what its calls carry down."""


AgentRunner = Callable[[AgentStep], Awaitable[AgentResult]]
"""Runs one agent of a flow: the seam engines wrap."""


@runtime_checkable
class RunsItsStep(Protocol):
    """An Agent that runs its own step instead of a model loop (an A2A ``RemoteAgent``)."""

    async def run_step(self, step: AgentStep) -> AgentResult:
        """Run ``step`` (this agent at one position of a flow); its result."""
        ...


@runtime_checkable
class RunsElsewhere(Protocol):
    """An Agent that runs on a server of its own (an A2A ``RemoteAgent``), reached at ``url``."""

    @property
    def url(self) -> str:
        """Where the agent is reached."""
        ...


_CONFORMS: dict[tuple[type, type], bool] = {}


def _conforms(agent: object, protocol: type) -> bool:
    """``isinstance(agent, protocol)``, decided once per class of agent.

    A runtime protocol check walks the protocol's members on every call (20-35 us,
    against about 400 us of CPU for a whole model call on the native backend); an
    agent's class decides it, so one check per class is enough.
    """
    key = (type(agent), protocol)
    known = _CONFORMS.get(key)
    if known is None:
        known = _CONFORMS[key] = isinstance(agent, protocol)
    return known


def runs_its_step(agent: object) -> TypeIs[RunsItsStep]:
    """Whether ``agent`` runs its own step (:class:`RunsItsStep`)."""
    return _conforms(agent, RunsItsStep)


def runs_elsewhere(agent: object) -> TypeIs[RunsElsewhere]:
    """Whether ``agent`` runs on a server of its own (:class:`RunsElsewhere`)."""
    return _conforms(agent, RunsElsewhere)


async def run_in_process(step: AgentStep) -> AgentResult:
    """The default runner: the agent's tool-calling loop, here, in this process."""
    if runs_its_step(step.agent):  # through the seam all the same: engines wrap it
        return await step.agent.run_step(step)
    prepared = step.prepared
    return await _loop.run_agent(
        step.agent,
        step.task,
        step.options,
        scope=step.scope,
        hint=prepared.hint,
        extra_tools=prepared.tools,
    )


@dataclass(frozen=True, slots=True)
class FlowSetup:
    """What every run of one Swarm shares: worked out once, when the Swarm is made."""

    flow: Flow
    mode: Mode
    defaults: AgentDefaults
    step_retries: int
    positions: Mapping[str, int]
    """Each agent's place in the flow."""


@dataclass(slots=True)
class Run:
    """The state of one run: never shared between runs."""

    task: str
    context: SharedContext
    options: _loop.RunOptions
    run_id: str
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    resumed: bool = False
    results: dict[str, AgentResult] = field(default_factory=dict[str, AgentResult])
    failures: dict[str, AgentFailure] = field(default_factory=dict[str, AgentFailure])
    decisions: list[Decision] = field(default_factory=list[Decision])
    stored_decisions: Sequence[Decision] = ()
    """A resumed run's decisions as stored (made again, not stored again)."""
    on_decision: Callable[[Decision], None] | None = None
    """Where a new decision is recorded (the run store), if anywhere."""
    started: float = field(default_factory=time.perf_counter)

    def fail(self, failure: AgentFailure) -> None:
        """Record a failed (or skipped, or cancelled) agent: later agents are told."""
        self.failures[failure.agent_name] = failure
        self.context.set_failure(failure.agent_name, f"{failure.error_type}: {failure.message}")

    def finish(self, result: AgentResult) -> None:
        """Record a finished agent: its output joins the context."""
        self.results[result.agent_name] = result
        summary = result.summary if result.summary != result.output else None
        self.context.set(result.agent_name, result.output, summary)

    def decide(self, decision: Decision) -> None:
        """Record a route's, loop's or plan's decision (a resumed run stores only new ones)."""
        index = len(self.decisions)
        self.decisions.append(decision)
        if index < len(self.stored_decisions) and self.stored_decisions[index] == decision:
            return
        if self.on_decision is not None:
            self.on_decision(decision)

    def result(self, *, final: bool, exits: tuple[str, ...] = ()) -> SwarmResult:
        """What the run has: the final result, or the partial one an error carries."""
        history = [self.results[n] for n in self.context.in_order(self.results)]
        if final:
            output = _join_outputs([self.results[n] for n in exits if n in self.results])
        else:
            output = history[-1].output if history else ""
        return SwarmResult(
            output=output,
            context=self.context.as_dict(),
            history=history,
            duration_seconds=time.perf_counter() - self.started,
            failures=[self.failures[n] for n in self.context.in_order(self.failures)],
            run_id=self.run_id,
            decisions=list(self.decisions),
        )


class Walk:
    """One run's walk over its flow, in one span of it (``scope``).

    Args:
        setup: What every run of the Swarm shares.
        run: This run's state.
        runner: How one agent runs (the seam).
        scope: What the run carries down to its calls (budget, events, steps...).
    """

    def __init__(
        self,
        setup: FlowSetup,
        run: Run,
        runner: AgentRunner = run_in_process,
        scope: RunScope | None = None,
    ) -> None:
        self.setup = setup
        self.run = run
        self.runner = runner
        self.scope = scope or RunScope()
        self._views: list[tuple[Position, SharedContext, dict[Recipient | None, Prepared]]] = []
        """What agents at the last position seen see: a parallel group's members share the
        view, and the preparation too unless the mode prepares for each agent."""

    def within(self, span: events.Span) -> Walk:
        """This walk, for the steps inside ``span``: their events nest under it."""
        if span.bus is None:
            return self
        inner = Walk(self.setup, self.run, self.runner, self.scope.within(span))
        inner._views = self._views  # one cache for the whole walk
        return inner

    async def result(self) -> SwarmResult:
        """Walk the whole flow.

        Raises:
            SwarmError: Whatever stopped the run, with ``partial`` set to what finished.
        """
        run = self.run
        try:
            start = Position(retries=self.setup.step_retries)
            at = await self.steps(self.setup.flow.step_tuple, start)
        except SwarmError as error:
            error.partial = run.result(final=False)
            raise
        except BaseExceptionGroup as group:
            error = first_error(group)
            if isinstance(error, SwarmError):
                error.partial = run.result(final=False)
            raise error from error.__cause__
        return run.result(final=True, exits=at.previous)

    async def steps(self, steps: Sequence[Step], at: Position) -> Position:
        """Run ``steps`` in order; the position after the last."""
        for step in steps:
            at = await self.step(step, at)
        return at

    async def step(self, step: Step, at: Position) -> Position:
        """Run one step: an agent, a parallel group, or a route, loop or plan."""
        names = _step_names(step)
        policy = None
        if isinstance(step, Group):
            policy = f"quorum({step.policy.k})" if isinstance(step.policy, Quorum) else step.policy
        with self.scope.span(
            events.StepStarted,
            events.StepFinished,
            step=_step_expression(step),
            agents=names,
            started={"parallel": isinstance(step, Group), "policy": policy},
        ) as span:
            try:
                return await self.within(span)._dispatch(step, at)
            finally:
                failed = tuple(n for n in self.run.failures if AgentKey.parse(n).base in names)
                span.set(failed=failed)

    async def _dispatch(self, step: Step | Flow, at: Position) -> Position:
        match step:
            case Flow():  # a branch of a group
                return await self.steps(step.step_tuple, at)
            case ControlNode():
                from swarmcore import control  # loaded only by flows that route, loop or plan

                return await control.execute(step, self, at)
            case Agent():
                return await self.agent(step, at)
            case Group():
                return await self.group(step, at)
            case _:  # unreachable: Swarm() checked that every node is an Agent
                raise UserError(f"Flow step {step!r} is not an Agent; only Agents can run.")

    async def agent(self, agent: Agent, at: Position) -> Position:
        """Run one agent (again, as step retries allow); the position after it."""
        run = self.run
        if agent.name in run.results:  # finished before a resume: kept, not paid for again
            return at.after(agent.name)
        instructions = render(agent.instructions, run.options.variables)
        view, prepared = self._view(at, Recipient(agent.name, instructions, run.task))
        attempt = 0
        while True:
            attempt += 1
            step = AgentStep(run.run_id, agent, run.task, view, prepared, run.options, attempt)
            began, began_at = time.perf_counter(), time.time()
            try:
                result = await self._attempt(step)
                break
            except (AgentError, BudgetExceeded) as error:
                # A budget refusal ends the run too: the agent is recorded as failed.
                retryable = isinstance(error, AgentError) and error.retryable
                if isinstance(error, AgentError) and retryable and attempt <= at.retries:
                    await self._before_retry(agent, error, attempt, at.retries)
                    continue
                run.fail(
                    AgentFailure(
                        agent_name=agent.name,
                        error_type=type(error).__name__,
                        message=str(error),
                        retryable=retryable,
                        attempts=attempt,
                        model=agent.model,
                        duration_seconds=time.perf_counter() - began,
                        started_at=began_at,
                    )
                )
                raise
        if attempt > 1:
            result = result.model_copy(update={"attempts": attempt})
        run.finish(result)
        return at.after(agent.name)

    def _view(self, at: Position, recipient: Recipient) -> tuple[SharedContext, Prepared]:
        """The context ``recipient`` at ``at`` sees, and what the mode makes of it for it.

        What the agents in ``at.seen`` left no longer changes, so the agents at
        one position (the members of a parallel group, which start one after
        another) share one view, and one hint unless the mode prepares for each
        agent, instead of making N copies.
        """
        mode = self.setup.mode
        if not self._views or self._views[0][0] != at:
            self._views[:] = [(at, self.run.context.subset(at.seen), {})]
        _, view, prepared = self._views[0]
        key = recipient if mode.per_agent else None
        if key not in prepared:
            prepared[key] = mode.prepare(view, at.previous, recipient)
        return view, prepared[key]

    async def _attempt(self, step: AgentStep) -> AgentResult:
        agent = step.agent
        with self.scope.span(
            events.AgentStarted,
            events.AgentFinished,
            agent_name=agent.name,
            model=agent.model,
            attempt=step.attempt,
            started={"remote": agent.url if runs_elsewhere(agent) else None},
        ) as span:
            try:
                result = await self.runner(replace(step, scope=self.scope.within(span)))
            except SwarmError:
                raise
            except Exception as exc:  # a bug in a tool wrapper or provider: keep the partials
                raise AgentError(
                    f"Agent {agent.name!r} failed with {type(exc).__name__}: {exc}",
                    agent_name=agent.name,
                ) from exc
            span.set(result=result, model=result.model)
        return result

    async def _before_retry(self, agent: Agent, error: AgentError, attempt: int, of: int) -> None:
        delay = self.setup.defaults.retry_policy.delay(attempt)
        logger.warning(
            "agent %s failed (%s); running it again (step retry %d of %d) in %.1fs",
            agent.name,
            error,
            attempt,
            of,
            delay,
            extra={"agent_name": agent.name},
        )
        self.scope.emit(
            events.RetryScheduled,
            agent_name=agent.name,
            scope="agent",
            attempt=attempt,
            delay_seconds=delay,
            error=str(error),
        )
        await asyncio.sleep(delay)

    async def group(self, group: Group, at: Position) -> Position:
        """Run a parallel group under its policy; later agents see every member's outcome."""
        if group.retries is not None:
            at = Position(at.seen, at.previous, group.retries)
        try:
            if group.policy == "all":
                async with asyncio.TaskGroup() as tasks:
                    running = [tasks.create_task(self._dispatch(m, at)) for m in group]
                outcomes: list[Position | None] = [task.result() for task in running]
            else:
                outcomes = await self._tolerant(group, at)
        except BaseExceptionGroup as failed:  # surface the failure itself, not a wrapper
            error = first_error(failed)
            raise error from error.__cause__
        exits = tuple(name for o in outcomes if o is not None for name in o.previous)
        finished = tuple(
            name
            for member in group
            for name in _names(member)
            if name in self.run.results or name in self.run.failures
        )
        return Position((*at.seen, *finished), exits, at.retries)

    async def _tolerant(self, group: Group, at: Position) -> list[Position | None]:
        """Best effort and quorum: a member's failure is recorded, not raised."""
        need = group.policy.k if isinstance(group.policy, Quorum) else None
        outcomes: list[Position | None] = [None] * len(group)
        running: list[asyncio.Task[None]] = []
        failed = succeeded = 0
        reached = False

        async def member(index: int, node: FlowNode | Flow) -> None:
            nonlocal failed, succeeded, reached
            try:
                outcomes[index] = await self._dispatch(node, at)
            except (AgentError, GroupError):
                failed += 1
                self._mark_unrun(node, "Skipped", "not run: an earlier agent of its branch failed")
                if need is not None and len(group) - failed < need:
                    raise self._quorum_error(group, need) from None
                return
            succeeded += 1
            if need is not None and succeeded >= need and not reached:
                reached = True
                for task in running:
                    if task is not asyncio.current_task():
                        task.cancel()  # TaskGroup treats a cancelled child as finished, not failed

        async with asyncio.TaskGroup() as tasks:
            running += [tasks.create_task(member(i, m)) for i, m in enumerate(group)]
        if reached:
            for node in group:
                self._mark_unrun(
                    node, "Cancelled", f"stopped once {need} members of its group succeeded"
                )
        return outcomes

    def _mark_unrun(self, node: FlowNode | Flow, kind: str, why: str) -> None:
        """Record the agents of ``node`` that neither finished nor failed, so none goes missing."""
        run = self.run
        for name in _names(node):
            if name not in run.results and name not in run.failures:
                run.fail(
                    AgentFailure(agent_name=name, error_type=kind, message=why, cancelled=True)
                )

    def _quorum_error(self, group: Group, need: int) -> GroupError:
        names = [n for member in group for n in _names(member)]
        failures = [self.run.failures[n] for n in names if n in self.run.failures]
        reasons = "; ".join(f"{f.agent_name} ({f.error_type}: {f.message})" for f in failures)
        return GroupError(
            f"The parallel group ({' | '.join(_member_expr(m) for m in group)}) needed "
            f"{need} of {len(group)} members to succeed, and {len(failures)} failed: {reasons}",
            failures=failures,
            required=need,
        )

    def iteration_ranks(self, names: Iterable[str]) -> dict[str, tuple[int, ...]]:
        """Where loop iterations (``w#2``) sit in flow order: after iteration 1, in body order."""
        return iteration_ranks(self.setup.flow, self.setup.positions, names)


def iteration_ranks(
    flow: Flow, positions: Mapping[str, int], names: Iterable[str]
) -> dict[str, tuple[int, ...]]:
    """Where loop iterations (``w#2``) sit in ``flow``'s order, for a run or a resumed one."""
    from swarmcore.control import Loop

    starts: dict[str, int] = {}
    for node in control_nodes(flow.step_tuple):
        if isinstance(node, Loop):
            start = positions[node.body.names[0]]
            judge = (node.judge.name,) if node.judge else ()
            starts.update(dict.fromkeys((*node.body.names, *judge), start))
    ranks: dict[str, tuple[int, ...]] = {}
    for name in names:
        key = AgentKey.parse(name)
        if key.base in starts and key.iteration is not None:
            ranks[name] = (starts[key.base], key.iteration, positions[key.base])
    return ranks


def _step_names(step: Step) -> tuple[str, ...]:
    if isinstance(step, Group):
        return tuple(name for member in step for name in _names(member))
    return _names(step)


def _step_expression(step: Step) -> str:
    if isinstance(step, Group):
        return " | ".join(_member_expr(m) for m in step)
    return _member_expr(step)


def _names(member: FlowNode | Flow) -> tuple[str, ...]:
    if isinstance(member, ControlNode):
        return tuple(a.name for a in member.inner_agents())
    return member.names if isinstance(member, Flow) else (member.name,)


def _member_expr(member: FlowNode | Flow) -> str:
    if isinstance(member, ControlNode):
        return member.label()
    return f"({member.expression()})" if isinstance(member, Flow) else member.name


def _join_outputs(results: list[AgentResult]) -> str:
    """One exit: its output. A final parallel group: outputs under ``## name`` headers."""
    if len(results) == 1:
        return results[0].output
    return "\n\n".join(f"## {r.agent_name}\n\n{r.output}" for r in results)
