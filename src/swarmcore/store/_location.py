"""Where a SQLite run store may live: paths refused before SQLite touches them."""

from __future__ import annotations

import time
from pathlib import Path

from swarmcore.errors import StoreError


def check_location(path: Path) -> None:
    """Refuse, naming the fix, a path that cannot hold a store or a file that is not one yet.

    Raises:
        StoreError: ``path`` is a folder, lies under a file, or is an empty file.
    """
    if path.is_dir():
        raise StoreError(
            f"The run store {path} is a folder; give a file path, such as {path / 'runs.db'}.",
            path=str(path),
        )
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(
                    f"The run store {path} cannot be created: {parent} is a file, not a "
                    "folder; pick another path for the store.",
                    path=str(path),
                )
            break
    if path.is_file() and _stays_empty(path):
        raise StoreError(
            f"The run store {path} is an empty file (0 bytes), not a swarmcore run store; "
            "delete it or pick another path (a path that does not exist yet is created).",
            path=str(path),
        )


def _stays_empty(path: Path) -> bool:
    """Whether ``path`` is empty and stays so for a moment.

    A store another process is creating right now is empty only until SQLite
    writes its header, a few milliseconds later; a user's empty file stays empty.
    """
    deadline = time.monotonic() + 1.0
    while True:
        try:
            if path.stat().st_size > 0:
                return False
        except OSError:  # gone again: not ours to judge
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
