"""The DBOS engine against the in-process engine, and two workers against one.

    uv run python benchmarks/workers.py [--latency 0.2] [--reps 5] [--runs 96] [--rounds 3]
                                        [--concurrency 4]

Needs PostgreSQL: ``$SWARMCORE_DATABASE_URL``, else a temporary server started
with ``swarmcore.testing.TemporaryPostgres`` (PostgreSQL's binaries installed).
The flow is a diamond ``a >> (b | c) >> d`` on the offline model with a fixed
latency per model call (``benchmarks/_dbos_flow.py``); each agent makes 2-3 calls.

Rows:

* **one run at a time**: median wall time of one run, in process and on the
  engine (DBOS launched beforehand), and the engine's added time per agent step
  ((engine - in process) / 4 agents): its checkpoints in PostgreSQL.
* **workers**: ``--runs`` runs enqueued at once, served by one worker, then by
  two, each running at most ``--concurrency`` runs at once (I/O-bound: the
  model's latency dominates); runs per second, and two against one. Medians
  over ``--rounds`` rounds (two against one: the median of each round's
  ratio). 96 runs are 12 waves of 8 for two workers: with fewer, the last
  half-empty wave weighs on the two-worker time (48 runs read ~1.7x, 96 ~1.85x).

Each measurement gets a fresh database.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def database() -> Iterator[str]:
    """A PostgreSQL server URL (its database name is replaced per measurement)."""
    url = os.environ.get("SWARMCORE_DATABASE_URL")
    if url:
        yield url
        return
    from swarmcore.testing import TemporaryPostgres

    with TemporaryPostgres() as server:
        yield server.url


def fresh(url: str) -> str:
    """``url`` with a new database name: DBOS creates it on launch."""
    base = url.rsplit("/", 1)[0]
    return f"{base}/bench_{uuid.uuid4().hex[:10]}"


def one_at_a_time(url: str, latency: float, reps: int) -> tuple[float, float]:
    """Median seconds of one run in process and on the engine, in a fresh process."""
    out = _child(url, latency, "--child-one", str(reps))
    return float(out[-2]), float(out[-1])


def with_workers(url: str, latency: float, runs: int, workers: int, concurrency: int) -> float:
    """Runs per second: ``runs`` enqueued at once, served by ``workers`` worker processes."""
    env = _env(fresh(url), latency)
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "swarmcore.cli", "worker", "_dbos_flow.py:swarm"),
                *("--worker-id", f"bench-{i}", "--concurrency", str(concurrency)),
            ],
            cwd=HERE,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(workers)
    ]
    try:
        for proc in procs:  # each says when it serves
            assert proc.stderr is not None
            while "serving" not in proc.stderr.readline():
                if proc.poll() is not None:
                    raise RuntimeError("a worker exited before serving")
        out = _child(env["SWARMCORE_DATABASE_URL"], latency, "--child-enqueue", str(runs))
        return runs / float(out[-1])
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _env(url: str, latency: float) -> dict[str, str]:
    return {**os.environ, "SWARMCORE_DATABASE_URL": url, "BENCH_LATENCY": str(latency)}


def _child(url: str, latency: float, *args: str) -> list[str]:
    """Run this script's child mode in a fresh process (DBOS is one per process)."""
    env = _env(url if args[0] == "--child-enqueue" else fresh(url), latency)
    done = subprocess.run(
        [sys.executable, __file__, *args], cwd=HERE, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout.split()


async def _child_one(reps: int) -> None:
    import _dbos_flow as f  # pyright: ignore[reportMissingImports]

    await f.swarm.engine.launch()
    await f.local.run("warm up")
    await f.swarm.run("warm up")
    local: list[float] = []
    engine: list[float] = []
    for _ in range(reps):
        for swarm, times in ((f.local, local), (f.swarm, engine)):
            start = time.perf_counter()
            await swarm.run("Is tea good?")
            times.append(time.perf_counter() - start)
    print(statistics.median(local), statistics.median(engine))
    await f.swarm.engine.shutdown()


async def _child_enqueue(runs: int) -> None:
    import _dbos_flow as f  # pyright: ignore[reportMissingImports]

    start = time.perf_counter()
    handles = [await f.swarm.enqueue("Is tea good?") for _ in range(runs)]
    for handle in handles:
        await handle.result(poll_seconds=0.05)
    print(time.perf_counter() - start)
    await f.swarm.engine.shutdown()


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("--child-one", "--child-enqueue"):
        child = _child_one if sys.argv[1] == "--child-one" else _child_enqueue
        asyncio.run(child(int(sys.argv[2])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--reps", type=int, default=5, help="runs per side, one at a time")
    parser.add_argument("--runs", type=int, default=96, help="runs enqueued for the workers")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the workers rows")
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once per worker")
    args = parser.parse_args()
    with database() as url:
        print(
            f"PostgreSQL at {url.rsplit('@', 1)[-1]}; model latency {args.latency:g} s",
            file=sys.stderr,
        )
        local, engine = one_at_a_time(url, args.latency, args.reps)
        ones: list[float] = []
        twos: list[float] = []
        for _ in range(args.rounds):
            ones.append(with_workers(url, args.latency, args.runs, 1, args.concurrency))
            twos.append(with_workers(url, args.latency, args.runs, 2, args.concurrency))
    one, two = statistics.median(ones), statistics.median(twos)
    ratio = statistics.median(t / o for o, t in zip(ones, twos, strict=True))
    rows = [
        ("one run, in process", f"{local:.3f} s"),
        ("one run, DBOS engine", f"{engine:.3f} s"),
        ("added per agent step", f"{(engine - local) / 4 * 1000:.0f} ms"),
        (f"1 worker, {args.runs} runs", f"{one:.2f} runs/s"),
        (f"2 workers, {args.runs} runs", f"{two:.2f} runs/s"),
        ("2 workers / 1 worker", f"{ratio:.2f} x"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'row':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
