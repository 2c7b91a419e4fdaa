"""The live tree: rich renderables of a run's rows, redrawn a few times a second.

rich is imported inside the functions that draw, never at module import, so
the console (and its plain mode) works without it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO, TypeAlias

from swarmcore.console._lines import DEBUG, DETAILED, MINIMAL, money, short
from swarmcore.console._rows import FINISHED, Row, RunState, Status, walk, walk_agents

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.table import Table
    from rich.text import Text

logger = logging.getLogger("swarmcore.console")

Frames: TypeAlias = tuple[tuple[str, ...], float]
"""A spinner's frames and the milliseconds each is shown."""

_STYLES: dict[str, str] = {
    "waiting": "dim",
    "running": "cyan",
    "done": "green",
    "failed": "bold red",
    "cancelled": "yellow",
    "skipped": "dim",
}
_ICONS: dict[str, str] = {
    "waiting": "·",
    "done": "✓",
    "failed": "✗",
    "cancelled": "⊘",
    "skipped": "-",
}


def render_run(state: RunState, level: int, now: float, frames: Frames) -> RenderableType:
    """One run: a header line, and (from ``summary`` up) the tree as a table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    calls, tokens, cost, unpriced = _totals(state.steps)
    header = Text()
    header.append(f"run {state.short_id}", style="bold")
    if state.flow:
        header.append(f"  {state.flow}", style="dim")
    header.append(f"  {max(0.0, now - state.started):.1f}s", style="cyan")
    if calls:
        header.append(f"  {tokens:,} tokens  {_cost_cell(cost, unpriced)}", style="dim")
    if level == MINIMAL or not state.steps:
        return header
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="dim")
    table.add_column("step / agent", no_wrap=True)
    table.add_column("status", no_wrap=True, min_width=9)
    table.add_column("time", justify="right", no_wrap=True, min_width=5)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    # Wrappable, so the table shrinks this column first; its text is cut, never wrapped.
    table.add_column("", max_width=60)
    _add_rows(table, state.steps, "", top=True, level=level, now=now, frames=frames)
    return Group(header, table)


def _add_rows(
    table: Table,
    rows: Sequence[Row],
    prefix: str,
    *,
    top: bool,
    level: int,
    now: float,
    frames: Frames,
) -> None:
    from rich.text import Text

    for index, row in enumerate(rows):
        last = index == len(rows) - 1
        guide = "" if top else ("└─ " if last else "├─ ")
        status = _status_of(row)
        name = Text()
        name.append(prefix + guide, style="dim")
        name.append(_icon(status, now, frames), style=_STYLES[status])
        name.append(" " + _label(row), style="bold" if status == "running" else "")
        calls, tokens, cost, unpriced = _totals([row])
        took = _elapsed(row, now)
        table.add_row(
            name,
            Text(status, style=_STYLES[status]),
            f"{took:.1f}s" if took is not None else "",
            f"{tokens:,}" if calls else "",
            _cost_cell(cost, unpriced) if calls else "",
            _note(row, status, level),
        )
        inner = prefix if top else prefix + ("   " if last else "│  ")
        _add_rows(table, row.children, inner, top=False, level=level, now=now, frames=frames)


def _icon(status: str, now: float, frames: Frames) -> str:
    if status != "running":
        return _ICONS.get(status, "?")
    chars, interval = frames
    if not chars:
        return "*"
    return chars[int(now * 1000 / max(interval, 1.0)) % len(chars)]


def _label(row: Row) -> str:
    if row.kind == "group" and row.policy and row.policy != "all":
        return f"parallel ({row.policy})"
    return row.label


def _note(row: Row, status: str, level: int) -> Text:
    from rich.text import Text

    text, style = "", "dim"
    if row.kind != "agent":
        pass
    elif status == "failed":
        text, style = row.error, _STYLES[status]
    elif status == "running":
        parts = [f"attempt {row.attempt}"] if row.attempt > 1 else []
        if level >= DETAILED and row.activity:
            parts.append(row.activity)
        if level >= DEBUG and row.text_tail:
            parts.append(repr(short(row.text_tail, 40)))
        text = "  ".join(parts)
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _status_of(row: Row) -> Status:
    """A row's status; a branch's follows from its steps."""
    if row.kind != "branch":
        return row.status
    seen = {_status_of(child) for child in row.children}
    if not seen or seen == {"waiting"}:
        return "waiting"
    if "running" in seen:
        return "running"
    if "failed" in seen:
        return "failed"
    if "cancelled" in seen:
        return "cancelled"
    if "waiting" in seen:
        return "running"  # between two of its steps
    return "done" if "done" in seen else "skipped"


def _elapsed(row: Row, now: float) -> float | None:
    if row.kind == "branch":
        spans = [_span(child, now) for child in walk(row.children)]
        starts = [s for s, _ in spans if s is not None]
        ends = [e for _, e in spans if e is not None]
        if not starts:
            return None
        end = max(ends) if _status_of(row) in FINISHED and ends else now
        return max(0.0, end - min(starts))
    if row.duration is not None:
        return row.duration
    start, end = _span(row, now)
    return None if start is None or end is None else max(0.0, end - start)


def _span(row: Row, now: float) -> tuple[float | None, float | None]:
    if row.started is None:
        return None, None
    if row.ended is not None:
        return row.started, row.ended
    return row.started, now if row.status == "running" else None


def _totals(rows: Sequence[Row]) -> tuple[int, int, float, bool]:
    """Model calls, tokens, cost and whether any call was unpriced, over the agents below."""
    agents = list(walk_agents(rows))
    return (
        sum(row.calls for row in agents),
        sum(row.tokens for row in agents),
        sum(row.cost for row in agents),
        any(row.unpriced for row in agents),
    )


def _cost_cell(cost: float, unpriced: bool) -> str:
    return "—" if unpriced else money(cost)


# --- deciding the mode ---------------------------------------------------------------


def wants_live(live: bool | None, file: TextIO | None, console: Console | None) -> bool:
    """Whether to draw live: as asked, else when the output is a terminal (never without rich)."""
    if live is False or not _rich_installed():
        return False
    if live is True:
        return True
    if console is not None:
        return console.is_terminal
    if os.environ.get("TERM") == "dumb":
        return False
    stream = file if file is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _rich_installed() -> bool:
    try:
        return importlib.util.find_spec("rich") is not None
    except (ImportError, ValueError):
        return False


def stop(live: Live) -> None:
    """Stop ``live``; a failure to is logged, never raised (the run goes on)."""
    try:
        live.stop()
    except Exception:
        logger.debug("stopping the live display failed", exc_info=True)
