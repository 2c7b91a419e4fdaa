"""A handle on a run handed to the DBOS engine: its status and its result, from any process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbos import DBOSClient, WorkflowHandleAsync

if TYPE_CHECKING:
    from swarmcore.models import SwarmResult

__all__ = ["RunHandle"]


class RunHandle:
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
