"""The built-in run store: one SQLite file, no setup.

Durability and concurrency come from SQLite itself: WAL journaling (readers
never block the writer), ``synchronous=NORMAL`` (a commit survives the process
being killed), a busy timeout instead of "database is locked", and short
``BEGIN IMMEDIATE`` transactions, one per write. Many runs in one process share
the connection under a lock; runs in other processes open their own. Each
agent result is stored once, as a row of its own: nothing repeats the history
of the run before it.

The schema carries a version in ``meta`` and migrates forward on open.

Every failure names the file and what to do, as a
:class:`~swarmcore.errors.StoreError`: a path that cannot hold a store (a
folder, a path under a file, an unwritable place, an empty file), a damaged
file (a bad schema version, a missing table, corrupt pages), a failed write (a
full disk), and a row that no longer reads as a run.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from swarmcore._checks import check_number, check_run_id
from swarmcore.errors import StoreError, UserError
from swarmcore.results import AgentFailure, AgentResult, Decision
from swarmcore.store import _listing
from swarmcore.store._base import RunListing, RunMark, RunRecord, RunStatus, RunSummary
from swarmcore.store._location import check_location

logger = logging.getLogger("swarmcore.store")

_MAX_INT = 2**63 - 1
"""SQLite's largest integer: a bigger limit means "all" anyway."""
_TABLES = ("runs", "agents", "decisions")

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: runs and their agents
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            flow TEXT NOT NULL,
            shape TEXT NOT NULL,
            task TEXT NOT NULL,
            status TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            error TEXT,
            settings TEXT NOT NULL,
            agents_total INTEGER NOT NULL
        )""",
        "CREATE INDEX runs_started ON runs (started_at)",
        """CREATE TABLE agents (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            agent_name TEXT NOT NULL,
            status TEXT NOT NULL,
            body TEXT NOT NULL,
            finished_at REAL NOT NULL,
            PRIMARY KEY (run_id, agent_name)
        )""",
    ),
    (  # 2: find unfinished runs quickly
        "CREATE INDEX runs_status ON runs (status, started_at)",
    ),
    (  # 3: routes, loops and plans
        """CREATE TABLE decisions (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            body TEXT NOT NULL,
            made_at REAL NOT NULL
        )""",
        "CREATE INDEX decisions_run ON decisions (run_id, seq)",
    ),
    (  # 4: pages of runs in a stable order (see _listing), with or without a status
        "DROP INDEX runs_started",
        "DROP INDEX runs_status",
        "CREATE INDEX runs_order ON runs (started_at, run_id)",
        "CREATE INDEX runs_status_order ON runs (status, started_at, run_id)",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
"""The schema version this release writes."""


class SQLiteStore:
    """A :class:`~swarmcore.store.RunStore` in one SQLite file.

    Args:
        path: The database file; created (with its directory) when missing.
        keep_last: Retention: after each run starts, finished runs beyond the
            newest ``keep_last`` are deleted. None keeps every run.
        keep_days: Retention: finished runs older than this many days are
            deleted when a run starts. None keeps them.

    Raises:
        StoreError: The path cannot hold a store (a folder, a path under a
            file, an unwritable place, an empty file), the file is not a
            swarmcore store or is damaged, or it was written by a newer
            swarmcore whose schema this one cannot read.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        keep_last: int | None = None,
        keep_days: float | None = None,
    ) -> None:
        check_number(
            "SQLiteStore", "keep_last", keep_last, whole=True, zero=True, none="keep every run"
        )
        check_number("SQLiteStore", "keep_days", keep_days, zero=True, none="keep every run")
        self.path = Path(path)
        self.keep_last = keep_last
        self.keep_days = keep_days
        self._lock = threading.RLock()
        check_location(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise self._failure(exc, "open") from exc
        try:
            self._open()
        except sqlite3.Error as exc:
            self._db.close()
            raise self._failure(exc, "open") from exc
        except BaseException:  # a damaged file, an interrupt: do not leak the connection
            self._db.close()
            raise

    def _open(self) -> None:
        """Settings and schema, retried while other processes hold the file.

        Several processes opening a new file at once race to switch it to WAL
        and create the schema; SQLite can answer "database is locked" at once
        there, without waiting on its busy timeout, so the attempt is repeated
        (for up to 30 s) rather than failing.
        """
        deadline = time.monotonic() + 30.0
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("PRAGMA busy_timeout=30000")
                self._db.execute("PRAGMA foreign_keys=ON")
                self._migrate()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    # --- writes ----------------------------------------------------------------------

    def start_run(self, record: RunRecord) -> None:
        """Record a new run, or mark a stored one running again (a resume).

        A resume keeps how the attempt before it ended (its status, error and
        failed agents, which its results may replace) in the run's settings
        under ``"earlier"``, read back as :attr:`RunRecord.earlier`.
        """
        with self._write() as db:
            self._keep_earlier(db, record)
            db.execute(
                """INSERT INTO runs (run_id, flow, shape, task, status, started_at, ended_at,
                                     error, settings, agents_total)
                   VALUES (?, ?, ?, ?, 'running', ?, NULL, NULL, ?, ?)
                   ON CONFLICT (run_id) DO UPDATE
                   SET status = 'running', ended_at = NULL, error = NULL""",
                (
                    record.run_id,
                    record.flow,
                    record.shape,
                    record.task,
                    record.started_at,
                    json.dumps(record.settings),
                    record.agents_total,
                ),
            )
        if self.keep_last is not None or self.keep_days is not None:
            older = None if self.keep_days is None else self.keep_days * 86_400
            self.prune(keep_last=self.keep_last, older_than=older)

    def _keep_earlier(self, db: sqlite3.Connection, record: RunRecord) -> None:
        """Before a resume overwrites them, add the run's status and failures to its history."""
        was = db.execute(
            "SELECT status, error, ended_at, settings FROM runs WHERE run_id = ?",
            (record.run_id,),
        ).fetchone()
        if was is None:  # a new run
            return
        status, error, ended_at, stored = was
        try:
            settings = json.loads(stored)
            earlier = settings.setdefault(_listing.EARLIER, [])
        except (ValueError, AttributeError):  # damaged settings: get_run says so
            return
        failed = db.execute(
            "SELECT body FROM agents WHERE run_id = ? AND status = 'failed' ORDER BY finished_at",
            (record.run_id,),
        ).fetchall()
        earlier.append(
            {
                "status": status,
                "error": error,
                "ended_at": ended_at,
                "resumed_at": record.started_at,
                "failures": [json.loads(body) for (body,) in failed],
            }
        )
        db.execute(
            "UPDATE runs SET settings = ? WHERE run_id = ?", (json.dumps(settings), record.run_id)
        )

    def save_result(self, run_id: str, result: AgentResult) -> None:
        """Store one finished agent's result (replacing an earlier failure)."""
        self._save_agent(run_id, result.agent_name, "done", result.model_dump_json())

    def save_failure(self, run_id: str, failure: AgentFailure) -> None:
        """Store why an agent failed (never over a stored result)."""
        with self._write() as db:
            db.execute(
                """INSERT INTO agents (run_id, agent_name, status, body, finished_at)
                   VALUES (?, ?, 'failed', ?, ?)
                   ON CONFLICT (run_id, agent_name) DO UPDATE
                   SET body = excluded.body, finished_at = excluded.finished_at
                   WHERE agents.status = 'failed'""",
                (run_id, failure.agent_name, failure.model_dump_json(), time.time()),
            )

    def _save_agent(self, run_id: str, name: str, status: str, body: str) -> None:
        with self._write() as db:
            db.execute(
                """INSERT INTO agents (run_id, agent_name, status, body, finished_at)
                   VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (run_id, agent_name) DO UPDATE
                   SET status = excluded.status, body = excluded.body,
                       finished_at = excluded.finished_at""",
                (run_id, name, status, body, time.time()),
            )

    def save_decision(self, run_id: str, decision: Decision) -> None:
        """Store a choice made at a route, loop or plan."""
        with self._write() as db:
            db.execute(
                "INSERT INTO decisions (run_id, body, made_at) VALUES (?, ?, ?)",
                (run_id, decision.model_dump_json(), time.time()),
            )

    def finish_run(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        """Mark a run ended."""
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status = ?, ended_at = ?, error = ? WHERE run_id = ?",
                (status, time.time(), error, run_id),
            )

    def prune(self, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete finished runs beyond the newest ``keep_last``, or older than ``older_than`` s.

        Runs still marked ``running`` are kept: they may be resumed.

        Returns:
            How many runs were deleted.
        """
        check_number("prune", "keep_last", keep_last, whole=True, zero=True, none="no count limit")
        check_number("prune", "older_than", older_than, zero=True, none="no age limit")
        deleted = 0
        with self._write() as db:
            if older_than is not None:
                cursor = db.execute(
                    "DELETE FROM runs WHERE status != 'running' AND started_at < ?",
                    (time.time() - older_than,),
                )
                deleted += cursor.rowcount
            if keep_last is not None:
                cursor = db.execute(
                    """DELETE FROM runs WHERE status != 'running' AND run_id NOT IN (
                           SELECT run_id FROM runs ORDER BY started_at DESC LIMIT ?)""",
                    (min(max(keep_last, 0), _MAX_INT),),
                )
                deleted += cursor.rowcount
        return deleted

    # --- reads -----------------------------------------------------------------------

    def get_run(self, run_id: str) -> RunRecord | None:
        """The stored run; a unique prefix of its id works too.

        A whole id names its run even when it also begins another run's id;
        an empty id names none.

        Raises:
            UserError: The prefix matches more than one run, or the id is too long
                to be a run id.
            StoreError: The file or the run's rows are damaged.
        """
        check_run_id(run_id, lookup=True)
        if not run_id:
            return None
        with self._read():
            rows = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchall()
            if not rows:
                # A range on the primary key, not LIKE: the index finds a prefix at once,
                # where LIKE scans every run (each new run asks for its id first).
                rows = self._db.execute(
                    "SELECT * FROM runs WHERE run_id > ? AND run_id < ? LIMIT 2",
                    (run_id, run_id + "\U0010ffff"),
                ).fetchall()
            if len(rows) > 1:
                raise UserError(f"Run id prefix {run_id!r} matches several runs; give more of it.")
            if not rows:
                return None
            run = _listing.run_row(rows[0])
            agents = self._db.execute(
                "SELECT status, body FROM agents WHERE run_id = ? ORDER BY finished_at",
                (run["run_id"],),
            ).fetchall()
            decided = self._db.execute(
                "SELECT body FROM decisions WHERE run_id = ? ORDER BY seq", (run["run_id"],)
            ).fetchall()
        try:
            return _listing.record(run, agents, decided)
        except (ValueError, TypeError) as exc:  # pydantic's and json's errors are ValueErrors
            why = _listing.why(exc)
            raise StoreError(
                f"Run {run['run_id']} in the run store {self.path} is damaged ({why}); "
                "it cannot be shown or resumed: run its task again.",
                path=str(self.path),
            ) from exc

    def run_mark(self, run_id: str) -> RunMark | None:
        """A cheap sign of the run's progress, for a viewer that follows it (a :class:`RunMarks`).

        It changes when the run's status does or an agent's result, failure or a
        decision is stored; no result is parsed.
        """
        with self._read() as db:
            row = db.execute(_listing.MARK, (run_id,)).fetchone()
        return None if row is None else _listing.run_mark(row)

    def list_runs(self, *, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first; damaged rows are skipped with a logged warning.

        Raises:
            StoreError: The file is damaged.
        """
        listing = self.read_runs(limit=limit)
        if listing.unreadable:
            logger.warning(
                "skipped %d unreadable run(s) in %s: %s",
                len(listing.unreadable),
                self.path,
                ", ".join(listing.unreadable),
            )
        return listing.runs

    def read_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        text: str | None = None,
        before: tuple[float, str] | None = None,
    ) -> RunListing:
        """A page of runs, newest first (by start time, then id), and the damaged rows skipped.

        Each run carries the tokens and cost of its finished agents. Every page
        costs the same, however deep: pass the listing's ``next`` as ``before``.

        Args:
            limit: The most runs on the page.
            status: Only runs with this status.
            text: Only runs whose id, flow or task holds this text (ASCII case ignored).
            before: Only runs after this cursor: the ``next`` of the previous page.

        Raises:
            UserError: A filter or the cursor is not one this method takes.
            StoreError: The file is damaged.
        """
        check_number("read_runs", "limit", limit, whole=True, zero=True)
        limit = min(limit, _MAX_INT - 1)
        sql, params = _listing.page_query(limit=limit, status=status, text=text, before=before)
        with self._read() as db:
            rows = db.execute(sql, params).fetchall()
        return _listing.decode_page(rows, limit)

    def count_runs(self, *, status: RunStatus | None = None, text: str | None = None) -> int:
        """How many runs :meth:`read_runs` pages through with these filters.

        Raises:
            UserError: A filter is not one this method takes.
            StoreError: The file is damaged.
        """
        sql, params = _listing.count_query(status=status, text=text)
        with self._read() as db:
            return int(db.execute(sql, params).fetchone()[0])

    def delete_run(self, run_id: str) -> bool:
        """Delete one finished run (its whole id) with its agents and decisions.

        Returns:
            True if it was deleted, False if there is no such run.

        Raises:
            UserError: The run is ``running``: it may be in progress or resumable;
                or the id is too long to be a run id.
            StoreError: The write failed.
        """
        check_run_id(run_id, lookup=True)
        with self._write() as db:
            row = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return False
            if row[0] == "running":
                raise UserError(
                    f"Run {run_id} is running (or its process died and it can be resumed), "
                    "so it was not deleted; let it finish, or resume it, then delete it."
                )
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return True

    # --- plumbing --------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Generator[sqlite3.Connection]:
        """One write transaction (see :meth:`_transaction`); SQLite's errors become StoreErrors."""
        try:
            with self._transaction() as db:
                yield db
        except sqlite3.Error as exc:
            raise self._failure(exc, "write to") from exc

    @contextmanager
    def _read(self) -> Generator[sqlite3.Connection]:
        """The connection, for reading; SQLite's errors become StoreErrors."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc

    def _failure(self, exc: Exception, doing: str) -> StoreError:
        """``exc`` as a StoreError naming the file, the cause and what to do."""
        text = str(exc)
        if "malformed" in text or "not a database" in text:
            advice = "it is not a swarmcore run store, or it is damaged: restore it from a "
            advice += "backup, or move it aside (or pick another path) to start a new store"
        elif "full" in text:
            advice = "free disk space, or pick another path for the store"
        elif "readonly" in text or isinstance(exc, PermissionError):
            advice = "make the file and its folder writable, or pick another path for the store"
        else:
            advice = "check the file and its folder, or pick another path for the store"
        return StoreError(
            f"Could not {doing} the run store {self.path}: {text or type(exc).__name__}; {advice}.",
            path=str(self.path),
        )

    @contextmanager
    def _transaction(self) -> Generator[sqlite3.Connection]:
        """One short write transaction, taken at once so concurrent writers queue cleanly.

        A failed statement or COMMIT rolls back (unless SQLite already did), so
        the connection is never left inside a transaction for the next write.
        """
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _migrate(self) -> None:
        with self._transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = 0 if row is None else self._version(row[0])
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer swarmcore (schema {current}; this one "
                    f"reads up to {SCHEMA_VERSION}); upgrade swarmcore or use another store.",
                    path=str(self.path),
                )
            for statements in _MIGRATIONS[current:]:
                for statement in statements:
                    db.execute(statement)
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
            for table in _TABLES:
                if table not in tables:
                    raise self._damaged(f"its table {table!r} is missing")

    def _version(self, value: object) -> int:
        """The stored schema version, which must be a whole number from 0 up."""
        try:
            version = int(str(value))
        except ValueError:
            version = -1
        if version < 0:
            raise self._damaged(f"its schema version is {value!r}, not a whole number")
        return version

    def _damaged(self, why: str) -> StoreError:
        return StoreError(
            f"The run store {self.path} is damaged: {why}; restore it from a backup, or move "
            "it aside (or pick another path) to start a new store.",
            path=str(self.path),
        )
