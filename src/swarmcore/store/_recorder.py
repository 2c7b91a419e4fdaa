"""The run store as a consumer of the event stream: each result is committed as it lands.

A write that fails is never only logged, since a run reported as stored but
missing from the store is paid for again on resume. With ``on_error="raise"``
(the default) the first failure is kept, and :meth:`Recorder.check`, which the
engine calls before each agent starts, raises it as a StoreError: the run stops
there rather than pay for agents it cannot record, and the Swarm raises it at
the end of a run that ended anyway. With ``"warn"`` a warning goes out and the
run goes on; the run is then marked ``incomplete``, since a record with gaps in
the middle cannot be resumed safely.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from swarmcore import events
from swarmcore._checks import check_same_run
from swarmcore.errors import StoreError, UserError
from swarmcore.results import AgentResult, Decision, SwarmResult
from swarmcore.store._base import RunRecord, RunStatus, RunStore

if TYPE_CHECKING:
    from swarmcore._flow import Flow
    from swarmcore._walk import Run
    from swarmcore.engines._local import Budget

logger = logging.getLogger("swarmcore.store")

StoreErrors = Literal["raise", "warn"]
"""What a failed store write does to a run: stop it with a StoreError, or warn and go on."""


def recording(
    store: RunStore, flow: Flow, run: Run, budget: Budget, on_error: StoreErrors
) -> Recorder:
    """A :class:`Recorder` of ``run`` (of ``flow``, within ``budget``), told its decisions too.

    Raises:
        UserError: The store holds another task's run (or other variables') under
            ``run``'s id: this run's results would be filed under that task.
    """
    _check_reuse(store, run)
    settings = {
        "max_cost": budget.max_cost,
        "max_tokens": budget.max_tokens,
        "metadata": run.metadata,
        "variables": dict(run.options.variables),
    }
    from swarmcore._flow import shape_of

    recorder = Recorder(store, shape=shape_of(flow), settings=settings, on_error=on_error)
    run.on_decision = lambda decision: recorder.decision(run.run_id, decision)
    return recorder


def _mode_settings(event: events.RunStarted) -> dict[str, Any]:
    """The context mode, and auto mode's budget, as a resumed run must use them again."""
    if event.context_budget is None:  # pull and push: the record as before budgets existed
        return {"context_mode": event.context_mode}
    return {"context_mode": event.context_mode, "context_budget": event.context_budget}


def _check_reuse(store: RunStore, run: Run) -> None:
    """Refuse a run under the id of a stored run of another task (a resume has the same)."""
    try:
        stored = store.get_run(run.run_id)
    except (UserError, StoreError):  # a prefix of several runs' ids, or a damaged record
        return
    if stored is not None and stored.run_id == run.run_id:  # not a run it is a prefix of
        check_same_run(
            run.run_id,
            task=run.task,
            variables=run.options.variables,
            stored_task=stored.task,
            stored_variables=stored.settings.get("variables"),
        )


