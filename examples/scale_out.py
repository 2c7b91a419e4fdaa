"""Scale out: two worker processes serve runs enqueued from this one.

Run it with ``uv run python examples/scale_out.py`` (needs ``pip install
"swarmcore[dbos]"`` and a PostgreSQL server; see docs/scaling-out.md)::

    export SWARMCORE_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/swarmcore

It starts two ``swarmcore worker`` processes serving the flow of
``examples/scale_out_flows.py`` (on the offline model, 0.2 s per model call),
enqueues eight runs from this process, waits for their results, prints which
worker ran each run and the wall time, and stops the workers with SIGTERM.
Each worker runs at most four runs at once, so both get work.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from dbos import DBOSClient

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale_out_flows import flow  # noqa: E402

RUNS = 8
WORKERS = ("worker-1", "worker-2")
TASKS = ["Is coffee good for you?", "Is tea good for you?", "Is cocoa good for you?"]


def start_worker(worker_id: str, url: str, log: Path) -> subprocess.Popen[bytes]:
    """``swarmcore worker`` in a process of its own, its log (DBOS's lines too) in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "swarmcore.cli", "worker"),
                str(HERE / "scale_out_flows.py:flow"),
                *("--database-url", url, "--worker-id", worker_id, "--concurrency", "4"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_until_serving(worker: subprocess.Popen[bytes], log: Path) -> None:
    """Wait for the worker's "serving" line (it recovers and registers its queue first)."""
    deadline = time.monotonic() + 60
    while "serving" not in log.read_text(errors="replace"):
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)


async def enqueue_and_wait(url: str) -> None:
    engine = DBOSEngine(url)
    swarm = Swarm(flow, engine=engine)  # this process only enqueues: DBOS is not launched here
    batch = uuid.uuid4().hex[:6]  # new run ids each time: an old id returns its old result
    start = time.perf_counter()
    handles = [
        await swarm.enqueue(TASKS[i % len(TASKS)], run_id=f"scale-out-{batch}-{i}")
        for i in range(RUNS)
    ]
    print(f"enqueued {RUNS} runs; the first is {await handles[0].status()}")
    results = [await handle.result() for handle in handles]
    wall = time.perf_counter() - start

    # Which worker ran each run: DBOS keeps it in the run's workflow status.
    client = DBOSClient(system_database_url=url)
    try:
        statuses = await client.list_workflows_async(
            workflow_ids=[h.run_id for h in handles], load_input=False, load_output=False
        )
    finally:
        client.destroy()
    ran_on = {s.workflow_id: s.executor_id for s in statuses}
    for handle, result in zip(handles, results, strict=True):
        first_line = result.output.splitlines()[0]
        print(f"{handle.run_id}  {ran_on[handle.run_id]}  {first_line}")
    per_worker = {w: sum(1 for r in ran_on.values() if r == w) for w in WORKERS}
    print("runs per worker: " + ", ".join(f"{w} {n}" for w, n in per_worker.items()))
    print(f"{RUNS} runs in {wall:.1f} s on {len(WORKERS)} workers")
    await engine.shutdown()


def main() -> None:
    url = os.environ.get("SWARMCORE_DATABASE_URL")
    if not url:
        print(
            "Set SWARMCORE_DATABASE_URL to a PostgreSQL database (created if missing), e.g.\n"
            "  export SWARMCORE_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/swarmcore\n"
            "docs/scaling-out.md shows how to start PostgreSQL with Docker or initdb.",
            file=sys.stderr,
        )
        raise SystemExit(2)
    print(f"Running offline: two workers on {url.rsplit('@', 1)[-1]}")
    with tempfile.TemporaryDirectory() as logs:
        workers = [start_worker(w, url, Path(logs) / f"{w}.log") for w in WORKERS]
        try:
            for worker, worker_id in zip(workers, WORKERS, strict=True):
                wait_until_serving(worker, Path(logs) / f"{worker_id}.log")
            asyncio.run(enqueue_and_wait(url))
        finally:
            for worker in workers:  # SIGTERM: a worker stops; runs in flight stay pending
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()
    print("workers stopped")


if __name__ == "__main__":
    main()
