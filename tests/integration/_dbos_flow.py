"""The flow the DBOS engine tests run across processes, and a process to run or recover it.

``a >> b`` on an OpenAI-compatible server (the tests' ``MockOpenAIServer``):
``a`` may call the tool ``mark``, which appends a line to a marker file (a side
effect a test counts). ``flow`` is built from ``$SWARMCORE_TEST_API_BASE`` and
``$SWARMCORE_TEST_MARKER``, for ``swarmcore worker _dbos_flow.py:flow``.

As a script: ``python _dbos_flow.py run|recover DATABASE_URL WORKER_ID RUN_ID``
runs the flow on a ``DBOSEngine`` under ``RUN_ID`` (``run``), or launches the
engine with ``WORKER_ID`` and waits for the run ``RUN_ID`` to end (``recover``),
then prints each agent's output as JSON on stdout.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

from swarmcore import Agent, Flow, Swarm, function_tool
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.mcp import MCPServer


def build(api_base: str, marker: Path) -> Flow:
    """``a >> b`` on the server at ``api_base``; ``a``'s tool ``mark`` writes to ``marker``."""

    def mark(note: str) -> str:
        """Record that the side effect happened."""
        with marker.open("a") as file:
            file.write(f"{note}\n")
        return "marked"

    server: dict[str, Any] = {
        "model": "openai/test-model",
        "api_base": api_base,
        "api_key": "sk-test-local",
        # SWARMCORE_TEST_API=responses: both agents speak OpenAI's Responses API.
        "api": os.environ.get("SWARMCORE_TEST_API") or None,
    }
    # SWARMCORE_TEST_APPROVAL=1: ``mark`` waits for a decision (swarmcore runs approve).
    approval = os.environ.get("SWARMCORE_TEST_APPROVAL") == "1"
    tools: list[Any] = [function_tool(mark, requires_approval=approval)]
    # SWARMCORE_TEST_MCP=path: a also has that MCP server's tools (run over stdio).
    mcp_server = os.environ.get("SWARMCORE_TEST_MCP")
    if mcp_server:
        tools.append(MCPServer.stdio(sys.executable, [mcp_server, "stdio"], env=dict(os.environ)))
    # SWARMCORE_TEST_MCP_URL=url: a also has the tools of the MCP server at that URL.
    mcp_url = os.environ.get("SWARMCORE_TEST_MCP_URL")
    if mcp_url:
        tools.append(MCPServer.http(mcp_url, name="works"))
    a = Agent("a", "a gathers the facts.", tools=tools, **server)
    # SWARMCORE_TEST_VARIANT=2: b's instructions differ, so the flow has another version.
    variant = os.environ.get("SWARMCORE_TEST_VARIANT") == "2"
    b = Agent("b", "b writes the answer." + (" Briefly." if variant else ""), **server)
    return a >> b


flow = build(
    os.environ.get("SWARMCORE_TEST_API_BASE", "http://127.0.0.1:9/v1"),
    Path(os.environ.get("SWARMCORE_TEST_MARKER", os.devnull)),
)


async def main(mode: str, url: str, worker_id: str, run_id: str) -> None:
    engine = DBOSEngine(url, worker_id=worker_id)
    swarm = Swarm(flow, engine=engine)
    try:
        if mode == "run":
            result = await swarm.run("write the answer", run_id=run_id)
        else:
            await engine.launch()  # recovers the runs this worker id left in flight
            result = await (await engine.handle(run_id)).result()
    finally:
        await engine.shutdown()
    print(json.dumps(result.context), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
    gc.freeze()  # spares the exit a collection of every module's objects (seconds)
