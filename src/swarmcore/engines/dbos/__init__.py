"""Durable runs on DBOS Transact and PostgreSQL: a run survives its process.

``Swarm(flow, engine=DBOSEngine(database_url))`` makes each run a DBOS workflow
whose id is the run id, and each agent run a workflow of its own, with id
``<run id>/<agent>/<attempt>``, whose model calls and tool calls are DBOS steps
(through :mod:`swarmcore.durable`). After a crash or a deploy, the run's
workflow is recovered and walks its flow again: an agent that had finished
returns its recorded result at once, an agent that was running replays its
recorded calls and makes only the one that was in flight.

A recovered or enqueued run is walked here from its recorded inputs
(``Swarm.execution``), never through ``Swarm.run``. What DBOS records for a run
is versioned JSON (``_records.py``), never a pickle.

Agents as workflows are in ``_agents.py``; the other private modules of this package hold
its approvals, limits, history, map, records, resume and workers.

Runs can also be enqueued (:meth:`DBOSEngine.enqueue`, ``swarm.enqueue``) from
any process and served by workers (``swarmcore worker``), on one queue per
flow version, so a worker only takes runs of the flow it has.
"""

from __future__ import annotations

import asyncio
import functools
import math
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions, SetWorkflowID

from swarmcore._checks import check_number, check_run_id
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.engines import (
    Budget,
    CanApprove,
    CanEnqueue,
    CanMap,
    DurableEngine,
    Execution,
    RecordedOutcome,
    Subscriber,
)
from swarmcore.engines._local import LocalEngine
from swarmcore.engines._results import reparsed_run, storable, storable_error
from swarmcore.engines._version import about as _about
from swarmcore.engines._version import flow_version
from swarmcore.engines.dbos import _workers
from swarmcore.engines.dbos._agents import AGENT_WORKFLOW as AGENT_WORKFLOW
from swarmcore.engines.dbos._agents import RUN_WORKFLOW as RUN_WORKFLOW
from swarmcore.engines.dbos._agents import AgentMisplaced, AgentWorkflows, outcome
from swarmcore.engines.dbos._approvals import send_decision, waiting
from swarmcore.engines.dbos._handle import RunHandle, same_run
from swarmcore.engines.dbos._history import DBOSHistory
from swarmcore.engines.dbos._limits import DBOSLimits
from swarmcore.engines.dbos._map import map_runs
from swarmcore.engines.dbos._records import RecordSerializer
from swarmcore.engines.dbos._resume import Reopened, reopen
from swarmcore.errors import SwarmError, UserError

if TYPE_CHECKING:
    from swarmcore._batch import Tally
    from swarmcore._swarm import Swarm
    from swarmcore._walk import FlowSetup, Run
    from swarmcore.models import SwarmResult

__all__ = [
    "AGENT_WORKFLOW",
    "RUN_WORKFLOW",
    "AgentMisplaced",
    "DBOSEngine",
    "DBOSHistory",
    "RecordSerializer",
    "RecordedOutcome",
    "RunHandle",
    "flow_version",
]

_engine: DBOSEngine | None = None
"""The process's engine: DBOS is one instance per process, and so is this."""


@dataclass(frozen=True, slots=True)
class _Live:
    """A run started in this process: its workflow walks it as it is."""

    execution: Execution
    outcome: list[SwarmResult | SwarmError] = field(
        default_factory=list["SwarmResult | SwarmError"]
    )
    """What the walk here ended with, ``parsed`` objects intact (DBOS stores them as JSON)."""


