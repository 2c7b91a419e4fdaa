"""Model limits held across every process sharing a DBOS database.

``limit_model(model, max_in_flight=..., requests_per_minute=...)`` holds per
process without an engine. Under the DBOS engine each limited model also gets
a DBOS queue, ``swarmcore-model-<model>-<hash>``, registered with
``global_concurrency=max_in_flight`` and a rate limiter for
``requests_per_minute``; DBOS admits a queue's workflows within those limits,
counted in PostgreSQL across all processes.

Each model attempt takes a permit: a tiny workflow ``swarmcore.permit``
enqueued on the model's queue. Once DBOS starts it (in whichever process polls
the queue first), it sets the event ``granted`` and, under ``max_in_flight``,
stays PENDING (holding one of the queue's concurrency slots) until the caller
sends it ``released`` after the call. A permit whose caller died ends by itself
after ``hold`` seconds (the call's ``call_timeout`` plus a margin, or ten
minutes); one whose own process died holds its slot until DBOS recovers it
(a restart with that worker id), then ends. Under a rate limit only, the permit
ends as soon as it has started: DBOS counts starts, not running ones. The
permits' rows in ``dbos.workflow_status`` (name ``swarmcore.permit``, queue
``swarmcore-model-...``, id ``permit/<queue>/<worker id>/<uuid>``) record
which worker's call was let through when.

The process-local ``Limiter`` still applies first (it paces the process);
``tokens_per_minute`` and ``max_in_flight_per_worker`` hold per process only,
since DBOS limits count workflows, not tokens, and cannot tell which process
asked for a permit.

Every launched engine listens to the queues of the limits it knows, so a
permit is granted even when only the caller's process has the limit.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import re
import threading
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TypedDict, TypeVar

from dbos import DBOS, Queue, SetWorkflowID

from swarmcore.llm import _limits as limits
from swarmcore.llm._limits import ModelLimit, SharedPermit

T = TypeVar("T")

PERMIT_WORKFLOW = "swarmcore.permit"
GRANTED = "granted"
RELEASED = "released"
_HOLD_MARGIN = 30.0
"""Seconds a permit outlives its call's timeout before it ends by itself."""
_HOLD_UNBOUNDED = 600.0
"""Seconds a permit is held at most for a call with no ``call_timeout``."""
_GRANT_WAIT = 60.0
"""Seconds of one wait for the grant; the caller keeps waiting, one wait at a time."""


class QueueRateLimit(TypedDict):
    """DBOS's limiter: at most ``limit`` workflows start in any ``period`` seconds."""

    limit: int
    period: float


def model_queue(model: str) -> str:
    """The DBOS queue holding ``model``'s limits across processes."""
    safe = re.sub(r"[^a-z0-9_]+", "-", model.lower()).strip("-")[:48]
    digest = hashlib.sha256(model.encode()).hexdigest()[:8]
    return f"swarmcore-model-{safe}-{digest}"


