"""The engine seam: what every engine does, and the capabilities a durable engine adds.

:class:`Engine` is all a Swarm needs to run a flow. A durable engine keeps its
runs in a database of its own and declares what it adds as protocols:
:class:`DurableEngine` (it serves a Swarm's runs and resumes them from its own
records), :class:`CanEnqueue`, :class:`CanApprove` and :class:`CanMap`; a
reader of its history that can decide waiting calls is an :class:`ApprovalInbox`. The
Swarm dispatches on these with ``isinstance``; a method an engine lacks is a
``UserError`` that says which engine to use, never an ``AttributeError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from swarmcore import events
from swarmcore.errors import SwarmError
from swarmcore.events import Hook
from swarmcore.llm import _budget as budget

if TYPE_CHECKING:
    from swarmcore._batch import Tally
    from swarmcore._swarm import Swarm
    from swarmcore._tools import Approval, ApprovalRequest
    from swarmcore._walk import FlowSetup, Run
    from swarmcore.models import SwarmResult

Subscriber = tuple[Hook, tuple[type[events.Event], ...]]
"""An event consumer and the event types it wants (every type when empty)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """What one run may spend, shared by every branch (checked by ``budget.Meter``)."""

    max_cost: float | None = None
    max_tokens: int | None = None
    allow_unpriced: bool = False

    def meter(self) -> budget.Meter | None:
        """A fresh meter for one run, or None when nothing is limited."""
        if self.max_cost is None and self.max_tokens is None:
            return None
        return budget.Meter(
            max_cost=self.max_cost, max_tokens=self.max_tokens, allow_unpriced=self.allow_unpriced
        )


@runtime_checkable
class Engine(Protocol):
    """Where a Swarm's runs execute: walks a run and returns its result.

    The one thing every engine does. :class:`~swarmcore.engines.LocalEngine`
    walks the run in this process, each agent through the walk's one seam
    (:data:`~swarmcore._walk.AgentRunner`); a durable engine records the walk too.
    An engine that only implements this runs flows (``run``, ``stream``,
    ``map`` in process); the durable calls of a Swarm need the protocols below.
    """

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
        """Walk ``run`` to its end.

        Args:
            setup: What every run of the Swarm shares.
            run: This run's state.
            subscribers: Who receives the run's events.
            limits: What the run may spend.
            text_deltas: Stream model text as events.
            checkpoint: Called before each agent starts; what it raises stops
                the run there (the run store's failed write, say).

        Raises:
            SwarmError: Whatever stopped the run; ``error.partial`` holds what finished.
        """
        ...


def _unrecorded(result: SwarmResult | None, error: SwarmError | None) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Execution:
    """One run as a Swarm hands it to an engine: what :meth:`Engine.execute` takes.

    ``Swarm.run`` builds one and walks it on its engine; a durable engine serving a
    run its own records hold (recovered after a crash, or enqueued) gets one from
    :meth:`Swarm.execution <swarmcore.Swarm.execution>` and walks it itself, on the
    engine that walks its runs in process: it never calls back into ``Swarm.run``.
    """

    setup: FlowSetup
    """What every run of the Swarm shares."""
    run: Run
    """This run's state."""
    subscribers: Sequence[Subscriber]
    """Who receives the run's events."""
    limits: Budget
    """What the run may spend."""
    text_deltas: bool = False
    """Stream model text as events."""
    checkpoint: Callable[[], None] | None = None
    """Called before each agent starts (the run store's failed write stops the run there)."""
    settle: Callable[[SwarmResult | None, SwarmError | None], None] = _unrecorded
    """Told how the run ended (the run store records it); raising overrides the outcome."""

    async def walk(self, engine: Engine) -> SwarmResult:
        """Walk the run on ``engine`` to its end, then :attr:`settle` it.

        Raises:
            SwarmError: Whatever stopped the run; ``error.partial`` holds what finished.
        """
        try:
            result = await engine.execute(
                self.setup,
                self.run,
                self.subscribers,
                limits=self.limits,
                text_deltas=self.text_deltas,
                checkpoint=self.checkpoint,
            )
        except SwarmError as error:
            self.settle(None, error)  # a lost record outranks the run's own failure
            raise
        self.settle(result, None)  # never report success over a lost record
        return result


class RunInputs(Protocol):
    """What a run was started with, as a durable engine recorded it."""

    @property
    def task(self) -> str:
        """The run's task."""
        ...

    @property
    def variables(self) -> Mapping[str, object]:
        """Its prompt variables."""
        ...

    @property
    def metadata(self) -> Mapping[str, Any]:
        """Its JSON-able notes."""
        ...


