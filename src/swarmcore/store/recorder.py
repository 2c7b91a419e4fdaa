"""The run store as a consumer of the event stream: each result is committed as it lands."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from swarmcore import events
from swarmcore.models import AgentResult, SwarmResult
from swarmcore.store.base import RunRecord, RunStore

__all__ = ["Recorder"]


class Recorder:
    """Writes one run to ``store``: the run when it starts, each agent as it finishes.

    Args:
        store: Where to write.
        shape: The flow's shape (``shape_of``), which a resume must match.
        settings: What a resume needs again beyond the task (context mode,
            budget, metadata, variables).
    """

    def __init__(self, store: RunStore, *, shape: str, settings: Mapping[str, Any]) -> None:
        self._store = store
        self._shape = shape
        self._settings = dict(settings)

    def __call__(self, event: events.Event) -> None:
        """Record ``event`` if it is one the store keeps."""
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
                        settings={"context_mode": event.context_mode, **self._settings},
                    )
                )
            case events.AgentFinished(result=AgentResult() as result):
                store.save_result(event.run_id, result)
            case events.RunFinished():
                partial = event.result or getattr(event.error, "partial", None)
                for failure in partial.failures if isinstance(partial, SwarmResult) else []:
                    store.save_failure(event.run_id, failure)
                if event.error is None:
                    store.finish_run(event.run_id, "succeeded")
                elif isinstance(event.error, asyncio.CancelledError):
                    store.finish_run(event.run_id, "cancelled", error="cancelled")
                else:
                    error = f"{type(event.error).__name__}: {event.error}"
                    store.finish_run(event.run_id, "failed", error=error)
            case _:
                pass
