"""What a run store keeps, and the small protocol every backend implements."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from swarmcore.results import AgentFailure, AgentResult, Decision

RunStatus = Literal["running", "succeeded", "failed", "cancelled", "incomplete"]
"""``running`` also marks a run whose process died: resume it. ``incomplete``: a
store write failed and the run went on (``store_errors="warn"``), so its record
has gaps and it cannot be resumed."""


class RunSummary(BaseModel):
    """One line of run history."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    run_id: str
    flow: str
    """The flow in the ``>>``/``|`` language."""
    task: str
    status: RunStatus
    started_at: float
    """Unix time."""
    ended_at: float | None = None
    error: str | None = None
    agents_done: int = 0
    """Agents whose results are stored."""
    agents_total: int = 0
    """Agents in the flow."""
    tokens: int = 0
    """Tokens of the finished agents (prompt plus completion)."""
    cost: float | None = 0.0
    """USD summed over the finished agents; None when any of them is unpriced
    (0.0 while none has finished)."""


class EarlierAttempt(BaseModel):
    """How a resumed run's attempt before a resume ended: its status, error and failed agents."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: RunStatus
    """``failed``, ``cancelled``, or ``running`` (its process died)."""
    error: str | None = None
    """The run's error then, if it was recorded."""
    ended_at: float | None = None
    """When that attempt ended (Unix time); None if its process died."""
    resumed_at: float | None = None
    """When the run was resumed (Unix time), if known."""
    failures: list[AgentFailure] = Field(default_factory=list[AgentFailure])
    """The agents that had failed then (a later attempt may have finished them)."""


class RunRecord(RunSummary):
    """A stored run: its summary, settings, flow shape and every stored agent result."""

    shape: str
    """The flow's shape (names, groups, policies) as canonical JSON; resume checks it."""
    settings: dict[str, Any] = Field(default_factory=dict[str, Any])
    """How the run was started: context mode, budgets, the CLI target..."""
    results: list[AgentResult] = Field(default_factory=list[AgentResult])
    """Finished agents, in the order they finished."""
    failures: list[AgentFailure] = Field(default_factory=list[AgentFailure])
    """Agents that failed, as last recorded."""
    decisions: list[Decision] = Field(default_factory=list[Decision])
    """Choices made at routes, loops and plans, in the order they were made."""
    earlier: list[EarlierAttempt] = Field(default_factory=list[EarlierAttempt])
    """A resumed run's attempts before each resume, oldest first: how each ended.
    Empty for a run never resumed."""


@runtime_checkable
class RunStore(Protocol):
    """Where runs are recorded. SQLite is built in (:class:`~swarmcore.store.SQLiteStore`).

    Every method is synchronous and short: a Swarm calls them from its event
    stream as things happen, and a write must be durable when it returns, so
    that a result is committed before the next step starts.
    """

    def start_run(self, record: RunRecord) -> None:
        """Record a new run, or mark a stored one running again (a resume)."""
        ...

    def save_result(self, run_id: str, result: AgentResult) -> None:
        """Store one finished agent's result (replacing an earlier failure)."""
        ...

    def save_failure(self, run_id: str, failure: AgentFailure) -> None:
        """Store why an agent failed."""
        ...

    def save_decision(self, run_id: str, decision: Decision) -> None:
        """Store a choice made at a route, loop or plan."""
        ...

    def finish_run(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        """Mark a run ended."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """The stored run (a unique id prefix works too), or None."""
        ...

    def list_runs(self, *, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first."""
        ...

    def prune(self, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete finished runs beyond the newest ``keep_last``, or older than ``older_than`` s.

        Returns:
            How many runs were deleted.
        """
        ...


@dataclass(frozen=True)
class RunListing:
    """One page of run history, from :meth:`RunReader.read_runs`."""

    runs: list[RunSummary]
    """The runs that could be read, newest first."""
    unreadable: list[str] = field(default_factory=list[str])
    """The ids of runs whose rows are too damaged to read (skipped)."""
    next: tuple[float, str] | None = None
    """The cursor of the next page (pass it as ``before``); None on the last page."""

    def __iter__(self) -> Iterator[Any]:
        # Older callers unpack ``runs, unreadable = store.read_runs()``.
        return iter((self.runs, self.unreadable))


@runtime_checkable
class RunReader(Protocol):
    """What a viewer of run history needs: pages of runs, counts, one run.

    :class:`~swarmcore.store.SQLiteStore` and a durable engine's history
    implement it.
    """

    def get_run(self, run_id: str) -> RunRecord | None:
        """The stored run (a unique id prefix works too), or None."""
        ...

    def read_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        text: str | None = None,
        before: tuple[float, str] | None = None,
    ) -> RunListing:
        """A page of runs, newest first (by start time, then id).

        Args:
            limit: The most runs on the page.
            status: Only runs with this status.
            text: Only runs whose id, flow or task holds this text (ASCII case ignored).
            before: Only runs after this cursor: the ``next`` of the previous page.
        """
        ...

    def count_runs(self, *, status: RunStatus | None = None, text: str | None = None) -> int:
        """How many runs ``read_runs`` would page through with these filters."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


@dataclass(frozen=True)
class RunMark:
    """A cheap sign of where a stored run is: it changes whenever the run's record does."""

    status: RunStatus
    version: str
    """Opaque: compare two marks of one run for equality, nothing else."""


@runtime_checkable
class RunMarks(Protocol):
    """A reader that tells whether a run changed without reading it whole.

    The viewer polls it for the runs its pages follow live; a reader without
    it is read whole instead.
    """

    def run_mark(self, run_id: str) -> RunMark | None:
        """The mark of run ``run_id`` (its whole id), or None when there is no such run."""
        ...
