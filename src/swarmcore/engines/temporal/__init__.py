"""Durable runs on Temporal: a run is a workflow, each model and tool call an activity.

``Swarm(flow, engine=TemporalEngine("127.0.0.1:7233"))`` makes each run a
Temporal workflow whose id is the run id. The walk of the flow runs inside the
workflow (``_workflow.py``); every model call and tool call of its agents is an
activity, retried by swarmcore's policy only (Temporal's retry policy allows
one attempt), and a tool gets the same idempotency key as on DBOS
(``<run>/<agent>/<attempt>/<step>``). After a crash Temporal hands the workflow
to a live worker, which replays the walk from the history: a finished call
returns its recorded result, and only the call that was in flight is made again.

Runs of one flow version are served on the task queue ``<task_queue>-<version>``,
so a worker only takes runs of the flow it has. What the history holds is
versioned JSON (``_converter.py``), never a pickle.

A call to a tool that requires approval, in a run with no approval callback,
waits for a signal (``swarm.decide``) that any process may send.

``swarm.resume`` of a failed run resets its workflow to just before the call
that failed it.

``swarm.map`` starts one run per key for the workers and collects them.

:class:`TemporalHistory` reads the runs from Temporal itself (visibility and
histories) for ``swarmcore runs ... --database-url temporal://HOST:PORT``.

Not yet on Temporal (see docs/scaling-out.md): the viewer (``swarmcore ui``),
limits shared across workers, streaming to another
process, a payload store for large results.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from swarmcore._checks import check_run_id
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.engines import (
    Budget,
    CanApprove,
    CanEnqueue,
    CanMap,
    DurableEngine,
    Execution,
    RecordedOutcome,
    RunInputs,
    Subscriber,
)
from swarmcore.engines import RunHandle as EngineRunHandle
from swarmcore.engines._local import LocalEngine
from swarmcore.engines._results import reparsed_run
from swarmcore.engines._version import about, flow_version
from swarmcore.engines.temporal import _history, _workflow
from swarmcore.engines.temporal._converter import DATA_CONVERTER, RecordPayloadConverter
from swarmcore.engines.temporal._history import TemporalHistory
from swarmcore.engines.temporal._workflow import (
    DECIDE_SIGNAL,
    RUN_WORKFLOW,
    STEP_ACTIVITY,
    WAITING_MEMO,
    Live,
)
from swarmcore.errors import SwarmError, UserError
from swarmcore.events import Event, EventBus

if TYPE_CHECKING:
    from swarmcore._batch import Tally
    from swarmcore._flow import Flow
    from swarmcore._swarm import Swarm
    from swarmcore._walk import FlowSetup, Run
    from swarmcore.models import SwarmResult

__all__ = [
    "DATA_CONVERTER",
    "RUN_WORKFLOW",
    "STEP_ACTIVITY",
    "RecordPayloadConverter",
    "Reset",
    "RunHandle",
    "TemporalEngine",
    "TemporalHistory",
]


class RunHandle(EngineRunHandle):
    """A run handed to the engine: ask its status, or wait for its result, from any process.

    Args:
        run_id: The run's id (its workflow id).
        client: A Temporal client with the engine's data converter.
        flow: The run's flow, to rebuild its agents' ``parsed`` values (None: left as JSON).
    """

    def __init__(self, run_id: str, client: Client, flow: Flow | None = None) -> None:
        self.run_id = run_id
        self._client = client
        self._flow = flow

    def _handle(self) -> WorkflowHandle[Any, Any]:
        return self._client.get_workflow_handle(self.run_id)

    async def status(self) -> str:
        """Temporal's status of the run: RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED..."""
        described = await self._handle().describe()
        return described.status.name if described.status is not None else "UNKNOWN"

    async def result(self, *, poll_seconds: float = 0.2) -> SwarmResult:
        """Wait for the run to end; its SwarmResult, or the error that ended it raised.

        Args:
            poll_seconds: Unused: Temporal tells the client when the run ends.
        """
        try:
            recorded: SwarmResult = await self._handle().result()
        except WorkflowFailureError as failure:
            raise _workflow.run_error(failure) from None
        return recorded if self._flow is None else reparsed_run(recorded, self._flow)


