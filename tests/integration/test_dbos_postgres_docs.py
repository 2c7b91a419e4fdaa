"""The commands docs/scaling-out.md gives to start PostgreSQL work, as printed.

Each block (as a normal user, and as root) runs in bash with only its port and
folders moved (a free port, a temporary folder), then a durable run goes through
the URL it exports, creating its database on first use as the page says. As
root, the normal user's block runs as the ``postgres`` user.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmcore import Agent, Swarm
from swarmcore.testing import offline_model

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scaling-out.md"
BLOCK = re.compile(r"<!-- postgres: (?P<who>\w+) -->\s*```bash\n(?P<code>.*?)```", re.S)
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def blocks() -> dict[str, str]:
    return {m["who"]: m["code"] for m in BLOCK.finditer(PAGE.read_text())}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder the ``postgres`` user can reach too (pytest's tmp_path is root's only)."""
    made = Path(tempfile.mkdtemp(prefix="swarmcore-docs-pg-"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if ROOT else command


def start(code: str, folder: Path, *, home: Path | None) -> tuple[str, Path]:
    """Run a block with its port and folders moved; returns its URL and data folder."""
    port = free_port()
    code = code.replace("5432", str(port)).replace("/var/lib/swarmcore-pg", str(folder / "pg"))
    bindir = re.search(r"^PG=(\S+)$", code, re.M)
    assert bindir, code
    if not Path(bindir[1], "initdb").is_file():
        pytest.skip(f"no PostgreSQL where the page says: {bindir[1]}")
    script = f'set -euo pipefail\n{code}\necho "URL=$SWARMCORE_DATABASE_URL"\n'
    command = ["bash", "-c", script]
    if home is not None:
        command = as_postgres(["env", f"HOME={home}", *command])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    url = re.search(r"^URL=(\S+)$", done.stdout, re.M)
    assert url, done.stdout
    data = home / "swarmcore-pg" if home is not None else folder / "pg" / "data"
    return url[1], data


def stop(data: Path) -> None:
    pg_ctl = "/usr/lib/postgresql/15/bin/pg_ctl"
    subprocess.run(
        as_postgres([pg_ctl, "stop", "-m", "immediate", "-w", "-D", str(data)]),
        capture_output=True,
        timeout=60,
        check=False,
    )


async def durable_run(url: str) -> str:
    from swarmcore.engines.dbos import DBOSEngine

    engine = DBOSEngine(url)
    try:
        swarm = Swarm(Agent("a", "a answers.", model=offline_model()), engine=engine)
        return (await swarm.run("is the database there?")).output
    finally:
        await engine.shutdown()


@pytest.mark.parametrize("who", ["user", "root"])
async def test_the_pages_postgresql_commands_start_a_server_swarmcore_runs_on(
    who: str, folder: Path
) -> None:
    code = blocks()[who]
    if who == "root" and not ROOT:
        pytest.skip("the root commands need root")
    home = None
    if who == "user":  # as root, the normal user is postgres (initdb refuses root)
        home = folder / "home"
        home.mkdir()
        if ROOT:
            shutil.chown(home, "postgres", "postgres")
    url, data = start(code, folder, home=home)
    try:
        assert url.startswith("postgresql://postgres@127.0.0.1:")
        assert url.endswith("/swarmcore")
        assert await durable_run(url)  # the swarmcore database made on first use
    finally:
        stop(data)


def test_as_root_initdb_refuses_as_the_page_says(folder: Path) -> None:
    if not ROOT:
        pytest.skip("needs root")
    initdb = "/usr/lib/postgresql/15/bin/initdb"
    if not Path(initdb).is_file():
        pytest.skip("no PostgreSQL 15 where the page says")
    done = subprocess.run(
        [initdb, "-D", str(folder / "data")], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "initdb: error: cannot be run as root" in done.stderr
    assert "(`initdb: error: cannot be run as root`)" in PAGE.read_text()
