"""Text for the terminal: one-line previews, local times, durations."""

from __future__ import annotations

import time

__all__ = ["duration", "local_time", "one_line", "preview", "shorten"]

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