class TemporalEngine(DurableEngine, CanEnqueue, CanApprove, CanMap):
    """Runs flows as Temporal workflows, so they survive crashes and deploys.

    A process that runs flows (``swarm.run``) or serves them (``swarmcore worker
    --engine temporal``) runs a Temporal worker for the flows of its Swarms; a
    process that only enqueues runs connects a client and nothing more.

    Args:
        target: The Temporal frontend's ``host:port``.
        namespace: The Temporal namespace.
        task_queue: The prefix of the run task queues (one per flow version).
        step_heartbeat: Seconds without a heartbeat after which a call in
            flight counts as lost (its worker died) and is made again by the
            worker that has the run then. The lower, the sooner a run recovers.
        worker_id: This process's identity, as Temporal shows it.
        approval_timeout: Seconds a call to a tool that requires approval waits
            for a decision (``swarm.decide``) in a run with no approval
            callback; then it is denied. Default: a week.

    Raises:
        UserError: A bad setting.
    """

    def __init__(
        self,
        target: str = "127.0.0.1:7233",
        *,
        namespace: str = "default",
        task_queue: str = "swarmcore",
        step_heartbeat: float = 10.0,
        worker_id: str | None = None,
        approval_timeout: float = 7 * 24 * 3600.0,
    ) -> None:
        if not target or "/" in target:
            raise UserError(f"TemporalEngine needs the frontend's host:port, got {target!r}.")
        for name, seconds in (
            ("step_heartbeat", step_heartbeat),
            ("approval_timeout", approval_timeout),
        ):
            if not 0 < seconds < float("inf"):
                raise UserError(f"{name} takes seconds above 0, got {seconds!r}.")
        self.target = target
        self.namespace = namespace
        self.task_queue = task_queue
        self.step_heartbeat = step_heartbeat
        self.approval_timeout = approval_timeout
        self.worker_id = worker_id or f"swarmcore-{uuid.uuid4().hex[:8]}"
        self.step_queue = f"{task_queue}-steps-{uuid.uuid4().hex}"
        """This process's own step queue: a call's activity runs where its closure is."""
        self.local = LocalEngine(_workflow.agent_runner(self))
        """Walks each run inside its workflow."""
        self._swarms: dict[str, Swarm] = {}
        self._versions: dict[int, str] = {}
        """Flow version by ``id(flow)``: execute() is handed the flow, not the Swarm."""
        self._live: dict[str, Live] = {}
        self._client: Client | None = None
        self._workers: dict[str, tuple[Worker, asyncio.Task[None]]] = {}

    # --- the Swarm's side --------------------------------------------------------------

    def attach(self, swarm: Swarm) -> None:
        """Serve runs of ``swarm`` here, on the task queue of its flow version."""
        version = flow_version(swarm)
        self._swarms[version] = swarm
        self._versions[id(swarm.flow)] = version

    def queue_name(self, swarm: Swarm) -> str:
        """The task queue runs of ``swarm`` are served on."""
        return self._queue(flow_version(swarm))

    def _queue(self, version: str) -> str:
        return f"{self.task_queue}-{version}"

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
        """Run ``run`` as the workflow ``run.run_id`` and wait for its result."""
        version = self._versions.get(id(setup.flow), "")
        await self.launch()
        # The walk runs on the workflow's thread and loop; its events reach the
        # subscribers here, on this loop (a stream's queue, async hooks), in order.
        loop = asyncio.get_running_loop()
        here = EventBus(run.run_id, subscribers)

        def forward(event: Event) -> None:
            loop.call_soon_threadsafe(here.publish, event)

        inner: list[Subscriber] = [(forward, ())] if subscribers else []
        live = Live(Execution(setup, run, inner, limits, text_deltas, checkpoint))
        self._live[run.run_id] = live
        try:
            client = await self.client()
            inputs = [
                about(setup.flow, version, (setup.mode.name, setup.mode.budget)),
                run.run_id,
                run.task,
                dict(run.options.variables),
                dict(run.metadata),
            ]
            handle, fresh = await _start(client, inputs, run.run_id, self._queue(version))
            try:
                recorded: SwarmResult = await handle.result()
            except WorkflowFailureError as failure:
                if live.outcome and isinstance(live.outcome[0], SwarmError):
                    raise live.outcome[0] from None
                if not fresh:
                    _say_recorded(run.run_id, "failed")
                raise _workflow.run_error(failure) from None
            if live.outcome and not isinstance(live.outcome[0], SwarmError):
                return live.outcome[0]
            if not fresh:
                _say_recorded(run.run_id, "succeeded")
            return reparsed_run(recorded, setup.flow)  # walked elsewhere: parsed values rebuilt
        finally:
            self._live.pop(run.run_id, None)
            await here.drain()

    async def enqueue(
        self,
        swarm: Swarm,
        task: str,
        *,
        run_id: str,
        variables: Mapping[str, object],
        metadata: Mapping[str, Any],
    ) -> RunHandle:
        """Start a run of ``swarm`` for the workers of its flow; idempotent per ``run_id``."""
        check_run_id(run_id)
        client = await self.client()
        version = flow_version(swarm)
        made = about(swarm.flow, version, (swarm.context_mode, swarm.context_budget))
        inputs = [made, run_id, task, dict(variables), dict(metadata)]
        await _start(client, inputs, run_id, self._queue(version))
        return RunHandle(run_id, client, swarm.flow)

    async def map(
        self,
        swarm: Swarm,
        tasks: Sequence[str],
        per_task: Sequence[Mapping[str, object] | None],
        run_ids: Sequence[str],
        tally: Tally,
    ) -> list[SwarmResult | BaseException]:
        """``swarm.map`` here: start one run per run id for the workers, then wait for them all.

        Inputs with one run id share its run; a run id Temporal already holds
        returns its recorded outcome, so mapping the same keys again runs nothing.
        The runs belong to the workers: cancelling the map stops the waiting only.
        """
        gate = asyncio.Semaphore(_AT_ONCE)
        started = time.perf_counter()
        ends: dict[str, asyncio.Future[SwarmResult | BaseException]] = {}

        async def outcome(run_id: str, index: int) -> SwarmResult | BaseException:
            async with gate:
                handle = await self.enqueue(
                    swarm,
                    tasks[index],
                    run_id=run_id,
                    variables=per_task[index] or {},
                    metadata={},
                )
            try:
                return await handle.result()
            except SwarmError as error:
                return error

        for index, run_id in enumerate(run_ids):
            if run_id not in ends:
                ends[run_id] = asyncio.ensure_future(outcome(run_id, index))

        async def collect(index: int) -> SwarmResult | BaseException:
            ended = await asyncio.shield(ends[run_ids[index]])
            await tally.ended(index, ended, time.perf_counter() - started)
            return ended

        try:
            return list(await asyncio.gather(*(collect(i) for i in range(len(tasks)))))
        finally:
            for waiting in ends.values():
                waiting.cancel()

    async def handle(self, run_id: str) -> RunHandle:
        """A handle on a run enqueued or started earlier, from any process."""
        check_run_id(run_id, lookup=True)
        return RunHandle(run_id, await self.client())

    async def reopen(self, swarm: Swarm, run_id: str) -> RunInputs:
        """Make the failed run ``run_id`` of ``swarm`` ready to run again (``swarm.resume``).

        Temporal resets the run's workflow to its last workflow task before the
        call that failed it: the new execution keeps every call recorded before
        that point (finished agents are not run again) and makes the failed call
        anew. The earlier execution stays in Temporal's history, failed.

        Raises:
            UserError: No such run; it is still running or already succeeded; or it
                was made by another version of the flow.
        """
        return await self.reset(run_id, flow_version(swarm))

    async def reset(self, run_id: str, version: str | None = None) -> Reset:
        """Reset the failed run ``run_id`` for the workers of its flow version (see :meth:`reopen`).

        Args:
            run_id: The run.
            version: The flow version that will run it (None: its own, for its workers).

        Raises:
            UserError: As :meth:`reopen`.
        """
        check_run_id(run_id, lookup=True)
        client = await self.client()
        handle = client.get_workflow_handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise UserError(f"No run {run_id!r} on Temporal at {self.target}.") from None
            raise
        status = described.status
        if status == WorkflowExecutionStatus.COMPLETED:
            raise UserError(
                f"Run {run_id} already succeeded; nothing to resume. Its result: "
                f"await (await engine.handle({run_id!r})).result()."
            )
        if status in (WorkflowExecutionStatus.RUNNING, None):
            raise UserError(f"Run {run_id} is running, not failed: it goes on by itself.")
        history = await handle.fetch_history()
        inputs = history.events[0].workflow_execution_started_event_attributes.input.payloads
        made, _, task, variables, metadata = DATA_CONVERTER.payload_converter.from_payloads(
            list(inputs)
        )
        made_by = str(made.get("version") or "")
        if version is not None and made_by and made_by != version:
            raise UserError(
                f"Run {run_id} was made by flow version {made_by}, and this Swarm's flow is "
                f"version {version}; resume it with the same flow (agents, models, tools)."
            )
        earlier = [w async for w in client.list_workflows(f"WorkflowId = '{run_id}'")]
        await client.workflow_service.reset_workflow_execution(
            ResetWorkflowExecutionRequest(
                namespace=self.namespace,
                workflow_execution=WorkflowExecution(workflow_id=run_id, run_id=described.run_id),
                reason="swarm.resume",
                workflow_task_finish_event_id=_reset_point(history.events),
                request_id=uuid.uuid4().hex,
            )
        )
        return Reset(str(task), dict(variables), dict(metadata), made_by, max(1, len(earlier)))

    async def approvals(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for a decision (its workflow's memo).

        None for a run not started yet (or unknown): a caller polls until one waits.
        """
        check_run_id(run_id, lookup=True)
        handle = (await self.client()).get_workflow_handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []
            raise
        memo = await described.memo()
        waiting: list[ApprovalRequest] = list(memo.get(WAITING_MEMO) or [])
        return waiting

    async def approve(
        self, run_id: str, call_id: str, approval: Approval | bool
    ) -> ApprovalRequest:
        """Decide a waiting call of run ``run_id`` (a signal to its workflow); its request.

        Raises:
            UserError: No such call waits in that run.
        """
        if isinstance(approval, bool):
            approval = Approval.allow() if approval else Approval.deny()
        waiting = await self.approvals(run_id)
        for request in waiting:
            if request.call_id == call_id:
                handle = (await self.client()).get_workflow_handle(run_id)
                await handle.signal(DECIDE_SIGNAL, args=[call_id, approval])
                return request
        calls = ", ".join(f"{r.call_id} ({r.tool_name})" for r in waiting) or "none"
        raise UserError(
            f"Run {run_id} has no call {call_id!r} waiting for approval (waiting: {calls}); "
            "swarm.pending_approvals(run_id) lists them."
        )

    # --- Temporal ------------------------------------------------------------------

    async def client(self) -> Client:
        """The engine's Temporal client, connected on first use.

        Raises:
            UserError: No Temporal frontend answers at :attr:`target`.
        """
        if self._client is None:
            try:
                self._client = await Client.connect(
                    self.target,
                    namespace=self.namespace,
                    data_converter=DATA_CONVERTER,
                    identity=self.worker_id,
                )
            except RuntimeError as exc:
                raise UserError(
                    f"No Temporal server answers at {self.target}: {exc}. Start one "
                    "(`temporal server start-dev`) or give TemporalEngine(target=...)."
                ) from exc
        return self._client

    async def launch(self) -> None:
        """Serve this process's Swarms: a worker per flow version, and one for the calls."""
        client = await self.client()
        wanted = [self.step_queue, *(self._queue(v) for v in self._swarms)]
        for queue in wanted:
            if queue in self._workers:
                continue
            if queue == self.step_queue:
                worker = Worker(
                    client,
                    task_queue=queue,
                    activities=[_workflow.step_activity],
                    max_concurrent_activities=1000,
                    identity=self.worker_id,
                )
            else:
                _workflow.serve(queue, self)
                worker = Worker(
                    client,
                    task_queue=queue,
                    workflows=[_workflow.RunWorkflow],
                    workflow_runner=UnsandboxedWorkflowRunner(),
                    identity=self.worker_id,
                    # A dead worker's runs leave its sticky queue this soon for a live one.
                    sticky_queue_schedule_to_start_timeout=timedelta(
                        seconds=min(10.0, max(1.0, 2 * self.step_heartbeat))
                    ),
                )
            self._workers[queue] = (worker, asyncio.create_task(worker.run()))

    async def shutdown(self) -> None:
        """Stop this process's workers; the runs in flight stay in Temporal for another worker."""
        workers, self._workers = self._workers, {}
        for queue, (worker, _) in workers.items():
            _workflow.unserve(queue)
            with contextlib.suppress(Exception):
                await worker.shutdown()
        for _, task in workers.values():
            with contextlib.suppress(BaseException):
                await task

    # --- the run workflow's side ---------------------------------------------------

    def live(self, run_id: str) -> Live | None:
        """The run ``run_id`` if this process started it with ``swarm.run``."""
        return self._live.get(run_id)

    def swarm_for(self, version: str) -> Swarm:
        """The Swarm of flow version ``version`` served here.

        Raises:
            UserError: No Swarm here has that version.
        """
        swarm = self._swarms.get(version)
        if swarm is None:
            raise UserError(
                f"No Swarm with flow version {version!r} is served by worker {self.worker_id!r}."
            )
        return swarm


async def _start(
    client: Client, inputs: list[Any], run_id: str, queue: str
) -> tuple[WorkflowHandle[Any, Any], bool]:
    """Start the run's workflow; a handle, and whether it is new (not one recorded earlier)."""
    try:
        handle = await client.start_workflow(
            RUN_WORKFLOW,
            args=inputs,
            id=run_id,
            task_queue=queue,
            memo=_history.memo(inputs[0], str(inputs[2])),
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
    except WorkflowAlreadyStartedError:  # closed under this id: its recorded outcome
        return client.get_workflow_handle(run_id), False
    return handle, True


@dataclass(frozen=True, slots=True)
class Reset:
    """A failed run reset for its workers: its inputs as its workflow recorded them."""

    task: str
    variables: Mapping[str, object]
    metadata: Mapping[str, Any]
    flow_version: str
    """The version of the flow that made it (the workers that serve it have this one)."""
    generation: int
    """How many times the run has been resumed, this time included."""


def _reset_point(events: Sequence[HistoryEvent]) -> int:
    """The last workflow task finished before the call that failed the run (or the run's end).

    A run fails when a call raises a swarmcore error (the last failed activity
    whose failure carries one) or when its walk does; resetting there keeps
    every result recorded before it.
    """
    end = len(events)
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failure = event.activity_task_failed_event_attributes.failure
            if failure.application_failure_info.type == _workflow.FAILED:
                end = index
                break
    for event in reversed(events[:end]):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return event.event_id
    raise UserError("The run failed before its first step; run it again with a new run id.")


_AT_ONCE = 16
"""Run starts in flight at once in ``map``."""


def _say_recorded(run_id: str, status: str) -> None:
    warnings.warn(
        RecordedOutcome(
            f"Run {run_id!r} was already in the engine's history: this returned the outcome "
            f"recorded for it ({status}) and ran nothing again, since a run id is the run's "
            "idempotency key. To run the flow anew (after a fix, say), give a new run id "
            "(swarm.run(task) makes one)."
        ),
        stacklevel=6,  # swarm.run's caller, past run, _execute, walk, execute
    )
