"""Model limits on the DBOS engine hold across worker processes, by DBOS's own records.

Two ``swarmcore worker`` processes serve runs of ``_limited_flow.py``, whose
``slow`` model may have one call in flight and whose ``paced`` model one call a
second, across every worker together. Each model call took a permit: a
``swarmcore.permit`` workflow on the model's DBOS queue, whose row in
``dbos.workflow_status`` records (on PostgreSQL's clock) when it was let
through and when it was given back.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from swarmcore import Agent, Swarm, clear_model_limits, limit_model
from swarmcore.engines.dbos import RUN_WORKFLOW, DBOSEngine
from swarmcore.engines.dbos._limits import PERMIT_WORKFLOW, model_queue, queue_rate
from swarmcore.llm._limits import ModelLimit
from swarmcore.testing import MockOpenAIServer, RecordedRequest, Reply, TemporaryPostgres
from tests.integration._limited_flow import PACED_MODEL, SLOW_MODEL, build
from tests.integration.test_dbos_engine import WAIT, spawn, until

HERE = Path(__file__).parent
RUNS = 6
OVERLAP_SLACK_MS = 50


def permits(url: str, model: str) -> list[tuple[str, str, int, int]]:
    """The model's permits as DBOS recorded them: (id, status, started, ended), by start."""
    query = (
        "SELECT workflow_uuid, status, started_at_epoch_ms, updated_at FROM dbos.workflow_status"
        " WHERE name = %s AND queue_name = %s ORDER BY started_at_epoch_ms"
    )
    with psycopg.connect(url) as connection:
        rows = connection.execute(query, (PERMIT_WORKFLOW, model_queue(model))).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


def run_executors(url: str) -> Counter[str]:
    """How many runs each worker ran, by DBOS's record of the runs' workflows."""
    query = "SELECT executor_id FROM dbos.workflow_status WHERE name = %s"
    with psycopg.connect(url) as connection:
        return Counter(str(r[0]) for r in connection.execute(query, (RUN_WORKFLOW,)))


def requester(permit_id: str) -> str:
    """The worker whose call took the permit: ``permit/<queue>/<worker id>/<uuid>``."""
    return permit_id.split("/")[2]


