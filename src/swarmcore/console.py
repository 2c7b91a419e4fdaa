"""Live progress of a run in the terminal: a hook for ``Swarm(hooks=[...])``.

```python
from swarmcore import Swarm
from swarmcore.console import ConsoleProgress

swarm = Swarm(a >> (b | c) >> d, hooks=[ConsoleProgress()])
```

In a terminal with rich installed (``pip install 'swarmcore[cli]'``) it draws a
live tree of the run's steps and agents (a parallel group's members beneath it,
branches nested) with each one's status, time, tokens and cost, and prints a
summary when the run ends. Anywhere else (a pipe, a log file, CI, no rich) it
writes one plain line per notable event, without colours::

    [  0.0s] run 1a2b3c started: a >> (b | c) >> d
    [  0.4s] a done: 512 tokens, $0.0003, 0.4s
    [  0.4s] b | c started (parallel, all)
    [  1.1s]   c FAILED: ModelError: Agent 'c' failed: ...

rich is imported only when the live display starts, so this module imports
(and the plain mode works) without it. The hook is fast, keeps its state per
run id (one instance can watch several runs, one after another or at once) and
never raises: events it does not understand are ignored.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO, TypeAlias

from swarmcore.errors import UserError
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    LoopFinished,
    LoopIteration,
    ModelCallFinished,
    ModelCallStarted,
    ModelFallback,
    PlanMade,
    RetryScheduled,
    RouteChosen,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.table import Table
    from rich.text import Text

__all__ = ["ConsoleProgress", "Verbosity"]

logger = logging.getLogger("swarmcore.console")

Verbosity: TypeAlias = Literal["minimal", "summary", "detailed", "debug"]
"""How much to show: see :class:`ConsoleProgress`."""

_LEVELS: dict[str, int] = {"minimal": 0, "summary": 1, "detailed": 2, "debug": 3}
_MINIMAL, _SUMMARY, _DETAILED, _DEBUG = range(4)

_Frames: TypeAlias = tuple[tuple[str, ...], float]
"""A spinner's frames and the milliseconds each is shown."""
_Status: TypeAlias = Literal["waiting", "running", "done", "failed", "cancelled", "skipped"]
_FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled", "skipped"})

_REFRESH_PER_SECOND = 4
"""Live redraws per second (rich's own refresh thread; events never force a redraw)."""
_MAX_RUNS = 64
"""Runs remembered at once; the oldest is forgotten beyond that (garbage never piles up)."""
_ERROR_CHARS = 160


def _rows() -> list[_Row]:
    return []


def _tools() -> dict[int, str]:
    return {}


@dataclass(slots=True, eq=False)
class _Row:
    """One line of the tree: an agent, a parallel group or a branch of a group."""

    label: str
    kind: Literal["agent", "group", "branch"]
    children: list[_Row] = field(default_factory=_rows)
    status: _Status = "waiting"
    started: float | None = None
    ended: float | None = None
    duration: float | None = None
    policy: str | None = None
    attempt: int = 1
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    unpriced: bool = False
    tools: dict[int, str] = field(default_factory=_tools)
    """Tool calls in flight: span id to tool name."""
    activity: str = ""
    error: str = ""
    text_tail: str = ""


def _row_index() -> dict[str, _Row]:
    return {}


def _group_index() -> dict[frozenset[str], _Row]:
    return {}


def _span_index() -> dict[int, _Row]:
    return {}


def _indents() -> dict[int, int]:
    return {}


@dataclass(slots=True, eq=False)
class _RunState:
    """What one run looks like so far; never shared between runs."""

    run_id: str
    flow: str
    started: float
    open: bool = False
    """Seen starting and not yet finished."""
    live: bool = False
    steps: list[_Row] = field(default_factory=_rows)
    agents: dict[str, _Row] = field(default_factory=_row_index)
    groups: dict[frozenset[str], _Row] = field(default_factory=_group_index)
    spans: dict[int, _Row] = field(default_factory=_span_index)
    """Step, agent and model-call span ids to their row."""
    indent: dict[int, int] = field(default_factory=_indents)
    """Span id to the indentation of plain lines for events inside it."""

    @property
    def short_id(self) -> str:
        return self.run_id[:6]


