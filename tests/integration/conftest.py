"""Fixtures shared by the integration tests."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
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
