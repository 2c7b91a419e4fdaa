"""Signals to ``swarmcore worker`` processes: stopping a worker never fails its runs in flight.

Workers serve ``a >> b >> c`` (tests/integration/_adopt_flow.py) against the
``MockOpenAIServer``, whose answer to ``b`` waits on a gate the test opens. A
worker is signalled while ``b``'s call is in flight: it takes no new run, lets
its runs finish for ``--grace`` seconds, then hands back the rest (PENDING,
nothing recorded as cancelled), and the worker restarted with its id finishes
them from DBOS's record: ``a`` is not asked again, ``b``'s call in flight is
made once more, ``c`` once. Before the fix, the stop recorded ``b``'s agent
workflow as CANCELLED and every such run failed on restart with
``DBOSAwaitedWorkflowCancelledError``.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.errors import UserError
from swarmcore.testing import MockOpenAIServer, RecordedRequest, Reply, TemporaryPostgres
from tests.integration._adopt_flow import build

FLOW_FILE = Path(__file__).parent.parent / "integration" / "_adopt_flow.py"
WAIT = 90.0
ANSWERS = {"a": "a found the facts", "b": "b wrote the draft", "c": "c polished it"}


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """The worker processes a test starts: killed and reaped after it, whatever happened."""
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait()


def gated(gate: threading.Event) -> Callable[[RecordedRequest], Reply]:
    """Each agent answers at once, but ``b`` only once ``gate`` is open."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "b":
            gate.wait(WAIT)
        return Reply(text=f"{ANSWERS[who]}\n<summary>{who} summary</summary>")

    return answer


def asked(server: MockOpenAIServer) -> Counter[str]:
    return Counter(r.system.split()[0] for r in list(server.requests))