@dataclass(frozen=True, slots=True)
class _Line:
    """A plain line: shown from ``level`` up; ``in_tree`` when the live tree already shows it."""

    level: int
    text: str
    in_tree: bool = False


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
            retries and fallbacks. ``"debug"``: every event, text deltas
            included.
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

    __slots__ = (
        "_console",
        "_file",
        "_frames",
        "_level",
        "_live",
        "_live_mode",
        "_lock",
        "_runs",
        "_warned",
        "verbosity",
    )

    def __init__(
        self,
        verbosity: Verbosity = "summary",
        *,
        file: TextIO | None = None,
        live: bool | None = None,
        console: Console | None = None,
    ) -> None:
        if not isinstance(verbosity, str) or verbosity not in _LEVELS:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"verbosity must be 'minimal', 'summary', 'detailed' or 'debug', got {verbosity!r}."
            )
        self.verbosity: Verbosity = verbosity
        """The verbosity this hook was made with."""
        self._level = _LEVELS[verbosity]
        self._file = file
        self._console = console
        self._live_mode = _wants_live(live, file, console)
        self._live: Live | None = None
        self._frames: _Frames = ((), 1.0)
        self._runs: OrderedDict[str, _RunState] = OrderedDict()
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
            _stop(live)

    # --- plain mode ------------------------------------------------------------------

    def _on_plain(self, event: Event) -> None:
        with self._lock:
            state = self._state(event, create=True)
            if state is None:  # pragma: no cover -- create=True always gives one
                return
            _track(state, event)
            lines = self._plain_lines(state, event)
            if isinstance(event, RunFinished):
                self._runs.pop(event.run_id, None)
        if lines:
            out = self._file if self._file is not None else sys.stderr
            out.write("".join(f"{line}\n" for line in lines))
            out.flush()

    def _plain_lines(self, state: _RunState, event: Event) -> list[str]:
        if isinstance(event, RunFinished):
            return self._plain_finish(state, event)
        line = _line(state, event)
        if line is None or line.level > self._level:
            return []
        return [self._stamp(state, event, line.text)]

    def _plain_finish(self, state: _RunState, event: RunFinished) -> list[str]:
        lines = [self._stamp(state, event, _outcome(state, event))]
        table = _usage_table(_result_of(event))
        if table and self._level >= _SUMMARY:
            lines.extend(table.splitlines())
        return lines

    def _stamp(self, state: _RunState, event: Event, text: str) -> str:
        elapsed = max(0.0, event.timestamp - state.started)
        indent = "  " * _indent_of(state, event)
        running = sum(s.open for s in self._runs.values())
        several = running > 1 or (running == 1 and not state.open)
        tag = "" if isinstance(event, RunStarted | RunFinished) or not several else state.short_id
        tag = f"{tag}: " if tag else ""
        return f"[{elapsed:5.1f}s] {tag}{indent}{text}"

    def _state(self, event: Event, *, create: bool) -> _RunState | None:
        """The event's run state; a fresh one on RunStarted (and on any event, if ``create``)."""
        if isinstance(event, RunStarted):
            state = _RunState(
                run_id=event.run_id, flow=event.flow, started=event.timestamp, open=True
            )
            state.indent[event.span_id] = 0
            state.steps = _skeleton(event.flow, event.agents, state)
            self._remember(state)
            return state
        state = self._runs.get(event.run_id)
        if state is None and create:
            started = event.timestamp
            if isinstance(event, RunFinished):
                started -= event.duration_seconds
            state = _RunState(run_id=event.run_id, flow="", started=started)
            self._remember(state)
        return state

    def _remember(self, state: _RunState) -> None:
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
                _track(state, event)
                line = _line(state, event)
                text = self._live_line(state, event, line)
            if text is not None:
                self._print(text)

    def _live_line(self, state: _RunState, event: Event, line: _Line | None) -> Text | None:
        """A line to print above the live display, for what the tree does not show."""
        if line is None or line.level > self._level or isinstance(event, TextDelta):
            return None
        if line.in_tree and self._level > _MINIMAL:
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
                _stop(live)
        self._print(*final)

    def _final(self, state: _RunState | None, event: RunFinished) -> list[RenderableType]:
        from rich.text import Text

        out: list[RenderableType] = []
        if state is not None:
            _close_rows(state, event.timestamp)
            if self._level > _MINIMAL and state.steps:
                out.append(_render_run(state, self._level, event.timestamp, self._frames))
        else:
            state = _RunState(
                run_id=event.run_id, flow="", started=event.timestamp - event.duration_seconds
            )
        table = _usage_table(_result_of(event))
        if table and self._level > _MINIMAL:
            out.append(Text(table))
        ok = event.error is None
        style = "bold green" if ok else "bold red"
        out.append(Text(("✓ " if ok else "✗ ") + _outcome(state, event), style=style))
        return out

    def _render_live(self) -> RenderableType:
        from rich.console import Group

        now = time.time()
        with self._lock:
            states = [s for s in self._runs.values() if s.live]
            parts = [_render_run(s, self._level, now, self._frames) for s in states]
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