class DBOSEngine(DurableEngine, CanEnqueue, CanApprove, CanMap):
    """Runs flows as DBOS workflows on PostgreSQL, so they survive crashes and deploys.

    A durable engine with every capability :mod:`swarmcore.engines` declares:
    it resumes runs from its own records, enqueues them for workers, waits for
    approvals decided from any process, and maps a batch as one run per task.

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
            for a decision (``swarm.decide``) in a run with no approval
            callback; then it is denied. Default: a week.
        heartbeat: Seconds between a worker's heartbeats in the database.
        adopt_after: Seconds of silence after which one live worker of the
            same flow adopts a worker's runs (None: never); see
            :mod:`swarmcore.engines.dbos._workers`.

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
        self.heartbeat, self.adopt_after = _workers.checked(heartbeat, adopt_after)
        self._watch: _workers.Watch | None = None
        self._swarms: dict[str, Swarm] = {}
        self._versions: dict[int, str] = {}
        """Flow version by ``id(flow)``: execute() is handed the flow, not the Swarm."""
        self._live: dict[str, _Live] = {}
        self._resumed: dict[str, int] = {}
        """The generation each run being resumed here starts as (see :meth:`reopen`)."""
        self._launched = False
        self._up = threading.Event()
        """Set once a launch has finished (or failed): runs started meanwhile wait for it."""
        self._shared_limits: DBOSLimits | None = None
        self._client: DBOSClient | None = None
        self._handing_back = threading.Event()
        """Set while shutting down: cancelled waits leave their workflows PENDING."""
        self._walking: set[str] = set()
        """The runs whose workflow walks here now (the runs in flight)."""
        self._handed_back: list[str] = []
        """The runs a shutdown stopped mid-walk, left PENDING."""
        self._agents = AgentWorkflows(
            worker_id, agent_wait, approval_timeout, self._client_async, self._handing_back
        )
        self._local = LocalEngine(self._agents.run, lambda: self._shared_limits)
        """Walks each run in its workflow, each agent through :attr:`_agents`."""
        _engine = self

    # --- the Swarm's side --------------------------------------------------------------

    def attach(self, swarm: Swarm) -> None:
        """Serve runs of ``swarm`` here, on the queue of its flow version."""
        version = flow_version(swarm)
        self._swarms[version] = swarm
        self._versions[id(swarm.flow)] = version

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
        await self.launch()
        live = _Live(Execution(setup, run, subscribers, limits, text_deltas, checkpoint))
        self._live[run.run_id] = live
        try:
            with SetWorkflowID(run.run_id):
                handle = await DBOS.start_workflow_async(
                    _run_workflow,
                    _about(
                        setup.flow,
                        self._versions.get(id(setup.flow), ""),
                        (setup.mode.name, setup.mode.budget),
                        self._resumed.pop(run.run_id, 0),
                    ),
                    run.run_id,
                    run.task,
                    dict(run.options.variables),
                    dict(run.metadata),
                )
            try:
                recorded = await outcome(handle, self._handing_back)
            except SwarmError:
                if live.outcome and isinstance(live.outcome[0], SwarmError):
                    raise live.outcome[0] from None
                await self._say_recorded(run, "failed")  # the walk never ran here
                raise
            if live.outcome and not isinstance(live.outcome[0], SwarmError):
                return live.outcome[0]
            await self._say_recorded(run, "succeeded")
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
        about = _about(swarm.flow, flow_version(swarm), (swarm.context_mode, swarm.context_budget))
        await client.enqueue_async(options, about, run_id, task, dict(variables), dict(metadata))
        await same_run(client, run_id, task, variables)  # the id may hold an earlier run
        return RunHandle(run_id, client)

    async def reopen(self, swarm: Swarm, run_id: str) -> Reopened:
        """Make the failed run ``run_id`` of ``swarm`` ready to run here again (swarm.resume)."""
        check_run_id(run_id, lookup=True)
        reopened = await reopen(await self._client_async(), run_id, flow_version(swarm))
        self._resumed[run_id] = reopened.generation
        return reopened

    async def approvals(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for a decision (see :meth:`approve`)."""
        check_run_id(run_id, lookup=True)
        client = await self._client_async()
        return await asyncio.to_thread(waiting, client, run_id)

    async def approve(
        self, run_id: str, call_id: str, approval: Approval | bool
    ) -> ApprovalRequest:
        """Decide a waiting call of run ``run_id``, from any process; returns its request."""
        check_run_id(run_id, lookup=True)
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
        check_run_id(run_id, lookup=True)
        return RunHandle(run_id, await self._client_async())

    # --- DBOS ----------------------------------------------------------------------

    def config(self) -> DBOSConfig:
        """The DBOS configuration this engine launches with."""
        config: DBOSConfig = {
            "name": self.app_name,
            "system_database_url": self.database_url,
            "executor_id": self.worker_id,
            "log_level": self.log_level,
            "serializer": RecordSerializer(),  # versioned JSON records, never pickles
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
            if not self._up.is_set():  # concurrent first runs: all wait for the one launch
                await asyncio.to_thread(self._up.wait)
            return
        self._launched = True
        self._up.clear()
        self._handing_back.clear()
        try:
            DBOS(config=self.config())
            shared = DBOSLimits(self.queue_poll, self.worker_id)  # model limits across processes
            own = _workers.own_queues(self, queues)  # where adopted runs come to this worker
            DBOS.listen_queues([*queues, *own, *shared.queues()])
            self._shared_limits = shared  # runs walked from now on hold limits through it
            try:
                await asyncio.to_thread(DBOS.launch)
            except BaseException:
                shared.stop()
                self._shared_limits = None
                raise
            await shared.start()
            for name in queues:
                await DBOS.register_queue_async(
                    name, worker_concurrency=concurrency, polling_interval_sec=self.queue_poll
                )
            self._watch = await _workers.watch(self, queues)  # a worker's heartbeat
        finally:
            self._up.set()

    async def shutdown(self, *, grace: float = 0.0) -> list[str]:
        """Stop DBOS here: take no new runs, let runs in flight finish for ``grace`` seconds.

        The runs still in flight after ``grace`` seconds are handed back: their
        workflows stop here without recording an outcome and stay PENDING, for a
        process restarted with this worker id to recover, or (after
        ``adopt_after`` seconds without this worker's heartbeat) a live worker of
        the same flow to adopt. Either goes on from their recorded steps.

        Args:
            grace: Seconds to wait for the runs walking here to finish (rounded up
                to whole seconds; 0: hand them back at once). The heartbeat goes
                on meanwhile, so no other worker adopts them; this worker adopts
                nobody's runs any more.

        Returns:
            The ids of the runs handed back.

        Raises:
            UserError: ``grace`` is not a finite number of seconds, 0 or more.
        """
        global _engine
        check_number("DBOSEngine.shutdown", "grace", grace, zero=True)
        if self._watch is not None:
            self._watch.drain()
        handed_back: list[str] = []
        if self._launched:
            wait = math.ceil(grace) if self._walking else 0  # DBOS waits in whole seconds
            self._handing_back.set()
            self._handed_back.clear()
            # DBOS stops dequeuing at once, waits for its workflows up to `wait` s, then
            # cancels the tasks still running: outcome() then leaves them PENDING.
            await asyncio.to_thread(
                functools.partial(DBOS.destroy, workflow_completion_timeout_sec=wait)
            )
            handed_back = sorted(self._handed_back)
            if self._shared_limits is not None:  # after the drain: its calls were limited
                self._shared_limits.stop()
                self._shared_limits = None
            self._launched = False
            # DBOS made its (now shut down) thread pool this loop's default executor:
            # give the loop a working one, or every later asyncio.to_thread here fails.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        if self._client is not None:
            await asyncio.to_thread(self._client.destroy)
            self._client = None
        self._watch = await _workers.stop(self._watch)
        if _engine is self:
            _engine = None
        return handed_back

    async def _client_async(self) -> DBOSClient:
        if self._client is None:

            def connect() -> DBOSClient:
                DBOS.migrate(self.database_url)  # enqueueing before any worker started works
                return DBOSClient(
                    system_database_url=self.database_url,
                    application_name=self.app_name,
                    serializer=RecordSerializer(),
                )

            self._client = await asyncio.to_thread(connect)
        return self._client

    async def _say_recorded(self, run: Run, status: str) -> None:
        """Warn that ``run``'s id held a recorded run; refuse it if that one's task differs."""
        client = await self._client_async()
        await same_run(client, run.run_id, run.task, run.options.variables)
        _say_recorded(run.run_id, status)

    def _swarm(self, version: str) -> Swarm:
        swarm = self._swarms.get(version)
        if swarm is None:
            raise UserError(
                f"No Swarm with flow version {version} is served by worker {self.worker_id!r}; "
                "start a worker with that flow."
            )
        return swarm


def _say_recorded(run_id: str, status: str) -> None:
    warnings.warn(
        RecordedOutcome(
            f"Run {run_id!r} was already in the engine's database: this returned the outcome "
            f"recorded for it ({status}) and ran nothing again, since a run id is the run's "
            "idempotency key. To run the flow anew (after a fix, say), give a new run id "
            "(swarm.run(task) makes one); to continue a failed run without re-running its "
            f"finished agents, swarm.resume({run_id!r})."
        ),
        stacklevel=7,  # swarm.run's caller, past run, _execute, walk, execute, _say_recorded
    )


def _current() -> DBOSEngine:
    if _engine is None:
        raise UserError("No DBOSEngine in this process: Swarm(flow, engine=DBOSEngine(url)).")
    return _engine


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
    live = engine._live.get(run_id)  # pyright: ignore[reportPrivateUsage] -- this module's
    engine._walking.add(run_id)  # pyright: ignore[reportPrivateUsage] -- this module's
    try:
        if live is not None:
            execution = live.execution
        else:  # recovered, or enqueued: walked here from its recorded inputs
            version = str(about.get("version") or "")
            if not version:
                raise UserError(f"Run {run_id} was started in a process that is gone; resume it.")
            swarm = engine._swarm(version)  # pyright: ignore[reportPrivateUsage] -- this module's
            execution = swarm.execution(task, variables=variables, metadata=metadata, run_id=run_id)
        with engine._agents.walking(run_id, int(about.get("generation", 0))):  # pyright: ignore[reportPrivateUsage] -- this module's
            result = await execution.walk(engine._local)  # pyright: ignore[reportPrivateUsage] -- this module's
    except SwarmError as error:
        if live is not None:
            live.outcome.append(error)
        raise storable_error(error) from error.__cause__
    except asyncio.CancelledError:
        if engine._handing_back.is_set():  # pyright: ignore[reportPrivateUsage] -- this module's
            engine._handed_back.append(run_id)  # pyright: ignore[reportPrivateUsage] -- this module's
        raise
    finally:
        engine._walking.discard(run_id)  # pyright: ignore[reportPrivateUsage] -- this module's
    if live is not None:
        live.outcome.append(result)
    return storable(result)
