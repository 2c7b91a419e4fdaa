"""Text for the terminal: one-line previews, local times, durations."""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swarmcore.store import default_store_path
from swarmcore.store._base import RunRecord

_PREVIEW_CHARS = 60


def one_line(text: str) -> str:
    """``text`` with its whitespace runs (newlines included) made single spaces."""
    return " ".join(text.split())


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``…``."""
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def preview(text: str) -> str:
    """The first non-blank line of ``text``, shortened for a table cell."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return shorten(first, _PREVIEW_CHARS)


def local_time(timestamp: float) -> str:
    """A Unix time as local ``YYYY-MM-DD HH:MM:SS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def duration(started: float, ended: float | None) -> str:
    """From ``started`` to ``ended``: ``1.5s``, ``2m05s``, ``1h02m``; ``-`` while it runs."""
    if ended is None:
        return "-"
    seconds = max(ended - started, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def run_metadata(record: RunRecord) -> dict[str, Any]:
    """The ``metadata`` a stored run was started with (the CLI's target, model...); {} if none."""
    metadata: object = record.settings.get("metadata")
    return metadata if isinstance(metadata, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def run_origin(metadata: Mapping[str, Any]) -> str:
    """How the CLI started a run, for people; empty when it did not."""
    model = metadata.get("model")
    if metadata.get("demo"):
        return f"swarmcore demo (model {model})"
    target = metadata.get("target")
    if not isinstance(target, str):
        return ""
    return f"{target} (model {model})" if model else target


def ui_command(store: Path) -> str:
    """The command that opens the viewer on ``store``: ``swarmcore ui`` for the default store."""
    if store == default_store_path():
        return "swarmcore ui"
    return shlex.join(["swarmcore", "ui", "--store", str(store)])


def resume_command(run_id: str, store: Path) -> str:
    """The command that resumes ``run_id``, naming ``store`` unless it is the default one.

    The store is the one option a resume needs: the target, ``--model``,
    ``--context-mode``, the budget and the ``--var`` values are kept with the run.
    """
    command = ["swarmcore", "runs", "resume", run_id]
    if store != default_store_path():
        command += ["--store", str(store)]
    return shlex.join(command)