# --- deciding the mode ---------------------------------------------------------------


def _wants_live(live: bool | None, file: TextIO | None, console: Console | None) -> bool:
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


def _stop(live: Live) -> None:
    try:
        live.stop()
    except Exception:
        logger.debug("stopping the live display failed", exc_info=True)


# --- the flow's skeleton: every agent shown as waiting from the start -----------------

_TOKEN = re.compile(r"\s*(>>|\||\(|\)|[A-Za-z0-9_-]+)")


def _skeleton(flow: str, agents: Sequence[str], state: _RunState) -> list[_Row]:
    """Rows for ``flow`` (the ``>>``/``|`` expression); none when it cannot be read."""
    tokens = _tokenize(flow)
    if tokens is None:
        return []
    parser = _Parser(tokens)
    try:
        steps = parser.sequence()
    except (IndexError, ValueError):
        return []
    if parser.index != len(tokens):
        return []
    names = [row.label for row in _walk_agents(steps)]
    if len(set(names)) != len(names) or set(names) != set(agents):
        return []
    for row in _walk_agents(steps):
        state.agents[row.label] = row
    _index_groups(steps, state)
    return steps


def _tokenize(text: str) -> list[str] | None:
    tokens: list[str] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return None
        tokens.append(match.group(1))
        position = match.end()
    return tokens


class _Parser:
    """Reads ``sequence := parallel (">>" parallel)*``, ``parallel := atom ("|" atom)*``.

    An ``atom`` is a name or a parenthesised sequence.
    """

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.index = 0

    def sequence(self) -> list[_Row]:
        steps = self.parallel()
        while self.index < len(self.tokens) and self.tokens[self.index] == ">>":
            self.index += 1
            steps.extend(self.parallel())
        return steps

    def parallel(self) -> list[_Row]:
        members = [self.atom()]
        while self.index < len(self.tokens) and self.tokens[self.index] == "|":
            self.index += 1
            members.append(self.atom())
        if len(members) == 1:
            return members[0]
        children = [m[0] if len(m) == 1 else _Row("branch", "branch", m) for m in members]
        return [_Row("parallel", "group", children)]

    def atom(self) -> list[_Row]:
        token = self.tokens[self.index]
        self.index += 1
        if token == "(":
            inner = self.sequence()
            if self.tokens[self.index] != ")":
                raise ValueError(token)
            self.index += 1
            return inner
        if token in (")", ">>", "|"):
            raise ValueError(token)
        return [_Row(token, "agent")]


def _walk_agents(rows: Sequence[_Row]) -> Iterator[_Row]:
    for row in rows:
        if row.kind == "agent":
            yield row
        yield from _walk_agents(row.children)