def until(check: Callable[[], bool], what: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if process.poll() is not None:
            raise AssertionError(f"the worker ended ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Worker:
    """``swarmcore worker`` processes with one id, one after another, logging to one file."""

    def __init__(self, url: str, api_base: str, log: Path, started: list[subprocess.Popen[str]]):
        self.url, self.api_base, self.log, self.started = url, api_base, log, started
        log.write_text("")

    def text(self) -> str:
        return self.log.read_text()

    def start(self, grace: float) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow"]
        options = ["--database-url", self.url, "--worker-id", "W", "--grace", f"{grace:g}"]
        serving = self.text().count("worker W serving") + 1
        with self.log.open("a") as stderr:
            process = subprocess.Popen(
                [*command, *options],
                env={**os.environ, "SWARMCORE_TEST_API_BASE": self.api_base},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                text=True,
            )
        self.started.append(process)
        until(lambda: self.text().count("worker W serving") == serving, "serving", process)
        return process

    def stop(self, process: subprocess.Popen[str], sig: signal.Signals) -> int:
        process.send_signal(sig)
        return process.wait(WAIT)


def grace_in(round_number: int) -> float:
    return (round_number + 1) % 2


async def statuses(client: DBOSEngine, *run_ids: str) -> list[str]:
    return [await (await client.handle(run_id)).status() for run_id in run_ids]


@pytest.mark.parametrize(
    ("stop", "rounds"),
    [
        # Four generations of one worker id, each grace twice: a round is the same steps
        # each time (it was ten; the stop's outcome never varied with the count).
        pytest.param(signal.SIGTERM, 4, id="sigterm-4-rounds"),
        pytest.param(signal.SIGINT, 2, id="sigint-2-rounds"),
    ],
)
async def test_a_worker_stopped_mid_run_hands_it_back_and_its_restart_finishes_it(
    stop: signal.Signals,
    rounds: int,
    postgres: TemporaryPostgres,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    url = postgres.new_database()
    gate = threading.Event()
    with MockOpenAIServer(responder=gated(gate)) as server:
        workers = Worker(url, server.url, tmp_path / "worker.log", processes)
        client = DBOSEngine(url, worker_id="client")  # only enqueues: never launches DBOS
        swarm = Swarm(build(server.url), engine=client)
        try:
            # Odd rounds' workers hand the run back at once (grace 0), even rounds' after
            # letting it run on for a second (grace 1).
            worker = await asyncio.to_thread(workers.start, grace_in(1))
            for n in range(1, rounds + 1):
                run_id = f"round-{n}"
                gate.clear()
                handle = await swarm.enqueue(f"write {run_id}", run_id=run_id)
                await asyncio.to_thread(
                    until, lambda n=n: asked(server)["b"] == 2 * n - 1, "b", worker
                )

                assert await asyncio.to_thread(workers.stop, worker, stop) == 0
                assert f"handed back ({run_id})" in workers.text()
                assert await statuses(client, run_id, f"{run_id}/b/1") == ["PENDING", "PENDING"]
                gate.set()
                worker = await asyncio.to_thread(workers.start, grace_in(n + 1))
                result = await asyncio.wait_for(handle.result(), WAIT)

                assert result.context == ANSWERS, f"round {n} (grace {grace_in(n)})"
                assert [r.agent_name for r in result.history] == ["a", "b", "c"]
                # a finished before the stop: asked once; b's call in flight: once more.
                assert asked(server) == {"a": n, "b": 2 * n, "c": n}
                agents = [f"{run_id}/{name}/1" for name in "abc"]
                assert await statuses(client, run_id, *agents) == ["SUCCESS"] * 4
            assert await asyncio.to_thread(workers.stop, worker, stop) == 0
            assert workers.text().endswith("runs in flight stay pending: none was left\n")
        finally:
            gate.set()
            await client.shutdown()


async def test_a_stopping_worker_finishes_its_run_within_grace_and_takes_no_new_run(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()
    gate = threading.Event()
    with MockOpenAIServer(responder=gated(gate)) as server:
        workers = Worker(url, server.url, tmp_path / "worker.log", processes)
        client = DBOSEngine(url, worker_id="client")
        swarm = Swarm(build(server.url), engine=client)
        try:
            worker = await asyncio.to_thread(workers.start, WAIT)
            first = await swarm.enqueue("write the first", run_id="first")
            await asyncio.to_thread(until, lambda: asked(server)["b"] == 1, "b", worker)
            worker.send_signal(signal.SIGTERM)
            await asyncio.to_thread(
                until, lambda: "worker W stopping" in workers.text(), "stop", worker
            )
            second = await swarm.enqueue("write the second", run_id="second")
            gate.set()  # b answers within the grace: the worker finishes the first run

            assert await asyncio.to_thread(worker.wait, WAIT) == 0
            assert workers.text().endswith("runs in flight stay pending: none was left\n")
            assert (await first.result()).context == ANSWERS
            assert asked(server) == {"a": 1, "b": 1, "c": 1}  # nothing asked twice
            assert await statuses(client, "first", "second") == ["SUCCESS", "ENQUEUED"]

            worker = await asyncio.to_thread(workers.start, 0)  # the next worker takes it
            assert (await asyncio.wait_for(second.result(), WAIT)).context == ANSWERS
            assert asked(server) == {"a": 2, "b": 2, "c": 2}
            assert await asyncio.to_thread(workers.stop, worker, signal.SIGTERM) == 0
        finally:
            gate.set()
            await client.shutdown()


async def test_a_second_signal_stops_a_worker_at_once_and_its_run_stays_pending(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url = postgres.new_database()
    gate = threading.Event()
    with MockOpenAIServer(responder=gated(gate)) as server:
        workers = Worker(url, server.url, tmp_path / "worker.log", processes)
        client = DBOSEngine(url, worker_id="client")
        swarm = Swarm(build(server.url), engine=client)
        try:
            worker = await asyncio.to_thread(workers.start, 3600)
            handle = await swarm.enqueue("write it", run_id="job")
            await asyncio.to_thread(until, lambda: asked(server)["b"] == 1, "b", worker)
            worker.send_signal(signal.SIGTERM)
            await asyncio.to_thread(
                until, lambda: "worker W stopping" in workers.text(), "stop", worker
            )

            # The second signal ends the grace of an hour: the process dies of it, as kill -9.
            assert await asyncio.to_thread(workers.stop, worker, signal.SIGINT) == -signal.SIGINT
            assert await statuses(client, "job", "job/b/1") == ["PENDING", "PENDING"]
            gate.set()
            worker = await asyncio.to_thread(workers.start, 0)
            assert (await asyncio.wait_for(handle.result(), WAIT)).context == ANSWERS
            assert asked(server) == {"a": 1, "b": 2, "c": 1}
            assert await asyncio.to_thread(workers.stop, worker, signal.SIGTERM) == 0
        finally:
            gate.set()
            await client.shutdown()


@pytest.mark.parametrize("grace", ["-1", "nan", "inf"], ids=["negative", "nan", "inf"])
def test_a_grace_that_is_no_number_of_seconds_is_refused_on_the_command_line(grace: str) -> None:
    url = "postgresql://postgres@127.0.0.1:9/unused"  # never connected to
    command = [sys.executable, "-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow"]
    refused = subprocess.run(
        [*command, "--database-url", url, "--grace", grace],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert refused.returncode == 2
    assert f"--grace takes seconds, 0 or more, got {float(grace):g}" in refused.stderr


@pytest.mark.parametrize("grace", [-1.0, math.nan, math.inf], ids=["negative", "nan", "inf"])
async def test_a_grace_that_is_no_number_of_seconds_is_refused_by_the_engine(
    grace: float,
) -> None:
    engine = DBOSEngine("postgresql://postgres@127.0.0.1:9/unused")  # never launched
    try:
        with pytest.raises(UserError, match=r"DBOSEngine\.shutdown: grace must be 0 or more"):
            await engine.shutdown(grace=grace)
    finally:
        assert await engine.shutdown() == []  # nothing ran here: nothing handed back
