"""Swarm: walks a flow over a fresh SharedContext per run.

Sequential steps run one after another; a parallel group runs its members at
once in an ``asyncio.TaskGroup`` (gather with structured cancellation: no task
is ever left running or unretrieved). A branch inside a group runs its own
steps in order. What a group needs is its declared policy: every member (the
first failure cancels the rest), best effort (failures are recorded and shown
to later agents), or a quorum (the rest are cancelled once k succeeded). An
agent that fails transiently can be run again (``step_retries``); every agent
that fails is recorded, and a raised error carries the finished results.

Each agent sees the outputs of the agents before it in the flow: every earlier
step, and the earlier agents of its own branch, never a sibling branch that
happens to finish first, so what an agent sees does not depend on timing. How
it sees them is the context mode's business: a small strategy object, chosen
once in ``Swarm.__init__``, that returns the hint and the run-local tools.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from swarmcore.agent import Agent, AgentDefaults
from swarmcore.context import SharedContext
from swarmcore.context_tools import (
    CONTEXT_TOOL_NAMES,
    make_expand_tool,
    make_pull_tools,
    pull_hint,
    push_hint,
)
from swarmcore.errors import AgentError, GroupError, SwarmError, UserError
from swarmcore.flow import Flow, FlowNode, Group, Step, chain
from swarmcore.models import AgentFailure, AgentResult, SwarmResult
from swarmcore.policies import Quorum, RetryPolicy
from swarmcore.tools import Tool

__all__ = ["ContextMode", "Swarm"]

logger = logging.getLogger("swarmcore.swarm")

_Outcome = tuple[tuple[str, ...], tuple[str, ...]]
"""What running some steps gives: the names now visible, and the last step's exits."""

ContextMode = Literal["pull", "push"]


@dataclass(frozen=True, slots=True)
class _Prepared:
    hint: str | None
    tools: tuple[Tool, ...]


_NOTHING = _Prepared(None, ())


class _Mode(Protocol):
    name: ContextMode

    def prepare(self, context: SharedContext, previous: Sequence[str]) -> _Prepared: ...


class _PullMode:
    """Pull: a short hint and three tools; the first step gets neither."""

    name: ContextMode = "pull"

    def prepare(self, context: SharedContext, previous: Sequence[str]) -> _Prepared:
        if not len(context) and not context.failures():
            return _NOTHING
        return _Prepared(pull_hint(context, previous), make_pull_tools(context))


class _PushMode:
    """Push: the previous step in full, earlier steps as summaries, and expand_context."""

    name: ContextMode = "push"

    def prepare(self, context: SharedContext, previous: Sequence[str]) -> _Prepared:
        if not len(context) and not context.failures():
            return _NOTHING
        summarised = any(name not in previous for name in context)
        tools = (make_expand_tool(context),) if summarised else ()
        return _Prepared(push_hint(context, previous), tools)


_MODES: dict[str, _Mode] = {"pull": _PullMode(), "push": _PushMode()}


@dataclass(slots=True)
class _Run:
    """The state of one run: never shared between runs."""

    task: str
    context: SharedContext
    results: dict[str, AgentResult] = field(default_factory=dict[str, AgentResult])
    failures: dict[str, AgentFailure] = field(default_factory=dict[str, AgentFailure])
    started: float = field(default_factory=time.perf_counter)

    def fail(self, failure: AgentFailure) -> None:
        self.failures[failure.agent_name] = failure
        self.context.set_failure(failure.agent_name, f"{failure.error_type}: {failure.message}")