def _index_groups(rows: Sequence[_Row], state: _RunState) -> None:
    for row in rows:
        if row.kind == "group":
            state.groups[frozenset(a.label for a in _walk_agents(row.children))] = row
        _index_groups(row.children, state)


# --- tracking events -----------------------------------------------------------------


def _track(state: _RunState, event: Event) -> None:
    match event:
        case StepStarted():
            _step_started(state, event)
        case StepFinished():
            _step_finished(state, event)
        case AgentStarted():
            _agent_started(state, event)
        case AgentFinished():
            _agent_finished(state, event)
        case _:
            _track_call(state, event)


def _track_call(state: _RunState, event: Event) -> None:
    match event:
        case ModelCallStarted():
            row = _agent_row(state, event.agent_name, event.parent_id)
            state.spans[event.span_id] = row
            state.indent[event.span_id] = _indent_of(state, event)
            row.activity = f"model call {event.turn}"
        case ModelCallFinished():
            _model_finished(_agent_row(state, event.agent_name, event.parent_id), event)
        case ToolCallStarted():
            row = _agent_row(state, event.agent_name, event.parent_id)
            state.indent[event.span_id] = _indent_of(state, event)
            row.tools[event.span_id] = event.tool_name
            row.activity = "tool " + ", ".join(row.tools.values())
        case ToolCallFinished():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.tools.pop(event.span_id, None)
            row.activity = "tool " + ", ".join(row.tools.values()) if row.tools else ""
        case RetryScheduled():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.activity = f"retry {event.attempt} in {event.delay_seconds:.1f}s: " + _short(
                event.error, 60
            )
        case ModelFallback():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.activity = f"fallback to {event.to_model}"
        case TextDelta():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.text_tail = (row.text_tail + event.text)[-80:]
        case _:
            pass


def _step_started(state: _RunState, event: StepStarted) -> None:
    state.indent[event.span_id] = _indent_of(state, event) + (1 if event.parallel else 0)
    if not event.parallel and len(event.agents) == 1:
        state.spans[event.span_id] = _agent_row(state, event.agents[0], event.parent_id)
        return
    row = state.groups.get(frozenset(event.agents))
    if row is None:
        row = _Row("parallel", "group")
        _container(state, event.parent_id).append(row)
        state.groups[frozenset(event.agents)] = row
    state.spans[event.span_id] = row
    row.status, row.started, row.policy = "running", event.timestamp, event.policy


def _step_finished(state: _RunState, event: StepFinished) -> None:
    row = state.spans.get(event.span_id)
    if row is not None and row.kind == "group":
        row.status = "failed" if event.error is not None else "done"
        row.ended, row.duration = event.timestamp, event.duration_seconds
    for name in event.failed:
        agent = state.agents.get(name)
        if agent is not None and agent.status == "waiting":
            agent.status = "skipped"


def _agent_started(state: _RunState, event: AgentStarted) -> None:
    row = _agent_row(state, event.agent_name, event.parent_id)
    state.spans[event.span_id] = row
    state.indent[event.span_id] = _indent_of(state, event) + 1
    row.status, row.attempt, row.error, row.activity = "running", event.attempt, "", ""
    row.ended = row.duration = None
    if row.started is None:
        row.started = event.timestamp


def _agent_finished(state: _RunState, event: AgentFinished) -> None:
    row = _agent_row(state, event.agent_name, event.parent_id)
    row.ended, row.activity = event.timestamp, ""
    if row.started is not None:
        row.duration = max(event.timestamp - row.started, event.duration_seconds)
    else:
        row.duration = event.duration_seconds
    row.tools.clear()
    if event.error is None:
        row.status = "done"
        result = event.result
        if result is not None and row.calls == 0:  # no model-call events seen: take the total
            row.calls = len(result.llm_calls)
            row.tokens = result.token_usage.total_tokens
            row.cost, row.unpriced = result.cost or 0.0, result.cost is None
    elif isinstance(event.error, asyncio.CancelledError):
        row.status, row.error = "cancelled", "cancelled"
    else:
        row.status, row.error = "failed", _describe(event.error)


