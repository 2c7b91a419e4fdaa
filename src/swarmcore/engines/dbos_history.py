"""Run history read from the DBOS engine's own tables: nothing is kept twice.

The engine records every run as a DBOS workflow (``swarmcore.run``, id = run
id) and every agent run as one (``<run>/<agent>/<attempt>``), each with its
input, output or error. :class:`DBOSHistory` reads them back as the run store's
:class:`~swarmcore.store.RunSummary` and :class:`~swarmcore.store.RunRecord`, so
``swarmcore runs list/show --database-url URL`` show runs from every worker.
It only reads: the engine's checkpoints are the record.
"""

from __future__ import annotations

from typing import Any, cast

from dbos import DBOSClient, WorkflowStatus

from swarmcore.engines.dbos import AGENT_WORKFLOW, RUN_WORKFLOW
from swarmcore.engines.dbos_approvals import waiting
from swarmcore.models import AgentFailure, AgentResult, SwarmResult
from swarmcore.store.base import RunRecord, RunStatus, RunSummary
from swarmcore.tools import ApprovalRequest

__all__ = ["DBOSHistory"]

_STATUS: dict[str, RunStatus] = {
    "ENQUEUED": "running",
    "PENDING": "running",
    "DELAYED": "running",
    "SUCCESS": "succeeded",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed",
}


class DBOSHistory:
    """The runs of a DBOS engine's database, newest first.

    Args:
        database_url: The engine's PostgreSQL URL (every worker's runs are read).
    """

    def __init__(self, database_url: str) -> None:
        self._client = DBOSClient(system_database_url=database_url)

    def close(self) -> None:
        """Release the database connections."""
        self._client.destroy()

    def list_runs(self, *, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first, with how many agents finished."""
        runs = self._client.list_workflows(
            name=RUN_WORKFLOW, sort_desc=True, limit=limit, load_output=False
        )
        done = self._agents_done([r.workflow_id for r in runs])
        return [_summary(r, done.get(r.workflow_id, 0)) for r in runs]

    def waiting(self, run_id: str) -> list[ApprovalRequest]:
        """The calls of run ``run_id`` waiting for an approval decision."""
        return waiting(self._client, run_id)

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run (a unique id prefix works too) with its agents' results and failures."""
        found = self._client.list_workflows(name=RUN_WORKFLOW, workflow_id_prefix=run_id, limit=2)
        if len(found) != 1:
            return None
        run = found[0]
        agents = self._client.list_workflows(
            name=AGENT_WORKFLOW, workflow_id_prefix=f"{run.workflow_id}/"
        )
        results: list[AgentResult] = []
        failures: dict[str, AgentFailure] = {}
        for agent in sorted(agents, key=lambda a: a.created_at or 0):
            if isinstance(agent.output, AgentResult):
                results.append(agent.output)
                failures.pop(agent.output.agent_name, None)
            elif agent.error is not None:
                name = agent.workflow_id.split("/")[1]
                failures[name] = _failure(name, agent)
        summary = _summary(run, len(results))
        output: object = run.output
        decisions = output.decisions if isinstance(output, SwarmResult) else []
        return RunRecord(
            **summary.model_dump(),
            shape="",
            settings=_settings(run),
            results=results,
            failures=list(failures.values()),
            decisions=decisions,
        )

    def _agents_done(self, run_ids: list[str]) -> dict[str, int]:
        if not run_ids:
            return {}
        finished = self._client.list_workflows(
            name=AGENT_WORKFLOW,
            status="SUCCESS",
            workflow_id_prefix=[f"{r}/" for r in run_ids],
            load_input=False,
            load_output=False,
        )
        done: dict[str, int] = {}
        for agent in finished:
            run_id = agent.workflow_id.split("/")[0]
            done[run_id] = done.get(run_id, 0) + 1
        return done


def _inputs(run: WorkflowStatus) -> list[Any]:
    inputs = run.input or {"args": (), "kwargs": {}}
    return list(inputs["args"])


def _summary(run: WorkflowStatus, done: int) -> RunSummary:
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
    )


def _settings(run: WorkflowStatus) -> dict[str, Any]:
    args = _inputs(run)
    settings: dict[str, Any] = {"engine": "dbos", "worker": run.executor_id}
    if len(args) >= 5:
        settings["variables"], settings["metadata"] = args[3], args[4]
    return settings


def _failure(name: str, agent: WorkflowStatus) -> AgentFailure:
    error = agent.error
    return AgentFailure(
        agent_name=name,
        error_type=type(error).__name__,
        message=str(error),
        duration_seconds=((agent.updated_at or 0) - (agent.created_at or 0)) / 1000,
        started_at=agent.created_at / 1000 if agent.created_at else None,
    )
