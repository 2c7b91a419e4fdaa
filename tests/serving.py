"""A real server for tests: uvicorn on 127.0.0.1, a free port, in a thread; or a CLI's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import uvicorn
from starlette.types import ASGIApp


def bound_socket() -> socket.socket:
    """A socket bound to a free loopback port (for an app that must know its URL first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def serve(
    app: ASGIApp,
    *,
    sock: socket.socket | None = None,
    lifespan: Literal["auto", "on", "off"] = "auto",
    grace: float = 2.0,
) -> Generator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://127.0.0.1:PORT``).

    Args:
        app: The ASGI app.
        sock: A socket from :func:`bound_socket`; a new one by default.
        lifespan: Whether to run the app's lifespan (uvicorn's setting).
        grace: Seconds to wait for open requests (an event stream, a hanging
            task) at the end before closing them.
    """
    sock = sock or bound_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan=lifespan,
        timeout_graceful_shutdown=grace,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@contextmanager
def serving_command(*args: str, cwd: Path | None = None) -> Generator[str]:
    """``python -m swarmcore.cli ARGS`` as a process of its own; yields the line it prints first.

    A serving command prints its URL once it listens; the process is terminated
    and reaped when the block ends, whatever happened in it.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "swarmcore.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
