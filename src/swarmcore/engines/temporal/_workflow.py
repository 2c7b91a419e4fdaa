"""The run workflow and the step activity: a run's walk inside a Temporal workflow.

A run is one workflow (id: the run id) whose code is the walk of the flow, as
in process; every model call and tool call of its agents goes through the
step seam (``scope.step``) and is an activity, so the workflow's history holds
each call's result and the walk replays from it after a crash. What the walk
decides from (replies, tool records) is in the history; the walk does no I/O of
its own and waits only on activities and Temporal's timers, so a replay makes
the same decisions. Parallel branches are tasks of the workflow's own
deterministic event loop.

Why the activity input is a key, not the prompt: a call is a closure the walk
made (its request, its tools, its context), registered in this process under a
key; the activity, served on a task queue of this process alone
(:attr:`Serving.step_queue`), runs the closure it finds under that key. The
history holds the key and the call's result, never the request. A call that
ran where its closure is not, or whose worker died (its heartbeats stop), fails
as *lost*, and the walk, replayed by whichever worker has the run now, makes it
again there: at most the call in flight is made twice, as on DBOS.

Workflows run without Temporal's sandbox: a run's walk reaches user code (tools,
hooks, models) that the sandbox would re-import per run; determinism rests on
the seam above (every call an activity), and the walk takes no wall-clock
decision.
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from swarmcore import durable
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._walk import AgentStep, run_in_process
from swarmcore.engines._results import storable, storable_error
from swarmcore.errors import SwarmError, UserError
from swarmcore.models import SwarmResult  # Temporal reads the workflow's annotations at run time
from swarmcore.store import records

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm
    from swarmcore.engines import Execution
    from swarmcore.engines._local import LocalEngine
    from swarmcore.models import AgentResult

RUN_WORKFLOW = "swarmcore.run"
"""The run workflow's type name."""
STEP_ACTIVITY = "swarmcore.step"
"""The activity type of every model call and tool call."""
FAILED = "swarmcore.error"
"""An ApplicationError type: the call (or the run) raised a swarmcore error, in its details."""
DECIDE_SIGNAL = "swarmcore.decide"
"""The signal that decides a call waiting for approval: its call id and an ``Approval``."""
WAITING_MEMO = "swarmcore_waiting"
"""The memo of a run's workflow listing its calls waiting for approval (read with no worker)."""
LOST = "swarmcore.lost"
"""An ApplicationError type: the call ran where its closure is not, or its worker stopped."""
_TRIES = 5
"""How many times a lost call is made again before the run fails."""


@dataclass(slots=True)
class Live:
    """A run started in this process: its workflow walks it as it is, if it runs here."""

    execution: Execution
    outcome: list[SwarmResult | SwarmError] = field(
        default_factory=list["SwarmResult | SwarmError"]
    )
    """What the walk here ended with, ``parsed`` objects intact."""


class Serving(Protocol):
    """What a worker process's engine tells the run workflows it serves."""

    @property
    def step_queue(self) -> str:
        """The task queue of this process's step activities."""
        ...

    @property
    def step_heartbeat(self) -> float:
        """Seconds of silence after which a call's activity counts as lost."""
        ...

    @property
    def approval_timeout(self) -> float:
        """Seconds a call waits for an approval decision before it is denied."""
        ...

    @property
    def local(self) -> LocalEngine:
        """The engine that walks a run inside its workflow."""
        ...

    def live(self, run_id: str) -> Live | None:
        """The run ``run_id`` if this process started it."""
        ...

    def swarm_for(self, version: str) -> Swarm:
        """The Swarm of flow version ``version`` served here."""
        ...


_serving: dict[str, Serving] = {}
"""The engine serving each run task queue of this process."""
_calls: dict[str, tuple[Callable[[], Awaitable[Any]], tuple[tuple[Any, Any], ...]]] = {}
"""The calls waiting for their activity in this process, by key: closure, swarmcore context."""


def serve(queue: str, engine: Serving) -> None:
    """Let the run workflows on ``queue`` in this process reach ``engine``."""
    _serving[queue] = engine


def unserve(queue: str) -> None:
    """Forget the engine of ``queue`` (its worker stopped)."""
    _serving.pop(queue, None)


def error_of(failure: BaseException | None) -> BaseException | None:
    """The swarmcore error an ActivityError or a failed workflow carries, if it carries one."""
    while failure is not None:
        if isinstance(failure, ApplicationError) and failure.type == FAILED and failure.details:
            carried = failure.details[0]
            if isinstance(carried, BaseException):
                return carried
        failure = failure.__cause__
    return None


def agent_runner(serving: Serving) -> Callable[[AgentStep], Awaitable[AgentResult]]:
    """How the walk runs one agent in a workflow: in process, each call an activity."""

    async def run(step: AgentStep) -> AgentResult:
        keys = itertools.count(1)
        base = f"{step.run_id}/{step.agent.name}/{step.attempt}"

        async def recorded(name: str, call: Callable[[], Awaitable[Any]]) -> Any:
            # The same key on a replay: the call's place in its agent's run.
            return await _step(serving, name, f"{base}/{next(keys)}", call)

        decider = _decider(serving.approval_timeout)
        return await run_in_process(
            replace(step, scope=step.scope.recording(recorded, decider=decider))
        )

    return run


def _decider(timeout: float) -> Callable[[ApprovalRequest], Awaitable[Approval]]:
    async def decided(request: ApprovalRequest) -> Approval:
        run = workflow.instance()
        assert isinstance(run, RunWorkflow)
        return await run.decision(request, timeout)

    return decided


