"""Durable runs on DBOS Transact and PostgreSQL: a run survives its process.

``Swarm(flow, engine=DBOSEngine(database_url))`` makes each run a DBOS workflow
whose id is the run id, and each agent run a workflow of its own, with id
``<run id>/<agent>/<attempt>``, whose model calls and tool calls are DBOS steps
(through :mod:`swarmcore.durable`). After a crash or a deploy, the run's
workflow is recovered and walks its flow again: an agent that had finished
returns its recorded result at once, an agent that was running replays its
recorded calls and makes only the one that was in flight.

Why agents are workflows of their own, started outside the run's workflow: a
workflow's operations are keyed by the order they happen in, and the branches
of a parallel group happen in whatever order the model answers. Each agent's
own calls happen in a fixed order, so each agent gets its own workflow, named
by where it is in the flow; the run's workflow records nothing itself, so
walking the flow again in another order is harmless.

Runs can also be enqueued (:meth:`DBOSEngine.enqueue`, ``swarm.enqueue``) from
any process and served by workers (``swarmcore worker``), on one queue per
flow version, so a worker only takes runs of the flow it has.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions, SetWorkflowID, WorkflowHandleAsync

from swarmcore import durable
from swarmcore.agent import Agent
from swarmcore.engines import dbos_workers
from swarmcore.engines.dbos_approvals import await_decision, send_decision, waiting
from swarmcore.engines.dbos_handle import RunHandle
from swarmcore.engines.dbos_map import map_runs
from swarmcore.engines.dbos_results import plain, reparsed, reparsed_run, storable, storable_error
from swarmcore.engines.dbos_resume import Reopened, agent_workflow_id, reopen
from swarmcore.engines.local import Budget, LocalEngine, Subscriber
from swarmcore.errors import AgentError, SwarmError, UserError
from swarmcore.tools import Approval, ApprovalRequest
from swarmcore.walk import AgentStep, run_in_process

if TYPE_CHECKING:
    from swarmcore.batch import Tally
    from swarmcore.flow import Flow
    from swarmcore.models import AgentResult, SwarmResult
    from swarmcore.swarm import Swarm
    from swarmcore.walk import FlowSetup, Run

__all__ = ["AgentMisplaced", "DBOSEngine", "RunHandle", "flow_version"]

T = TypeVar("T")

RUN_WORKFLOW = "swarmcore.run"
AGENT_WORKFLOW = "swarmcore.agent"

_engine: DBOSEngine | None = None
"""The process's engine: DBOS is one instance per process, and so is this."""
_inside: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "swarmcore_dbos_run", default=None
)
"""The run whose workflow the current task is walking."""
_generation: contextvars.ContextVar[int] = contextvars.ContextVar(
    "swarmcore_dbos_generation", default=0
)
"""How many times the run being walked was resumed (see engines/dbos_resume.py)."""


def flow_version(swarm: Swarm) -> str:
    """A short hash of what a run of ``swarm`` depends on: shape, agents, models, tools.

    A worker serves only runs of the version it has, so a run started by one
    version of the code is never continued by another.
    """
    agents = [
        {
            "name": a.name,
            "model": a.model,
            "instructions": a.instructions,
            "tools": sorted(getattr(t, "name", getattr(t, "__name__", "")) for t in a.tools),
        }
        for a in swarm.flow.agents
        if isinstance(a, Agent)
    ]
    spec = {"shape": swarm.flow.shape(), "mode": swarm.context_mode, "agents": agents}
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


class AgentMisplaced(AgentError):
    """An agent's workflow ran in a process that does not walk its run; it is run again."""


@dataclass(frozen=True, slots=True)
class _Pending:
    """An agent step waiting for its workflow, with the swarmcore context it runs in."""

    step: AgentStep
    carried: tuple[tuple[contextvars.ContextVar[Any], Any], ...]


@dataclass(frozen=True, slots=True)
class _Live:
    """A run started in this process: its workflow walks it as it is."""

    setup: FlowSetup
    run: Run
    subscribers: Sequence[Subscriber]
    limits: Budget
    text_deltas: bool
    checkpoint: Callable[[], None] | None
    outcome: list[SwarmResult | SwarmError] = field(
        default_factory=list["SwarmResult | SwarmError"]
    )
    """What the walk here ended with, ``parsed`` objects intact (DBOS stores them as JSON)."""


