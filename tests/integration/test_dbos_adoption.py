"""Live workers adopt the runs of a worker gone silent, exactly one of them, without repeats.

Workers are ``swarmcore worker`` processes serving ``a >> b >> c``
(``_adopt_flow.py``) with a short heartbeat; model calls are counted on the
``MockOpenAIServer`` across processes. A worker killed with SIGKILL while
``b``'s model call is in flight stops beating; a live worker adopts it after
``--adopt-after`` seconds and finishes its run from DBOS's record: ``a`` is not
asked again, ``b``'s call in flight is made once more, ``c`` once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dbos import DBOSClient

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine, RecordSerializer
from swarmcore.engines.dbos._workers import TABLE, claim, create_table
from swarmcore.errors import BudgetExceeded, UserError
from swarmcore.testing import MockOpenAIServer, RecordedRequest, Reply, TemporaryPostgres
from tests.integration._adopt_flow import build

HERE = Path(__file__).parent
FLOW_FILE = HERE / "_adopt_flow.py"
WAIT = 90.0
ANSWERS = {"a": "a found the facts", "b": "b wrote the draft", "c": "c polished it"}


def responder(slow_b: threading.Event, b_delay: float = 3600) -> Callable[[RecordedRequest], Reply]:
    """Each agent answers at once, but ``b`` after ``b_delay`` seconds while ``slow_b`` is set."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        delay = b_delay if who == "b" and slow_b.is_set() else 0
        return Reply(text=f"{ANSWERS[who]}\n<summary>{who} summary</summary>", delay=delay)

    return answer


def who_asked(server: MockOpenAIServer) -> Counter[str]:
    return Counter(r.system.split()[0] for r in list(server.requests))


