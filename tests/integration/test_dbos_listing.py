"""The DBOS engine's run history as a RunReader: pages, filters and totals of real runs."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from swarmcore import Agent, Swarm, SwarmResult
from swarmcore.engines.dbos import DBOSEngine, DBOSHistory
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


async def test_the_viewer_shows_engine_runs_with_their_graph(engine: DBOSEngine) -> None:
    import html

    from starlette.testclient import TestClient

    from swarmcore._ui.app import create_app

    model = OfflineModel()
    flow = Agent("a", "a writes.", model=model.model) >> (
        Agent("b", "b checks.", model=model.model) | Agent("c", "c edits.", model=model.model)
    )
    await Swarm(flow, engine=engine).run("draw me", run_id="drawn")
    broken = failing_model()
    with pytest.raises(ModelError):
        await Swarm(failing_flow(broken.model), engine=engine).run("do it", run_id="broke")

    def pages() -> tuple[str, str, str]:
        history = DBOSHistory(engine.database_url)
        try:
            with TestClient(create_app(history), base_url="http://127.0.0.1") as client:
                runs = client.get("/").text
                drawn = client.get("/runs/drawn").text
                broke = client.get("/runs/broke").text
        finally:
            history.close()
        return runs, drawn, broke

    runs, drawn, broke = await asyncio.to_thread(pages)
    assert 'data-run-id="drawn" data-status="succeeded"' in runs
    assert 'data-run-id="broke" data-status="failed"' in runs
    for name in "abc":  # the flow drawn from the shape kept in the run's input
        assert f'<g class="node agent succeeded" data-agent="{name}">' in drawn
    assert '<g class="row" data-agent="b">' in drawn
    assert "swarmcore-timeline" in broke
    assert 'data-status="failed"' in broke
    resume = 'swarmcore runs resume broke --database-url "$SWARMCORE_DATABASE_URL"'
    assert resume in html.unescape(broke)  # handed back to the workers; the URL stays out
    assert engine.database_url not in broke


async def test_a_waiting_call_is_approved_from_the_viewer(engine: DBOSEngine) -> None:
    import html
    import re

    from starlette.testclient import TestClient

    from swarmcore._ui.app import create_app
    from tests.integration.test_dbos_approvals import eventually, paying_flow, paying_model

    paid: list[int] = []
    model = paying_model()
    swarm = Swarm(paying_flow(model.model, paid), engine=engine)
    running = asyncio.create_task(swarm.run("pay the invoice", run_id="pay-ui"))
    await eventually(lambda: swarm.pending_approvals("pay-ui"), "the approval request")

    def approve() -> tuple[str, str, int]:
        history = DBOSHistory(engine.database_url)
        try:
            with TestClient(create_app(history), base_url="http://127.0.0.1") as read_only:
                shown = read_only.get("/runs/pay-ui").text
            app = create_app(history, database_url=engine.database_url, allow_actions=True)
            with TestClient(app, base_url="http://127.0.0.1") as client:
                page = client.get("/runs/pay-ui").text
                token = re.search(r'name="csrf" value="([^"]+)"', page)
                call = re.search(r'name="call_id" value="([^"]+)"', page)
                assert token is not None
                assert call is not None
                sent = {"csrf": token.group(1), "call_id": call.group(1), "decision": "allow"}
                status = client.post("/runs/pay-ui/approve", data=sent).status_code
        finally:
            history.close()
        return shown, page, status

    shown, page, status = await asyncio.to_thread(approve)
    assert "Waiting for approval" in shown
    assert "swarmcore runs approve pay-ui" in shown  # read-only: the command, no form
    assert 'action="/runs/pay-ui/approve"' not in shown
    assert '"amount": 120' in html.unescape(page)  # the call's arguments
    assert engine.database_url not in page  # the database URL (and its password) stays out
    assert status == 200  # redirected to the run's page
    result = await asyncio.wait_for(running, 60)
    assert paid == [120]
    assert result["a"].tool_calls[0].approval == "allowed"