class Swarm:
    """Runs a flow of agents over a shared context.

    Args:
        flow: The flow to run (an Agent alone is a one-step flow).
        context_mode: ``"pull"`` (default): later agents get a short hint and
            ``list_context``/``get_context``/``search_context`` tools.
            ``"push"``: the previous step's output in full and earlier ones as
            summaries in the prompt, with ``expand_context``.
        defaults: Settings for every agent that leaves them unset: retry
            policy, call and agent timeouts, tool timeout, result truncation.
        step_retries: How many times an agent that failed transiently (a model
            outage that outlasted its retries, its own timeout) is run again
            from scratch; a group's ``retries`` overrides it for its members.

    Raises:
        UserError: ``flow`` is not a Flow or Agent, ``context_mode`` is unknown,
            an agent's tool uses a name the context modes reserve, or a setting
            is invalid.
    """

    __slots__ = ("_defaults", "_flow", "_mode", "_step_retries")

    def __init__(
        self,
        flow: Flow | Agent,
        *,
        context_mode: ContextMode = "pull",
        defaults: AgentDefaults | None = None,
        step_retries: int = 0,
    ) -> None:
        if isinstance(flow, FlowNode):
            flow = chain(flow)
        if not isinstance(flow, Flow):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"Swarm() takes a Flow or an Agent, got {type(flow).__name__}.")
        mode = _MODES.get(context_mode) if isinstance(context_mode, str) else None
        if mode is None:
            raise UserError(f"context_mode must be 'pull' or 'push', got {context_mode!r}.")
        _check_reserved_tool_names(flow)
        if defaults is not None and not isinstance(defaults, AgentDefaults):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"defaults must be an AgentDefaults, got {type(defaults).__name__}.")
        if isinstance(step_retries, bool) or not isinstance(step_retries, int) or step_retries < 0:
            raise UserError(f"step_retries must be 0 or more, got {step_retries!r}.")
        self._flow = flow
        self._mode = mode
        self._defaults = defaults or AgentDefaults()
        self._step_retries = step_retries

    @property
    def flow(self) -> Flow:
        """The flow this swarm runs."""
        return self._flow

    @property
    def context_mode(self) -> ContextMode:
        """``"pull"`` or ``"push"``."""
        return self._mode.name

    def __repr__(self) -> str:
        return f"Swarm({self._flow.expression()}, context_mode={self._mode.name!r})"

    async def run(self, task: str) -> SwarmResult:
        """Run the flow on ``task`` with a fresh SharedContext.

        Returns:
            The final output, the context (agent name to output) and every
            agent's result, all in flow order.

        Raises:
            UserError: The task is empty.
            AgentError: An agent failed; ``error.partial`` holds every result
                that finished before it, as a SwarmResult.
            GroupError: A best-effort or quorum group had too few successes;
                ``error.partial`` as above.
        """
        if not isinstance(task, str) or not task.strip():
            raise UserError("Swarm.run() needs a non-empty task string.")
        run = _Run(task=task, context=SharedContext(order=self._flow.names))
        try:
            await self._run_steps(run, self._flow.step_tuple, (), (), self._step_retries)
        except SwarmError as error:
            error.partial = self._result(run, final=False)
            raise
        except BaseExceptionGroup as group:
            error = _first_error(group)
            if isinstance(error, SwarmError):
                error.partial = self._result(run, final=False)
            raise error from None
        return self._result(run, final=True)

    async def _run_steps(
        self,
        run: _Run,
        steps: Sequence[Step],
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        """Run ``steps`` in order; returns the names now visible and the last step's exits."""
        for step in steps:
            match step:
                case Agent():
                    await self._run_agent(run, step, seen, previous, retries)
                    seen, previous = (*seen, step.name), (step.name,)
                case Group():
                    seen, previous = await self._run_group(run, step, seen, previous, retries)
                case _:  # unreachable: Swarm.__init__ checked that every node is an Agent
                    raise UserError(f"Flow step {step!r} is not an Agent; only Agents can run.")
        return seen, previous

    async def _run_group(
        self,
        run: _Run,
        group: Group,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        if group.retries is not None:
            retries = group.retries
        try:
            if group.policy == "all":
                async with asyncio.TaskGroup() as tasks:
                    running = [
                        tasks.create_task(
                            self._run_steps(run, _as_steps(m), seen, previous, retries)
                        )
                        for m in group
                    ]
                outcomes: list[_Outcome | None] = [task.result() for task in running]
            else:
                outcomes = await self._run_tolerant(run, group, seen, previous, retries)
        except BaseExceptionGroup as failed:  # surface the failure itself, not a wrapper
            raise _first_error(failed) from None
        # Failed members stay visible (as failed) to later agents, in flow order.
        ran = tuple(
            name
            for member in group
            for name in _names(member)
            if name in run.results or name in run.failures
        )
        exits = tuple(name for o in outcomes if o is not None for name in o[1])
        return (*seen, *ran), exits

    async def _run_tolerant(
        self,
        run: _Run,
        group: Group,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> list[_Outcome | None]:
        """Best effort and quorum: a member's failure is recorded, not raised."""
        need = group.policy.k if isinstance(group.policy, Quorum) else None
        outcomes: list[_Outcome | None] = [None] * len(group)
        failed: list[int] = []
        running: list[asyncio.Task[None]] = []
        reached = False

        async def member(index: int, node: FlowNode | Flow) -> None:
            nonlocal reached
            try:
                outcomes[index] = await self._run_steps(
                    run, _as_steps(node), seen, previous, retries
                )
            except (AgentError, GroupError):
                failed.append(index)
                self._mark_unrun(
                    run, node, "Skipped", "not run: an earlier agent of its branch failed"
                )
                if need is not None and len(group) - len(failed) < need:
                    raise self._quorum_error(run, group, need) from None
                return
            succeeded = sum(o is not None for o in outcomes)
            if need is not None and succeeded >= need and not reached:
                reached = True
                for task in running:
                    if task is not asyncio.current_task():
                        task.cancel()  # TaskGroup treats a cancelled child as finished, not failed

        async with asyncio.TaskGroup() as tasks:
            running.extend(tasks.create_task(member(i, m)) for i, m in enumerate(group))
        if reached:
            for node in group:
                self._mark_unrun(
                    run, node, "Cancelled", f"stopped once {need} members of its group succeeded"
                )
        return outcomes

    def _mark_unrun(self, run: _Run, node: FlowNode | Flow, kind: str, why: str) -> None:
        """Record the agents of ``node`` that neither finished nor failed, so none goes missing."""
        for name in _names(node):
            if name not in run.results and name not in run.failures:
                run.fail(
                    AgentFailure(agent_name=name, error_type=kind, message=why, cancelled=True)
                )

    def _quorum_error(self, run: _Run, group: Group, need: int) -> GroupError:
        names = [n for member in group for n in _names(member)]
        failures = [run.failures[n] for n in names if n in run.failures]
        reasons = "; ".join(f"{f.agent_name} ({f.error_type}: {f.message})" for f in failures)
        return GroupError(
            f"The parallel group ({' | '.join(_member_expr(m) for m in group)}) needed "
            f"{need} of {len(group)} members to succeed, and {len(failures)} failed: {reasons}",
            failures=failures,
            required=need,
        )

    async def _run_agent(
        self,
        run: _Run,
        agent: Agent,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> None:
        view = run.context.subset(seen)
        prepared = self._mode.prepare(view, previous)
        attempt = 0
        while True:
            attempt += 1
            try:
                result = await self._attempt(run, agent, view, prepared)
                break
            except AgentError as error:
                if error.retryable and attempt <= retries:
                    delay = self._defaults_retry().delay(attempt)
                    logger.warning(
                        "agent %s failed (%s); running it again (step retry %d of %d) in %.1fs",
                        agent.name,
                        error,
                        attempt,
                        retries,
                        delay,
                        extra={"agent_name": agent.name},
                    )
                    await asyncio.sleep(delay)
                    continue
                run.fail(
                    AgentFailure(
                        agent_name=agent.name,
                        error_type=type(error).__name__,
                        message=str(error),
                        retryable=error.retryable,
                        attempts=attempt,
                    )
                )
                raise
        if attempt > 1:
            result = result.model_copy(update={"attempts": attempt})
        run.results[agent.name] = result
        summary = result.summary if result.summary != result.output else None
        run.context.set(agent.name, result.output, summary)

    def _defaults_retry(self) -> RetryPolicy:
        retry = self._defaults.retry
        assert isinstance(retry, RetryPolicy)  # AgentDefaults converts ints
        return retry

    async def _attempt(
        self, run: _Run, agent: Agent, view: SharedContext, prepared: _Prepared
    ) -> AgentResult:
        try:
            return await agent.run(
                run.task,
                view,
                extra_tools=prepared.tools,
                context_hint=prepared.hint,
                defaults=self._defaults,
            )
        except SwarmError:
            raise
        except Exception as exc:  # a bug in a tool wrapper or provider: keep the partial results
            raise AgentError(
                f"Agent {agent.name!r} failed with {type(exc).__name__}: {exc}",
                agent_name=agent.name,
            ) from exc

    def _result(self, run: _Run, *, final: bool) -> SwarmResult:
        history = [run.results[n] for n in self._flow.names if n in run.results]
        if final:
            exits = [a.name for a in self._flow.exits() if a.name in run.results]
            output = _join_outputs([run.results[n] for n in exits])
        else:
            output = history[-1].output if history else ""
        return SwarmResult(
            output=output,
            context=run.context.as_dict(),
            history=history,
            duration_seconds=time.perf_counter() - run.started,
            failures=[run.failures[n] for n in self._flow.names if n in run.failures],
        )


def _as_steps(member: FlowNode | Flow) -> tuple[Step, ...]:
    return member.step_tuple if isinstance(member, Flow) else (member,)


def _names(member: FlowNode | Flow) -> tuple[str, ...]:
    return member.names if isinstance(member, Flow) else (member.name,)


def _member_expr(member: FlowNode | Flow) -> str:
    return f"({member.expression()})" if isinstance(member, Flow) else member.name


def _join_outputs(results: list[AgentResult]) -> str:
    """One exit: its output. A final parallel group: outputs under ``## name`` headers."""
    if len(results) == 1:
        return results[0].output
    return "\n\n".join(f"## {r.agent_name}\n\n{r.output}" for r in results)


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first real failure in a (possibly nested) exception group."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)  # pyright: ignore[reportUnknownArgumentType]
        return exc
    return group


def _check_reserved_tool_names(flow: Flow) -> None:
    for agent in flow.agents:
        if not isinstance(agent, Agent):
            raise UserError(f"Flow holds {agent!r}, which is not an Agent; only Agents can run.")
        clash = [
            t.name for t in agent.tools if isinstance(t, Tool) and t.name in CONTEXT_TOOL_NAMES
        ]
        if clash:
            raise UserError(
                f"Agent {agent.name!r} has a tool named {clash[0]!r}, a name the context modes "
                f"reserve ({', '.join(CONTEXT_TOOL_NAMES)}); rename the tool."
            )
