"""A throwaway PostgreSQL server for tests of the durable engine: real, local, on 127.0.0.1."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Self

_START_TIMEOUT = 60.0


class PostgresNotFound(RuntimeError):
    """No PostgreSQL server binaries (``initdb``, ``pg_ctl``, ``postgres``) on this machine."""


def find_postgres_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None if none does.

    Looks, in order, in ``$SWARMCORE_PG_BINDIR``, ``pg_config --bindir``,
    ``/usr/lib/postgresql/<version>/bin`` (newest first), and ``PATH``.
    """
    candidates: list[Path] = []
    if configured := os.environ.get("SWARMCORE_PG_BINDIR"):
        candidates.append(Path(configured))
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            candidates.append(Path(out))
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: _version_key(Path(p).parent.name),
        reverse=True,
    )
    candidates.extend(Path(p) for p in versions)
    on_path = shutil.which("initdb")
    if on_path is not None:
        candidates.append(Path(on_path).resolve().parent)
    for folder in candidates:
        if all((folder / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _version_key(name: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in name.split("."))
    except ValueError:
        return (0,)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class TemporaryPostgres:
    """A PostgreSQL server of its own in a temporary folder, on a free 127.0.0.1 port.

    ``start()`` runs ``initdb`` (trust authentication, user ``postgres``) and
    ``pg_ctl start`` with the socket in the same folder and durability settings
    off (a test server needs speed, not crash safety), and waits until the server
    accepts connections. ``stop()`` stops it at once and deletes the folder.
    PostgreSQL refuses to run as root, so as root the folder is given to the
    ``postgres`` user and the server runs as it (``runuser -u postgres``).

    ```python
    with TemporaryPostgres() as pg:
        url = pg.new_database()  # a durable engine creates it on first use
    ```

    Args:
        bindir: The folder with ``initdb`` and ``pg_ctl``; found when None
            (see :func:`find_postgres_bindir`).
        user: The operating-system user to run the server as when running as
            root.

    Raises:
        PostgresNotFound: No PostgreSQL binaries were found (on ``start()``).
    """

    def __init__(self, bindir: str | Path | None = None, *, user: str = "postgres") -> None:
        self._bindir = Path(bindir) if bindir is not None else None
        self._user = user
        self._folder: Path | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The TCP port the server listens on (127.0.0.1 only)."""
        if self._port is None:
            raise RuntimeError("TemporaryPostgres is not running; call start() first.")
        return self._port

    @property
    def folder(self) -> Path | None:
        """The temporary folder with the cluster, its socket and its log; None when stopped."""
        return self._folder

    @property
    def url(self) -> str:
        """The URL of the ``postgres`` database: ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        """The URL of ``database`` on this server (which need not exist yet)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, name: str | None = None) -> str:
        """A URL for a database that nothing has used yet: ``name``, or a fresh name.

        The database is not created: a durable engine creates its database when
        it is missing. A fresh name per test keeps state from leaking between tests.
        """
        return self.url_for(name or f"test_{uuid.uuid4().hex[:16]}")

    def start(self) -> Self:
        """Create the cluster and start the server; returns once it accepts connections."""
        if self._folder is not None:
            return self
        bindir = self._bindir or find_postgres_bindir()
        if bindir is not None and not all((bindir / t).is_file() for t in ("initdb", "pg_ctl")):
            raise PostgresNotFound(f"No PostgreSQL initdb and pg_ctl in {bindir}.")
        if bindir is None:
            raise PostgresNotFound(
                "No PostgreSQL server binaries (initdb, pg_ctl, postgres) found in "
                "$SWARMCORE_PG_BINDIR, `pg_config --bindir`, /usr/lib/postgresql/*/bin or "
                "PATH. Install PostgreSQL (Debian: apt-get install postgresql-15)."
            )
        folder = Path(tempfile.mkdtemp(prefix="swarmcore-pg-"))
        self._folder = folder
        try:
            self._as_owner(folder)
            data = folder / "data"
            initdb = ["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"]
            self._run([str(bindir / "initdb"), "-D", str(data), *initdb], "initdb")
            for attempt in range(3):  # another process may take the free port first
                port = _free_port()
                options = (
                    f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
                )
                try:
                    log = str(folder / "server.log")
                    wait = ["-w", "-t", str(int(_START_TIMEOUT))]
                    command = [str(bindir / "pg_ctl"), "start", *wait, "-D", str(data)]
                    self._run([*command, "-l", log, "-o", options], "pg_ctl start")
                except RuntimeError:
                    if attempt == 2:
                        raise
                    continue
                self._port = port
                break
            self._wait_until_accepting()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server immediately (if running) and delete its folder."""
        folder, self._folder = self._folder, None
        self._port = None
        if folder is None:
            return
        bindir = self._bindir or find_postgres_bindir()
        data = folder / "data"
        if bindir is not None and (data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self._run(
                    [str(bindir / "pg_ctl"), "stop", "-m", "immediate", "-w", "-D", str(data)],
                    "pg_ctl stop",
                )
        shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"127.0.0.1:{self._port}" if self._port is not None else "not running"
        return f"TemporaryPostgres({where})"

    # --- running the binaries, as the postgres user when we are root ---------------

    def _root(self) -> bool:
        return hasattr(os, "geteuid") and os.geteuid() == 0

    def _as_owner(self, folder: Path) -> None:
        if self._root():
            try:
                shutil.chown(folder, user=self._user, group=None)
            except (LookupError, OSError) as error:
                raise PostgresNotFound(
                    f"PostgreSQL refuses to run as root, and the user {self._user!r} to run "
                    f"it as is missing or cannot own {folder}: {error}"
                ) from error

    def _run(self, command: list[str], what: str) -> None:
        if self._root():
            runuser = shutil.which("runuser")
            if runuser is None:
                raise PostgresNotFound(
                    "PostgreSQL refuses to run as root, and `runuser` (util-linux) is missing."
                )
            command = [runuser, "-u", self._user, "--", *command]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=_START_TIMEOUT + 30,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(f"{what} did not finish in time: {error}") from error
        if done.returncode != 0:
            log = ""
            if self._folder is not None and (self._folder / "server.log").exists():
                log = (self._folder / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(
                f"{what} failed with exit code {done.returncode}:\n{done.stdout}{done.stderr}{log}"
            )

    def _wait_until_accepting(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"PostgreSQL did not accept connections on 127.0.0.1:{self.port}"
                    ) from None
                time.sleep(0.05)
