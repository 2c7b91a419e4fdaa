"""AG-UI's human-in-the-loop on the DBOS engine: the wait is durable, the server may die.

A run served by ``swarm.to_ag_ui()`` on a ``DBOSEngine`` parks at a call that
requires approval in the engine (no in-memory future): its interrupt names the
run, and the answer, sent by the same ``@ag-ui/client`` agent to a new server
process after the first was killed with SIGKILL, goes through ``swarm.decide``.
The tool runs once (counted on a marker file) and the run finishes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.testing import MockOpenAIServer, TemporaryPostgres
from tests.ag_ui.conftest import EVENTS, JS, drive, named, types
from tests.integration._dbos_flow import build
from tests.integration.test_dbos_engine import WAIT, responder, who_asked
from tests.serving import bound_socket, serve

SERVER = Path(__file__).parent.parent / "integration" / "_ag_ui_server.py"


async def line_of(stream: asyncio.StreamReader, what: str) -> str:
    line = await asyncio.wait_for(stream.readline(), WAIT)
    assert line, f"the process ended before {what}"
    return line.decode().strip()


async def server(url: str, port: int, env: dict[str, str]) -> asyncio.subprocess.Process:
    """``_ag_ui_server.py`` on ``port``, once it listens."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVER),
        url,
        str(port),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    assert await line_of(process.stdout, "the server listened") == "ready"
    return process


async def test_an_approval_waits_in_the_engine_and_a_new_server_process_resumes_it(
    node: str, postgres: TemporaryPostgres, tmp_path: Path
) -> None:
    url, marker = postgres.new_database(), tmp_path / "marks.txt"
    with bound_socket() as sock:
        port = sock.getsockname()[1]
    running: list[asyncio.subprocess.Process] = []
    with MockOpenAIServer(responder=responder(threading.Event())) as model:
        env = {
            **os.environ,
            "SWARMCORE_TEST_API_BASE": model.url,
            "SWARMCORE_TEST_MARKER": str(marker),
            "SWARMCORE_TEST_APPROVAL": "1",
        }
        try:
            first = await server(url, port, env)
            running.append(first)
            plan = {
                "url": f"http://127.0.0.1:{port}/",
                "task": "write the answer",
                "answers": [{"approved": True}],
                "holdBeforeResume": True,
            }
            client = await asyncio.create_subprocess_exec(
                node,
                str(JS / "drive.mjs"),
                json.dumps(plan),
                cwd=JS,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            running.append(client)
            assert client.stdout is not None
            assert client.stdin is not None
            held = json.loads(await line_of(client.stdout, "the interrupt"))
            [interrupt] = held["holding"]
            run_id, _, call_id = interrupt["id"].partition("/")
            assert interrupt["metadata"]["swarmcore"] == {
                "agent": "a",
                "tool": "mark",
                "run": run_id,
                "call": call_id,
            }
            assert interrupt["toolCallId"] == call_id
            assert not marker.exists()  # nothing runs before the answer

            first.kill()  # SIGKILL while the run waits for the answer
            await first.wait()
            second = await server(url, port, env)  # recovers the run, still waiting
            running.append(second)
            client.stdin.write(b"resume\n")  # the same client answers, to the new process
            await client.stdin.drain()
            out, err = await asyncio.wait_for(client.communicate(), WAIT)
            assert client.returncode == 0, err.decode()
        finally:
            for process in running:
                if process.returncode is None:
                    process.kill()
                await process.wait()

    driven: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    paused, resumed = driven["runs"]
    for run in (paused, resumed):
        for event in run["events"]:
            EVENTS.validate_python(event)
        assert_valid_agui(run["events"])
    assert paused["events"][-1]["outcome"]["type"] == "interrupt"
    # The resumed AG-UI run streams the rest live from the new process: the call runs
    # (its result), b speaks, and the run finishes with its output.
    events = resumed["events"]
    assert types(events)[0] == "RUN_STARTED"
    [result] = named(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (call_id, "marked")
    said = {e["name"] for e in named(events, "TEXT_MESSAGE_START")}
    assert "b" in said
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "success"}
    assert events[-1]["result"] == {"output": "b wrote the answer"}
    assert driven["pendingInterrupts"] == []
    assert driven["state"]["context"]["b"]["output"] == "b wrote the answer"
    # The tool ran once, and a's first model call (before the kill) was not made again.
    assert marker.read_text().splitlines() == ["a's side effect"]
    assert who_asked(model) == {"a": 2, "b": 1}


async def test_a_denied_call_in_a_durable_run_is_decided_through_the_engine(
    node: str, postgres: TemporaryPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARMCORE_TEST_APPROVAL", "1")  # a's tool requires approval
    marker = tmp_path / "marks.txt"
    engine = DBOSEngine(postgres.new_database(), worker_id="agui-deny")
    try:
        with MockOpenAIServer(responder=responder(threading.Event())) as model:
            swarm = Swarm(build(model.url, marker), engine=engine)
            with serve(swarm.to_ag_ui()) as url:
                driven = await drive(
                    node, url, "write the answer", answers=[{"approved": False, "reason": "no"}]
                )
        paused, resumed = driven["runs"]
        [interrupt] = paused["events"][-1]["outcome"]["interrupts"]
        run_id, _, call_id = interrupt["id"].partition("/")
        [result] = named(resumed["events"], "TOOL_CALL_RESULT")
        assert result["toolCallId"] == call_id
        assert "denied" in result["content"]
        assert "no" in result["content"]
        assert resumed["events"][-1]["outcome"] == {"type": "success"}
        assert not marker.exists()  # denied: never ran
        # The run ended in the engine as it did here: recorded, not cancelled by the server.
        handle = await engine.handle(run_id)
        assert await handle.status() == "SUCCESS"
        assert await swarm.pending_approvals(run_id) == []
    finally:
        await engine.shutdown()
