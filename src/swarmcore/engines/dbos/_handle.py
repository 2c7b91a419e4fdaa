"""A handle on a run handed to the DBOS engine: its status and its result, from any process."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from dbos import DBOSClient, WorkflowHandleAsync

from swarmcore import engines
from swarmcore._checks import check_same_run

if TYPE_CHECKING:
    from swarmcore.models import SwarmResult


async def same_run(
    client: DBOSClient, run_id: str, task: str, variables: Mapping[str, object]
) -> None:
    """Refuse ``task`` when the run ``run_id`` already in the database is another task's.

    The run id is the run's idempotency key: DBOS hands back the run recorded
    under it, which for another task (or other variables) is another run's answer.

    Raises:
        UserError: The recorded run has another task or other variables.
    """
    found = await client.list_workflows_async(workflow_ids=[run_id], load_output=False)
    if not found or found[0].input is None:
        return
    args = found[0].input["args"]
    if len(args) == 5:  # (about, run_id, task, variables, metadata): a run's workflow
        check_same_run(
            run_id, task=task, variables=variables, stored_task=args[2], stored_variables=args[3]
        )


class RunHandle(engines.RunHandle):
    """A run handed to the engine: ask its status, or wait for its result.

    Args:
        run_id: The run's id (its DBOS workflow id).
        client: The DBOS client it was enqueued with.
    """

    def __init__(self, run_id: str, client: DBOSClient) -> None:
        self.run_id = run_id
        self._client = client

    async def status(self) -> str:
        """DBOS's status of the run: ENQUEUED, PENDING, SUCCESS, ERROR or CANCELLED."""
        handle: WorkflowHandleAsync[SwarmResult] = await self._client.retrieve_workflow_async(
            self.run_id
        )
        return str((await handle.get_status()).status)

    async def result(self, *, poll_seconds: float = 0.2) -> SwarmResult:
        """Wait for the run to end; its SwarmResult, or the error that ended it."""
        handle: WorkflowHandleAsync[SwarmResult] = await self._client.retrieve_workflow_async(
            self.run_id
        )
        return await handle.get_result(polling_interval_sec=poll_seconds)
