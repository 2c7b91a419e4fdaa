"""Durable run records: every run and each agent result, written as it finishes.

```python
swarm = Swarm(flow, store="runs.db")      # or SQLiteStore(path, keep_last=500)
result = await swarm.run(task)            # result.run_id names the stored run
result = await swarm.resume(run_id)       # after a failure or kill: finished agents are kept
```

A write that fails (a full disk) stops the run with a StoreError whose
``partial`` holds every finished result; ``Swarm(..., store_errors="warn")``
warns instead, goes on, and marks the run ``incomplete`` (not resumable).

Other backends implement the small :class:`RunStore` protocol; a viewer of run
history reads through :class:`RunReader` (pages of runs with filters and a
cursor, counts, one run), which a durable engine's history implements too.
"""

from __future__ import annotations

import os
from pathlib import Path

from swarmcore.errors import UserError
from swarmcore.store._base import (
    EarlierAttempt,
    RunListing,
    RunMark,
    RunMarks,
    RunReader,
    RunRecord,
    RunStatus,
    RunStore,
    RunSummary,
)
from swarmcore.store._sqlite import SCHEMA_VERSION, SQLiteStore

__all__ = [
    "SCHEMA_VERSION",
    "EarlierAttempt",
    "RunListing",
    "RunMark",
    "RunMarks",
    "RunReader",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "SQLiteStore",
    "default_store_path",
    "open_store",
]


def default_store_path() -> Path:
    """Where the CLI keeps runs: ``$SWARMCORE_STORE``, else the user's data directory.

    ``$XDG_DATA_HOME/swarmcore/runs.db`` (``~/.local/share/swarmcore/runs.db``).
    """
    explicit = os.environ.get("SWARMCORE_STORE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "swarmcore" / "runs.db"


def open_store(store: RunStore | str | os.PathLike[str]) -> RunStore:
    """A store object for a path (SQLite) or the store itself.

    Raises:
        UserError: ``store`` is neither a path nor a RunStore.
    """
    if isinstance(store, str | os.PathLike):
        return SQLiteStore(Path(store))
    if isinstance(store, RunStore):
        return store
    raise UserError(
        f"store must be a path (a SQLite file) or a RunStore, got {type(store).__name__}."
    )
