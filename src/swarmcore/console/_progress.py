"""The ConsoleProgress hook: routes each event to plain lines or to the live tree."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, TextIO

from swarmcore.console._lines import (
    LEVELS,
    MINIMAL,
    SUMMARY,
    Line,
    Verbosity,
    outcome,
    plain_line,
    usage_table_of,
)
from swarmcore.console._live import Frames, render_run, stop, wants_live
from swarmcore.console._rows import RunState, close_rows
from swarmcore.console._skeleton import skeleton
from swarmcore.console._track import indent_of, track
from swarmcore.errors import UserError
from swarmcore.events import Event, RunFinished, RunStarted, TextDelta, ToolCallDelta

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.text import Text

# The package's name, not this module's: one logger for the whole console.
logger = logging.getLogger("swarmcore.console")

_REFRESH_PER_SECOND = 4
"""Live redraws per second (rich's own refresh thread; events never force a redraw)."""
_MAX_RUNS = 64
"""Runs remembered at once; the oldest is forgotten beyond that (garbage never piles up)."""


class ConsoleProgress:
    """A hook that shows a run's progress live in the terminal.

    ```python
    swarm = Swarm(flow, hooks=[ConsoleProgress("detailed")])
    ```

    In a terminal with rich installed it draws a live tree of steps and
    parallel agents (status, elapsed time, tokens, cost), redrawn a few times
    per second, and prints the final tree, the usage table and the totals (or
    the error) when the run ends. Otherwise it writes one plain line per
    notable event. Sync and fast: it runs inline in the event loop. It never
    raises, keeps its state per run id, and can watch any number of runs.

    Args:
        verbosity: ``"minimal"``: the run's start and end, and failures.
            ``"summary"`` (default): also each agent's start and end (plain),
            or the tree (live). ``"detailed"``: also model calls, tool calls,
            retries and fallbacks. ``"debug"``: every event, text and
            tool-call argument deltas included.
        file: Where to write; ``sys.stderr`` by default.
        live: True to force the live display, False to force plain lines;
            None (default) draws live when the output is a terminal. Without
            rich installed the output is always plain.
        console: A ``rich.console.Console`` for the live display (by default
            one writing to ``file``); when given, it decides ``live=None``
            by ``console.is_terminal``.

    Raises:
        UserError: ``verbosity`` is not one of the four levels.
    """

    def __init__(
        self,
        verbosity: Verbosity = "summary",
        *,
        file: TextIO | None = None,
        live: bool | None = None,
        console: Console | None = None,
    ) -> None:
        if not isinstance(verbosity, str) or verbosity not in LEVELS:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"verbosity must be 'minimal', 'summary', 'detailed' or 'debug', got {verbosity!r}."
            )
        self.verbosity: Verbosity = verbosity
        """The verbosity this hook was made with."""
        self._level = LEVELS[verbosity]
        self._file = file
        self._console = console
        self._live_mode = wants_live(live, file, console)
        self._live: Live | None = None
        self._frames: Frames = ((), 1.0)
        self._runs: OrderedDict[str, RunState] = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False

    @property
    def live(self) -> bool:
        """Whether this hook draws the live display (else it writes plain lines)."""
        return self._live_mode

    def __call__(self, event: Event) -> None:
        """Take one event of a run (the hook)."""
        try:
            if self._live_mode:
                self._on_live(event)
            else:
                self._on_plain(event)
        except Exception:  # a display must never break a run
            if not self._warned:
                self._warned = True
                logger.warning("console progress failed on %r", event, exc_info=True)

    def close(self) -> None:
        """Stop the live display if it is still running (it stops by itself when runs end)."""
        with self._lock:
            live, self._live = self._live, None
            for state in self._runs.values():
                state.live = False
        if live is not None:
            stop(live)

    # --- plain mode ------------------------------------------------------------------

    def _on_plain(self, event: Event) -> None:
        with self._lock:
            state = self._state(event, create=True)
            if state is None:  # pragma: no cover -- create=True always gives one
                return
            track(state, event)
            lines = self._plain_lines(state, event)
            if isinstance(event, RunFinished):
                self._runs.pop(event.run_id, None)
        if lines:
            out = self._file if self._file is not None else sys.stderr
            out.write("".join(f"{line}\n" for line in lines))
            out.flush()

    def _plain_lines(self, state: RunState, event: Event) -> list[str]:
        if isinstance(event, RunFinished):
            return self._plain_finish(state, event)
        line = plain_line(state, event)
        if line is None or line.level > self._level:
            return []
        return [self._stamp(state, event, line.text)]

    def _plain_finish(self, state: RunState, event: RunFinished) -> list[str]:
        lines = [self._stamp(state, event, outcome(state, event))]
        table = usage_table_of(event)
        if table and self._level >= SUMMARY:
            lines.extend(table.splitlines())
        return lines

    def _stamp(self, state: RunState, event: Event, text: str) -> str:
        elapsed = max(0.0, event.timestamp - state.started)
        indent = "  " * indent_of(state, event)
        running = sum(s.open for s in self._runs.values())
        several = running > 1 or (running == 1 and not state.open)
        tag = "" if isinstance(event, RunStarted | RunFinished) or not several else state.short_id
        tag = f"{tag}: " if tag else ""
        return f"[{elapsed:5.1f}s] {tag}{indent}{text}"

    def _state(self, event: Event, *, create: bool) -> RunState | None:
        """The event's run state; a fresh one on RunStarted (and on any event, if ``create``)."""
        if isinstance(event, RunStarted):
            state = RunState(
                run_id=event.run_id, flow=event.flow, started=event.timestamp, open=True
            )
            state.indent[event.span_id] = 0
            state.steps = skeleton(event, state)
            self._remember(state)
            return state
        state = self._runs.get(event.run_id)
        if state is None and create:
            started = event.timestamp
            if isinstance(event, RunFinished):
                started -= event.duration_seconds
            state = RunState(run_id=event.run_id, flow="", started=started)
            self._remember(state)
        return state

    def _remember(self, state: RunState) -> None:
        self._runs[state.run_id] = state
        while len(self._runs) > _MAX_RUNS:
            self._runs.popitem(last=False)

    # --- live mode -------------------------------------------------------------------

    def _on_live(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._start_live(event)
        elif isinstance(event, RunFinished):
            self._finish_live(event)
        else:
            with self._lock:
                state = self._state(event, create=False)
                if state is None:
                    return  # not a run we saw start: nothing to draw it in
                track(state, event)
                line = plain_line(state, event)
                text = self._live_line(state, event, line)
            if text is not None:
                self._print(text)

    def _live_line(self, state: RunState, event: Event, line: Line | None) -> Text | None:
        """A line to print above the live display, for what the tree does not show."""
        # Streamed pieces would scroll the display away: the tree shows the text's tail,
        # and the tool once its call starts.
        if line is None or line.level > self._level or isinstance(event, TextDelta | ToolCallDelta):
            return None
        if line.in_tree and self._level > MINIMAL:
            return None
        from rich.text import Text

        style = "red" if "FAILED" in line.text else "dim"
        return Text(self._stamp(state, event, line.text), style=style)

    def _start_live(self, event: RunStarted) -> None:
        # Never touch rich's Live while holding self._lock: Live calls back into
        # _render_live (which takes it) from its constructor and its refresh thread.
        from rich.live import Live
        from rich.spinner import Spinner

        console = self._rich_console()
        with self._lock:
            state = self._state(event, create=True)
            if state is None:  # pragma: no cover
                return
            state.live = True
            if self._live is not None:
                return  # another run's display is up: this run joins it
            spinner = Spinner("dots")
            self._frames = (tuple(str(f) for f in spinner.frames), float(spinner.interval))
        live = Live(
            console=console,
            get_renderable=self._render_live,
            refresh_per_second=_REFRESH_PER_SECOND,
            transient=True,
        )
        with self._lock:
            if self._live is not None:
                return  # another thread started one meanwhile
            self._live = live
        try:
            live.start()
        except Exception:  # e.g. the console cannot draw: fall back to plain lines
            logger.debug("the live display did not start", exc_info=True)
            with self._lock:
                self._live, self._live_mode = None, False

    def _finish_live(self, event: RunFinished) -> None:
        live: Live | None = None
        with self._lock:
            state = self._runs.pop(event.run_id, None)
            if not any(s.live for s in self._runs.values()):
                live, self._live = self._live, None
        try:
            final = self._final(state, event)
        finally:
            if live is not None:
                stop(live)
        self._print(*final)

    def _final(self, state: RunState | None, event: RunFinished) -> list[RenderableType]:
        from rich.text import Text

        out: list[RenderableType] = []
        if state is not None:
            close_rows(state, event.timestamp)
            if self._level > MINIMAL and state.steps:
                out.append(render_run(state, self._level, event.timestamp, self._frames))
        else:
            state = RunState(
                run_id=event.run_id, flow="", started=event.timestamp - event.duration_seconds
            )
        table = usage_table_of(event)
        if table and self._level > MINIMAL:
            out.append(Text(table))
        ok = event.error is None
        style = "bold green" if ok else "bold red"
        out.append(Text(("✓ " if ok else "✗ ") + outcome(state, event), style=style))
        return out

    def _render_live(self) -> RenderableType:
        from rich.console import Group

        now = time.time()
        with self._lock:
            states = [s for s in self._runs.values() if s.live]
            parts = [render_run(s, self._level, now, self._frames) for s in states]
        return Group(*parts)

    def _rich_console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self._file, stderr=self._file is None, force_terminal=True)
        return self._console

    def _print(self, *renderables: RenderableType) -> None:
        console = self._rich_console()
        for renderable in renderables:
            console.print(renderable, markup=False, highlight=False, emoji=False)