def _model_finished(row: _Row, event: ModelCallFinished) -> None:
    row.activity = ""
    if event.error is not None:
        return
    row.calls += 1
    if event.usage is not None:
        row.tokens += event.usage.total_tokens
    if event.cost is None:
        row.unpriced = True
    else:
        row.cost += event.cost


def _agent_row(state: _RunState, name: str, parent_id: int | None) -> _Row:
    """The row of agent ``name``; a new one under ``parent_id``'s row if the skeleton lacks it."""
    row = state.agents.get(name)
    if row is None:
        row = state.agents[name] = _Row(name, "agent")
        _container(state, parent_id).append(row)
    return row


def _container(state: _RunState, parent_id: int | None) -> list[_Row]:
    parent = state.spans.get(parent_id) if parent_id is not None else None
    if parent is not None and parent.kind != "agent":
        return parent.children
    return state.steps


def _indent_of(state: _RunState, event: Event) -> int:
    if event.parent_id is None:
        return 0
    return state.indent.get(event.parent_id, 0)


def _close_rows(state: _RunState, now: float) -> None:
    """At the run's end: what still runs was cancelled, what still waits was never run."""
    for row in _walk(state.steps):
        if row.kind == "branch":
            continue
        if row.status == "running":
            row.status, row.ended = "cancelled", now
            if row.kind == "agent" and not row.error:
                row.error = "cancelled"
        elif row.status == "waiting":
            row.status = "skipped"


def _walk(rows: Sequence[_Row]) -> Iterator[_Row]:
    for row in rows:
        yield row
        yield from _walk(row.children)


# --- plain lines ---------------------------------------------------------------------


def _line(state: _RunState, event: Event) -> _Line | None:
    """The plain line for ``event`` and the least verbosity that shows it, or None."""
    match event:
        case RunStarted():
            return _Line(_MINIMAL, f"run {state.short_id} started: {event.flow}")
        case StepStarted():
            if not event.parallel:
                return _Line(_DEBUG, f"step {event.step} started", in_tree=True)
            policy = event.policy or "all"
            return _Line(_SUMMARY, f"{event.step} started (parallel, {policy})", in_tree=True)
        case StepFinished():
            return _step_line(event)
        case AgentStarted():
            again = f", attempt {event.attempt}" if event.attempt > 1 else ""
            return _Line(_SUMMARY, f"{event.agent_name} started ({event.model}{again})", True)
        case AgentFinished():
            return _agent_line(event)
        case RouteChosen() | LoopIteration() | LoopFinished() | PlanMade():
            return _decision_line(event)
        case _:
            return _call_line(event)


def _decision_line(event: Event) -> _Line | None:
    """Routes, loops and plans: what was chosen, at summary level."""
    match event:
        case RouteChosen():
            why = f": {_short(event.reason, 80)}" if event.reason else ""
            return _Line(_SUMMARY, f"{event.route} chose {event.branch} (by {event.by}){why}", True)
        case LoopIteration():
            text = f"{event.loop} iteration {event.iteration} of at most {event.max_iterations}"
            return _Line(_SUMMARY, text, in_tree=True)
        case LoopFinished():
            text = f"{event.loop} ended after {event.iterations} ({event.reason})"
            return _Line(_SUMMARY, text, in_tree=True)
        case PlanMade():
            tries = f", {event.attempts} attempts" if event.attempts > 1 else ""
            return _Line(_MINIMAL, f"{event.plan}: {event.expression}{tries}", in_tree=True)
        case _:
            return None


def _step_line(event: StepFinished) -> _Line:
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        why = f"{', '.join(event.failed)} failed" if event.failed else _describe(event.error)
        text = f"{event.step} FAILED after {took}: {why}"
        return _Line(_SUMMARY if "|" in event.step else _DEBUG, text, in_tree=True)
    if event.failed:
        text = f"{event.step} done in {took}; did not finish: {', '.join(event.failed)}"
        return _Line(_SUMMARY, text, in_tree=True)
    level = _SUMMARY if "|" in event.step else _DEBUG
    return _Line(level, f"{event.step} done in {took}", in_tree=True)


