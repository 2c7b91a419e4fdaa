"""Swarm: the facade that runs a flow, over a fresh SharedContext per run.

``run``, ``run_sync``, ``stream``, ``map``, ``resume`` and ``dry_run`` set a run
up (its context, budget meter, MCP connections, event bus and store record) and
hand it to :class:`~swarmcore._walk.Walk`, which walks the flow. How agents see
earlier outputs is the context mode's business (:mod:`swarmcore.modes`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from swarmcore import _loop, events
from swarmcore._checks import check_number, check_run_id, check_task
from swarmcore._deprecation import warn_deprecated
from swarmcore._flow import Flow, FlowNode, chain
from swarmcore._prompt import normalize_variables
from swarmcore._removed import SWARM_REMOVED, explain_removed
from swarmcore._tools import Approval, ApprovalRequest, Approver
from swarmcore._walk import FlowSetup, Run
from swarmcore.agent import (
    Agent,
    AgentDefaults,
    check_approvals,
    check_defaults,
    check_variables,
    needs_approval,
    reachable,
    run_sync,
)
from swarmcore.context import SharedContext
from swarmcore.engines import (
    Budget,
    CanApprove,
    CanEnqueue,
    DurableEngine,
    Engine,
    Execution,
    LocalEngine,
    RunHandle,
    Subscriber,
    stream_events,
)
from swarmcore.errors import UserError
from swarmcore.events import Hook
from swarmcore.models import SwarmResult
from swarmcore.modes import DEFAULT_CONTEXT_MODE, ContextMode, check_agents, mode_named

if TYPE_CHECKING:
    from swarmcore._batch import MapProgress
    from swarmcore._dryrun import DryRunReport
    from swarmcore.events import Event
    from swarmcore.store import RunStore
    from swarmcore.store._recorder import StoreErrors

_NEEDS_DURABLE = (
    "{}() needs a durable engine, and {} is not one that declares swarmcore.engines.{}: "
    "give Swarm(flow, engine=...) one (docs/durable-runs.md lists them)."
)


class Swarm:
    """Runs a flow of agents over a shared context.

    Args:
        flow: The flow to run (an Agent alone is a one-step flow).
        context_mode: ``"auto"`` (default): at most ``context_budget`` tokens of
            context, the most useful first (the previous step in full when it
            fits, else the passages most relevant to the agent, then a summary),
            and ``read_context`` for the rest. ``"pull"``: a short hint and
            ``list_context``/``get_context``/``search_context`` tools.
            ``"push"``: the previous step's output in full and earlier ones as
            summaries in the prompt, with ``expand_context``.
        context_budget: Under ``context_mode="auto"``, the most tokens
            (cl100k_base) of context each agent's prompt holds, framing
            included; 400 when None. Refused with any other mode.
        defaults: Settings for every agent that leaves them unset: retry
            policy, call and agent timeouts, tool timeout, result truncation.
        step_retries: How many times an agent that failed transiently (a model
            outage that outlasted its retries, its own timeout) is run again
            from scratch; a group's ``retries`` overrides it for its members.
        hooks: Callbacks (sync or async) called with every event of every run;
            subscribe to chosen event types with :meth:`on`. None is none.
        max_cost: USD the run may spend, shared by every branch; a model call
            that would start once it is spent is refused with BudgetExceeded.
        max_tokens: Tokens the run may spend, likewise.
        allow_unpriced: Under ``max_cost``, run models LiteLLM has no price
            for (their cost is not counted); refused by default (fail closed).
        store: Record every run and each agent result as it finishes: a path
            (a SQLite file, created when missing) or a RunStore. Enables
            :meth:`resume`.
        store_errors: What a failed store write (a full disk, say) does.
            ``"raise"`` (default): the run stops before its next agent starts
            and raises StoreError, whose ``partial`` holds every finished
            result. ``"warn"``: a RuntimeWarning names the failure, the run goes
            on, and it is marked ``incomplete`` in the store: it cannot be
            resumed, since its record has gaps.
        approve: Called (sync or async) with an ``ApprovalRequest`` before each
            call to a tool marked ``requires_approval``; returns
            ``Approval.allow()``, ``.deny(reason)``, ``.edit(arguments)``, or a bool.
            Without it, a flow with such a tool fails before any model call.
        engine: Where runs execute (a :class:`~swarmcore.engines.Engine`): in
            this process (default), or a durable engine (see the
            durable-runs guide), which makes each run a workflow that
            survives its process; :meth:`enqueue`,
            :meth:`decide` and ``map(key=...)`` need the capabilities it
            declares (:mod:`swarmcore.engines`).

    Raises:
        UserError: ``flow`` is not a Flow or Agent, ``context_mode`` is unknown,
            ``context_budget`` is not a whole number above 0 or is given for a
            mode other than ``"auto"``, an agent's tool uses a name the context
            modes reserve, or a setting is invalid.
        StoreError: ``store`` is a path that cannot hold a run store, or a
            damaged one.
    """

    @explain_removed("Swarm", SWARM_REMOVED)
    def __init__(
        self,
        flow: Flow | Agent,
        *,
        context_mode: ContextMode = DEFAULT_CONTEXT_MODE,
        context_budget: int | None = None,
        defaults: AgentDefaults | None = None,
        step_retries: int = 0,
        hooks: Sequence[Hook] | None = (),
        max_cost: float | None = None,
        max_tokens: int | None = None,
        allow_unpriced: bool = False,
        store: RunStore | str | os.PathLike[str] | None = None,
        store_errors: StoreErrors = "raise",
        approve: Approver | None = None,
        engine: Engine | None = None,
    ) -> None:
        if isinstance(flow, FlowNode):
            flow = chain(flow)
        if not isinstance(flow, Flow):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"Swarm() takes a Flow or an Agent, got {type(flow).__name__}.")
        mode = mode_named(context_mode, context_budget)
        agents = check_agents(flow)
        if defaults is not None and not isinstance(defaults, AgentDefaults):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"defaults must be an AgentDefaults, got {type(defaults).__name__}.")
        if defaults is not None:
            check_defaults(agents, defaults)
        check_number("Swarm", "step_retries", step_retries, whole=True, zero=True)
        if store_errors not in ("raise", "warn"):
            raise UserError(f"store_errors must be 'raise' or 'warn', got {store_errors!r}.")
        if approve is not None and not callable(approve):
            raise UserError(f"approve must be a function, got {type(approve).__name__}.")
        self._budget = Budget(max_cost, max_tokens, allow_unpriced)
        self._budget.meter()  # validates the limits now; each run gets a fresh meter
        self._engine: Engine = engine or LocalEngine()
        self._setup = FlowSetup(
            flow=flow,
            mode=mode,
            defaults=defaults or AgentDefaults(),
            step_retries=step_retries,
            positions={name: i for i, name in enumerate(flow.names)},
        )
        self._agents = agents
        # What each run checks of its agents, worked out once: a flow never changes.
        self._variables_used = frozenset(v for a in reachable(agents) for v in a.variables)
        self._needs_approval = needs_approval(agents)
        self._hooks = [events.bind(h) for h in hooks or ()]
        self._approve = approve
        self._store = None
        self._store_errors: StoreErrors = store_errors
        if store is not None:
            from swarmcore.store import open_store  # sqlite3 is loaded only for runs that store

            self._store = open_store(store)
        if isinstance(self._engine, DurableEngine):  # it serves (and may recover) these runs
            self._engine.attach(self)

    @property
    def approve(self) -> Approver | None:
        """The approval callback for tools marked ``requires_approval``, if any."""
        return self._approve

    @property
    def store(self) -> RunStore | None:
        """Where runs are recorded, if anywhere."""
        return self._store

    @property
    def engine(self) -> Engine:
        """Where this Swarm's runs execute."""
        return self._engine

    @property
    def budget(self) -> Budget:
        """What each run may spend: ``max_cost``, ``max_tokens``, ``allow_unpriced``."""
        return self._budget

    @property
    def flow(self) -> Flow:
        """The flow this swarm runs."""
        return self._setup.flow

    @property
    def defaults(self) -> AgentDefaults:
        """The settings for agents that leave them unset."""
        return self._setup.defaults

    @property
    def step_retries(self) -> int:
        """How many times an agent that failed transiently is run again from scratch."""
        return self._setup.step_retries

    @property
    def context_mode(self) -> ContextMode:
        """``"pull"``, ``"push"`` or ``"auto"``."""
        return self._setup.mode.name

    @property
    def context_budget(self) -> int | None:
        """Auto mode's tokens of context per agent; None under pull and push."""
        return self._setup.mode.budget

    def __repr__(self) -> str:
        budget = self.context_budget
        extra = "" if budget is None else f", context_budget={budget}"
        return f"Swarm({self.flow.expression()}, context_mode={self.context_mode!r}{extra})"

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
        """Deprecated: pass ``hooks=[hook]`` to the Swarm, or subscribe with :meth:`on`.

        ``swarm.add_hook(fn, *types)`` is ``swarm.on(*types)(fn)``; it still
        works, with a DeprecationWarning.
        """
        warn_deprecated(
            "Swarm.add_hook() is deprecated; pass Swarm(..., hooks=[fn]) for every event, or "
            "subscribe to chosen types with swarm.on(*types)(fn) or the @swarm.on(...) decorator."
        )
        self.on(*types)(hook)

    async def run(
        self,
        task: str,
        *,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> SwarmResult:
        """Run the flow on ``task`` with a fresh SharedContext.

        Args:
            task: What to do; every agent gets it as its user message.
            variables: Values for the ``{name}`` placeholders in agents'
                instructions; kept with the run in the store, so a resumed run
                gets them again.
            metadata: JSON-able notes kept with the run in the store (e.g. who
                started it, or the CLI's target).
            run_id: The run's id (a new one when None). Under a durable engine
                it is the run's idempotency key.

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
        return await self._execute(self._new_run(task, variables, metadata, run_id=run_id))

    async def enqueue(
        self,
        task: str,
        *,
        run_id: str | None = None,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RunHandle:
        """Hand a run to the durable engine's workers; returns a handle to it at once.

        Any process can enqueue (it need not be a worker); a worker serving
        this flow (``swarmcore worker``) runs it. Enqueueing a run id twice
        enqueues it once.

        Args:
            task: What to do.
            run_id: The run's id and idempotency key (a new one when None).
            variables: Values for the ``{name}`` placeholders in instructions.
            metadata: JSON-able notes kept with the run.

        Returns:
            A handle: ``await handle.status()``, ``await handle.result()``.

        Raises:
            UserError: The Swarm has no durable engine, or the input is bad
                (checked here, before anything is enqueued).
        """
        engine = self._engine
        if not isinstance(engine, CanEnqueue):
            raise UserError(_NEEDS_DURABLE.format("enqueue", type(engine).__name__, "CanEnqueue"))
        run = self._new_run(task, variables, metadata, run_id=run_id)
        return await engine.enqueue(
            self,
            run.task,
            run_id=run.run_id,
            variables=run.options.variables,
            metadata=run.metadata,
        )

    async def pending_approvals(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of a durable run waiting for a decision (see :meth:`decide`).

        On a durable engine, a run with no approval callback waits at each call
        to a tool marked ``requires_approval`` until someone decides.

        Raises:
            UserError: The Swarm has no durable engine.
        """
        return await self._approving("pending_approvals").approvals(run_id)

    async def decide(self, run_id: str, call_id: str, approval: Approval | bool) -> ApprovalRequest:
        """Decide a call waiting for approval in a durable run; the run goes on.

        Args:
            run_id: The run.
            call_id: The waiting call (``ApprovalRequest.call_id``).
            approval: ``Approval.allow()``, ``Approval.deny(reason)``,
                ``Approval.edit(arguments)``, ``True`` or ``False``.

        Returns:
            The request that was decided.

        Raises:
            UserError: The Swarm has no durable engine, or no such call waits.
        """
        return await self._approving("decide").approve(run_id, call_id, approval)

    def _approving(self, method: str) -> CanApprove:
        if not isinstance(self._engine, CanApprove):
            name = type(self._engine).__name__
            raise UserError(_NEEDS_DURABLE.format(method, name, "CanApprove"))
        return self._engine

    def run_sync(
        self,
        task: str,
        *,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SwarmResult:
        """:meth:`run` for scripts and notebooks: blocks until the run is over.

        With no event loop running it runs on a new one; inside a running loop (a notebook
        cell) on a new loop in a worker thread, since the caller's loop cannot be re-entered.
        """
        run = self._new_run(task, variables, metadata)  # bad input fails here, in the caller
        return run_sync(lambda: self._execute(run))

    async def resume(self, run_id: str) -> SwarmResult:
        """Continue a stored run that failed or was killed, without re-running finished agents.

        The shared context is rebuilt from the stored results and the flow runs from the first
        unfinished step; inside a parallel group only the unfinished members run again. The run
        keeps its id. A run that already succeeded is refused, its record left untouched: there
        is nothing to resume, and its results are in the store (``swarm.store.get_run(run_id)``,
        ``swarmcore runs show``). A durable engine reads the run from its own database.
        :meth:`resume_sync` does the same from synchronous code.

        Args:
            run_id: The stored run's id (or a unique prefix of it).

        Raises:
            UserError: This Swarm has no store, the run is not in it, it
                already succeeded, its record is incomplete (a store write
                failed while it ran), or this Swarm's flow has another shape
                than the stored run's.
            StoreError: The store or the run's record cannot be read.
        """
        if isinstance(self._engine, DurableEngine):  # it keeps its own record of the run
            was = await self._engine.reopen(self, run_id)
            run = self._new_run(was.task, was.variables, was.metadata, run_id=run_id)
            return await self._execute(run)
        from swarmcore.store._restore import restore, resumable

        record = resumable(self._store, run_id, self.flow)
        run = self._new_run(
            record.task,
            record.settings.get("variables"),
            record.settings.get("metadata"),
            run_id=record.run_id,
        )
        restore(run, record, self._setup, self._agents)
        return await self._execute(run)

    def resume_sync(self, run_id: str) -> SwarmResult:
        """:meth:`resume` from synchronous code, as :meth:`run_sync` runs; the same errors."""
        return run_sync(lambda: self.resume(run_id))

    async def map(
        self,
        tasks: Iterable[str],
        *,
        concurrency: int = 4,
        variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None = None,
        progress: Callable[[MapProgress], object] | None = None,
        key: Callable[[str], str] | Sequence[str] | None = None,
    ) -> list[SwarmResult | BaseException]:
        """Run the flow once per task, at most ``concurrency`` runs at a time.

        On a durable engine every task is enqueued as a run of its own and
        served by the workers (their ``--concurrency`` applies, not this one),
        and ``key`` makes the runs idempotent: mapping the same keys again runs
        nothing twice and collects the recorded results. Cancelling the map
        stops the waiting; the runs go on.

        One failing run never stops the others: its place in the returned list
        holds its error (a SwarmError carries ``partial`` results).

        Args:
            tasks: The inputs, one run each.
            concurrency: The most runs in flight at once.
            variables: Prompt variables for every run, or one mapping per task.
            progress: Called (sync or async) after each run ends, with a
                :class:`MapProgress`: how many are done, succeeded and failed.
            key: Each task's run id, as a function of the task or a list (one
                per task); a durable engine only. Tasks with one key share a run.

        Returns:
            One entry per task, in input order: its SwarmResult, or its error.

        Raises:
            UserError: ``concurrency`` is not a positive whole number, a task
                is empty, or ``variables`` does not match the tasks (checked
                before any run starts).
        """
        from swarmcore._batch import map_tasks

        return await map_tasks(
            self,
            self._engine,
            tasks,
            concurrency=concurrency,
            variables=variables,
            progress=progress,
            key=key,
            # every input checked (task, variables, approvals) before the first run starts
            check=lambda task, values: self._new_run(task, values, None),
        )

    async def stream(
        self,
        task: str,
        *,
        text: bool = False,
        variables: Mapping[str, object] | None = None,
        run_id: str | None = None,
        approve: Approver | None = None,
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
            run_id: The run's id (a new one when None), as in :meth:`run`.
            approve: This run's approval callback, in place of the Swarm's.
        """
        run = self._new_run(task, variables, None, run_id=run_id, approve=approve)
        stream = stream_events(lambda hook: self._execute(run, [(hook, ())], text_deltas=text))
        async with contextlib.aclosing(stream):  # leaving early cancels the run, here
            async for event in stream:
                yield event

    def to_a2a(self, **kwargs: Any) -> Any:
        """This Swarm served as an Agent2Agent agent: see :func:`swarmcore.a2a.to_a2a`."""
        from swarmcore.a2a._server import to_a2a  # a2a-sdk is loaded only for serving

        return to_a2a(self, **kwargs)

    def to_ag_ui(self, **kwargs: Any) -> Any:
        """This Swarm served to AG-UI front ends: see :func:`swarmcore.ag_ui.to_ag_ui`."""
        from swarmcore.ag_ui._server import to_ag_ui  # ag-ui-protocol is loaded only for serving

        return to_ag_ui(self, **kwargs)

    async def dry_run(
        self, task: str, *, variables: Mapping[str, object] | None = None
    ) -> DryRunReport:
        """Count the model calls and prompt tokens a run would make, without spending anything.

        The flow runs on the offline model with every tool replaced by a
        placeholder (no tool is called); each agent's prompt tokens are priced
        with its real model. Hooks, budgets and limits of this Swarm are not
        used. The shared offline model records no requests, so a dry run keeps
        nothing once it returns: a service may dry-run before every run.

        Returns:
            Per agent, in flow order: model calls, prompt tokens and their cost.
        """
        from swarmcore._dryrun import dry_run

        check_task(task)
        return await dry_run(self, task, variables)

    def _new_run(
        self,
        task: str,
        variables: Mapping[str, object] | None,
        metadata: Mapping[str, Any] | None,
        *,
        run_id: str | None = None,
        approve: Approver | None = None,
    ) -> Run:
        """A fresh run, its input checked before any model call."""
        check_task(task)
        if run_id is not None:
            check_run_id(run_id)
        values = normalize_variables(variables)
        if not self._variables_used <= values.keys():
            check_variables(self._agents, values)
        approve = approve or self._approve
        if approve is None and self._needs_approval and not isinstance(self._engine, CanApprove):
            check_approvals(self._agents)
        options = _loop.RunOptions(defaults=self._setup.defaults, variables=values, approve=approve)
        return Run(
            task=task,
            context=SharedContext(self.flow.names),
            options=options,
            run_id=run_id or uuid.uuid4().hex,
            metadata=dict(metadata or {}),
        )

    def execution(
        self,
        task: str,
        *,
        variables: Mapping[str, object] | None = None,
        metadata: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> Execution:
        """A run of this Swarm as an engine walks it, its input checked as :meth:`run` checks it.

        For a durable engine serving a run from its own records (recovered after a
        crash, or enqueued by another process): it walks the run itself with
        :meth:`Execution.walk <swarmcore.engines.Execution.walk>`, with this Swarm's
        hooks, store and budget, and never calls back into :meth:`run`.

        Raises:
            UserError: As :meth:`run`, before anything runs.
        """
        return self._execution(self._new_run(task, variables, metadata, run_id=run_id))

    def _execution(
        self, run: Run, extra: Sequence[Subscriber] = (), *, text_deltas: bool = False
    ) -> Execution:
        """``run`` with every consumer of its events, its budget and its store's record."""
        subscribers = [*self._hooks, *extra]
        recorder = None
        if self._store is not None:
            from swarmcore.store._recorder import recording

            recorder = recording(self._store, self.flow, run, self._budget, self._store_errors)
            subscribers.append((recorder, ()))
        from swarmcore._eventlog import log_event, run_logger

        if run_logger.isEnabledFor(logging.INFO):
            subscribers.append((log_event, ()))
        if recorder is None:
            return Execution(self._setup, run, subscribers, self._budget, text_deltas)
        # a failed store write stops the run before its next agent (raise mode)
        return Execution(
            self._setup,
            run,
            subscribers,
            self._budget,
            text_deltas,
            recorder.check,
            recorder.finish,
        )

    async def _execute(
        self, run: Run, extra: Sequence[Subscriber] = (), *, text_deltas: bool = False
    ) -> SwarmResult:
        """Hand ``run`` to the engine with every consumer of its events."""
        return await self._execution(run, extra, text_deltas=text_deltas).walk(self._engine)
