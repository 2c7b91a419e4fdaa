"""Workers watch each other: live workers adopt the runs of a worker gone silent.

Open-source DBOS recovers a dead process's workflows only when a process with
the same executor id starts again. A worker that never comes back (its machine
is gone, it was scaled down) would leave its runs pending for ever, so the
workers of a flow watch each other through one small table in the engine's
database::

    swarmcore_workers(app_name, worker_id, app_version, seen_at, adopted_by, adopted_at)

Every worker (a process launched with queues, ``swarmcore worker``) updates its
row every ``heartbeat`` seconds from a thread of its own (so a busy event loop
never makes it look dead). On the same tick it looks for a worker of its
application version (its flow version) silent for longer than ``adopt_after``
seconds and claims it with one ``UPDATE ... WHERE adopted_by IS NULL ...
RETURNING``: PostgreSQL's row lock lets exactly one live worker win. The winner
hands the dead worker's pending workflows, its runs and their agents, to a
queue only it listens to (``swarmcore-worker-<id>``) with DBOS's
``resume_workflow``; DBOS dequeues each one exactly once (ENQUEUED to PENDING
is atomic) and runs it here, replaying its recorded steps: the run's walk finds
its finished agents' results and each running agent's recorded calls, so only
the calls in flight when the worker died are made again. Runs and agents go to
the same process, so a resumed agent finds the walk that waits for it.

A worker restarted with the id of an adopted worker resets its row: the runs
that were adopted are no longer its own in DBOS (the adopter's dequeue made
them the adopter's, or they wait on the adopter's queue), so it never runs them
again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import psycopg
from dbos import DBOS

from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore.engines.dbos import DBOSEngine

TABLE = "swarmcore_workers"

LIVE_WITHIN = 60.0
"""Seconds since its last heartbeat within which a worker counts as live (the default
heartbeat is 5 s, the default ``adopt_after`` 30 s)."""

_log = logging.getLogger("swarmcore.workers")

_CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    app_name text NOT NULL,
    worker_id text NOT NULL,
    app_version text NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now(),
    adopted_by text,
    adopted_at timestamptz,
    PRIMARY KEY (app_name, worker_id)
)
"""

_REGISTER = f"""
INSERT INTO {TABLE} (app_name, worker_id, app_version, seen_at)
VALUES (%(app)s, %(me)s, %(version)s, now())
ON CONFLICT (app_name, worker_id) DO UPDATE
SET app_version = excluded.app_version, seen_at = now(), adopted_by = NULL, adopted_at = NULL
"""

_BEAT = f"""
WITH old AS (
    SELECT adopted_by FROM {TABLE}
    WHERE app_name = %(app)s AND worker_id = %(me)s FOR UPDATE
)
UPDATE {TABLE} SET seen_at = now(), adopted_by = NULL, adopted_at = NULL
FROM old WHERE app_name = %(app)s AND worker_id = %(me)s
RETURNING old.adopted_by
"""

# Exactly one claimant: a second UPDATE waits on the row lock, then re-reads the row
# and finds adopted_by set (READ COMMITTED re-checks the WHERE on the new version).
_CLAIM = f"""
UPDATE {TABLE} SET adopted_by = %(me)s, adopted_at = now()
WHERE app_name = %(app)s AND app_version = %(version)s AND worker_id <> %(me)s
  AND adopted_by IS NULL AND seen_at < now() - make_interval(secs => %(after)s)
  AND worker_id = (
    SELECT worker_id FROM {TABLE}
    WHERE app_name = %(app)s AND app_version = %(version)s AND worker_id <> %(me)s
      AND adopted_by IS NULL AND seen_at < now() - make_interval(secs => %(after)s)
    ORDER BY seen_at LIMIT 1 FOR UPDATE SKIP LOCKED
  )
RETURNING worker_id
"""

_RELEASE = f"""
UPDATE {TABLE} SET adopted_by = NULL, adopted_at = NULL
WHERE app_name = %(app)s AND worker_id = %(dead)s AND adopted_by = %(me)s
"""

_INHERIT = f"""
UPDATE {TABLE} SET adopted_by = %(me)s, adopted_at = now()
WHERE app_name = %(app)s AND adopted_by = %(dead)s
RETURNING worker_id
"""


