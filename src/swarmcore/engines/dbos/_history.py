"""Run history read from the DBOS engine's own tables: nothing is kept twice.

The engine records every run as a DBOS workflow (``swarmcore.run``, id = run
id) and every agent run as one (``<run>/<agent>/<attempt>``), each with its
input, output or error. :class:`DBOSHistory` reads them back as the run store's
:class:`~swarmcore.store.RunSummary` and :class:`~swarmcore.store.RunRecord`, so
``swarmcore runs list/show --database-url URL`` show runs from every worker.
It only reads: the engine's checkpoints are the record.

It is a :class:`~swarmcore.store.RunReader` as far as DBOS's
``list_workflows`` filters go: statuses, a creation-time bound and newest-first
order are asked of PostgreSQL; a text filter is applied here, over a bounded
window of runs (see :meth:`DBOSHistory.read_runs`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from dbos import DBOSClient, WorkflowStatus

from swarmcore._checks import check_number, check_run_id
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.engines import ApprovalInbox, CanRequeue
from swarmcore.engines.dbos._agents import AGENT_WORKFLOW, RUN_WORKFLOW
from swarmcore.engines.dbos._approvals import send_decision, waiting
from swarmcore.engines.dbos._records import RecordSerializer
from swarmcore.engines.dbos._resume import Reopened, requeue
from swarmcore.errors import UserError
from swarmcore.models import AgentFailure, AgentResult, SwarmResult, sum_cost
from swarmcore.store._base import (
    EarlierAttempt,
    RunListing,
    RunMark,
    RunReader,
    RunRecord,
    RunStatus,
    RunSummary,
)
from swarmcore.store.records import RecordedError

_STATUS: dict[str, RunStatus] = {
    "ENQUEUED": "running",
    "PENDING": "running",
    "DELAYED": "running",
    "SUCCESS": "succeeded",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed",
}
_DBOS_STATUSES: dict[RunStatus, list[str]] = {
    status: [name for name, mapped in _STATUS.items() if mapped == status]
    for status in ("running", "succeeded", "failed", "cancelled", "incomplete")
}
"""The DBOS statuses of each run status (none for ``incomplete``: the engine has none)."""
TEXT_WINDOW = 2_000
"""How many runs a text filter looks through, newest first from the cursor."""
_BATCH = 200
"""Runs read at a time while filtering by text."""


class DBOSHistory(RunReader, ApprovalInbox, CanRequeue):
    """The runs of a DBOS engine's database, newest first.

    Args:
        database_url: The engine's PostgreSQL URL (every worker's runs are read).
        app_name: The DBOS application name of the engine's workers.
    """

    def __init__(self, database_url: str, *, app_name: str = "swarmcore") -> None:
        self.database_url = database_url
        self.app_name = app_name
        self._client = DBOSClient(system_database_url=database_url, serializer=RecordSerializer())

    def close(self) -> None:
        """Release the database connections."""
        self._client.destroy()

    def list_runs(self, *, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first, with how many agents finished."""
        return self.read_runs(limit=limit).runs

    def read_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        text: str | None = None,
        before: tuple[float, str] | None = None,
    ) -> RunListing:
        """A page of runs, newest first (by creation time, to the millisecond, then id).

        Each run carries the tokens and cost of its finished agents, read from
        their recorded results (for the runs of the page only).

        DBOS filters by status and creation time itself, so a page costs about
        the same however deep. It cannot search a run's inputs, so a ``text``
        filter is applied here, to at most :data:`TEXT_WINDOW` runs from the
        cursor on: when those hold fewer than ``limit`` matches, the page is
        short and ``next`` (while runs remain) goes on after the window.

        Args:
            limit: The most runs on the page.
            status: Only runs with this status (none is ``incomplete`` on this engine).
            text: Only runs whose id, flow or task holds this text (case ignored).
            before: Only runs after this cursor: the ``next`` of the previous page.

        Raises:
            UserError: A filter or the cursor is not one this method takes.
        """
        check_number("read_runs", "limit", limit, whole=True, zero=True)
        statuses = _statuses(status)
        if statuses == [] or limit == 0:
            return RunListing([], [], None)
        if before is not None:
            before = _checked(before)
        if text:
            runs, cursor = self._search(statuses, text.casefold(), before, limit)
        else:
            runs = self._page(statuses, before, limit + 1)
            cursor = _cursor(runs[limit - 1]) if len(runs) > limit else None
            runs = runs[:limit]
        done = self._agents_done([r.workflow_id for r in runs])
        return RunListing([_summary(r, *done.get(r.workflow_id, _NONE)) for r in runs], [], cursor)

    def count_runs(self, *, status: RunStatus | None = None, text: str | None = None) -> int:
        """How many runs :meth:`read_runs` pages through with these filters.

        Without ``text`` it counts every run (reading each one's id); with
        ``text``, only the matches among the newest :data:`TEXT_WINDOW` runs.
        """
        statuses = _statuses(status)
        if statuses == []:
            return 0
        if text:
            return len(self._search(statuses, text.casefold(), None, TEXT_WINDOW)[0])
        runs = self._client.list_workflows(
            name=RUN_WORKFLOW, status=statuses, load_input=False, load_output=False
        )
        return len(runs)

    def _page(
        self, statuses: list[str] | None, before: tuple[float, str] | None, limit: int
    ) -> list[WorkflowStatus]:
        """The newest ``limit`` runs after the cursor, in (created_at, id) order, newest first.

        DBOS orders by creation time alone, so the runs created in the
        millisecond of the cursor, and in that of the page's last run, are read
        whole and ordered by id here: where times tie, no run is lost or repeated.
        """
        runs: list[WorkflowStatus] = []
        end: str | None = None
        if before is not None:
            at = round(before[0] * 1000)
            runs = [r for r in self._at(statuses, at) if r.workflow_id < before[1]]
            end = _iso(at - 1)
        older = self._client.list_workflows(
            name=RUN_WORKFLOW,
            status=statuses,
            end_time=end,
            sort_desc=True,
            limit=limit,
            load_output=False,
        )
        if len(older) == limit:  # the limit may have cut the runs of the last millisecond
            last = older[-1].created_at or 0
            older = [r for r in older if (r.created_at or 0) != last] + self._at(statuses, last)
        runs += older
        runs.sort(key=lambda r: (r.created_at or 0, r.workflow_id), reverse=True)
        return runs[:limit]

    def _at(self, statuses: list[str] | None, at: int) -> list[WorkflowStatus]:
        """Every run created in millisecond ``at``."""
        return self._client.list_workflows(
            name=RUN_WORKFLOW,
            status=statuses,
            start_time=_iso(at),
            end_time=_iso(at),
            load_output=False,
        )

    def _search(
        self, statuses: list[str] | None, text: str, before: tuple[float, str] | None, limit: int
    ) -> tuple[list[WorkflowStatus], tuple[float, str] | None]:
        """Up to ``limit`` runs holding ``text`` among the next TEXT_WINDOW, and the next cursor."""
        found: list[WorkflowStatus] = []
        left = TEXT_WINDOW
        while left > 0:
            size = min(_BATCH, left)
            batch = self._page(statuses, before, size + 1)
            more = len(batch) > size
            batch = batch[:size]
            left -= len(batch)
            for run in batch:
                if _holds(run, text):
                    found.append(run)
                    if len(found) > limit:
                        return found[:limit], _cursor(found[limit - 1])
            if not more:
                return found, None
            before = _cursor(batch[-1])
        # The window ended with runs beyond it: go on after the last match, or the window.
        return found, _cursor(found[-1]) if len(found) == limit else before

    def waiting(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for an approval decision."""
        check_run_id(run_id, lookup=True)
        return waiting(self._client, run_id)

    def decide(self, run_id: str, call_id: str, approval: Approval | bool) -> ApprovalRequest:
        """Send the decision on a call of run ``run_id`` that waits for one.

        Raises:
            UserError: No such call waits in that run.
        """
        check_run_id(run_id, lookup=True)
        return send_decision(self._client, run_id, call_id, approval)

    async def requeue(self, run_id: str) -> Reopened:
        """Hand the failed run ``run_id`` back to the live workers of its flow version.

        Raises:
            UserError: No such run; it is not failed; or no live worker serves its
                flow version, the run left as it was.
        """
        check_run_id(run_id, lookup=True)
        return await requeue(self._client, run_id, self.app_name, self.database_url)

    def run_mark(self, run_id: str) -> RunMark | None:
        """A cheap sign of the run's progress (a :class:`~swarmcore.store.RunMarks`).

        The statuses and update times of the run's workflows, and how many of
        its calls wait for a decision; no input or output is loaded.
        """
        found = self._client.list_workflows(
            workflow_ids=[run_id], name=RUN_WORKFLOW, load_input=False, load_output=False
        )
        if len(found) != 1:
            return None
        run = found[0]
        status = _STATUS.get(str(run.status), "running")
        agents = self._client.list_workflows(
            name=AGENT_WORKFLOW,
            workflow_id_prefix=f"{run_id}/",
            load_input=False,
            load_output=False,
        )
        steps = sorted((a.workflow_id, str(a.status), a.updated_at or 0) for a in agents)
        asking = len(waiting(self._client, run_id)) if status == "running" else 0
        return RunMark(status=status, version=repr((run.updated_at, steps, asking)))

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run (a unique id prefix works too) with its agents' results and failures.

        Raises:
            UserError: The id is too long to be a run id.
        """
        check_run_id(run_id, lookup=True)
        found = self._client.list_workflows(name=RUN_WORKFLOW, workflow_id_prefix=run_id, limit=2)
        if len(found) != 1:
            return None
        run = found[0]
        agents = self._client.list_workflows(
            name=AGENT_WORKFLOW, workflow_id_prefix=f"{run.workflow_id}/"
        )
        results: list[AgentResult] = []
        failures: dict[str, AgentFailure] = {}
        resumed = _generation(run)
        earlier: list[list[AgentFailure]] = [[] for _ in range(resumed)]
        for agent in sorted(agents, key=lambda a: a.created_at or 0):
            if isinstance(agent.output, AgentResult):
                results.append(agent.output)
                failures.pop(agent.output.agent_name, None)
            elif agent.error is not None:
                name = agent.workflow_id.split("/")[1]
                failures[name] = _failure(name, agent)
                # <run>/<agent>/<attempt>~<generation>: a failure before a resume
                _, _, made_in = agent.workflow_id.rpartition("~")
                generation = int(made_in) if "~" in agent.workflow_id and made_in.isdigit() else 0
                if generation < resumed:
                    earlier[generation].append(failures[name])
        costs = [r.cost for r in results]
        tokens = sum(r.token_usage.total_tokens for r in results)
        summary = _summary(run, len(results), tokens, sum_cost(costs) if costs else 0.0)
        output: object = run.output
        decisions = output.decisions if isinstance(output, SwarmResult) else []
        return RunRecord(
            **summary.model_dump(),
            shape=_shape(run),
            settings=_settings(run),
            results=results,
            failures=list(failures.values()),
            decisions=decisions,
            # the run's own error before a resume is gone (its workflow was replaced)
            earlier=[EarlierAttempt(status="failed", failures=f) for f in earlier],
        )

    def _agents_done(self, run_ids: list[str]) -> dict[str, tuple[int, int, float | None]]:
        """Per run: its finished agents, their tokens and their cost (None if one is unpriced)."""
        if not run_ids:
            return {}
        finished = self._client.list_workflows(
            name=AGENT_WORKFLOW,
            status="SUCCESS",
            workflow_id_prefix=[f"{r}/" for r in run_ids],
            load_input=False,
        )
        results: dict[str, list[AgentResult]] = {}
        for agent in finished:
            if isinstance(agent.output, AgentResult):
                results.setdefault(agent.workflow_id.split("/")[0], []).append(agent.output)
        return {
            run_id: (
                len(done),
                sum(r.token_usage.total_tokens for r in done),
                sum_cost([r.cost for r in done]),
            )
            for run_id, done in results.items()
        }


def _inputs(run: WorkflowStatus) -> list[Any]:
    inputs = run.input or {"args": (), "kwargs": {}}
    return list(inputs["args"])


def _statuses(status: RunStatus | None) -> list[str] | None:
    """The DBOS statuses to ask for: None for all, [] for none."""
    if status is None:
        return None
    if status not in _DBOS_STATUSES:
        raise UserError(f"status must be one of {', '.join(_DBOS_STATUSES)}; got {status!r}.")
    return _DBOS_STATUSES[status]


def _checked(before: object) -> tuple[float, str]:
    if isinstance(before, tuple) and len(before) == 2:  # pyright: ignore[reportUnknownArgumentType]
        started, run_id = cast("tuple[object, object]", before)
        number = isinstance(started, int | float) and not isinstance(started, bool)
        if number and isinstance(run_id, str):
            return float(cast("float", started)), run_id
    raise UserError(
        f"before must be the next cursor of a page, a (started_at, run_id) pair; got {before!r}."
    )


def _holds(run: WorkflowStatus, text: str) -> bool:
    """Whether the run's id, flow or task holds ``text`` (casefolded)."""
    summary = _summary(run)
    return any(text in part.casefold() for part in (summary.run_id, summary.flow, summary.task))


def _cursor(run: WorkflowStatus) -> tuple[float, str]:
    return (run.created_at or 0) / 1000, run.workflow_id


def _iso(ms: int) -> str:
    """Millisecond ``ms`` as DBOS's time bounds take it.

    DBOS truncates the parsed time to whole milliseconds: half a millisecond
    more keeps float error from landing it on the one before.
    """
    return datetime.fromtimestamp((ms + 0.5) / 1000, UTC).isoformat()


_NONE = (0, 0, 0.0)
"""A run with no finished agent: no tokens, nothing spent."""


def _summary(
    run: WorkflowStatus, done: int = 0, tokens: int = 0, cost: float | None = 0.0
) -> RunSummary:
    about: dict[str, Any] = {}
    task = ""
    args = _inputs(run)
    if len(args) >= 3 and isinstance(args[0], dict):
        about, task = cast("dict[str, Any]", args[0]), str(args[2])
    return RunSummary(
        run_id=run.workflow_id,
        flow=str(about.get("flow", "")),
        task=task,
        status=_STATUS.get(str(run.status), "running"),
        started_at=(run.created_at or 0) / 1000,
        ended_at=run.completed_at / 1000 if run.completed_at else None,
        error=None if run.error is None else str(run.error),
        agents_done=done,
        agents_total=int(about.get("agents", 0)),
        tokens=tokens,
        cost=cost,
    )


def _shape(run: WorkflowStatus) -> str:
    """The flow's shape as JSON, from the run's input; "" for runs started before it was kept."""
    args = _inputs(run)
    about: object = args[0] if args else None
    shape = cast("dict[str, Any]", about).get("shape") if isinstance(about, dict) else None
    return shape if isinstance(shape, str) else ""


def _generation(run: WorkflowStatus) -> int:
    """How many times the run was resumed (its ``about``'s generation)."""
    args = _inputs(run)
    about: object = args[0] if args else None
    found = cast("dict[str, Any]", about).get("generation") if isinstance(about, dict) else None
    return found if isinstance(found, int) and found > 0 else 0


def _settings(run: WorkflowStatus) -> dict[str, Any]:
    args = _inputs(run)
    # "durable": the viewer offers to hand a failed run back to the workers (runs resume)
    settings: dict[str, Any] = {"engine": "dbos", "durable": True, "worker": run.executor_id}
    if len(args) >= 5:
        settings["variables"], settings["metadata"] = args[3], args[4]
    about: object = args[0] if args else None
    if isinstance(about, dict):  # runs started before the mode was kept have none
        known = cast("dict[str, Any]", about)
        settings |= {k: known[k] for k in ("context_mode", "context_budget") if k in known}
    return settings


def _failure(name: str, agent: WorkflowStatus) -> AgentFailure:
    error = agent.error
    kind = type(error).__name__
    if isinstance(error, RecordedError):  # another library's error: its own class name
        kind = error.error_type.rpartition(".")[2]
    return AgentFailure(
        agent_name=name,
        error_type=kind,
        message=str(error),
        duration_seconds=((agent.updated_at or 0) - (agent.created_at or 0)) / 1000,
        started_at=agent.created_at / 1000 if agent.created_at else None,
    )
