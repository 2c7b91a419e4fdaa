"""Resuming a failed run of the DBOS engine under its own id, without re-running finished agents.

A run that failed is a DBOS workflow in ERROR, and so is the agent workflow
that failed; DBOS would only hand the same error back. Resuming gives the run a
new *generation*: its run workflow is started again under the same id (the old
one recorded nothing but its input and its error, so it is deleted first) with
the generation in its input, and its walk looks up each agent's workflow id
through the generations (:func:`agent_workflow_id`): an agent that finished in an
earlier generation returns its recorded result at once, and one that failed or
was cancelled there runs again under ``<run>/<agent>/<attempt>~<generation>``.
The lookup depends only on records of earlier generations, which no longer
change, so a resumed run that crashes replays the same way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from dbos import DBOSClient, EnqueueOptions

from swarmcore.engines.dbos._workers import LIVE_WITHIN, live_workers
from swarmcore.errors import UserError

_FAILED = {"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


@dataclass(frozen=True, slots=True)
class Reopened:
    """A failed run made ready to run again: its inputs, and the generation it runs as."""

    about: dict[str, Any]
    """The run workflow's first input (flow version, expression, size), generation included."""
    task: str
    variables: dict[str, object]
    metadata: dict[str, Any]

    @property
    def generation(self) -> int:
        """How many times the run has been resumed, this time included."""
        return int(self.about["generation"])

    @property
    def flow_version(self) -> str:
        """The version of the flow that made the run."""
        return str(self.about.get("version") or "")


async def reopen(client: DBOSClient, run_id: str, version: str | None) -> Reopened:
    """Check that run ``run_id`` can be resumed, read its inputs, and delete its run workflow.

    Args:
        client: A DBOS client on the engine's database.
        run_id: The run.
        version: The flow version that will run it (None: any, e.g. the workers').

    Raises:
        UserError: No such run; it is still running or already succeeded; or
            it was made by another version of the flow.
    """
    was = await _resumable(client, run_id, version)
    await client.delete_workflow_async(run_id)  # recorded nothing but its input and its error
    return was


async def _resumable(client: DBOSClient, run_id: str, version: str | None) -> Reopened:
    """Run ``run_id``'s inputs, the generation it resumes as; raises as :func:`reopen`."""
    found = await client.list_workflows_async(workflow_ids=[run_id], name="swarmcore.run")
    if not found:
        raise UserError(
            f"No run {run_id!r} in the engine's database; list them with "
            "`swarmcore runs list --database-url URL`."
        )
    status = found[0]
    if status.status == "SUCCESS":
        raise UserError(
            f"Run {run_id} already succeeded; nothing to resume. See its results with "
            f"`swarmcore runs show {run_id} --database-url URL`."
        )
    if status.status not in _FAILED:
        raise UserError(
            f"Run {run_id} is {status.status.lower()}, not failed: it goes on by itself "
            "(a worker that restarts with its worker id takes it up)."
        )
    inputs = status.input or {"args": (), "kwargs": {}}
    about, _, task, variables, metadata = inputs["args"]
    made_by = str(about.get("version") or "")
    if version is not None and made_by and made_by != version:
        raise UserError(
            f"Run {run_id} was made by flow version {made_by}, and this Swarm's flow is "
            f"version {version}; resume it with the same flow (agents, models, tools)."
        )
    again = dict(about) | {"generation": int(about.get("generation", 0)) + 1}
    return Reopened(again, str(task), dict(variables), dict(metadata))


async def requeue(client: DBOSClient, run_id: str, app_name: str, database_url: str) -> Reopened:
    """Hand the failed run ``run_id`` back to the live workers of its flow version, resumed.

    Args:
        client: A DBOS client on the engine's database.
        run_id: The run.
        app_name: The DBOS application name of the engine's workers.
        database_url: The engine's database, where the workers' heartbeats are.

    Raises:
        UserError: As :func:`reopen`; or no live worker serves the run's flow
            version (a run handed to it would wait for ever), the run left as it was.
    """
    was = await _resumable(client, run_id, None)
    version = str(was.about.get("version") or "")
    live = await asyncio.to_thread(live_workers, database_url, app_name, version)
    if not live:
        raise UserError(
            f"No live worker serves flow version {version} (the version that made run "
            f"{run_id}: {was.about.get('flow', '?')}), so the run would wait for ever; it is "
            "left as it was. Start a worker with the flow that made it (`swarmcore worker "
            "FILE:NAME --database-url URL`) and resume again, or resume it from Python with "
            f"that flow: Swarm(flow, engine=DBOSEngine(url)).resume({run_id!r}). A worker "
            f"counts as live when its heartbeat is under {LIVE_WITHIN:g} s old."
        )
    await client.delete_workflow_async(run_id)  # recorded nothing but its input and its error
    options: EnqueueOptions = {
        "queue_name": f"swarmcore-{version}",
        "workflow_name": "swarmcore.run",
        "workflow_id": run_id,
        "app_version": version,
        "application_name": app_name,
    }
    await client.enqueue_async(options, was.about, run_id, was.task, was.variables, was.metadata)
    return was


async def agent_workflow_id(client: DBOSClient, base: str, generation: int) -> str:
    """The workflow id of agent step ``base`` (``<run>/<agent>/<attempt>``) in ``generation``.

    The first of ``base``, ``base~1``, ... ``base~<generation - 1>`` that did
    not fail, if any (finished or in flight there: its record stands);
    otherwise ``base~<generation>``.
    """
    if generation == 0:
        return base
    earlier = [base, *(f"{base}~{g}" for g in range(1, generation))]
    found = await client.list_workflows_async(
        workflow_ids=earlier, load_input=False, load_output=False
    )
    status = {w.workflow_id: w.status for w in found}
    for workflow_id in earlier:
        if workflow_id in status and status[workflow_id] not in _FAILED:
            return workflow_id
    return f"{base}~{generation}"