async def test_two_workers_together_keep_each_models_limit(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()
    lock = threading.Lock()
    slow_calls = {"now": 0, "most": 0}

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "slow":  # the server itself counts the slow model's calls in flight
            with lock:
                slow_calls["now"] += 1
                slow_calls["most"] = max(slow_calls["most"], slow_calls["now"])
            time.sleep(0.3)
            with lock:
                slow_calls["now"] -= 1
        return Reply(text=f"{who} done")

    with MockOpenAIServer(responder=answer) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_LIMITS": "1"}
        target = f"{HERE / '_limited_flow.py'}:flow"
        logs: list[Path] = []
        for worker_id in ("w1", "w2"):
            log = tmp_path / f"{worker_id}.log"
            command = ["-m", "swarmcore.cli", "worker", target, "--database-url", url]
            with log.open("w") as stderr:
                spawn(
                    processes,
                    [*command, "--worker-id", worker_id, "--concurrency", "2"],
                    env,
                    stderr=stderr,
                )
            logs.append(log)
            # One at a time: the first worker's launch creates DBOS's database.
            serving = f"worker {worker_id} serving"
            await asyncio.to_thread(
                until,
                lambda log=log, serving=serving: serving in log.read_text(),
                serving,
                processes[-1],
            )

        client = DBOSEngine(url, worker_id="client")  # only enqueues: never launches DBOS
        try:
            swarm = Swarm(build(server.url), engine=client)
            handles = [await swarm.enqueue("answer", run_id=f"job-{i}") for i in range(RUNS)]
            results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), WAIT)
        finally:
            await client.shutdown()
        assert [r.context for r in results] == [{"slow": "slow done", "paced": "paced done"}] * RUNS
        for worker in processes:
            worker.send_signal(signal.SIGTERM)
        for worker in processes:
            await asyncio.to_thread(worker.communicate, timeout=WAIT)
            assert worker.returncode == 0

    # Both workers ran runs, so both asked for permits: the limits were really shared.
    assert set(run_executors(url)) == {"w1", "w2"}
    assert slow_calls["most"] == 1  # seen by the server: never two slow calls at once

    # Every model call took a permit (a retried call takes one per attempt).
    calls = Counter(request.system.split()[0] for request in server.requests)
    assert calls["slow"] >= RUNS
    assert calls["paced"] >= RUNS
    slow = permits(url, SLOW_MODEL)
    assert len(slow) >= calls["slow"]
    assert {status for _, status, _, _ in slow} == {"SUCCESS"}
    assert {requester(permit_id) for permit_id, *_ in slow} == {"w1", "w2"}
    # No two slow permits held at once. DBOS stamps both times with PostgreSQL's now(),
    # the start of the stamping transaction, so a grant whose transaction began just
    # before the previous release committed reads a few ms early; two permits really
    # held together would overlap by the whole 0.3 s call.
    for (_, _, _, ended), (_, _, started, _) in itertools.pairwise(slow):
        assert started > ended - OVERLAP_SLACK_MS

    paced = permits(url, PACED_MODEL)
    assert len(paced) >= calls["paced"]
    assert {status for _, status, _, _ in paced} == {"SUCCESS"}
    assert {requester(permit_id) for permit_id, *_ in paced} == {"w1", "w2"}
    starts = [started for _, _, started, _ in paced]
    # At most one start in any second across both workers, on the clock DBOS's limiter
    # itself reads (each claim stamps and counts with the same now()).
    assert all(later - earlier >= 1000 for earlier, later in itertools.pairwise(starts))


@pytest.fixture
async def engine(postgres: TemporaryPostgres) -> AsyncIterator[DBOSEngine]:
    """A launched engine on a database of its own; model limits cleared after the test."""
    engine = DBOSEngine(postgres.new_database(), worker_id="solo")
    try:
        yield engine
    finally:
        await engine.shutdown()
        clear_model_limits()


async def test_a_limit_set_after_launch_is_held_through_the_database(engine: DBOSEngine) -> None:
    with MockOpenAIServer(responder=lambda request: Reply(text="done")) as server:
        agent = Agent(
            "solo", "solo answers.", model="openai/late-model", api_base=server.url, api_key="k"
        )
        swarm = Swarm(agent, engine=engine)
        await engine.launch()
        assert (await swarm.run("answer", run_id="before")).output == "done"
        assert permits(engine.database_url, "openai/late-model") == []  # no limit yet
        limit_model("openai/late-model", max_in_flight=2)
        runs = (swarm.run("answer", run_id=f"after-{i}") for i in range(3))
        await asyncio.wait_for(asyncio.gather(*runs), WAIT)  # granted: this process listens
    granted = permits(engine.database_url, "openai/late-model")
    assert len(granted) == 3
    assert {status for _, status, _, _ in granted} == {"SUCCESS"}
    assert {requester(permit_id) for permit_id, *_ in granted} == {"solo"}


def test_requests_per_minute_become_a_window_of_about_a_seconds_worth() -> None:
    assert queue_rate(ModelLimit(requests_per_minute=60)) == {"limit": 1, "period": 1.0}
    assert queue_rate(ModelLimit(requests_per_minute=600)) == {"limit": 10, "period": 1.0}
    assert queue_rate(ModelLimit(requests_per_minute=30)) == {"limit": 1, "period": 2.0}
    assert queue_rate(ModelLimit(max_in_flight=3)) is None
    assert model_queue("openai/gpt-4o") != model_queue("openai/gpt_4o")
    assert model_queue("openai/gpt-4o").startswith("swarmcore-model-openai-gpt-4o-")