def until(check: Callable[[], bool], what: str, *watched: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        for process in watched:
            if process.poll() is not None:
                raise AssertionError(f"a process ended ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Workers:
    """Starts ``swarmcore worker`` processes on one database, each logging to a file."""

    def __init__(
        self, url: str, env: dict[str, str], logs: Path, started: list[subprocess.Popen[str]]
    ) -> None:
        self.url, self.env, self.logs, self.started = url, env, logs, started

    def start(self, worker_id: str, target: str = "flow", adopt_after: float = 2.0) -> Any:
        log = self.logs / f"{worker_id}-{len(self.started)}.log"
        command = [sys.executable, "-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:{target}"]
        options = ["--database-url", self.url, "--worker-id", worker_id]
        timing = ["--heartbeat", "0.5", "--adopt-after", str(adopt_after)]
        with log.open("w") as stderr:
            process = subprocess.Popen(
                [*command, *options, *timing],
                env={**os.environ, **self.env},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                text=True,
            )
        self.started.append(process)
        serving = f"worker {worker_id} serving"
        until(lambda: serving in log.read_text(), serving, process)
        return process


def rows(url: str) -> dict[str, str | None]:
    """Each worker's row in the heartbeat table: who adopted it (None: nobody)."""
    with psycopg.connect(url) as conn:
        found = conn.execute(f"SELECT worker_id, adopted_by FROM {TABLE}").fetchall()
    return {str(worker): None if by is None else str(by) for worker, by in found}


async def test_a_killed_workers_run_is_adopted_by_exactly_one_live_worker_and_finished(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()
    slow_b = threading.Event()
    slow_b.set()
    with MockOpenAIServer(responder=responder(slow_b)) as server:
        workers = Workers(url, {"SWARMCORE_TEST_API_BASE": server.url}, tmp_path, processes)
        dead = await asyncio.to_thread(workers.start, "A")
        client = DBOSEngine(url, worker_id="client")  # only enqueues: never launches DBOS
        try:
            handle = await Swarm(build(server.url), engine=client).enqueue("write", run_id="job")
            # A took the run (the only worker yet) and b's call is in flight.
            await asyncio.to_thread(until, lambda: who_asked(server)["b"] == 1, "b's call", dead)
            live = [await asyncio.to_thread(workers.start, name) for name in ("B", "C")]
            dead.kill()  # SIGKILL: no heartbeat from A any more, b's call in flight
            dead.wait()
            slow_b.clear()

            result = await asyncio.wait_for(handle.result(), WAIT)

            assert result.context == ANSWERS
            assert [r.agent_name for r in result.history] == ["a", "b", "c"]
            # a finished before the kill: not asked again; b's call in flight: once more.
            assert who_asked(server) == {"a": 1, "b": 2, "c": 1}
            table = rows(url)
            adopter = table["A"]
            assert adopter in {"B", "C"}  # exactly one live worker claimed A
            assert table == {"A": adopter, "B": None, "C": None}  # the live ones kept theirs
            status = await (await client.handle("job")).status()
            assert status == "SUCCESS"
            dbos = await asyncio.to_thread(
                lambda: DBOSClient(system_database_url=url, serializer=RecordSerializer())
            )
            try:
                ran = await dbos.list_workflows_async(workflow_id_prefix="job")
                assert {w.workflow_id: w.executor_id for w in ran} == {
                    "job": adopter,
                    "job/a/1": "A",  # finished in A, read back by the adopter's walk
                    "job/b/1": adopter,  # resumed: its recorded steps replayed, one call made
                    "job/c/1": adopter,
                }
            finally:
                await asyncio.to_thread(dbos.destroy)

            # A comes back with the same id: its row is reset, and the adopted run,
            # which is no longer its own in DBOS, is not run again.
            back = await asyncio.to_thread(workers.start, "A")
            await asyncio.to_thread(until, lambda: rows(url)["A"] is None, "A's row reset", back)
            assert (await (await client.handle("job")).result()).context == ANSWERS
            for process in (back, *live):
                process.send_signal(signal.SIGTERM)
            for process in (back, *live):
                assert await asyncio.to_thread(process.wait, WAIT) == 0
            assert who_asked(server) == {"a": 1, "b": 2, "c": 1}
        finally:
            await client.shutdown()


async def test_a_busy_worker_that_keeps_beating_keeps_its_run(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    # b's call lasts several adopt_after periods; A's heartbeat (a thread of its own)
    # keeps its row fresh the whole time, so the live worker B never adopts it.
    url = postgres.new_database()
    slow_b = threading.Event()
    slow_b.set()
    with MockOpenAIServer(responder=responder(slow_b, b_delay=6.0)) as server:
        workers = Workers(url, {"SWARMCORE_TEST_API_BASE": server.url}, tmp_path, processes)
        busy = await asyncio.to_thread(workers.start, "A", adopt_after=1.5)
        client = DBOSEngine(url, worker_id="client")
        try:
            handle = await Swarm(build(server.url), engine=client).enqueue("write", run_id="job")
            await asyncio.to_thread(until, lambda: who_asked(server)["b"] == 1, "b's call", busy)
            other = await asyncio.to_thread(workers.start, "B", adopt_after=1.5)

            result = await asyncio.wait_for(handle.result(), WAIT)

            assert result.context == ANSWERS
            assert who_asked(server) == {"a": 1, "b": 1, "c": 1}  # nothing ran twice
            assert rows(url) == {"A": None, "B": None}  # nobody adopted anybody
            for process in (busy, other):
                process.send_signal(signal.SIGTERM)
                assert await asyncio.to_thread(process.wait, WAIT) == 0
        finally:
            await client.shutdown()


def test_of_workers_claiming_a_silent_worker_at_once_exactly_one_gets_it(
    postgres: TemporaryPostgres,
) -> None:
    name = f"claims_{uuid.uuid4().hex[:12]}"
    url = postgres.new_database(name)
    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(url, autocommit=True) as conn:
        create_table(conn)
        conn.execute(
            f"INSERT INTO {TABLE} (app_name, worker_id, app_version, seen_at) VALUES "
            "('app', 'dead', 'v1', now() - interval '1 hour'), "
            "('app', 'other-version', 'v2', now() - interval '1 hour'), "
            "('other-app', 'elsewhere', 'v1', now() - interval '1 hour'), "
            "('app', 'fresh', 'v1', now())"
        )
    claimants = [f"live-{n}" for n in range(8)]
    ready = threading.Barrier(len(claimants))
    got: dict[str, str | None] = {}

    def claim_as(worker: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            ready.wait()
            got[worker] = claim(
                conn, app_name="app", worker_id=worker, app_version="v1", adopt_after=30.0
            )

    threads = [threading.Thread(target=claim_as, args=(worker,)) for worker in claimants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    winners = [worker for worker, claimed in got.items() if claimed is not None]
    assert len(winners) == 1  # the one silent worker of app v1, claimed once
    assert got[winners[0]] == "dead"
    table = rows(url)
    assert table["dead"] == winners[0]
    # Another version's worker, another application's, and a fresh one: never claimed.
    assert (table["other-version"], table["elsewhere"], table["fresh"]) == (None, None, None)


async def test_an_adopted_run_stops_where_its_budget_stops_it_in_process(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()
    slow_b = threading.Event()

    def answer(request: RecordedRequest) -> Reply:  # 100 tokens a call: c's call is over 150
        who = request.system.split()[0]
        delay = 3600 if who == "b" and slow_b.is_set() else 0
        text = f"{ANSWERS[who]}\n<summary>{who} summary</summary>"
        return Reply(text=text, delay=delay, prompt_tokens=50, completion_tokens=50)

    with MockOpenAIServer(responder=answer) as server:
        with pytest.raises(BudgetExceeded) as in_process:
            await Swarm(build(server.url), max_tokens=150).run("write")
        assert in_process.value.agent_name == "c"
        server.requests.clear()
        slow_b.set()
        env = {
            "SWARMCORE_TEST_API_BASE": server.url,
            "SWARMCORE_TEST_DATABASE_URL": url,
            "SWARMCORE_TEST_MAX_TOKENS": "150",
        }
        workers = Workers(url, env, tmp_path, processes)
        dead = await asyncio.to_thread(workers.start, "A", "budgeted")
        client = DBOSEngine(url, worker_id="client")
        try:
            handle = await Swarm(build(server.url), engine=client).enqueue("write", run_id="job")
            await asyncio.to_thread(until, lambda: who_asked(server)["b"] == 1, "b's call", dead)
            await asyncio.to_thread(workers.start, "B", "budgeted")
            dead.kill()
            dead.wait()
            slow_b.clear()

            with pytest.raises(BudgetExceeded) as adopted:
                await asyncio.wait_for(handle.result(), WAIT)

            assert adopted.value.agent_name == "c"
            assert who_asked(server) == {"a": 1, "b": 2}  # c was never asked
        finally:
            await client.shutdown()


async def test_a_worker_keeps_the_budget_of_a_swarm_target_without_an_engine(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()

    def answer(request: RecordedRequest) -> Reply:  # 100 tokens a call: c's call is over 150
        who = request.system.split()[0]
        text = f"{ANSWERS[who]}\n<summary>{who} summary</summary>"
        return Reply(text=text, prompt_tokens=50, completion_tokens=50)

    with MockOpenAIServer(responder=answer) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_MAX_TOKENS": "150"}
        await asyncio.to_thread(Workers(url, env, tmp_path, processes).start, "W", "capped")
        client = DBOSEngine(url, worker_id="client")
        try:
            handle = await Swarm(build(server.url), engine=client).enqueue("write", run_id="capped")
            with pytest.raises(BudgetExceeded) as stopped:
                await asyncio.wait_for(handle.result(), WAIT)
        finally:
            await client.shutdown()
        assert stopped.value.agent_name == "c"
        assert who_asked(server) == {"a": 1, "b": 1}


async def test_heartbeat_and_adopt_after_are_checked_on_the_engine_and_command_line() -> None:
    url = "postgresql://postgres@127.0.0.1:9/unused"  # never connected to
    for heartbeat, adopt_after in [(0.0, 30.0), (5.0, 5.0), (5.0, 1.0), (-1.0, None)]:
        with pytest.raises(UserError, match="heartbeat > 0 and adopt_after > heartbeat"):
            DBOSEngine(url, heartbeat=heartbeat, adopt_after=adopt_after)
    engine = DBOSEngine(url, heartbeat=1.0, adopt_after=None)  # never adopted: allowed
    try:
        assert (engine.heartbeat, engine.adopt_after) == (1.0, None)
    finally:
        await engine.shutdown()  # never launched: the process's engine slot is freed

    command = [sys.executable, "-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow"]
    options = ["--database-url", url, "--heartbeat", "5", "--adopt-after", "2"]
    refused = await asyncio.to_thread(
        subprocess.run, [*command, *options], capture_output=True, text=True, timeout=WAIT
    )
    assert refused.returncode != 0
    assert "--adopt-after above it, got 5 and 2.0" in refused.stderr
