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
import functools
import json
import logging
import os
import time
import typing
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from swarmcore import budget, events
from swarmcore.agent import (
    Agent,
    AgentDefaults,
    RunOptions,
    check_approvals,
    check_variables,
    needs_approval,
    normalize_variables,
    reachable,
    run_sync,
    start_in_flow,
)
from swarmcore.context import SharedContext
from swarmcore.context_tools import (
    CONTEXT_TOOL_NAMES,
    pull_hint,
    pull_tools,
    push_hint,
    push_tools,
    summarises,
)
from swarmcore.errors import AgentError, GroupError, SwarmError, UserError, first_error
from swarmcore.events import EventBus, Hook
from swarmcore.flow import ControlNode, Flow, FlowNode, Group, Step, chain, control_nodes, shape_of
from swarmcore.models import AgentFailure, AgentResult, Decision, SwarmResult
from swarmcore.policies import Quorum, RetryPolicy
from swarmcore.tools import Approver, Tool

if TYPE_CHECKING:
    from swarmcore.batch import MapProgress
    from swarmcore.control import Loop, Plan, Route
    from swarmcore.dryrun import DryRunReport
    from swarmcore.events import Event
    from swarmcore.store import RunStore

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
        return _Prepared(pull_hint(context, previous), pull_tools())


class _PushMode:
    """Push: the previous step in full, earlier steps as summaries, and expand_context."""

    name: ContextMode = "push"

    def prepare(self, context: SharedContext, previous: Sequence[str]) -> _Prepared:
        if not len(context) and not context.failures():
            return _NOTHING
        tools = push_tools() if summarises(context, previous) else ()
        return _Prepared(push_hint(context, previous), tools)


_MODES: dict[str, _Mode] = {"pull": _PullMode(), "push": _PushMode()}


