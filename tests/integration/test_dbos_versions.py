"""Flow versions on the DBOS engine: a run is served only by workers of the flow it was made by."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from pathlib import Path

from swarmcore import Agent, Swarm, function_tool
from swarmcore.engines.dbos import DBOSEngine, flow_version
from swarmcore.testing import MockOpenAIServer, TemporaryPostgres
from tests.integration._dbos_flow import build
from tests.integration.test_dbos_engine import FLOW_FILE, WAIT, responder, spawn, until, who_asked


def test_the_flow_version_changes_with_what_a_run_depends_on() -> None:
    def swarm(
        instructions: str = "a reads.", model: str = "openai/m1", tool: bool = False
    ) -> Swarm:
        def look(topic: str) -> str:
            """Look it up."""
            return topic

        tools = [function_tool(look)] if tool else []
        a = Agent("a", instructions, model=model, tools=tools)
        return Swarm(a >> Agent("b", "b writes.", model=model))

    base = flow_version(swarm())
    assert flow_version(swarm()) == base  # the same code, the same version
    assert flow_version(swarm(instructions="a reads twice.")) != base
    assert flow_version(swarm(model="openai/m2")) != base
    assert flow_version(swarm(tool=True)) != base
    a, b = Agent("a", "a reads.", model="openai/m1"), Agent("b", "b writes.", model="openai/m1")
    assert flow_version(Swarm(a | b)) != base  # another shape
    assert flow_version(Swarm(a >> b, context_mode="push")) != base


async def test_a_run_waits_for_a_worker_of_its_own_flow_version(
    postgres: TemporaryPostgres, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, marker = postgres.new_database(), tmp_path / "marks.txt"
    with MockOpenAIServer(responder=responder(threading.Event())) as server:
        env = {"SWARMCORE_TEST_API_BASE": server.url, "SWARMCORE_TEST_MARKER": str(marker)}
        command = ["-m", "swarmcore.cli", "worker", f"{FLOW_FILE}:flow", "--database-url", url]

        def worker(name: str, variant: str) -> subprocess.Popen[str]:
            log = tmp_path / f"{name}.log"
            with log.open("w") as stderr:
                process = spawn(
                    processes,
                    [*command, "--worker-id", name],
                    env | {"SWARMCORE_TEST_VARIANT": variant},
                    stderr=stderr,
                )
            serving = f"worker {name} serving"
            until(lambda: serving in log.read_text(), serving, process)
            return process

        newer = await asyncio.to_thread(worker, "newer", "2")
        client_engine = DBOSEngine(url, worker_id="client")
        swarm = Swarm(build(server.url, marker), engine=client_engine)  # the first version
        try:
            handle = await swarm.enqueue("write the answer", run_id="old-run")
            await asyncio.sleep(3)  # the newer worker polls its own queue many times meanwhile
            assert await handle.status() == "ENQUEUED"
            assert who_asked(server) == {}

            older = await asyncio.to_thread(worker, "older", "1")
            result = await asyncio.wait_for(handle.result(), WAIT)
            assert result.context == {"a": "a found the facts", "b": "b wrote the answer"}
            assert who_asked(server) == {"a": 2, "b": 1}
        finally:
            await client_engine.shutdown()
        for process in (newer, older):
            process.send_signal(signal.SIGTERM)
            await asyncio.to_thread(process.communicate, timeout=WAIT)
