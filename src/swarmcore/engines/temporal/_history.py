"""The runs of a Temporal engine, read from Temporal itself (``runs --database-url temporal://``).

Nothing is copied out of Temporal: a page of runs is a visibility query for the
run workflows (their task, flow and size are in each workflow's memo, written
when it starts); one run is its workflow's history (its inputs, and its result
or the error that ended it, ``partial`` included). A running run shows its
waiting approvals, not yet its finished agents (they are in its result when it
ends). Each call opens a client of its own: the command line makes one or two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import urlsplit

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.engines import ApprovalInbox, CanRequeue
from swarmcore.engines.temporal import _workflow
from swarmcore.engines.temporal._converter import DATA_CONVERTER
from swarmcore.errors import SwarmError, UserError
from swarmcore.models import SwarmResult
from swarmcore.store import RunListing, RunReader, RunRecord, RunSummary
from swarmcore.store._base import RunStatus

T = TypeVar("T")

TASK_MEMO, FLOW_MEMO, AGENTS_MEMO = "swarmcore_task", "swarmcore_flow", "swarmcore_agents"
"""What a run workflow's memo says of it, for listing without reading its history."""
_MEMO_TASK_CHARS = 2000
_STATUS: dict[WorkflowExecutionStatus | None, RunStatus] = {
    WorkflowExecutionStatus.RUNNING: "running",
    WorkflowExecutionStatus.COMPLETED: "succeeded",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "cancelled",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
}


def memo(about: dict[str, Any], task: str) -> dict[str, Any]:
    """The memo a run workflow starts with: what a listing shows of it."""
    return {
        TASK_MEMO: task[:_MEMO_TASK_CHARS],
        FLOW_MEMO: str(about.get("flow", "")),
        AGENTS_MEMO: int(about.get("agents", 0)),
    }


def parse_url(url: str) -> tuple[str, str]:
    """``temporal://HOST:PORT[/NAMESPACE]`` as the frontend's address and the namespace.

    Raises:
        UserError: Not such a URL.
    """
    parts = urlsplit(url)
    if parts.scheme != "temporal" or not parts.netloc:
        raise UserError(
            f"A Temporal engine's URL is temporal://HOST:PORT[/NAMESPACE], got {url!r}."
        )
    return parts.netloc, parts.path.strip("/") or "default"