@dataclass(slots=True)
class _Run:
    """The state of one run: never shared between runs."""

    task: str
    context: SharedContext
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    variables: dict[str, object] = field(default_factory=dict[str, object])
    resumed: bool = False
    bus: EventBus | None = None
    results: dict[str, AgentResult] = field(default_factory=dict[str, AgentResult])
    failures: dict[str, AgentFailure] = field(default_factory=dict[str, AgentFailure])
    # Tuples until a control node decides: most runs make no decision and hold no lists.
    decisions: list[Decision] | tuple[()] = ()
    stored_decisions: Sequence[Decision] = ()
    """A resumed run's decisions as stored (made again, not stored again)."""
    started: float = field(default_factory=time.perf_counter)
    last_view: tuple[tuple[str, ...], tuple[str, ...], SharedContext, _Prepared] | None = None
    """The last view made, by the step tuples it was made for: see ``view``."""
    options: RunOptions | None = None
    """What every agent run of this run shares; made by the Swarm with its first agent."""

    def view(
        self, seen: tuple[str, ...], previous: tuple[str, ...], mode: _Mode
    ) -> tuple[SharedContext, _Prepared]:
        """What an agent that runs after ``seen`` sees, prepared for the context mode.

        The members of a parallel group are handed the same ``seen`` and
        ``previous`` tuples, and what those names left in the context no longer
        changes, so the members share one view, hint and set of context tools
        instead of building N copies.
        """
        last = self.last_view
        if last is not None and last[0] is seen and last[1] is previous:
            return last[2], last[3]
        view = self.context.subset(seen)
        prepared = mode.prepare(view, previous)
        self.last_view = (seen, previous, view, prepared)
        return view, prepared

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
        hooks: Callbacks (sync or async) called with every event of every run;
            subscribe to chosen event types with :meth:`on`.
        max_cost: USD the run may spend, shared by every branch; a model call
            that would start once it is spent is refused with BudgetExceeded.
        max_tokens: Tokens the run may spend, likewise.
        allow_unpriced: Under ``max_cost``, run models LiteLLM has no price
            for (their cost is not counted); refused by default (fail closed).
        store: Record every run and each agent result as it finishes: a path
            (a SQLite file, created when missing) or a RunStore. Enables
            :meth:`resume`.
        approve: Called (sync or async) with an ``ApprovalRequest`` before each
            call to a tool marked ``requires_approval``; returns
            ``Approval.allow()``, ``.deny(reason)``, ``.edit(arguments)``, or a bool.
            Without it, a flow with such a tool fails before any model call.

    Raises:
        UserError: ``flow`` is not a Flow or Agent, ``context_mode`` is unknown,
            an agent's tool uses a name the context modes reserve, or a setting
            is invalid.
    """

    __slots__ = (
        "_agents",
        "_approve",
        "_budget",
        "_defaults",
        "_flow",
        "_hooks",
        "_metered",
        "_mode",
        "_needs_approval",
        "_plain_options",
        "_positions",
        "_ranks",
        "_step_retries",
        "_store",
        "_uses_toolsets",
        "_variables_used",
    )

    def __init__(
        self,
        flow: Flow | Agent,
        *,
        context_mode: ContextMode = "pull",
        defaults: AgentDefaults | None = None,
        step_retries: int = 0,
        hooks: Sequence[Hook] = (),
        max_cost: float | None = None,
        max_tokens: int | None = None,
        allow_unpriced: bool = False,
        store: RunStore | str | os.PathLike[str] | None = None,
        approve: Approver | None = None,
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
        self._positions = {name: i for i, name in enumerate(flow.names)}
        # Each run's context copies these ranks (SharedContext.ranked). Built once, they
        # shed the collector's tracking once it has seen them, and so do the copies.
        self._ranks = {name: (i,) for i, name in enumerate(flow.names)}
        self._mode = mode
        self._defaults = defaults or AgentDefaults()
        self._step_retries = step_retries
        self._hooks = [events.bind(h) for h in hooks]
        # Validated now (Meter checks its limits); a fresh meter is made per run.
        budget.Meter(max_cost=max_cost, max_tokens=max_tokens, allow_unpriced=allow_unpriced)
        self._budget = (max_cost, max_tokens, allow_unpriced)
        self._metered = max_cost is not None or max_tokens is not None
        self._store = None
        if store is not None:
            from swarmcore.store import open_store  # sqlite3 is loaded only for runs that store

            self._store = open_store(store)
        self._uses_toolsets = any(isinstance(a, Agent) and a.toolsets for a in flow.agents)
        # What each run checks of the agents, worked out once: a flow never changes.
        self._agents = [a for a in flow.agents if isinstance(a, Agent)]
        self._variables_used = frozenset(v for a in reachable(self._agents) for v in a.variables)
        self._needs_approval = needs_approval(self._agents)
        if approve is not None and not callable(approve):
            raise UserError(f"approve must be a function, got {type(approve).__name__}.")
        self._approve = approve
        # What the agent runs of a run with no variables share: one object, not one a run.
        self._plain_options = RunOptions(defaults=self._defaults, variables={}, approve=approve)

    @property
    def approve(self) -> Approver | None:
        """The approval callback for tools marked ``requires_approval``, if any."""
        return self._approve

    @property
    def store(self) -> RunStore | None:
        """Where runs are recorded, if anywhere."""
        return self._store

    def on(self, *types: type[Event]) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
        """Subscribe the decorated function (sync or async) to events of ``types``.

        ```python
        @swarm.on(ToolCallFinished, ModelCallFinished)
        def watch(event): ...
        ```

        With no types it receives every event. A hook that raises is logged
        and never breaks the run.
        """
        events.check_types(types)  # now, not when the decorator is applied

        def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
            self._hooks.append(events.bind(fn, *types))
            return fn

        return register

    def add_hook(self, hook: Hook, *types: type[Event]) -> None:
        """Call ``hook`` with events of ``types`` (every event when none) in every run."""
        self._hooks.append(events.bind(hook, *types))

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

    async def run(
        self,
        task: str,
        *,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SwarmResult:
        """Run the flow on ``task`` with a fresh SharedContext.

        Args:
            task: What to do; every agent gets it as its user message.
            variables: Values for the ``{name}`` placeholders in agents'
                instructions; kept with the run in the store, so a resumed run
                gets them again.
            metadata: JSON-able notes kept with the run in the store (e.g. who
                started it, or the CLI's target).

        Returns:
            The final output, the context (agent name to output), every
            agent's result in flow order, failures, usage and cost.

        Raises:
            UserError: The task is empty, a variable is missing, or a tool
                requires approval and the Swarm has no ``approve`` callback
                (all checked before any model call).
            AgentError: An agent failed; ``error.partial`` holds every result
                that finished before it, as a SwarmResult.
            GroupError: A best-effort or quorum group had too few successes;
                ``error.partial`` as above.
            BudgetExceeded: ``max_cost`` or ``max_tokens`` was spent;
                ``error.partial`` as above.
        """
        return await self._execute(self._new_run(task, variables, metadata), ())

    def run_sync(
        self,
        task: str,
        *,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SwarmResult:
        """:meth:`run` for scripts and notebooks: blocks until the run is over.

        With no event loop running it runs on a new one; inside a running loop
        (a notebook cell) it runs on a new loop in a worker thread, since the
        caller's loop cannot be re-entered. Async code should ``await swarm.run``.
        """
        run = self._new_run(task, variables, metadata)  # bad input fails here, in the caller
        return run_sync(lambda: self._execute(run, ()))

    async def resume(self, run_id: str) -> SwarmResult:
        """Continue a stored run that failed or was killed, without re-running finished agents.

        The shared context is rebuilt from the stored results and the flow
        runs from the first unfinished step; inside a parallel group only the
        unfinished members run again. The run keeps its id. A run that
        already succeeded returns its stored result and calls no model.

        Args:
            run_id: The stored run's id (or a unique prefix of it).

        Raises:
            UserError: This Swarm has no store, the run is not in it, or this
                Swarm's flow has another shape than the stored run's.
        """
        if self._store is None:
            raise UserError("resume() needs a run store: Swarm(flow, store='runs.db').")
        record = self._store.get_run(run_id)
        if record is None:
            raise UserError(
                f"No run {run_id!r} in {self._store!r}; list them with `swarmcore runs list`."
            )
        shape = shape_of(self._flow)
        if record.shape != shape:
            raise UserError(
                f"Run {record.run_id[:12]} was made by the flow {record.flow!r}, and this Swarm's "
                f"flow {self._flow.expression()!r} has another shape (agents, groups or "
                "policies differ); resume it with the same flow."
            )
        if self._approve is None and self._needs_approval:  # its agents' runs do not check
            check_approvals(self._agents)
        run = _Run(
            task=record.task,
            context=SharedContext.ranked(self._ranks),
            run_id=record.run_id,
            metadata=record.settings.get("metadata") or {},
            variables=normalize_variables(record.settings.get("variables")),
            resumed=True,
            stored_decisions=list(record.decisions),
        )
        run.context.place(self._iteration_ranks(r.agent_name for r in record.results))
        for result in record.results:
            if result.agent_name.partition("#")[0] in self._positions:
                run.results[result.agent_name] = self._reparsed(result)
                summary = result.summary if result.summary != result.output else None
                run.context.set(result.agent_name, result.output, summary)
        return await self._execute(run, ())

    async def map(
        self,
        tasks: Iterable[str],
        *,
        concurrency: int = 4,
        variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None = None,
        progress: Callable[[MapProgress], object] | None = None,
    ) -> list[SwarmResult | BaseException]:
        """Run the flow once per task, at most ``concurrency`` runs at a time.

        One failing run never stops the others: its place in the returned list
        holds its error (a SwarmError carries ``partial`` results).

        Args:
            tasks: The inputs, one run each.
            concurrency: The most runs in flight at once.
            variables: Prompt variables for every run, or one mapping per task.
            progress: Called (sync or async) after each run ends, with a
                :class:`MapProgress`: how many are done, succeeded and failed.

        Returns:
            One entry per task, in input order: its SwarmResult, or its error.

        Raises:
            UserError: ``concurrency`` is not a positive whole number, a task
                is empty, or ``variables`` does not match the tasks (checked
                before any run starts).
        """
        from swarmcore.batch import run_batch

        return await run_batch(
            lambda task, values: self.run(task, variables=values),
            tasks,
            concurrency=concurrency,
            variables=variables,
            progress=progress,
            # every input checked (task, variables, approvals) before the first run starts
            check=lambda task, values: self._new_run(task, values, None),
        )

    def _reparsed(self, result: AgentResult) -> AgentResult:
        """A stored result whose ``parsed`` is the agent's output_type again, not plain JSON."""
        agent = next((a for a in self._flow.agents if a.name == result.agent_name), None)
        spec = agent._output if isinstance(agent, Agent) else None  # pyright: ignore[reportPrivateUsage] -- one package
        if spec is None or result.parsed is None:
            return result
        try:
            return result.model_copy(update={"parsed": spec.adapter.validate_json(result.output)})
        except ValueError:  # the type changed since: keep what was stored
            return result

    def _new_run(
        self,
        task: str,
        variables: Mapping[str, object] | None,
        metadata: Mapping[str, Any] | None,
    ) -> _Run:
        _check_task(task)
        values = normalize_variables(variables)
        if not self._variables_used <= values.keys():
            check_variables(self._agents, values)
        if self._approve is None and self._needs_approval:
            check_approvals(self._agents)
        return _Run(
            task=task,
            context=SharedContext.ranked(self._ranks),
            metadata=dict(metadata or {}),
            variables=values,
        )

    async def stream(
        self, task: str, *, text: bool = False, variables: Mapping[str, object] | None = None
    ) -> AsyncIterator[Event]:
        """Run the flow on ``task``, yielding its events as they happen.

        The last event is :class:`~swarmcore.events.RunFinished`, holding the
        result (or the error, which is raised after it is yielded). Stopping
        the iteration early cancels the run.

        Args:
            task: What to do.
            text: Stream model text as :class:`~swarmcore.events.TextDelta`
                events (LiteLLM ``stream=True``); results and usage are the same.
            variables: Values for the ``{name}`` placeholders in instructions.
        """
        run = self._new_run(task, variables, None)
        queue: asyncio.Queue[Event] = asyncio.Queue()
        runner = asyncio.ensure_future(
            self._execute(run, ((queue.put_nowait, ()),), text_deltas=text)
        )
        try:
            while True:
                if queue.empty() and runner.done():
                    break
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, runner}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    continue
                event = getter.result()
                yield event
                if isinstance(event, events.RunFinished):
                    break
            await runner  # the result is in RunFinished; a failure is raised here
        finally:
            if not runner.done():
                runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)

    async def dry_run(
        self, task: str, *, variables: Mapping[str, object] | None = None
    ) -> DryRunReport:
        """Count the model calls and prompt tokens a run would make, without spending anything.

        The flow runs on the offline model with every tool replaced by a
        placeholder (no tool is called); each agent's prompt tokens are priced
        with its real model. Hooks, budgets and limits of this Swarm are not
        used.

        Returns:
            Per agent, in flow order: model calls, prompt tokens and their cost.
        """
        from swarmcore.dryrun import AgentEstimate, DryRunReport
        from swarmcore.llm import prompt_cost
        from swarmcore.testing import offline_model

        _check_task(task)
        offline = offline_model()
        rehearsal = self._flow.map_agents(lambda node: _offline_copy(node, offline))
        sent: dict[str, list[int]] = {}

        def count(event: Event) -> None:
            if isinstance(event, events.ModelCallFinished):
                tokens = event.usage.prompt_tokens if event.usage else 0
                # A loop's iterations (w#1, w#2) count towards their agent.
                sent.setdefault(event.agent_name.partition("#")[0], []).append(tokens)

        swarm = Swarm(
            rehearsal,
            context_mode=self._mode.name,
            defaults=self._defaults,
            approve=lambda _: True,  # placeholders run nothing, so nothing needs a person
        )
        swarm.add_hook(count, events.ModelCallFinished)
        await swarm.run(task, variables=variables)
        estimates: list[AgentEstimate] = []
        for node in self._flow.agents:
            assert isinstance(node, Agent)  # Swarm.__init__ checked every node
            calls = sent.get(node.name, [])
            estimates.append(
                AgentEstimate(
                    agent_name=node.name,
                    model=node.model,
                    model_calls=len(calls),
                    prompt_tokens=sum(calls),
                    prompt_cost=prompt_cost(node.model, sum(calls)),
                )
            )
        return DryRunReport(agents=estimates)

    def _execute(
        self,
        run: _Run,
        extra: Sequence[tuple[Hook, tuple[type[Event], ...]]],
        *,
        text_deltas: bool = False,
    ) -> Coroutine[Any, Any, SwarmResult]:
        """The run's coroutine: the walk itself when nothing is set up around it.

        A plain function handing back the coroutine. A run with no listener, budget,
        outer budget or MCP server (the common one) gets no frame of its own above the
        walk: with thousands of runs in flight, every object held is one more for the
        garbage collector to walk.
        """
        run.bus = self._bus(run, extra, text_deltas)
        if (
            run.bus is None
            and not self._metered
            and not self._uses_toolsets
            and budget.current_meter() is None
        ):
            return self._walk(run)
        return self._execute_around(run)

    async def _execute_around(self, run: _Run) -> SwarmResult:
        """The run inside its budget meter and MCP connection scope, observed or not."""
        max_cost, max_tokens, allow_unpriced = self._budget
        meter = None
        if max_cost is not None or max_tokens is not None:
            meter = budget.Meter(
                max_cost=max_cost, max_tokens=max_tokens, allow_unpriced=allow_unpriced
            )
        # No meter to set or to hide (an outer run's): leave the context alone.
        outer = budget.current_meter()
        token = budget.metering(meter) if meter is not None or outer is not None else None
        # MCP servers connect on first use and stay open for the whole run.
        scope = scope_token = None
        if self._uses_toolsets:
            from swarmcore import mcp

            scope = mcp.ConnectionScope()
            scope_token = mcp.enter_scope(scope)
        try:
            if run.bus is None:
                return await self._walk(run)
            return await self._observed_walk(run, run.bus)
        finally:
            if token is not None:
                budget.reset(token)
            if scope is not None and scope_token is not None:
                from swarmcore import mcp

                await scope.close()
                mcp.exit_scope(scope_token)

    def _bus(
        self, run: _Run, extra: Sequence[tuple[Hook, tuple[type[Event], ...]]], text_deltas: bool
    ) -> EventBus | None:
        """The run's event bus, or None when nothing listens (a helper: no list held in a frame)."""
        subscribers = [*self._hooks, *extra]
        if self._store is not None:
            subscribers.append((_Recorder(self._store, self, run), ()))
        if events.run_logger.isEnabledFor(logging.INFO):
            subscribers.append((events.log_event, ()))
        if not subscribers:
            return None
        return EventBus(run.run_id, subscribers, text_deltas=text_deltas)

    async def _observed_walk(self, run: _Run, bus: EventBus) -> SwarmResult:
        span = events.Span(bus, None)
        bus.publish(
            events.RunStarted(
                **span.ids,
                task=run.task,
                flow=self._flow.expression(),
                agents=self._flow.names,
                context_mode=self._mode.name,
                resumed=run.resumed,
                shape=self._flow.shape(),
            )
        )
        result: SwarmResult | None = None
        try:
            with span.inside():
                result = await self._walk(run)
            return result
        finally:
            bus.publish(
                events.RunFinished(
                    **span.ids,
                    duration_seconds=time.perf_counter() - run.started,
                    result=result,
                    error=span.error,
                )
            )
            await bus.drain()

    async def _walk(self, run: _Run) -> SwarmResult:
        try:
            _, exits = await self._run_steps(run, self._flow.step_tuple, (), (), self._step_retries)
        except SwarmError as error:
            error.partial = self._result(run, final=False)
            raise
        except BaseExceptionGroup as group:
            error = first_error(group)
            if isinstance(error, SwarmError):
                error.partial = self._result(run, final=False)
            raise error from error.__cause__
        return self._result(run, final=True, exits=exits)

    async def _run_steps(
        self,
        run: _Run,
        steps: Sequence[Step],
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        """Run ``steps`` in order; returns the names now visible and the last step's exits."""
        # By index: a range iterator is not tracked by the garbage collector, a tuple's is,
        # and this frame holds its iterator for the whole run.
        for i in range(len(steps)):
            step = steps[i]
            if run.bus is not None:
                seen, previous = await self._observed_step(run, step, seen, previous, retries)
            elif isinstance(step, Agent):  # the commonest step, with no frame in between
                seen, previous = await self._run_agent(run, step, seen, previous, retries)
            else:
                seen, previous = await self._run_step(run, step, seen, previous, retries)
        return seen, previous

    def _run_member(
        self,
        run: _Run,
        member: FlowNode | Flow,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> Coroutine[Any, Any, _Outcome]:
        """A group member: an agent runs as part of the group's step; a branch has its own.

        A plain function handing back the coroutine: one frame less per member.
        """
        if isinstance(member, Flow):
            return self._run_steps(run, member.step_tuple, seen, previous, retries)
        if isinstance(member, Agent):  # the commonest member: no _run_step frame around it
            return self._run_agent(run, member, seen, previous, retries)
        return self._run_step(run, member, seen, previous, retries)

    async def _run_step(
        self,
        run: _Run,
        step: Step,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        match step:
            case Agent():
                return await self._run_agent(run, step, seen, previous, retries)
            case Group():
                return await self._run_group(run, step, seen, previous, retries)
            case ControlNode():
                return await self._run_control(run, step, seen, previous, retries)
            case _:  # unreachable: Swarm.__init__ checked that every node is an Agent
                raise UserError(f"Flow step {step!r} is not an Agent; only Agents can run.")

    async def _observed_step(
        self,
        run: _Run,
        step: Step,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        span = events.Span.child()
        if span is None:  # observed steps run inside the run's span; kept for safety
            return await self._run_step(run, step, seen, previous, retries)
        names = _step_names(step)
        expression = _step_expression(step)
        policy = None
        if isinstance(step, Group):
            policy = f"quorum({step.policy.k})" if isinstance(step.policy, Quorum) else step.policy
        span.bus.publish(
            events.StepStarted(
                **span.ids,
                step=expression,
                agents=names,
                parallel=isinstance(step, Group),
                policy=policy,
            )
        )
        try:
            with span.inside():
                return await self._run_step(run, step, seen, previous, retries)
        finally:
            span.bus.publish(
                events.StepFinished(
                    **span.ids,
                    step=expression,
                    agents=names,
                    duration_seconds=span.elapsed,
                    failed=tuple(n for n in run.failures if n.partition("#")[0] in names),
                    error=span.error,
                )
            )

    async def _run_control(
        self,
        run: _Run,
        step: ControlNode,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        from swarmcore import control  # loaded only by flows that route, loop or plan

        match step:
            case control.Route():
                return await self._run_route(run, step, seen, previous, retries)
            case control.Loop():
                return await self._run_loop(run, step, seen, previous, retries)
            case control.Plan():
                return await self._run_plan(run, step, seen, previous, retries)
            case _:
                raise UserError(f"Flow step {step!r} is a control step swarmcore cannot run.")

    async def _run_route(
        self,
        run: _Run,
        step: Route,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        from swarmcore.control import call_predicate, router_of

        reason = ""
        if step.router is not None:
            router = router_of(step)
            await self._run_agent(run, router, seen, previous, retries)
            answer = run.results[router.name]
            choice, reason = _field(answer, "branch"), _field(answer, "reason")
            seen, by = (*seen, router.name), router.name
        else:
            try:
                choice = await call_predicate(step.by, run.context.subset(seen))
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
        branch = str(choice)
        self._decide(
            run, Decision(kind="route", step=step.name, value=branch, by=by, detail=reason)
        )
        events.emit(events.RouteChosen, route=step.name, branch=branch, by=by, reason=reason)
        branch_steps = step.branches[branch].step_tuple
        return await self._run_steps(run, branch_steps, seen, previous, retries)

    async def _run_loop(
        self,
        run: _Run,
        step: Loop,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        from swarmcore.control import call_predicate, judge_of

        names = step.body.names + ((step.judge.name,) if step.judge else ())
        reason, feedback, done = "max_iterations", "", 0
        for k in range(1, step.max_iterations + 1):
            # Iteration k of `writer` is `writer#k`, placed after iteration k - 1.
            run.context.place(self._iteration_ranks(f"{n}#{k}" for n in names))
            body = step.body.map_agents(functools.partial(_renamed, iteration=k))
            events.emit(
                events.LoopIteration,
                loop=step.name,
                iteration=k,
                max_iterations=step.max_iterations,
                agents=body.names,
            )
            seen, previous = await self._run_steps(run, body.step_tuple, seen, previous, retries)
            done = k
            if step.judge is not None:
                judge = judge_of(step).renamed(f"{step.judge.name}#{k}")
                await self._run_agent(run, judge, seen, previous, retries)
                seen = (*seen, judge.name)
                verdict = run.results[judge.name]
                feedback = str(_field(verdict, "feedback") or "")
                if _field(verdict, "done") is True:
                    reason = "judge"
                    break
            elif step.until is not None:
                try:
                    finished = await call_predicate(step.until, run.context.subset(seen))
                except Exception as exc:
                    raise UserError(
                        f"Loop {step.name!r}: its until predicate raised "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                if finished:
                    reason = "until"
                    break
        by = reason if reason != "judge" or step.judge is None else step.judge.name
        self._decide(
            run, Decision(kind="loop", step=step.name, value=str(done), by=by, detail=feedback)
        )
        events.emit(
            events.LoopFinished, loop=step.name, iterations=done, reason=reason, feedback=feedback
        )
        return seen, previous

    async def _run_plan(
        self,
        run: _Run,
        step: Plan,
        seen: tuple[str, ...],
        previous: tuple[str, ...],
        retries: int,
    ) -> _Outcome:
        from swarmcore.control import planner_of

        planner = planner_of(step)
        await self._run_agent(run, planner, seen, previous, retries)
        answer = run.results[planner.name]
        expression = str(_field(answer, "flow"))
        planned = Flow.parse(expression, step.agents)  # the planner's validator accepted it
        attempts = 1 + sum(
            1
            for m in answer.messages
            if m.get("role") == "user" and str(m.get("content", "")).startswith("Your answer was")
        )
        start = self._positions[planner.name]
        run.context.place({n: (start, i + 1) for i, n in enumerate(planned.names)})
        reason = str(_field(answer, "reason") or "")
        decision = Decision(
            kind="plan",
            step=step.name,
            value=planned.expression(),
            by=planner.name,
            detail=reason,
            attempts=attempts,
        )
        self._decide(run, decision)
        events.emit(
            events.PlanMade,
            plan=step.name,
            planner=planner.name,
            expression=planned.expression(),
            attempts=attempts,
            reason=reason,
        )
        seen = (*seen, planner.name)
        return await self._run_steps(run, planned.step_tuple, seen, previous, retries)

    def _iteration_ranks(self, names: Iterable[str]) -> dict[str, tuple[int, ...]]:
        """Where stored loop iterations (``w#2``) sit in flow order, as in ``_run_loop``."""
        from swarmcore.control import Loop

        starts: dict[str, int] = {}
        for node in control_nodes(self._flow.step_tuple):
            if isinstance(node, Loop):
                start = self._positions[node.body.names[0]]
                judge = (node.judge.name,) if node.judge else ()
                starts.update(dict.fromkeys((*node.body.names, *judge), start))
        ranks: dict[str, tuple[int, ...]] = {}
        for name in names:
            base, _, k = name.partition("#")
            if base in starts and k.isdigit():
                ranks[name] = (starts[base], int(k), self._positions[base])
        return ranks

    def _decide(self, run: _Run, decision: Decision) -> None:
        index = len(run.decisions)
        if not isinstance(run.decisions, list):
            run.decisions = []
        run.decisions.append(decision)
        # A resumed run makes its stored decisions again: store only the new ones.
        if index < len(run.stored_decisions) and run.stored_decisions[index] == decision:
            return
        if self._store is not None:
            self._store.save_decision(run.run_id, decision)

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
        # Loops, not comprehensions, over run, seen and the rest: a comprehension would
        # make each name a cell, objects this frame holds while the group runs.
        try:
            if group.policy == "all":
                running: list[asyncio.Task[_Outcome]] = []
                async with asyncio.TaskGroup() as tasks:
                    for member in group:
                        coro = self._run_member(run, member, seen, previous, retries)
                        running.append(tasks.create_task(coro))
                outcomes: list[_Outcome | None] = [task.result() for task in running]
            else:
                outcomes = await self._run_tolerant(run, group, seen, previous, retries)
        except BaseExceptionGroup as failed:  # surface the failure itself, not a wrapper
            error = first_error(failed)
            raise error from error.__cause__
        exits = tuple(name for o in outcomes if o is not None for name in o[1])
        return (*seen, *_finished(run, group)), exits

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
        succeeded = 0  # counted as members finish: summing the outcomes each time is O(N²)

        async def member(index: int, node: FlowNode | Flow) -> None:
            nonlocal reached, succeeded
            try:
                outcomes[index] = await self._run_member(run, node, seen, previous, retries)
            except (AgentError, GroupError):
                failed.append(index)
                self._mark_unrun(
                    run, node, "Skipped", "not run: an earlier agent of its branch failed"
                )
                if need is not None and len(group) - len(failed) < need:
                    raise self._quorum_error(run, group, need) from None
                return
            succeeded += 1
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
    ) -> _Outcome:
        """Run one agent step (retrying it as the policy allows); its outcome as a step's."""
        if agent.name in run.results:  # finished before a resume: kept, not paid for again
            return (*seen, agent.name), (agent.name,)
        view, prepared = run.view(seen, previous, self._mode)
        attempt = 0
        while True:
            attempt += 1
            try:
                try:
                    result = await self._attempt(run, agent, view, prepared, attempt)
                except SwarmError:
                    raise
                except Exception as exc:  # a bug in a tool wrapper or provider
                    raise _unexpected(agent, exc) from exc
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
                    events.emit(
                        events.RetryScheduled,
                        agent_name=agent.name,
                        scope="agent",
                        attempt=attempt,
                        delay_seconds=delay,
                        error=str(error),
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
        return (*seen, agent.name), (agent.name,)

    def _defaults_retry(self) -> RetryPolicy:
        retry = self._defaults.retry
        assert isinstance(retry, RetryPolicy)  # AgentDefaults converts ints
        return retry

    def _attempt(
        self, run: _Run, agent: Agent, view: SharedContext, prepared: _Prepared, attempt: int
    ) -> Coroutine[Any, Any, AgentResult]:
        span = events.Span.child()
        if span is None:  # unobserved: the agent's own coroutine, no frame around it
            # (_run_agent turns its unexpected errors into AgentErrors, as _attempt_once does)
            options = self._options(run)
            return start_in_flow(agent, run.task, prepared.hint, prepared.tools, options, view)
        return self._observed_attempt(span, run, agent, view, prepared, attempt)

    async def _observed_attempt(
        self,
        span: events.Span,
        run: _Run,
        agent: Agent,
        view: SharedContext,
        prepared: _Prepared,
        attempt: int,
    ) -> AgentResult:
        span.bus.publish(
            events.AgentStarted(
                **span.ids, agent_name=agent.name, model=agent.model, attempt=attempt
            )
        )
        result: AgentResult | None = None
        try:
            with span.inside():
                result = await self._attempt_once(run, agent, view, prepared)
            return result
        finally:
            span.bus.publish(
                events.AgentFinished(
                    **span.ids,
                    agent_name=agent.name,
                    model=result.model if result else agent.model,
                    duration_seconds=span.elapsed,
                    attempt=attempt,
                    result=result,
                    error=span.error,
                )
            )

    def _options(self, run: _Run) -> RunOptions:
        """The run's options for its agents, made on first use (checked with the run)."""
        options = run.options
        if options is None:
            options = run.options = (
                RunOptions(defaults=self._defaults, variables=run.variables, approve=self._approve)
                if run.variables
                else self._plain_options
            )
        return options

    async def _attempt_once(
        self, run: _Run, agent: Agent, view: SharedContext, prepared: _Prepared
    ) -> AgentResult:
        options = self._options(run)
        try:
            return await start_in_flow(
                agent, run.task, prepared.hint, prepared.tools, options, view
            )
        except SwarmError:
            raise
        except Exception as exc:  # a bug in a tool wrapper or provider: keep the partial results
            raise _unexpected(agent, exc) from exc

    def _result(self, run: _Run, *, final: bool, exits: tuple[str, ...] = ()) -> SwarmResult:
        history = [run.results[n] for n in run.context.in_order(run.results)]
        if final:
            output = _join_outputs([run.results[n] for n in exits if n in run.results])
        else:
            output = history[-1].output if history else ""
        return SwarmResult(
            output=output,
            context=run.context.as_dict(),
            history=history,
            duration_seconds=time.perf_counter() - run.started,
            failures=[run.failures[n] for n in run.context.in_order(run.failures)],
            run_id=run.run_id,
            decisions=list(run.decisions),
        )


def _unexpected(agent: Agent, exc: Exception) -> AgentError:
    """A bug in a tool wrapper or provider as an AgentError: the run keeps its partials."""
    return AgentError(
        f"Agent {agent.name!r} failed with {type(exc).__name__}: {exc}", agent_name=agent.name
    )


class _Recorder:
    """The run store as a consumer of the event stream: each result is committed as it lands."""

    __slots__ = ("_run", "_store", "_swarm")

    def __init__(self, store: RunStore, swarm: Swarm, run: _Run) -> None:
        self._store = store
        self._swarm = swarm
        self._run = run

    def __call__(self, event: Event) -> None:
        run = self._run
        match event:
            case events.RunStarted():
                from swarmcore.store import RunRecord

                swarm = self._swarm
                max_cost, max_tokens, _ = swarm._budget  # pyright: ignore[reportPrivateUsage] -- its own Swarm
                self._store.start_run(
                    RunRecord(
                        run_id=run.run_id,
                        flow=event.flow,
                        task=run.task,
                        status="running",
                        started_at=event.timestamp,
                        agents_total=len(event.agents),
                        shape=shape_of(swarm.flow),
                        settings={
                            "context_mode": event.context_mode,
                            "max_cost": max_cost,
                            "max_tokens": max_tokens,
                            "metadata": run.metadata,
                            "variables": run.variables,
                        },
                    )
                )
            case events.AgentFinished(result=AgentResult() as result):
                self._store.save_result(run.run_id, result)
            case events.RunFinished():
                partial = event.result or getattr(event.error, "partial", None)
                for failure in partial.failures if isinstance(partial, SwarmResult) else []:
                    self._store.save_failure(run.run_id, failure)
                if event.error is None:
                    self._store.finish_run(run.run_id, "succeeded")
                elif isinstance(event.error, asyncio.CancelledError):
                    self._store.finish_run(run.run_id, "cancelled", error="cancelled")
                else:
                    error = f"{type(event.error).__name__}: {event.error}"
                    self._store.finish_run(run.run_id, "failed", error=error)
            case _:
                pass


def _offline_copy(node: FlowNode, model: str) -> FlowNode:
    """``node`` on the offline model, its tools answering a placeholder instead of running."""
    assert isinstance(node, Agent)  # Swarm.__init__ checked every node
    return node.clone(
        model=model,
        fallback_models=(),
        tools=[tool.bind(_placeholder(tool.name)) for tool in node.tools if isinstance(tool, Tool)],
        # The offline model calls tools natively, and its made-up values cannot
        # satisfy user validators; the count of calls is the same either way.
        tool_protocol="native",
        output_validators=(),
    )


def _placeholder(name: str) -> Callable[..., Any]:
    async def not_called(*_: object, **__: object) -> str:
        return f"(dry run: {name} was not called)"

    return not_called


def _check_task(task: object) -> None:
    if not isinstance(task, str) or not task.strip():
        raise UserError("Swarm.run() needs a non-empty task string.")


def _step_names(step: Step) -> tuple[str, ...]:
    if isinstance(step, ControlNode):
        return tuple(a.name for a in step.inner_agents())
    if isinstance(step, FlowNode):
        return (step.name,)
    return tuple(name for member in step for name in _names(member))


def _step_expression(step: Step) -> str:
    if isinstance(step, ControlNode):
        return step.label()
    if isinstance(step, FlowNode):
        return step.name
    return " | ".join(_member_expr(m) for m in step)


def _names(member: FlowNode | Flow) -> tuple[str, ...]:
    if isinstance(member, ControlNode):
        return tuple(a.name for a in member.inner_agents())
    return member.names if isinstance(member, Flow) else (member.name,)


def _finished(run: _Run, group: Group) -> tuple[str, ...]:
    """The group's agents that finished or failed, in flow order: later agents see both."""
    return tuple(
        name
        for member in group
        for name in _names(member)
        if name in run.results or name in run.failures
    )


def _renamed(node: FlowNode, iteration: int) -> FlowNode:
    assert isinstance(node, Agent)  # loop bodies hold agents and routes (checked by loop())
    return node.renamed(f"{node.name}#{iteration}")


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


def _member_expr(member: FlowNode | Flow) -> str:
    if isinstance(member, ControlNode):
        return member.label()
    return f"({member.expression()})" if isinstance(member, Flow) else member.name


def _join_outputs(results: list[AgentResult]) -> str:
    """One exit: its output. A final parallel group: outputs under ``## name`` headers."""
    if len(results) == 1:
        return results[0].output
    return "\n\n".join(f"## {r.agent_name}\n\n{r.output}" for r in results)


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