class RunHandle(Protocol):
    """A run handed to a durable engine: its status and its result, from any process."""

    run_id: str
    """The run's id."""

    async def status(self) -> str:
        """The engine's word for where the run is (ENQUEUED, PENDING, SUCCESS...)."""
        ...

    async def result(self, *, poll_seconds: float = 0.2) -> SwarmResult:
        """Wait for the run to end; its SwarmResult, or the error that ended it raised."""
        ...


@runtime_checkable
class DurableEngine(Engine, Protocol):
    """An engine whose runs outlive the process: it records them in its own database.

    A Swarm attaches itself to such an engine when it is made (so the engine
    can serve, and after a crash recover, the Swarm's runs), and
    ``Swarm.resume`` reads the run from the engine's records, not a run store.
    """

    def attach(self, swarm: Swarm) -> None:
        """Serve (and, after a crash, recover) the runs of ``swarm``; called by ``Swarm()``."""
        ...

    async def reopen(self, swarm: Swarm, run_id: str) -> RunInputs:
        """Make the failed run ``run_id`` of ``swarm`` ready to run again (``Swarm.resume``).

        The Swarm then runs it under the same id through :meth:`execute`; the
        engine's records say which agents already finished.

        Raises:
            UserError: No such run, or it cannot be resumed (still running, or
                already succeeded, or made by another version of the flow).
        """
        ...


@runtime_checkable
class CanEnqueue(Protocol):
    """A durable engine that takes runs for its workers to serve (``Swarm.enqueue``)."""

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
        ...

    async def handle(self, run_id: str) -> RunHandle:
        """A handle on a run enqueued or started earlier, from any process."""
        ...


@runtime_checkable
class CanApprove(Protocol):
    """A durable engine whose runs wait for approval decisions made from any process.

    On such an engine a run with no approval callback waits at each call to a
    tool marked ``requires_approval`` (``Swarm.pending_approvals``, ``Swarm.decide``).
    """

    async def approvals(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for a decision."""
        ...

    async def approve(
        self, run_id: str, call_id: str, approval: Approval | bool
    ) -> ApprovalRequest:
        """Decide a waiting call of run ``run_id``; returns its request.

        Raises:
            UserError: No such call waits in that run.
        """
        ...


@runtime_checkable
class CanMap(Protocol):
    """A durable engine that runs ``Swarm.map`` as one recorded run per task."""

    async def map(
        self,
        swarm: Swarm,
        tasks: Sequence[str],
        per_task: Sequence[Mapping[str, object] | None],
        run_ids: Sequence[str],
        tally: Tally,
    ) -> list[SwarmResult | BaseException]:
        """Run one task per run id (already checked) and wait for them all.

        Args:
            swarm: The Swarm whose flow each run walks.
            tasks: The tasks, one run each.
            per_task: Each task's prompt variables.
            run_ids: Each task's run id and idempotency key.
            tally: Counts each run's end and reports it to ``progress``.

        Returns:
            One entry per task, in order: its SwarmResult, or its error.
        """
        ...


@runtime_checkable
class ApprovalInbox(Protocol):
    """A reader of a durable engine's runs that lists and decides their waiting calls.

    The viewer (``swarmcore ui --database-url``) shows a running run's waiting calls,
    and its approve button decides one, only on a reader that declares this.
    """

    def waiting(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for an approval decision."""
        ...

    def decide(self, run_id: str, call_id: str, approval: Approval | bool) -> ApprovalRequest:
        """Send the decision on a call of run ``run_id`` that waits for one.

        Raises:
            UserError: No such call waits in that run.
        """
        ...


class Requeued(RunInputs, Protocol):
    """A failed run handed back to the workers of its flow, to run again under its id."""

    @property
    def flow_version(self) -> str:
        """The version of the flow that made it (the workers that serve it have this one)."""
        ...

    @property
    def generation(self) -> int:
        """How many times the run has been resumed, this time included."""
        ...


@runtime_checkable
class CanRequeue(Protocol):
    """A reader of a durable engine's runs that hands a failed run back to the workers.

    ``swarmcore runs resume RUN_ID --database-url URL`` resumes a run this way,
    without the flow: the live workers of the flow version that made it take it
    again, and its finished agents keep their results.
    """

    async def requeue(self, run_id: str) -> Requeued:
        """Hand the failed run ``run_id`` back to the live workers of its flow version.

        Raises:
            UserError: No such run; it is not failed; or no live worker serves its
                flow version (it would wait for ever), the run left as it was.
        """
        ...


class RecordedOutcome(UserWarning):
    """``swarm.run(run_id=...)`` on a run id the engine already ran: its recorded outcome came back.

    The run id is the run's idempotency key, so nothing ran again; a run
    re-started after a fix needs a new run id (or ``swarm.resume`` for a failed
    run). Silence it where re-using ids is deliberate with
    ``warnings.filterwarnings("ignore", category=RecordedOutcome)``.
    """
