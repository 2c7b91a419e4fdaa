"""Swarm: walks a flow over a fresh SharedContext per run.

Sequential steps run one after another; a parallel group runs its members at
once in an ``asyncio.TaskGroup`` (gather with structured cancellation: the
first failure cancels its siblings and no task is left running). A branch
inside a group runs its own steps in order.

Each agent sees the outputs of the agents before it in the flow: every earlier
step, and the earlier agents of its own branch, never a sibling branch that
happens to finish first, so what an agent sees does not depend on timing. How
it sees them is the context mode's business: a small strategy object, chosen
once in ``Swarm.__init__``, that returns the hint and the run-local tools.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from swarmcore.agent import Agent
from swarmcore.context import SharedContext
from swarmcore.context_tools import (
    CONTEXT_TOOL_NAMES,
    make_expand_tool,
    make_pull_tools,
    pull_hint,
    push_hint,
)
from swarmcore.errors import AgentError, SwarmError, UserError
from swarmcore.flow import Flow, FlowNode, Step, chain
from swarmcore.models import AgentResult, SwarmResult
from swarmcore.tools import Tool

__all__ = ["ContextMode", "Swarm"]

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
        if not len(context):
            return _NOTHING
        return _Prepared(pull_hint(context, previous), make_pull_tools(context))


class _PushMode:
    """Push: the previous step in full, earlier steps as summaries, and expand_context."""

    name: ContextMode = "push"

    def prepare(self, context: SharedContext, previous: Sequence[str]) -> _Prepared:
        if not len(context):
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
    started: float = field(default_factory=time.perf_counter)


class Swarm:
    """Runs a flow of agents over a shared context.

    Args:
        flow: The flow to run (an Agent alone is a one-step flow).
        context_mode: ``"pull"`` (default): later agents get a short hint and
            ``list_context``/``get_context``/``search_context`` tools.
            ``"push"``: the previous step's output in full and earlier ones as
            summaries in the prompt, with ``expand_context``.

    Raises:
        UserError: ``flow`` is not a Flow or Agent, ``context_mode`` is unknown,
            or an agent's tool uses a name the context modes reserve.
    """

    __slots__ = ("_flow", "_mode")

    def __init__(self, flow: Flow | Agent, *, context_mode: ContextMode = "pull") -> None:
        if isinstance(flow, FlowNode):
            flow = chain(flow)
        if not isinstance(flow, Flow):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"Swarm() takes a Flow or an Agent, got {type(flow).__name__}.")
        mode = _MODES.get(context_mode) if isinstance(context_mode, str) else None
        if mode is None:
            raise UserError(f"context_mode must be 'pull' or 'push', got {context_mode!r}.")
        _check_reserved_tool_names(flow)
        self._flow = flow
        self._mode = mode

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
        """
        if not isinstance(task, str) or not task.strip():
            raise UserError("Swarm.run() needs a non-empty task string.")
        run = _Run(task=task, context=SharedContext(order=self._flow.names))
        try:
            await self._run_steps(run, self._flow.step_tuple, (), ())
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
        self, run: _Run, steps: Sequence[Step], seen: tuple[str, ...], previous: tuple[str, ...]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Run ``steps`` in order; returns the names now visible and the last step's exits."""
        for step in steps:
            match step:
                case Agent():
                    await self._run_agent(run, step, seen, previous)
                    seen, previous = (*seen, step.name), (step.name,)
                case tuple():
                    seen, previous = await self._run_group(run, step, seen, previous)
                case _:  # unreachable: Swarm.__init__ checked that every node is an Agent
                    raise UserError(f"Flow step {step!r} is not an Agent; only Agents can run.")
        return seen, previous

    async def _run_group(
        self,
        run: _Run,
        members: tuple[FlowNode | Flow, ...],
        seen: tuple[str, ...],
        previous: tuple[str, ...],
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(self._run_steps(run, _as_steps(m), seen, previous))
                for m in members
            ]
        outcomes = [task.result() for task in tasks]
        ran = tuple(name for branch_seen, _ in outcomes for name in branch_seen[len(seen) :])
        exits = tuple(name for _, branch_exits in outcomes for name in branch_exits)
        return (*seen, *ran), exits

    async def _run_agent(
        self, run: _Run, agent: Agent, seen: tuple[str, ...], previous: tuple[str, ...]
    ) -> None:
        view = run.context.subset(seen)
        prepared = self._mode.prepare(view, previous)
        try:
            result = await agent.run(
                run.task, view, extra_tools=prepared.tools, context_hint=prepared.hint
            )
        except SwarmError:
            raise
        except Exception as exc:  # a bug in a tool wrapper or provider: keep the partial results
            raise AgentError(
                f"Agent {agent.name!r} failed with {type(exc).__name__}: {exc}",
                agent_name=agent.name,
            ) from exc
        run.results[agent.name] = result
        summary = result.summary if result.summary != result.output else None
        run.context.set(agent.name, result.output, summary)

    def _result(self, run: _Run, *, final: bool) -> SwarmResult:
        history = [run.results[n] for n in self._flow.names if n in run.results]
        if final:
            exits = [a.name for a in self._flow.exits()]
            output = _join_outputs([run.results[n] for n in exits])
        else:
            output = history[-1].output if history else ""
        return SwarmResult(
            output=output,
            context=run.context.as_dict(),
            history=history,
            duration_seconds=time.perf_counter() - run.started,
        )


def _as_steps(member: FlowNode | Flow) -> tuple[Step, ...]:
    return member.step_tuple if isinstance(member, Flow) else (member,)


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
