"""Shared builders for tests."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

from swarmcore import Agent, Swarm
from swarmcore.mcp import MCPServer
from swarmcore.modes import Recipient
from swarmcore.testing import Call, FunctionModel, RecordedRequest, Reply, ScriptedModel

ANYONE = Recipient("reader", "Read the context.", "A task.")
"""A recipient for preparing a mode's context where who reads it does not matter."""

QUICK_EXIT = "\nimport gc\ngc.freeze()\n"
"""Ends a ``python -c`` script whose checks are done: frozen, the heap is not collected at
exit, which spares seconds per process that loaded LiteLLM (its objects, pydantic's)."""


def echo_model(delays: dict[str, float] | None = None) -> FunctionModel:
    """Answers '<first word of instructions> done' with a summary; optional delay per agent."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        delay = (delays or {}).get(who, 0.0)
        return Reply(text=f"{who} output\n<summary>{who} summary</summary>", delay=delay)

    return FunctionModel(answer)


def agents(model: str, *names: str) -> list[Agent]:
    """Agents whose instructions start with their own name (FunctionModels key on it)."""
    return [Agent(n, f"{n} does its part.", model=model) for n in names]


def rendezvous_model(count: int, text: str = "done") -> tuple[FunctionModel, list[str]]:
    """A model that answers only once ``count`` calls are in flight at the same time.

    Calls that ran one after another would wait forever, so the 5 s timeout
    turns "not parallel" into a failure. Returns the model and the list of
    agents (first word of instructions) in arrival order.
    """
    arrived: list[str] = []
    everyone = asyncio.Event()

    async def answer(request: RecordedRequest) -> Reply:
        arrived.append(request.system.split()[0])
        if len(arrived) == count:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return Reply(text=text)

    return FunctionModel(answer), arrived


_LEGEND = re.compile(r"are framed <output .*? with ID ([0-9a-f]+):")


class Frame(NamedTuple):
    """One agent's words as swarmcore framed them in a prompt or a tool result."""

    agent: str
    kind: str | None
    words: str
    start: int
    end: int
    passage: str | None = None
    """Where the words sit in the agent's output (auto mode: ``"3/7"``); None: all of it."""


def nonce_of(prompt: str) -> str:
    """The frames' id that the (first) context legend in ``prompt`` announces."""
    found = _LEGEND.search(prompt)
    assert found, f"no context legend in: {prompt[:300]!r}"
    return found.group(1)


def frames(text: str, nonce: str | None = None) -> list[Frame]:
    """The frames in ``text``, read as a model is told to: by the real nonce only.

    ``nonce`` defaults to the one ``text``'s own legend announces (tool results
    carry none: pass the system prompt's).
    """
    nonce = nonce or nonce_of(text)
    opening = re.compile(
        rf'<output agent="([^"]*)"(?: kind="([^"]*)")?(?: passage="([^"]*)")? id="{nonce}">\n?'
    )
    closing = re.compile(rf'\n?</output id="{nonce}">')
    found: list[Frame] = []
    pos = 0
    while (start := opening.search(text, pos)) is not None:
        end = closing.search(text, start.end())
        assert end, f"frame of {start.group(1)!r} never closes"
        words = text[start.end() : end.start()]
        found.append(
            Frame(start.group(1), start.group(2), words, start.start(), end.end(), start.group(3))
        )
        pos = end.end()
    return found


def framed(text: str, nonce: str | None = None) -> list[tuple[str, str | None, str]]:
    """(agent, kind, words) of each frame in ``text``, in order."""
    return [(f.agent, f.kind, f.words) for f in frames(text, nonce)]


def summarised(text: str) -> list[str]:
    """The agents whose frames in ``text`` hold only a summary."""
    return [f.agent for f in frames(text) if f.kind == "summary"]


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served from a thread on a free port of 127.0.0.1: yields its base URL.

    Polled every 50 ms for shutdown: at socketserver's default (0.5 s), every test
    that stops a server waits half a second for it.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def script_server(
    script: object, *args: str, env: Mapping[str, str] | None = None, path: str = "/mcp"
) -> Iterator[str]:
    """A server script run in a subprocess, which prints its port first: its URL, then stopped.

    The script listens on 127.0.0.1 (the MCP test servers take ``http`` or a token as
    their argument); ``env`` replaces the subprocess's environment when given.
    """
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(env) if env is not None else None,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip().isdigit(), f"the server did not start (output {line!r})"
        yield f"http://127.0.0.1:{int(line)}{path}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


ELICITING_SERVER = Path(__file__).parent / "integration" / "_mcp_elicit_server.py"
"""An MCP server built on the official SDK whose tools ask the client questions."""


def desk_flow(tool: str, arguments: dict[str, Any], bookings: Path) -> tuple[Swarm, ScriptedModel]:
    """A one-agent flow calling ``tool`` of the eliciting server over stdio, and its model.

    The test holds the model: a scripted model lives while it is referenced.
    """
    desk = MCPServer.stdio(
        sys.executable,
        [str(ELICITING_SERVER), "stdio"],
        env={"MCP_TEST_BOOKINGS": str(bookings)},
        name="desk",
    )
    model = ScriptedModel([Reply(tool_calls=[Call(tool, arguments)]), Reply(text="done")])
    return Swarm(Agent("clerk", "Book rooms.", model=model.model, tools=[desk])), model
