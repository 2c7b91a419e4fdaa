"""pytest fixtures from swarmcore.testing, installed as a pytest plugin with swarmcore."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from swarmcore.testing._postgres import TemporaryPostgres, find_postgres_bindir
from swarmcore.testing._server import MockOpenAIServer


@pytest.fixture
def mock_openai_server() -> Iterator[MockOpenAIServer]:
    """A started :class:`MockOpenAIServer` on 127.0.0.1, stopped after the test.

    Script it with ``mock_openai_server.add(Reply(...))`` and point agents at it
    with ``Agent(..., **mock_openai_server.model_kwargs)``.
    """
    with MockOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[TemporaryPostgres]:
    """A started :class:`TemporaryPostgres`, one for the whole session, stopped at its end.

    Give each test a database of its own with ``postgres.new_database()``. The
    tests that use it are skipped only where no PostgreSQL binaries exist (and
    fail instead when ``$SWARMCORE_REQUIRE_POSTGRES`` is set, as in CI).
    """
    bindir = find_postgres_bindir()
    if bindir is None:
        reason = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found via $SWARMCORE_PG_BINDIR, "
            "`pg_config --bindir`, /usr/lib/postgresql/*/bin or PATH; install PostgreSQL "
            "(Debian: apt-get install postgresql-15) to run the durable-engine tests"
        )
        if os.environ.get("SWARMCORE_REQUIRE_POSTGRES"):  # CI: never skip them
            pytest.fail(f"$SWARMCORE_REQUIRE_POSTGRES is set, but {reason}")
        pytest.skip(reason)
    with TemporaryPostgres(bindir) as server:
        yield server