class TemporalHistory(RunReader, ApprovalInbox, CanRequeue):
    """The runs of a Temporal engine, read (and decided, and requeued) from any process.

    Args:
        url: ``temporal://HOST:PORT[/NAMESPACE]``.

    Raises:
        UserError: A bad URL.
    """

    def __init__(self, url: str) -> None:
        self.target, self.namespace = parse_url(url)

    async def _client(self) -> Client:
        from swarmcore.engines.temporal import TemporalEngine

        return await TemporalEngine(self.target, namespace=self.namespace).client()

    def _sync(self, work: Awaitable[T]) -> T:
        """``work`` to its end from synchronous code (on a thread of its own inside a loop)."""

        async def run() -> T:
            return await work

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(run())
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, run()).result()

    # --- RunReader ------------------------------------------------------------------

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run (a unique id prefix works too), from its workflow's history; or None."""
        return self._sync(self._get(run_id))

    def read_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        text: str | None = None,
        before: tuple[float, str] | None = None,
    ) -> RunListing:
        """A page of runs, newest first, from Temporal's visibility API."""
        runs = self._sync(self._listed(status, text))
        if before is not None:
            runs = [r for r in runs if (r.started_at, r.run_id) < before]
        page = runs[:limit]
        more = len(runs) > limit and page
        return RunListing(page, [], (page[-1].started_at, page[-1].run_id) if more else None)

    def count_runs(self, *, status: RunStatus | None = None, text: str | None = None) -> int:
        """How many runs :meth:`read_runs` pages through with these filters."""
        return len(self._sync(self._listed(status, text)))

    def close(self) -> None:
        """Nothing to release: each call had a client of its own."""

    async def _listed(self, status: RunStatus | None, text: str | None) -> list[RunSummary]:
        client = await self._client()
        runs: list[RunSummary] = []
        async for found in client.list_workflows(f"WorkflowType = '{_workflow.RUN_WORKFLOW}'"):
            noted = await found.memo()
            summary = RunSummary(
                run_id=found.id,
                flow=str(noted.get(FLOW_MEMO, "")),
                task=str(noted.get(TASK_MEMO, "")),
                status=_STATUS.get(found.status, "running"),
                started_at=found.start_time.timestamp(),
                ended_at=found.close_time.timestamp() if found.close_time else None,
                agents_total=int(noted.get(AGENTS_MEMO, 0)),
            )
            if status is not None and summary.status != status:
                continue
            wanted = (text or "").lower()
            if wanted and not any(
                wanted in f.lower() for f in (found.id, summary.flow, summary.task)
            ):
                continue
            runs.append(summary)
        return sorted(runs, key=lambda r: (r.started_at, r.run_id), reverse=True)

    async def _get(self, run_id: str) -> RunRecord | None:
        client = await self._client()
        handle = client.get_workflow_handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            matches = [
                r.run_id for r in await self._listed(None, None) if r.run_id.startswith(run_id)
            ]
            if len(matches) != 1:
                return None
            handle = client.get_workflow_handle(matches[0])
            described = await handle.describe()
        history = await handle.fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        about, _, task, variables, metadata = await DATA_CONVERTER.decode(started.input.payloads)
        outcome: SwarmResult | None = None
        error: BaseException | None = None
        last = history.events[-1]
        if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            payloads = last.workflow_execution_completed_event_attributes.result.payloads
            (outcome,) = await DATA_CONVERTER.decode(payloads)
        elif last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            failure = last.workflow_execution_failed_event_attributes.failure
            error = _workflow.run_error(await DATA_CONVERTER.decode_failure(failure))
            if isinstance(error, SwarmError):
                outcome = error.partial
        results = list(outcome.history) if outcome is not None else []
        costs = [r.cost for r in results]
        return RunRecord(
            run_id=described.id,
            flow=str(about.get("flow", "")),
            task=str(task),
            status=_STATUS.get(described.status, "running"),
            started_at=described.start_time.timestamp(),
            ended_at=described.close_time.timestamp() if described.close_time else None,
            error=None if error is None else f"{type(error).__name__}: {error}",
            agents_done=len(results),
            agents_total=int(about.get("agents", 0)),
            tokens=sum(r.token_usage.total_tokens for r in results),
            cost=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
            shape=str(about.get("shape", "")),
            settings={
                "engine": "temporal",
                "durable": True,
                "variables": dict(variables),
                "metadata": dict(metadata),
            }
            | {k: about[k] for k in ("context_mode", "context_budget") if k in about},
            results=results,
            failures=list(outcome.failures) if outcome is not None else [],
            decisions=list(outcome.decisions) if outcome is not None else [],
        )

    # --- ApprovalInbox and CanRequeue -------------------------------------------------

    def waiting(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for an approval decision."""
        from swarmcore.engines.temporal import TemporalEngine

        engine = TemporalEngine(self.target, namespace=self.namespace)
        return self._sync(engine.approvals(run_id))

    def decide(self, run_id: str, call_id: str, approval: Approval | bool) -> ApprovalRequest:
        """Send the decision on a call of run ``run_id`` (a signal to its workflow).

        Raises:
            UserError: No such call waits in that run.
        """
        from swarmcore.engines.temporal import TemporalEngine

        engine = TemporalEngine(self.target, namespace=self.namespace)
        return self._sync(engine.approve(run_id, call_id, approval))

    async def requeue(self, run_id: str) -> Any:
        """Hand the failed run ``run_id`` back to the workers of its flow version (a reset).

        Raises:
            UserError: No such run, or it is not failed.
        """
        from swarmcore.engines.temporal import TemporalEngine

        engine = TemporalEngine(self.target, namespace=self.namespace)
        return await engine.reset(run_id)
