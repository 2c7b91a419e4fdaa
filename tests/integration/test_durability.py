"""The run store under a real SIGKILL and under concurrent writers (tasks and processes)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sqlite3
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from swarmcore import Swarm
from swarmcore.store import SQLiteStore
from swarmcore.testing import FunctionModel, RecordedRequest, Reply
from tests.helpers import agents

HERE = Path(__file__).parent
POLL_TIMEOUT = 60.0


def stored_agents(db: Path) -> dict[str, set[str]]:
    """Run id to the agents whose results are stored, over a read-only connection."""
    if not db.exists():
        return {}
    try:
        with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)) as raw:
            rows = raw.execute(
                """SELECT r.run_id, a.agent_name FROM runs r
                   LEFT JOIN agents a ON a.run_id = r.run_id AND a.status = 'done'"""
            ).fetchall()
    except sqlite3.DatabaseError:  # not created (or not migrated) yet
        return {}
    runs: dict[str, set[str]] = {}
    for run_id, name in rows:
        runs.setdefault(run_id, set())
        if name is not None:
            runs[run_id].add(name)
    return runs


def read_lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def files_exist(paths: list[Path]) -> bool:
    return all(p.exists() for p in paths)


async def stop(process: asyncio.subprocess.Process) -> None:
    """Kill ``process`` if it still runs, and reap it (no orphans, no open pipes)."""
    if process.returncode is None:
        process.kill()
    await process.communicate()


def counting_model() -> tuple[FunctionModel, Counter[str]]:
    calls: Counter[str] = Counter()

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        calls[who] += 1
        return Reply(text=f"{who} resumed")

    return FunctionModel(answer), calls


async def test_a_killed_run_keeps_its_finished_agents_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    calls_file = tmp_path / "calls.txt"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "_kill_target.py"),
        str(db),
        str(calls_file),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + POLL_TIMEOUT
        while True:
            # Kill once a and b are stored and c and d are in flight (blocked in the model).
            runs = stored_agents(db)
            in_flight = {"c", "d"} <= set(read_lines(calls_file))
            if runs and {"a", "b"} <= next(iter(runs.values())) and in_flight:
                break
            if process.returncode is not None or time.monotonic() > deadline:
                if process.returncode is None:
                    process.kill()
                _, err = await process.communicate()
                pytest.fail(
                    f"a and b never stored with c and d in flight; runs: {runs}, "
                    f"calls: {read_lines(calls_file)}; stderr:\n{err.decode()}"
                )
            await asyncio.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    finally:
        await stop(process)
    assert process.returncode == -signal.SIGKILL, stderr.decode()
    killed_calls = read_lines(calls_file)
    assert sorted(killed_calls) == ["a", "b", "c", "d"]  # e waits for c and d

    store = SQLiteStore(db)
    [summary] = store.list_runs()
    run_id = summary.run_id
    record = store.get_run(run_id)
    assert record is not None
    assert record.status == "running"  # the process died: nothing marked it ended
    assert record.ended_at is None
    assert record.task == "a task worth keeping"
    assert sorted(r.agent_name for r in record.results) == ["a", "b"]

    model, calls = counting_model()
    a, b, c, d, e = agents(model.model, "a", "b", "c", "d", "e")
    result = await Swarm(a >> b >> (c | d) >> e, store=store).resume(run_id[:10])
    # Only the agents in flight at the kill (c, d) run again, and e; a and b never.
    assert calls == {"c": 1, "d": 1, "e": 1}
    assert result.run_id == run_id
    assert result.context == {
        "a": "a output",  # from the killed process
        "b": "b output",
        "c": "c resumed",
        "d": "d resumed",
        "e": "e resumed",
    }
    done = store.get_run(run_id)
    assert done is not None
    assert (done.status, done.error, done.agents_done) == ("succeeded", None, 5)
    assert len(store.list_runs()) == 1
    store.close()


@pytest.mark.parametrize("shared", [False, True], ids=["store-per-swarm", "one-shared-store"])
async def test_concurrent_runs_in_one_process(
    tmp_path: Path, shared: bool, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "runs.db"

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        return Reply(text=f"{who} on {request.user}", delay=0.01)

    model = FunctionModel(answer)
    a, b, c = agents(model.model, "a", "b", "c")
    store = SQLiteStore(db) if shared else None
    with caplog.at_level(logging.WARNING):
        results = await asyncio.gather(
            *(Swarm(a >> (b | c), store=store or db).run(f"task {i}") for i in range(30))
        )
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []

    check = SQLiteStore(db)
    runs = check.list_runs(limit=100)
    assert len(runs) == 30
    assert {r.run_id for r in runs} == {r.run_id for r in results}
    assert {(r.status, r.agents_done, r.agents_total) for r in runs} == {("succeeded", 3, 3)}
    for result in results:
        record = check.get_run(result.run_id)
        assert record is not None
        assert {r.agent_name: r.output for r in record.results} == result.context
        assert record.task == result.context["a"].removeprefix("a on ")
    check.close()
    if store is not None:
        store.close()


async def test_concurrent_runs_in_several_processes(tmp_path: Path) -> None:
    db = tmp_path / "shared" / "runs.db"  # created by whichever worker gets there first
    workers, runs_each = 4, 10
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(HERE / "_store_worker.py"),
            str(db),
            str(tmp_path),
            str(index),
            str(runs_each),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for index in range(workers)
    ]
    try:
        ready = [tmp_path / f"ready-{i}" for i in range(workers)]
        deadline = time.monotonic() + POLL_TIMEOUT
        while not files_exist(ready):
            exited = [p.returncode for p in processes if p.returncode is not None]
            if exited or time.monotonic() > deadline:
                pytest.fail(f"workers not ready (exits: {exited})")
            await asyncio.sleep(0.05)
        (tmp_path / "go").touch()  # all at once, on a file none has opened yet
        outputs = await asyncio.wait_for(
            asyncio.gather(*(p.communicate() for p in processes)), POLL_TIMEOUT
        )
    finally:
        for process in processes:
            await stop(process)

    run_ids: list[str] = []
    for process, (out, err) in zip(processes, outputs, strict=True):
        errors = err.decode()
        assert "database is locked" not in errors
        assert process.returncode == 0, errors
        assert "Traceback" not in errors
        assert "event hook" not in errors, errors  # a store write the event bus swallowed
        run_ids += out.decode().split()
    assert len(run_ids) == len(set(run_ids)) == workers * runs_each

    store = SQLiteStore(db)
    runs = store.list_runs(limit=100)
    assert {r.run_id for r in runs} == set(run_ids)
    assert {(r.status, r.agents_done, r.agents_total) for r in runs} == {("succeeded", 3, 3)}
    assert sorted(r.task for r in runs) == sorted(
        f"task {w}-{i}" for w in range(workers) for i in range(runs_each)
    )
    store.close()
