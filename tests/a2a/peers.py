"""A2A peers of another framework: pydantic-ai agents served by FastA2A, and FastA2A's clients.

FastA2A 2.1.1 (A2A 1.0, with its own JSON-RPC dialect for 0.3 method names) is
a dev dependency and runs in process. FastA2A 0.6.1 (the A2A 0.3 era) cannot
share that environment, so it lives in ``.peers/fasta2a-06`` (built by
.ci/run) and runs as a subprocess: the ``fasta2a_06`` fixture (tests/conftest.py)
gives its Python, or skips where it is missing (fails in CI).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from fasta2a.pydantic_ai import agent_to_a2a
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from tests.serving import bound_socket, serve

HERE = Path(__file__).parent


@contextmanager
def fasta2a_agent(text: str) -> Generator[str]:
    """A pydantic-ai agent answering ``text`` (offline TestModel), served by FastA2A 2.1.1."""
    sock = bound_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    agent = Agent(TestModel(custom_output_text=text), name="pydantic-agent")
    with serve(agent_to_a2a(agent, url=url), sock=sock, lifespan="on"):
        yield url


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def fasta2a_06_agent(python: Path, text: str) -> Generator[str]:
    """The same agent served by FastA2A 0.6.1, in its own environment; yields its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(python), str(HERE / "fasta2a_06_agent.py"), str(port), text],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"FastA2A 0.6.1's server stopped: {process.stderr.read()}")  # pyright: ignore[reportOptionalMemberAccess]
            try:
                if httpx.get(f"{url}/.well-known/agent-card.json").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("FastA2A 0.6.1's server did not start within 60 s")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def fasta2a_06_send(python: Path, url: str, text: str) -> dict[str, Any]:
    """FastA2A 0.6.1's client sends ``text`` to ``url``; its last JSON-RPC answer."""
    done = subprocess.run(
        [str(python), str(HERE / "fasta2a_06_client.py"), url, text],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