def _agent_line(event: AgentFinished) -> _Line:
    name, took = event.agent_name, f"{event.duration_seconds:.1f}s"
    if event.error is None:
        result = event.result
        if result is None:
            return _Line(_SUMMARY, f"{name} done: {took}", in_tree=True)
        parts = [f"{result.token_usage.total_tokens:,} tokens", _money(result.cost), took]
        if result.tool_calls:
            parts.append(f"{len(result.tool_calls)} tool calls")
        return _Line(_SUMMARY, f"{name} done: {', '.join(parts)}", in_tree=True)
    if isinstance(event.error, asyncio.CancelledError):
        return _Line(_SUMMARY, f"{name} cancelled after {took}", in_tree=True)
    attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
    return _Line(_MINIMAL, f"{name} FAILED{attempt}: {_describe(event.error)}", in_tree=True)


def _call_line(event: Event) -> _Line | None:
    match event:
        case ModelCallStarted():
            text = (
                f"{event.agent_name} model call {event.turn} started ({event.model}, "
                f"{event.messages} messages, {event.tools} tools)"
            )
            return _Line(_DEBUG, text)
        case ModelCallFinished():
            return _model_line(event)
        case ToolCallStarted():
            args = _short(event.arguments, 80)
            return _Line(_DEBUG, f"{event.agent_name} tool {event.tool_name} started: {args}")
        case ToolCallFinished():
            return _tool_line(event)
        case RetryScheduled():
            return _retry_line(event)
        case ModelFallback():
            text = (
                f"{event.agent_name} falls back from {event.from_model} to {event.to_model}: "
                f"{_short(event.error, _ERROR_CHARS)}"
            )
            return _Line(_DETAILED, text)
        case TextDelta():
            return _Line(_DEBUG, f"{event.agent_name} text: {event.text!r}")
        case RunFinished():  # handled by the caller; listed so it is not "unknown"
            return None
        case _:
            return _Line(_DEBUG, f"{type(event).__name__} (span {event.span_id})")


def _model_line(event: ModelCallFinished) -> _Line:
    head = f"{event.agent_name} model call {event.turn}"
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        return _Line(_DETAILED, f"{head} FAILED after {took}: {_describe(event.error)}")
    tokens = event.usage.total_tokens if event.usage is not None else 0
    parts = [event.model, f"{tokens:,} tokens", _money(event.cost), took]
    if event.tool_calls:
        parts.append(f"{event.tool_calls} tool calls")
    if event.attempts > 1:
        parts.append(f"{event.attempts} attempts")
    return _Line(_DETAILED, f"{head}: {', '.join(parts)}")


def _tool_line(event: ToolCallFinished) -> _Line:
    head = f"{event.agent_name} tool {event.tool_name}"
    took = f"{event.duration_seconds:.2f}s"
    if event.error is not None:
        return _Line(_DETAILED, f"{head} FAILED after {took}: {_short(event.error, _ERROR_CHARS)}")
    size = f"{event.result_chars:,} chars"
    if event.truncated_from is not None:
        size += f" (cut from {event.truncated_from:,})"
    return _Line(_DETAILED, f"{head}: {took}, {size}")


def _retry_line(event: RetryScheduled) -> _Line:
    why = _short(event.error, _ERROR_CHARS)
    if event.scope == "agent":
        text = (
            f"{event.agent_name} runs again (attempt {event.attempt + 1}) "
            f"in {event.delay_seconds:.1f}s: {why}"
        )
    else:
        model = f", {event.model}" if event.model else ""
        text = (
            f"{event.agent_name} retry {event.attempt} (model call{model}) "
            f"in {event.delay_seconds:.1f}s: {why}"
        )
    return _Line(_DETAILED, text)


