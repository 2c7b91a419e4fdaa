"""TemporaryPostgres: a real server on 127.0.0.1 that leaves nothing behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from swarmcore.testing import PostgresNotFound, TemporaryPostgres


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_the_session_server_listens_on_loopback_and_names_fresh_databases(
    postgres: TemporaryPostgres,
) -> None:
    assert accepts(postgres.port)
    assert postgres.url == f"postgresql://postgres@127.0.0.1:{postgres.port}/postgres"
    first, second = postgres.new_database(), postgres.new_database()
    assert first != second
    assert first.startswith(f"postgresql://postgres@127.0.0.1:{postgres.port}/test_")
    assert postgres.new_database("mine").endswith("/mine")


def test_a_server_stops_and_removes_its_folder(postgres: TemporaryPostgres) -> None:
    with TemporaryPostgres() as server:
        port, folder = server.port, server.folder
        assert port != postgres.port
        assert accepts(port)
        assert folder is not None
        assert (folder / "data" / "postmaster.pid").exists()
    assert not accepts(port)
    assert not folder.exists()
    assert server.folder is None
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url


def test_a_folder_without_binaries_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(PostgresNotFound, match=str(tmp_path)):
        TemporaryPostgres(tmp_path).start()