def create_table(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Create the heartbeat table if it is missing (safe from many processes at once)."""
    with conn.transaction():
        # One creator at a time: concurrent CREATE TABLE IF NOT EXISTS can collide.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (TABLE,))
        conn.execute(_CREATE)


_LIVE = f"""
SELECT worker_id FROM {TABLE}
WHERE app_name = %(app)s AND app_version = %(version)s AND adopted_by IS NULL
  AND seen_at > now() - make_interval(secs => %(within)s)
ORDER BY seen_at DESC
"""


def live_workers(
    database_url: str, app_name: str, app_version: str, within: float = LIVE_WITHIN
) -> list[str]:
    """The workers of ``app_version`` whose heartbeat is under ``within`` seconds old.

    A worker launched with ``adopt_after=None`` keeps no heartbeat and is not
    seen; no worker ever started leaves no table, and so no live worker.
    """
    with psycopg.connect(database_url, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (TABLE,)).fetchone()
        if found is None or found[0] is None:
            return []
        params = {"app": app_name, "version": app_version, "within": within}
        return [str(row[0]) for row in conn.execute(_LIVE, params).fetchall()]


def claim(
    conn: psycopg.Connection[tuple[object, ...]],
    *,
    app_name: str,
    worker_id: str,
    app_version: str,
    adopt_after: float,
) -> str | None:
    """Claim one worker of ``app_version`` silent for over ``adopt_after`` s for ``worker_id``.

    Returns:
        The claimed worker's id, or None. Of workers claiming at once, exactly
        one gets a given silent worker.
    """
    params = {"app": app_name, "me": worker_id, "version": app_version, "after": adopt_after}
    row = conn.execute(_CLAIM, params).fetchone()
    return None if row is None else str(row[0])


def private_queue(worker_id: str) -> str:
    """The queue only worker ``worker_id`` listens to: the runs it adopted wait there."""
    return f"swarmcore-worker-{worker_id}"


def checked(heartbeat: float, adopt_after: float | None) -> tuple[float, float | None]:
    """``heartbeat`` and ``adopt_after``, validated.

    Raises:
        UserError: ``heartbeat`` is not above 0, or ``adopt_after`` (unless None)
            is not above ``heartbeat``.
    """
    if not heartbeat > 0 or (adopt_after is not None and not adopt_after > heartbeat):
        raise UserError(
            "DBOSEngine needs heartbeat > 0 and adopt_after > heartbeat (or None), got "
            f"heartbeat={heartbeat!r}, adopt_after={adopt_after!r}."
        )
    return heartbeat, adopt_after


def own_queues(engine: DBOSEngine, queues: Sequence[str]) -> list[str]:
    """The private queue of a process launched with ``queues``: workers on PostgreSQL only.

    A process that only enqueues, or only runs its own runs, neither adopts nor is adopted.
    """
    postgres = engine.database_url.startswith(("postgresql://", "postgres://"))
    if queues and postgres and engine.adopt_after is not None:
        return [private_queue(engine.worker_id)]
    return []


async def watch(engine: DBOSEngine, queues: Sequence[str]) -> Watch | None:
    """Start the heartbeat of a process launched with ``queues`` (None: not a worker)."""
    own = own_queues(engine, queues)
    if not own or engine.adopt_after is None:
        return None
    for name in own:  # adopted runs wait here rarely, and a second saves a worker's CPU
        await DBOS.register_queue_async(name, polling_interval_sec=max(engine.queue_poll, 1.0))
    started = Watch(
        engine.database_url,
        app_name=engine.app_name,
        worker_id=engine.worker_id,
        heartbeat=engine.heartbeat,
        adopt_after=engine.adopt_after,
    )
    await asyncio.to_thread(started.start)
    return started


async def stop(watch: Watch | None) -> None:
    """Stop ``watch`` if there is one; None, for the engine to forget it."""
    if watch is not None:
        await asyncio.to_thread(watch.stop)


class Watch:
    """This worker's heartbeat, and its adoption of silent workers, on a thread of its own.

    Args:
        database_url: The engine's PostgreSQL URL (the table lives beside DBOS's).
        app_name: DBOS application name: workers of other applications are ignored.
        worker_id: This worker's id (its DBOS executor id).
        heartbeat: Seconds between two updates of this worker's row.
        adopt_after: Seconds of silence after which a worker's runs are adopted.
    """

    def __init__(
        self,
        database_url: str,
        *,
        app_name: str,
        worker_id: str,
        heartbeat: float,
        adopt_after: float,
    ) -> None:
        self.database_url = database_url
        self.app_name = app_name
        self.worker_id = worker_id
        self.heartbeat = heartbeat
        self.adopt_after = adopt_after
        self.adopted: list[str] = []
        """The workers this one adopted, oldest first."""
        self._stop = threading.Event()
        self._draining = threading.Event()
        self._thread: threading.Thread | None = None
        self._version = ""

    def start(self) -> None:
        """Create the table if needed, reset this worker's row, and start beating.

        Call after DBOS is launched (the application version is known then).
        """
        self._version = DBOS.application_version
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            create_table(conn)
            conn.execute(_REGISTER, self._params())
        self._thread = threading.Thread(
            target=self._run, name=f"swarmcore-heartbeat-{self.worker_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop beating (the row stays: silent long enough, this worker's runs are adopted)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def drain(self) -> None:
        """Keep beating but adopt no one any more: this worker is stopping.

        Its beats keep its own runs, which it is finishing, from being adopted
        meanwhile; a run it adopted now would wait for it on its private queue.
        """
        self._draining.set()

    def _params(self) -> dict[str, object]:
        return {
            "app": self.app_name,
            "me": self.worker_id,
            "version": self._version,
            "after": self.adopt_after,
        }

    def _run(self) -> None:
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.database_url, autocommit=True)
                self._tick(conn)
            except Exception:  # a lost connection or a DBOS error: try again next tick
                _log.warning("worker %s: heartbeat failed", self.worker_id, exc_info=True)
                if conn is not None:
                    conn.close()
                conn = None
            self._stop.wait(self.heartbeat)
        if conn is not None:
            conn.close()

    def _tick(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        params = self._params()
        beat = conn.execute(_BEAT, params).fetchone()
        if beat is None:  # the row is gone (the table was cleared): register again
            conn.execute(_REGISTER, params)
        elif beat[0] is not None:
            _log.warning(
                "worker %s was silent for over %g s and worker %s adopted its runs",
                self.worker_id,
                self.adopt_after,
                beat[0],
            )
        if self._draining.is_set():
            return
        claimed = claim(
            conn,
            app_name=self.app_name,
            worker_id=self.worker_id,
            app_version=self._version,
            adopt_after=self.adopt_after,
        )
        if claimed is not None:
            try:
                self._adopt(conn, claimed)
            except Exception:  # let this worker or another claim it again next tick
                conn.execute(_RELEASE, {**params, "dead": claimed})
                raise

    def _adopt(self, conn: psycopg.Connection[tuple[object, ...]], dead: str) -> None:
        """Hand ``dead``'s pending workflows (and those waiting on its queue) to this worker.

        The workers ``dead`` had claimed are this worker's too: had it died between
        its claim and its hand-over, their runs would be nobody's.
        """
        inherited = conn.execute(_INHERIT, {**self._params(), "dead": dead}).fetchall()
        gone = [dead, *(str(row[0]) for row in inherited)]
        pending = DBOS.list_workflows(
            status="PENDING",
            executor_id=gone,
            app_version=self._version,
            load_input=False,
            load_output=False,
        )
        waiting = DBOS.list_workflows(
            status="ENQUEUED",
            queue_name=[private_queue(worker) for worker in gone],
            load_input=False,
            load_output=False,
        )
        ids = [w.workflow_id for w in [*pending, *waiting]]
        if ids:  # ENQUEUED on a queue only this worker listens to: DBOS runs each once, here
            DBOS.resume_workflows(ids, queue_name=private_queue(self.worker_id))
        self.adopted.extend(gone)
        _log.warning(
            "worker %s adopted %s (silent for over %g s): %d workflow(s)",
            self.worker_id,
            ", ".join(gone),
            self.adopt_after,
            len(ids),
        )
