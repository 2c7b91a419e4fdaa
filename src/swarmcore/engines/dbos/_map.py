"""``swarm.map`` on the DBOS engine: one durable run per input, served by the workers.

Every input is enqueued first (its run id is the key the caller gives, so
mapping the same inputs again, after the caller died or on purpose, enqueues
nothing new and collects the recorded results), then the caller waits for the
runs to end: one query per poll for up to :data:`CHUNK` runs, rather than one
poll per run, so a map of 100,000 inputs waits with a handful of queries a
second. The runs belong to the workers: cancelling the map stops the waiting,
not the runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dbos import DBOSClient, WorkflowStatus

from swarmcore._batch import Tally
from swarmcore.engines._results import reparsed_run
from swarmcore.errors import SwarmError

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm
    from swarmcore.engines.dbos import DBOSEngine
    from swarmcore.models import SwarmResult

CHUNK = 500
"""Run ids asked about in one query."""
ENQUEUE_AT_ONCE = 16
"""Enqueue calls in flight at once."""
_ENDED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


async def map_runs(
    engine: DBOSEngine,
    client: DBOSClient,
    swarm: Swarm,
    tasks: Sequence[str],
    per_task: Sequence[Mapping[str, object] | None],
    run_ids: Sequence[str],
    tally: Tally,
    *,
    poll: float,
) -> list[SwarmResult | BaseException]:
    """Enqueue run ``run_ids[i]`` of ``tasks[i]`` for each input, and wait for them all.

    Args:
        engine: The engine the runs are enqueued on.
        client: Its DBOS client.
        swarm: The Swarm whose flow runs.
        tasks: The inputs.
        per_task: Each input's prompt variables.
        run_ids: Each input's run id (inputs with one id share one run).
        tally: Counts the runs as they end and reports progress.
        poll: Seconds between looks at the runs not yet ended.

    Returns:
        One entry per input, in input order: its SwarmResult, or its error.
    """
    gate = asyncio.Semaphore(ENQUEUE_AT_ONCE)

    async def enqueue(index: int) -> None:
        async with gate:
            await engine.enqueue(
                swarm,
                tasks[index],
                run_id=run_ids[index],
                variables=per_task[index] or {},
                metadata={},
            )

    await asyncio.gather(*(enqueue(i) for i in range(len(tasks))))
    waiting: dict[str, list[int]] = {}
    for index, run_id in enumerate(run_ids):
        waiting.setdefault(run_id, []).append(index)
    outcomes: dict[int, SwarmResult | BaseException] = {}
    started = time.perf_counter()
    while waiting:
        for ended in await _ended(client, list(waiting)):
            for index in waiting.pop(ended.workflow_id):
                outcome = _outcome(ended.output, ended.error, swarm)
                outcomes[index] = outcome
                await tally.ended(index, outcome, time.perf_counter() - started)
        if waiting:
            await asyncio.sleep(poll)
    return [outcomes[i] for i in range(len(tasks))]


async def _ended(client: DBOSClient, run_ids: list[str]) -> list[WorkflowStatus]:
    found: list[WorkflowStatus] = []
    for start in range(0, len(run_ids), CHUNK):
        found += await client.list_workflows_async(
            workflow_ids=run_ids[start : start + CHUNK], status=_ENDED, load_input=False
        )
    return found


def _outcome(output: object, error: object, swarm: Swarm) -> SwarmResult | BaseException:
    from swarmcore.models import SwarmResult

    if isinstance(output, SwarmResult):
        return reparsed_run(output, swarm.flow)
    if isinstance(error, BaseException):
        return error
    return SwarmError(f"The run ended with no result ({error!r}); see `swarmcore runs show`.")