class DBOSEngine:
    """Runs flows as DBOS workflows on PostgreSQL, so they survive crashes and deploys.

    One engine per process (DBOS itself is one per process). It launches DBOS
    on first use. A process that only enqueues runs never launches it.

    Args:
        database_url: PostgreSQL URL of DBOS's system database (created if missing).
        worker_id: This process's DBOS executor id. A worker restarted with the
            same id recovers the runs it had in flight. Default: ``"local"``.
        app_name: DBOS application name (lowercase letters, digits, - and _).
        agent_wait: Seconds a recovered agent workflow waits for its run to
            reach it again. DBOS may hand a restarted worker's agent workflows
            to another live worker of the same flow, where no run reaches them:
            after this wait such a workflow ends as misplaced, and the run's
            walk runs the agent again under a new workflow id.
        queue_poll: Seconds between a worker's looks at its queue for new runs
            (DBOS's default is 1 s; each look is one small query).
        log_level: DBOS's own log level (its INFO lines name every launch,
            queue and recovery; WARNING keeps a worker's output to what matters).
        approval_timeout: Seconds a call to a tool that requires approval waits
            for a decision (``swarm.approve``) in a run with no approval
            callback; then it is denied. Default: a week.
        heartbeat, adopt_after: A worker beats every ``heartbeat`` s; once silent over
            ``adopt_after`` s (None: never), one live worker of its flow adopts its
            runs (:mod:`swarmcore.engines.dbos_workers`).

    Raises:
        UserError: A second engine in one process, or a bad setting.
    """

    def __init__(
        self,
        database_url: str,
        *,
        worker_id: str = "local",
        app_name: str = "swarmcore",
        agent_wait: float = 15.0,
        queue_poll: float = 0.2,
        log_level: str = "WARNING",
        approval_timeout: float = 7 * 24 * 3600.0,
        heartbeat: float = 5.0,
        adopt_after: float | None = 30.0,
    ) -> None:
        global _engine
        if not database_url.startswith(("postgresql://", "postgres://", "sqlite://")):
            raise UserError(
                f"DBOSEngine needs a database URL (postgresql://user@host:port/db), got "
                f"{database_url!r}."
            )
        if _engine is not None and _engine.database_url != database_url:
            raise UserError(
                "One DBOSEngine per process: DBOS keeps one system database per process. "
                "Share the engine between Swarms."
            )
        self.database_url = database_url
        self.worker_id = worker_id
        self.app_name = app_name
        self.agent_wait = agent_wait
        self.queue_poll = queue_poll
        self.log_level = log_level
        self.approval_timeout = approval_timeout
        self.heartbeat, self.adopt_after = dbos_workers.checked(heartbeat, adopt_after)
        self._watch: dbos_workers.Watch | None = None
        self._swarms: dict[str, Swarm] = {}
        self._versions: dict[int, str] = {}
        """Flow version by ``id(flow)``: execute() is handed the flow, not the Swarm."""
        self._live: dict[str, _Live] = {}
        self._pending: dict[str, _Pending] = {}
        self._resumed: dict[str, int] = {}
        """The generation each run being resumed here starts as (see :meth:`reopen`)."""
        self._lock = threading.Lock()
        self._launched = False
        self._client: DBOSClient | None = None
        self._local = LocalEngine(self._run_agent)
        _engine = self

    # --- the Swarm's side --------------------------------------------------------------

    def attach(self, swarm: Swarm) -> str:
        """Serve runs of ``swarm`` here; returns its flow version (its queue's name)."""
        version = flow_version(swarm)
        self._swarms[version] = swarm
        self._versions[id(swarm.flow)] = version
        return version

    def queue_name(self, swarm: Swarm) -> str:
        """The DBOS queue runs of ``swarm`` are enqueued on."""
        return f"swarmcore-{flow_version(swarm)}"

    async def execute(
        self,
        setup: FlowSetup,
        run: Run,
        subscribers: Sequence[Subscriber],
        *,
        limits: Budget,
        text_deltas: bool = False,
        checkpoint: Callable[[], None] | None = None,
    ) -> SwarmResult:
        """Run ``run`` as the DBOS workflow ``run.run_id`` and wait for its result."""
        if _inside.get() == run.run_id:  # the run's own workflow, walking it
            return await self._local.execute(
                setup,
                run,
                subscribers,
                limits=limits,
                text_deltas=text_deltas,
                checkpoint=checkpoint,
            )
        await self.launch()
        live = _Live(setup, run, subscribers, limits, text_deltas, checkpoint)
        self._live[run.run_id] = live
        try:
            with SetWorkflowID(run.run_id):
                handle = await DBOS.start_workflow_async(
                    _run_workflow,
                    _about(
                        setup.flow,
                        self._versions.get(id(setup.flow), ""),
                        self._resumed.pop(run.run_id, 0),
                    ),
                    run.run_id,
                    run.task,
                    dict(run.options.variables),
                    dict(run.metadata),
                )
            try:
                recorded = await _outcome(handle)
            except SwarmError:
                if live.outcome and isinstance(live.outcome[0], SwarmError):
                    raise live.outcome[0] from None
                raise
            if live.outcome and not isinstance(live.outcome[0], SwarmError):
                return live.outcome[0]
            return reparsed_run(recorded, setup.flow)  # recorded earlier: its parsed values as JSON
        finally:
            self._live.pop(run.run_id, None)

    async def enqueue(
        self,
        swarm: Swarm,
        task: str,
        *,
        run_id: str,
        variables: Mapping[str, object],
        metadata: Mapping[str, Any],
    ) -> RunHandle:
        """Enqueue a run of ``swarm`` for a worker; idempotent per ``run_id``."""
        client = await self._client_async()
        options: EnqueueOptions = {
            "queue_name": self.queue_name(swarm),
            "workflow_name": RUN_WORKFLOW,
            "workflow_id": run_id,
            "app_version": flow_version(swarm),
            "application_name": self.app_name,
        }
        about = _about(swarm.flow, flow_version(swarm))
        await client.enqueue_async(options, about, run_id, task, dict(variables), dict(metadata))
        return RunHandle(run_id, client)

    async def reopen(self, swarm: Swarm, run_id: str) -> Reopened:
        """Make the failed run ``run_id`` of ``swarm`` ready to run here again (swarm.resume)."""
        reopened = await reopen(await self._client_async(), run_id, flow_version(swarm))
        self._resumed[run_id] = reopened.generation
        return reopened

    async def approvals(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for a decision (see :meth:`approve`)."""
        client = await self._client_async()
        return await asyncio.to_thread(waiting, client, run_id)

    async def approve(
        self, run_id: str, call_id: str, approval: Approval | bool
    ) -> ApprovalRequest:
        """Decide a waiting call of run ``run_id``, from any process; returns its request."""
        client = await self._client_async()
        return await asyncio.to_thread(send_decision, client, run_id, call_id, approval)

    async def map(
        self,
        swarm: Swarm,
        tasks: Sequence[str],
        per_task: Sequence[Mapping[str, object] | None],
        run_ids: Sequence[str],
        tally: Tally,
    ) -> list[SwarmResult | BaseException]:
        """``swarm.map`` here: enqueue one run per task, then wait for them all."""
        client = await self._client_async()
        return await map_runs(
            self, client, swarm, tasks, per_task, run_ids, tally, poll=self.queue_poll
        )

    async def handle(self, run_id: str) -> RunHandle:
        """A handle on a run enqueued or started earlier, from any process."""
        return RunHandle(run_id, await self._client_async())

    # --- DBOS ----------------------------------------------------------------------

    def config(self) -> DBOSConfig:
        """The DBOS configuration this engine launches with."""
        config: DBOSConfig = {
            "name": self.app_name,
            "system_database_url": self.database_url,
            "executor_id": self.worker_id,
            "log_level": self.log_level,
        }
        # DBOS hands a dead process's workflows to any live process of the same
        # application version: with the flow's version as the application's, a
        # worker of another flow never takes them (and enqueued runs say theirs).
        versions = set(self._swarms)
        if len(versions) == 1:
            config["application_version"] = versions.pop()
        return config

    async def launch(self, *, queues: Sequence[str] = (), concurrency: int | None = None) -> None:
        """Launch DBOS in this process (once), listening to ``queues`` (a worker's).

        Launching recovers the runs this worker id left in flight.

        Args:
            queues: The run queues this process serves (none: it only runs its own).
            concurrency: The most runs of a queue this process runs at once.
        """
        if self._launched:
            return
        self._launched = True
        DBOS(config=self.config())
        DBOS.listen_queues([*queues, *dbos_workers.own_queues(self, queues)])
        await asyncio.to_thread(DBOS.launch)
        for name in queues:
            await DBOS.register_queue_async(
                name, worker_concurrency=concurrency, polling_interval_sec=self.queue_poll
            )
        self._watch = await dbos_workers.watch(self, queues)  # a worker's heartbeat

    async def shutdown(self) -> None:
        """Stop DBOS here: runs in flight stay PENDING, for this worker id to recover."""
        global _engine
        self._watch = await dbos_workers.stop(self._watch)
        if self._launched:
            await asyncio.to_thread(DBOS.destroy)
            self._launched = False
            # DBOS made its (now shut down) thread pool this loop's default executor:
            # give the loop a working one, or every later asyncio.to_thread here fails.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        if self._client is not None:
            await asyncio.to_thread(self._client.destroy)
            self._client = None
        if _engine is self:
            _engine = None

    async def _client_async(self) -> DBOSClient:
        if self._client is None:

            def connect() -> DBOSClient:
                DBOS.migrate(self.database_url)  # enqueueing before any worker started works
                return DBOSClient(
                    system_database_url=self.database_url, application_name=self.app_name
                )

            self._client = await asyncio.to_thread(connect)
        return self._client

    # --- the walk's seam: one agent, one workflow ----------------------------------

    async def _run_agent(self, step: AgentStep) -> AgentResult:
        """Run ``step`` as the agent workflow ``<run>/<agent>/<attempt>`` and wait for it.

        A workflow that another process took and ended as misplaced is run
        again here under the next id (``.../<attempt>.2``, ...), the same ids
        in the same order whenever the run is walked again.
        """
        base = f"{step.run_id}/{step.agent.name}/{step.attempt}"
        if generation := _generation.get():  # a resumed run: finished agents keep their record
            base = await agent_workflow_id(await self._client_async(), base, generation)
        for tries in range(1, 6):
            try:
                return await self._run_agent_as(step, base if tries == 1 else f"{base}.{tries}")
            except AgentMisplaced:
                if tries == 5:
                    raise
        raise AssertionError("unreachable: the last try returns or raises")

    async def _run_agent_as(self, step: AgentStep, workflow_id: str) -> AgentResult:
        carried = tuple(
            (var, value)
            for var, value in contextvars.copy_context().items()
            if var.name.startswith("swarmcore") and var not in (_inside, _generation)
        )
        with self._lock:
            self._pending[workflow_id] = _Pending(step, carried)
        try:
            # An empty context: started from the run's workflow it would be its child,
            # recorded in the run's (timing-dependent) order of operations.
            handle = await asyncio.get_running_loop().create_task(
                _start_agent(workflow_id), context=contextvars.Context()
            )
            return reparsed(await _outcome(handle), step.agent)
        finally:
            with self._lock:
                self._pending.pop(workflow_id, None)

    async def _step_for(self, workflow_id: str) -> _Pending:
        """The step an agent workflow runs: registered by its run's walk, now or soon."""
        deadline = time.monotonic() + self.agent_wait
        while True:
            with self._lock:
                pending = self._pending.get(workflow_id)
            if pending is not None:
                return pending
            if time.monotonic() > deadline:
                raise AgentMisplaced(
                    f"Agent workflow {workflow_id} was recovered in worker {self.worker_id!r}, "
                    f"which does not walk its run (no step within {self.agent_wait:g} s); the "
                    "run's walk runs the agent again.",
                    agent_name=workflow_id.split("/")[1],
                    retryable=True,
                )
            await asyncio.sleep(0.05)

    def _swarm(self, version: str) -> Swarm:
        swarm = self._swarms.get(version)
        if swarm is None:
            raise UserError(
                f"No Swarm with flow version {version} is served by worker {self.worker_id!r}; "
                "start a worker with that flow."
            )
        return swarm


def _current() -> DBOSEngine:
    if _engine is None:
        raise UserError("No DBOSEngine in this process: Swarm(flow, engine=DBOSEngine(url)).")
    return _engine


async def _start_agent(workflow_id: str) -> WorkflowHandleAsync[AgentResult]:
    with SetWorkflowID(workflow_id):
        return await DBOS.start_workflow_async(_agent_workflow, workflow_id)


async def _outcome(handle: WorkflowHandleAsync[T]) -> T:
    """The workflow's result; cancelling the wait cancels the workflow, here and in DBOS."""
    try:
        return await handle.get_result()
    except asyncio.CancelledError:
        await asyncio.shield(DBOS.cancel_workflow_async(handle.get_workflow_id()))
        task: object = getattr(handle, "task", None)  # running in this process: stop it now
        if isinstance(task, asyncio.Future):
            running = cast("asyncio.Future[object]", task)
            running.cancel()
            await asyncio.shield(asyncio.gather(running, return_exceptions=True))
        raise


async def _dbos_step(name: str, call: Callable[[], Awaitable[Any]]) -> Any:
    async def made() -> Any:  # a coroutine function, so DBOS awaits it and records its value
        # The same key on a replay after a crash: the step's place in its agent's workflow.
        return await durable.with_key(f"{DBOS.workflow_id}/{DBOS.step_id}", call)

    return await DBOS.run_step_async({"name": name}, made)


def _about(flow: Flow, version: str, generation: int = 0) -> dict[str, Any]:
    """What a run's workflow input says of its flow (version, expression, size) and of itself."""
    about = {"version": version, "flow": flow.expression(), "agents": len(flow.names)}
    return about | ({"generation": generation} if generation else {})


@DBOS.workflow(name=RUN_WORKFLOW)
async def _run_workflow(
    about: dict[str, Any],
    run_id: str,
    task: str,
    variables: dict[str, object],
    metadata: dict[str, Any],
) -> SwarmResult:
    """One run: walk the flow, each agent a workflow of its own."""
    engine = _current()
    token = _inside.set(run_id)
    _generation.set(int(about.get("generation", 0)))  # this workflow's own task: no reset needed
    live = engine._live.get(run_id)  # pyright: ignore[reportPrivateUsage] -- this module's
    try:
        if live is not None:
            result = await engine._local.execute(  # pyright: ignore[reportPrivateUsage] -- this module's
                live.setup,
                live.run,
                live.subscribers,
                limits=live.limits,
                text_deltas=live.text_deltas,
                checkpoint=live.checkpoint,
            )
        else:  # recovered, or enqueued: the served Swarm runs it again under the same id
            version = str(about.get("version") or "")
            if not version:
                raise UserError(f"Run {run_id} was started in a process that is gone; resume it.")
            swarm = engine._swarm(version)  # pyright: ignore[reportPrivateUsage] -- this module's
            result = await swarm.run(task, variables=variables, metadata=metadata, run_id=run_id)
    except SwarmError as error:
        if live is not None:
            live.outcome.append(error)
        raise storable_error(error) from error.__cause__
    finally:
        _inside.reset(token)
    if live is not None:
        live.outcome.append(result)
    return storable(result)


@DBOS.workflow(name=AGENT_WORKFLOW)
async def _agent_workflow(workflow_id: str) -> AgentResult:
    """One agent run: its model calls and tool calls are steps."""
    pending = await _current()._step_for(workflow_id)  # pyright: ignore[reportPrivateUsage] -- this module's
    for var, value in pending.carried:
        var.set(value)
    with durable.recording(_dbos_step, decider=_decide):
        return plain(await run_in_process(pending.step))


async def _decide(request: Any) -> Approval:
    """A run with no approval callback waits for ``swarm.approve``, durably."""
    return await await_decision(request, wait=_current().approval_timeout)