class Recorder:
    """Writes one run to ``store``: the run when it starts, each agent as it finishes.

    Args:
        store: Where to write.
        shape: The flow's shape (``shape_of``), which a resume must match.
        settings: What a resume needs again beyond the task (context mode,
            budget, metadata, variables).
        on_error: ``"raise"``: a failed write stops the run with a StoreError.
            ``"warn"``: it warns once and marks the run ``incomplete``.
    """

    def __init__(
        self,
        store: RunStore,
        *,
        shape: str,
        settings: Mapping[str, Any],
        on_error: StoreErrors = "raise",
    ) -> None:
        self._store = store
        self._shape = shape
        self._settings = dict(settings)
        self._on_error: StoreErrors = on_error
        self._failure: StoreError | None = None

    @property
    def failure(self) -> StoreError | None:
        """The first write that failed in this run, if any."""
        return self._failure

    def __call__(self, event: events.Event) -> None:
        """Record ``event`` if it is one the store keeps; a failure is kept, never lost."""
        try:
            self._record(event)
        except Exception as exc:  # any backend's failure, not only SQLite's
            self._failed(event.run_id, exc, _what(event))

    def decision(self, run_id: str, decision: Decision) -> None:
        """Record a choice made at a route, loop or plan (a failure is kept, like an event's)."""
        try:
            self._store.save_decision(run_id, decision)
        except Exception as exc:
            self._failed(run_id, exc, f"the {decision.kind} decision at {decision.step}")

    def check(self) -> None:
        """Raise the kept failure (raise mode): the engine calls this before each agent starts.

        Raises:
            StoreError: A write of this run failed.
        """
        if self._failure is not None and self._on_error == "raise":
            _raise(self._failure, None, None)

    def finish(self, result: SwarmResult | None, error: BaseException | None) -> None:
        """After the run: raise the kept failure over a result or another error (raise mode).

        Args:
            result: The run's result, if it succeeded.
            error: What stopped the run, if anything.

        Raises:
            StoreError: A write of this run failed; ``partial`` holds the
                result (or what ``error`` carried).
        """
        if self._failure is None or self._on_error != "raise" or isinstance(error, StoreError):
            return
        partial = result if result is not None else getattr(error, "partial", None)
        _raise(self._failure, partial if isinstance(partial, SwarmResult) else None, error)

    def _record(self, event: events.Event) -> None:
        store = self._store
        match event:
            case events.RunStarted():
                store.start_run(
                    RunRecord(
                        run_id=event.run_id,
                        flow=event.flow,
                        task=event.task,
                        status="running",
                        started_at=event.timestamp,
                        agents_total=len(event.agents),
                        shape=self._shape,
                        settings={**_mode_settings(event), **self._settings},
                    )
                )
            case events.AgentFinished(result=AgentResult() as result):
                store.save_result(event.run_id, result)
            case events.RunFinished():
                partial = event.result or getattr(event.error, "partial", None)
                for failure in partial.failures if isinstance(partial, SwarmResult) else []:
                    store.save_failure(event.run_id, failure)
                status, error = self._ending(event.error)
                store.finish_run(event.run_id, status, error=error)
            case _:
                pass

    def _ending(self, error: BaseException | None) -> tuple[RunStatus, str | None]:
        """The status to store: never ``succeeded`` over a record that lost a write."""
        if self._failure is not None:
            note = f"StoreError: {self._failure}"
            if error is not None and not isinstance(error, StoreError):
                note += f" The run failed too: {type(error).__name__}: {error}"
            return ("incomplete" if self._on_error == "warn" else "failed"), note
        if error is None:
            return "succeeded", None
        if isinstance(error, asyncio.CancelledError):
            return "cancelled", "cancelled"
        return "failed", f"{type(error).__name__}: {error}"

    def _failed(self, run_id: str, exc: Exception, what: str) -> None:
        """Keep the first failure; in warn mode, warn and mark the run incomplete."""
        if self._failure is not None:  # the first failure is the one to report
            logger.debug("run %s: another store write failed: %s", run_id, exc)
            return
        cause = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        cause = cause if cause.endswith(".") else f"{cause}."
        path = exc.path if isinstance(exc, StoreError) else str(getattr(self._store, "path", ""))
        where = "" if isinstance(exc, StoreError) else f" ({self._store!r})"
        if self._on_error == "raise":
            message = (
                f"Run {run_id} stopped: the run store could not record {what}{where}: {cause} "
                "Every result that finished is in error.partial; fix the store, then resume "
                "the run (or run it again)."
            )
        else:
            message = (
                f"Run {run_id} goes on without a full record (store_errors='warn'): the run "
                f"store could not record {what}{where}: {cause} The run is marked incomplete "
                "and cannot be resumed."
            )
        failure = StoreError(message, path=path or None)
        failure.__cause__ = exc
        self._failure = failure
        if self._on_error == "warn":
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            self._mark_incomplete(run_id, message)

    def _mark_incomplete(self, run_id: str, message: str) -> None:
        """Mark the run not resumable now, in case the process dies before it ends."""
        try:
            self._store.finish_run(run_id, "incomplete", error=f"StoreError: {message}")
        except Exception as exc:
            warnings.warn(
                f"Run {run_id} could not be marked incomplete in the run store either "
                f"({type(exc).__name__}: {exc}); do not resume it: run it again.",
                RuntimeWarning,
                stacklevel=3,
            )


def _raise(
    failure: StoreError, partial: SwarmResult | None, error: BaseException | None
) -> NoReturn:
    """Raise ``failure`` afresh (one per raise, so tracebacks stay apart), over ``error``."""
    message = str(failure)
    if error is not None:
        message += f" The run failed too: {type(error).__name__}: {error}"
    fresh = StoreError(message, path=failure.path)
    fresh.partial = partial
    raise fresh from error or failure.__cause__


def _what(event: events.Event) -> str:
    """What a failed write was storing, for the error message."""
    match event:
        case events.RunStarted():
            return "the run's start"
        case events.AgentFinished():
            return f"the result of agent {event.agent_name!r}"
        case events.RunFinished():
            return "the run's end"
        case _:
            return type(event).__name__