def _outcome(state: _RunState, event: RunFinished) -> str:
    """The run's last line: totals, or the error."""
    head = f"run {state.short_id}"
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        return f"{head} FAILED after {took}: {_describe(event.error)}"
    result = event.result
    if result is None:
        return f"{head} done in {took}"
    agents = len(result.history)
    parts = [
        f"{agents} agent{'' if agents == 1 else 's'}",
        f"{result.token_usage.total_tokens:,} tokens",
        _money(result.cost),
    ]
    if result.failures:
        failed = ", ".join(f"{f.agent_name} ({f.error_type})" for f in result.failures)
        parts.append(f"did not finish: {failed}")
    return f"{head} done in {took}: {', '.join(parts)}"


def _result_of(event: RunFinished) -> object:
    """The run's result, or the partial result a failed run's error carries."""
    if event.result is not None:
        return event.result
    return getattr(event.error, "partial", None)


def _usage_table(result: object) -> str | None:
    """``result.usage_table()`` when the result has one (and it gives text)."""
    method = getattr(result, "usage_table", None)
    if not callable(method):
        return None
    table = method()
    return table if isinstance(table, str) and table.strip() else None


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    text = _short(str(error), _ERROR_CHARS)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _money(cost: float | None) -> str:
    if cost is None:
        return "unpriced"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


# --- the live tree (rich is imported here, never at module import) -------------------

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


def _render_run(state: _RunState, level: int, now: float, frames: _Frames) -> RenderableType:
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
    if level == _MINIMAL or not state.steps:
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
    rows: Sequence[_Row],
    prefix: str,
    *,
    top: bool,
    level: int,
    now: float,
    frames: _Frames,
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


def _icon(status: str, now: float, frames: _Frames) -> str:
    if status != "running":
        return _ICONS.get(status, "?")
    chars, interval = frames
    if not chars:
        return "*"
    return chars[int(now * 1000 / max(interval, 1.0)) % len(chars)]


def _label(row: _Row) -> str:
    if row.kind == "group" and row.policy and row.policy != "all":
        return f"parallel ({row.policy})"
    return row.label


def _note(row: _Row, status: str, level: int) -> Text:
    from rich.text import Text

    text, style = "", "dim"
    if row.kind != "agent":
        pass
    elif status == "failed":
        text, style = row.error, _STYLES[status]
    elif status == "running":
        parts = [f"attempt {row.attempt}"] if row.attempt > 1 else []
        if level >= _DETAILED and row.activity:
            parts.append(row.activity)
        if level >= _DEBUG and row.text_tail:
            parts.append(repr(_short(row.text_tail, 40)))
        text = "  ".join(parts)
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _status_of(row: _Row) -> _Status:
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


def _elapsed(row: _Row, now: float) -> float | None:
    if row.kind == "branch":
        spans = [_span(child, now) for child in _walk(row.children)]
        starts = [s for s, _ in spans if s is not None]
        ends = [e for _, e in spans if e is not None]
        if not starts:
            return None
        end = max(ends) if _status_of(row) in _FINISHED and ends else now
        return max(0.0, end - min(starts))
    if row.duration is not None:
        return row.duration
    start, end = _span(row, now)
    return None if start is None or end is None else max(0.0, end - start)


def _span(row: _Row, now: float) -> tuple[float | None, float | None]:
    if row.started is None:
        return None, None
    if row.ended is not None:
        return row.started, row.ended
    return row.started, now if row.status == "running" else None


def _totals(rows: Sequence[_Row]) -> tuple[int, int, float, bool]:
    """Model calls, tokens, cost and whether any call was unpriced, over the agents below."""
    calls = tokens = 0
    cost = 0.0
    unpriced = False
    for row in _walk_agents(rows):
        calls += row.calls
        tokens += row.tokens
        cost += row.cost
        unpriced = unpriced or row.unpriced
    return calls, tokens, cost, unpriced


def _cost_cell(cost: float, unpriced: bool) -> str:
    return "—" if unpriced else _money(cost)