async def _step(serving: Serving, name: str, key: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """Make ``call`` as an activity of the run's workflow; its recorded result on a replay."""
    info = workflow.info()
    ref = f"{info.workflow_id}@{info.run_id}/{key}"
    carried = tuple(
        (var, value)
        for var, value in contextvars.copy_context().items()
        if var.name.startswith("swarmcore")
    )
    _calls[ref] = (call, carried)
    heartbeat = timedelta(seconds=serving.step_heartbeat)
    try:
        for tries in range(1, _TRIES + 1):
            try:
                return await workflow.execute_activity(
                    STEP_ACTIVITY,
                    args=[ref, key],
                    task_queue=serving.step_queue,
                    # swarmcore's own policy retries a call; Temporal never does.
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    start_to_close_timeout=timedelta(days=7),
                    schedule_to_start_timeout=heartbeat * 3,
                    heartbeat_timeout=heartbeat,
                    summary=name,
                )
            except ActivityError as failure:
                error = error_of(failure)
                if error is not None:
                    raise error from None
                lost = isinstance(failure.cause, TimeoutError) or (
                    isinstance(failure.cause, ApplicationError) and failure.cause.type == LOST
                )
                if not lost or tries == _TRIES:
                    raise
        raise AssertionError("unreachable: the last try returns or raises")
    finally:
        _calls.pop(ref, None)


@activity.defn(name=STEP_ACTIVITY)
async def step_activity(ref: str, key: str) -> Any:
    """Make the call registered under ``ref`` with idempotency key ``key``, heartbeating."""
    found = _calls.get(ref)
    if found is None:
        raise ApplicationError(
            f"Call {key} ran in a worker that does not walk its run; it is made again.",
            type=LOST,
            non_retryable=True,
        )
    call, carried = found

    async def made() -> Any:
        for var, value in carried:
            var.set(value)
        return await durable.with_key(key, call)

    beat = activity.info().heartbeat_timeout
    every = beat.total_seconds() / 3 if beat else 1.0
    task = asyncio.get_running_loop().create_task(made(), context=contextvars.Context())
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=every)
            activity.heartbeat()
        return task.result()
    except asyncio.CancelledError:
        if activity.is_worker_shutdown():  # handed back: the walk makes it again elsewhere
            raise ApplicationError(
                f"Call {key} stopped with its worker.", type=LOST, non_retryable=True
            ) from None
        raise
    except SwarmError as error:
        raise ApplicationError(str(error), error, type=FAILED, non_retryable=True) from None
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@workflow.defn(name=RUN_WORKFLOW, sandboxed=False)
class RunWorkflow:
    """One run: the walk of its flow, each model call and tool call an activity.

    A call to a tool that requires approval, in a run with no approval callback,
    waits for the signal :data:`DECIDE_SIGNAL` (``swarm.decide``); the memo
    :data:`WAITING_MEMO` lists the calls waiting, readable while no worker runs
    the workflow. The signal is in the history, so the wait survives its worker.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, ApprovalRequest] = {}
        self._decided: dict[str, Approval] = {}

    @workflow.signal(name=DECIDE_SIGNAL)
    def decide(self, call_id: str, approval: Approval) -> None:
        """Decide the call ``call_id`` (a decision for a call not waiting yet is kept)."""
        self._decided[call_id] = approval

    async def decision(self, request: ApprovalRequest, wait: float) -> Approval:
        """Wait for the decision on ``request``; denied after ``wait`` seconds."""
        self._waiting[request.call_id] = request
        workflow.upsert_memo({WAITING_MEMO: list(self._waiting.values())})
        workflow.logger.warning(
            "Run %s waits for approval of %s(%s) by %s: swarmcore runs approve %s %s",
            workflow.info().workflow_id,
            request.tool_name,
            request.call_id,
            request.agent_name,
            workflow.info().workflow_id,
            request.call_id,
        )
        try:
            await workflow.wait_condition(
                lambda: request.call_id in self._decided, timeout=timedelta(seconds=wait)
            )
        except builtins.TimeoutError:
            return Approval.deny(f"no decision came within {wait:g} seconds")
        finally:
            self._waiting.pop(request.call_id, None)
            workflow.upsert_memo({WAITING_MEMO: list(self._waiting.values())})
        return self._decided.pop(request.call_id)

    @workflow.run
    async def run(
        self,
        about: dict[str, Any],
        run_id: str,
        task: str,
        variables: dict[str, object],
        metadata: dict[str, Any],
    ) -> SwarmResult:
        """Walk the run to its end; its result with ``parsed`` values as JSON data."""
        serving = _serving.get(workflow.info().task_queue)
        if serving is None:
            raise UserError(f"No TemporalEngine serves {workflow.info().task_queue} here.")
        live = serving.live(run_id)
        try:
            if live is not None:
                execution = live.execution
            else:  # enqueued, or taken over: walked here from its recorded inputs
                swarm = serving.swarm_for(str(about.get("version") or ""))
                execution = swarm.execution(
                    task, variables=variables, metadata=metadata, run_id=run_id
                )
            result = await execution.walk(serving.local)
        except SwarmError as error:
            if live is not None:
                live.outcome.append(error)
            stored = storable_error(error)
            raise ApplicationError(
                str(error), stored, type=FAILED, non_retryable=True
            ) from error.__cause__
        if live is not None:
            live.outcome.append(result)
        return storable(result)


def run_error(failure: BaseException) -> SwarmError:
    """The swarmcore error a failed run workflow recorded, or one that says what happened."""
    error = error_of(failure)
    if isinstance(error, SwarmError):
        return error
    if error is not None:
        return records.RecordedError(str(error), error_type=type(error).__name__)
    cause = failure.__cause__ or failure
    return SwarmError(f"The run's workflow ended without a result: {cause}")