def queue_rate(limit: ModelLimit) -> QueueRateLimit | None:
    """DBOS's limiter for ``requests_per_minute``: about one second's worth per window.

    DBOS allows ``limit`` starts in any rolling window of ``period`` seconds; a
    whole minute's window would let a minute's requests go in one burst, so
    the window holds about a second's worth (at least one request), as the
    process-local limiter's bucket does.
    """
    rpm = limit.requests_per_minute
    if rpm is None:
        return None
    burst = max(1, int(rpm // 60))
    return {"limit": burst, "period": 60.0 * burst / rpm}


def _shared(limit: ModelLimit) -> bool:
    return limit.max_in_flight is not None or limit.requests_per_minute is not None


class _Permit:
    """A granted permit: the message ``released`` ends its workflow, giving its slot back."""

    def __init__(self, workflow_id: str, held: bool) -> None:
        self._workflow_id = workflow_id
        self._held = held

    async def release(self) -> None:
        if self._held:
            self._held = False
            await _outside(lambda: DBOS.send_async(self._workflow_id, True, RELEASED))


class _NoPermit:
    async def release(self) -> None:
        return None


class DBOSLimits:
    """The engine's ``SharedLimits``: one DBOS queue per limited model.

    Args:
        poll: Seconds between a process's looks at a model's queue; a permit
            waits about half of it on average.
        worker_id: This process's worker id, named in its permits' workflow
            ids (``permit/<queue>/<worker id>/<uuid>``).
    """

    def __init__(self, poll: float, worker_id: str) -> None:
        self.poll = poll
        self.worker_id = worker_id
        self._ready = threading.Event()
        self._registered: dict[str, tuple[ModelLimit, Queue]] = {}

    @staticmethod
    def queues() -> list[str]:
        """The queues of the limits set in this process, to listen to from launch."""
        return [model_queue(m) for m, limit in limits.model_limits().items() if _shared(limit)]

    async def start(self) -> None:
        """Register the queues of the limits set so far (after launch), then grant permits."""
        for model, limit in limits.model_limits().items():
            if _shared(limit):
                await self._register(model, limit)
        self._ready.set()

    def stop(self) -> None:
        """Stop granting permits (before DBOS is destroyed); the engine's runs no longer ask."""
        self._ready.set()  # a call still waiting for a failed launch goes on (and fails)

    async def acquire(self, model: str, limit: ModelLimit, hold: float | None) -> SharedPermit:
        """Wait until DBOS starts a permit for ``model`` within its limits across processes."""
        if not _shared(limit):
            return _NoPermit()
        if not self._ready.is_set():  # a call recovered while DBOS launches waits for it
            await asyncio.to_thread(self._ready.wait)
        queue = await self._register(model, limit)
        held = limit.max_in_flight is not None
        seconds = ((_HOLD_UNBOUNDED if hold is None else hold) + _HOLD_MARGIN) if held else 0.0
        workflow_id = f"permit/{queue.name}/{self.worker_id}/{uuid.uuid4().hex}"

        async def enqueue() -> None:
            with SetWorkflowID(workflow_id):
                await queue.enqueue_async(_permit_workflow, seconds)

        await _outside(enqueue)
        try:
            while (
                await _outside(lambda: DBOS.get_event_async(workflow_id, GRANTED, _GRANT_WAIT))
                is None
            ):
                pass
        except BaseException:
            # Cancelled while waiting: the permit ends as soon as it starts. (Cancelling its
            # workflow instead would erase its start time, which the rate limit counts.)
            await asyncio.shield(_Permit(workflow_id, held=True).release())
            raise
        return _Permit(workflow_id, held)

    async def _register(self, model: str, limit: ModelLimit) -> Queue:
        """Register ``model``'s queue with ``limit`` (once per change) and listen to it.

        Registering is an upsert, so two tasks registering at once do no harm.
        """
        name = model_queue(model)
        known = self._registered.get(name)
        if known is not None and known[0] == limit:
            return known[1]
        queue = await DBOS.register_queue_async(
            name,
            global_concurrency=limit.max_in_flight,
            limiter=queue_rate(limit),
            polling_interval_sec=self.poll,
            on_conflict="always_update",  # the limit set last holds for every process
        )
        _listen([name])
        self._registered[name] = (limit, queue)
        return queue


def _listen(names: Sequence[str]) -> None:
    """Dequeue from ``names`` here too, also after launch.

    DBOS's ``listen_queues`` works only before launch; its queue thread re-reads
    the list every second, so a limit set after launch is served from then on.
    """
    from dbos._dbos import _get_dbos_instance  # pyright: ignore[reportPrivateUsage] -- see above

    dbos = _get_dbos_instance()
    listening: list[str] | None = getattr(dbos, "_listening_queues", None)
    if listening is not None:
        listening.extend(n for n in names if n not in listening)


async def _outside(call: Callable[[], Awaitable[T]]) -> T:
    """Run a DBOS call as a top-level operation, not as part of the step it is made in."""

    async def run() -> T:
        return await call()

    return await asyncio.get_running_loop().create_task(run(), context=contextvars.Context())


@DBOS.workflow(name=PERMIT_WORKFLOW)
async def _permit_workflow(hold: float) -> None:
    """One model call's permit: granted once DBOS starts it; held until ``released`` or ``hold``."""
    await DBOS.set_event_async(GRANTED, True)
    if hold > 0:
        await DBOS.recv_async(RELEASED, timeout_seconds=hold)
