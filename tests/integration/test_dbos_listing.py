"""The DBOS engine's run history as a RunReader: pages, filters and totals of real runs."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from swarmcore import Agent, Swarm, SwarmResult
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.engines.dbos_history import DBOSHistory
from swarmcore.errors import ModelError, UserError
from swarmcore.store import RunListing, RunReader
from swarmcore.testing import OfflineModel
from tests.integration.test_dbos_engine import failing_flow, failing_model


def ids(listing: RunListing) -> list[str]:
    return [r.run_id for r in listing.runs]


async def test_pages_filters_counts_and_totals_of_engine_runs(engine: DBOSEngine) -> None:
    model = OfflineModel()
    flow = Agent("a", "a writes.", model=model.model) >> Agent("b", "b edits.", model=model.model)
    results: dict[str, SwarmResult] = {}
    for n in range(6):
        task = "plan the 50% TRIP" if n == 4 else f"task number {n}"
        results[f"r{n}"] = await Swarm(flow, engine=engine).run(task, run_id=f"r{n}")
    broken = failing_model()
    with pytest.raises(ModelError):
        await Swarm(failing_flow(broken.model), engine=engine).run("do it", run_id="r6")
    # r1, r2 and r3 created in one millisecond: the cursor must order them by id
    with psycopg.connect(engine.database_url, autocommit=True) as db:
        db.execute(
            "UPDATE dbos.workflow_status SET created_at = "
            "(SELECT created_at FROM dbos.workflow_status WHERE workflow_uuid = 'r2') "
            "WHERE workflow_uuid IN ('r1', 'r3')"
        )

    history = DBOSHistory(engine.database_url)
    try:
        assert isinstance(history, RunReader)
        every = await asyncio.to_thread(history.read_runs, limit=100)
        assert ids(every) == ["r6", "r5", "r4", "r3", "r2", "r1", "r0"]
        assert every.next is None
        assert await asyncio.to_thread(history.count_runs) == 7

        seen: list[str] = []
        page = await asyncio.to_thread(history.read_runs, limit=2)
        while True:  # pages of 2 end inside the tie, and at the store's end
            seen += ids(page)
            if page.next is None:
                break
            page = await asyncio.to_thread(history.read_runs, limit=2, before=page.next)
        assert seen == ids(every)

        failed = await asyncio.to_thread(history.read_runs, status="failed")
        assert ids(failed) == ["r6"]
        assert await asyncio.to_thread(history.count_runs, status="failed") == 1
        assert ids(await asyncio.to_thread(history.read_runs, status="incomplete")) == []
        trip = await asyncio.to_thread(history.read_runs, text="trip")
        assert ids(trip) == ["r4"]  # its task, case ignored
        assert ids(await asyncio.to_thread(history.read_runs, text="50%")) == ["r4"]
        numbered = await asyncio.to_thread(history.read_runs, text="NUMBER", limit=3)
        assert ids(numbered) == ["r5", "r3", "r2"]
        assert numbered.next is not None
        rest = await asyncio.to_thread(history.read_runs, text="NUMBER", before=numbered.next)
        assert ids(rest) == ["r1", "r0"]
        assert await asyncio.to_thread(history.count_runs, text="number") == 5
        with pytest.raises(UserError, match="status must be one of"):
            await asyncio.to_thread(history.read_runs, status="done")  # type: ignore[arg-type]

        by_id = {r.run_id: r for r in every.runs}
        for run_id, result in results.items():
            summary = by_id[run_id]
            assert summary.agents_done == 2
            assert summary.tokens == result.token_usage.total_tokens > 0
            assert summary.cost == result.cost
            record = await asyncio.to_thread(history.get_run, run_id)
            assert record is not None
            assert (record.tokens, record.cost) == (summary.tokens, summary.cost)
        assert (by_id["r6"].status, by_id["r6"].agents_done) == ("failed", 1)
    finally:
        await asyncio.to_thread(history.close)
