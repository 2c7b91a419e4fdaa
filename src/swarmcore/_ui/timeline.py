"""A run's timeline: :func:`timeline_svg` draws a stored run as a Gantt chart in SVG.

One row per agent, in the order the agents started: a bar from the agent's
start to its end, coloured by how it ended, and inside it thinner bars for its
model calls (upper lane) and tool calls (lower lane), on a time axis counted in
seconds from the run's start. Parallel branches show as bars that overlap in x;
an agent with both a failed attempt and a result on record shows both in its row.
Records stored before swarmcore kept start times are listed without a bar.

Like :mod:`swarmcore._ui.graph`, every piece of text is escaped (a record read
from a store is untrusted) and the SVG holds no script and no link.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from swarmcore._ui.svg import number as _n
from swarmcore._ui.svg import text as _text
from swarmcore.results import AgentFailure, AgentResult
from swarmcore.store._base import RunRecord

NO_TIMING = "no timing (recorded before start times)"
"""The note on a row whose records carry no start time."""
NOT_RUN = "did not run"
"""The note on a row for an agent cancelled or skipped before it started."""

CHAR_W = 7.2  # a generous mean advance for 12px sans-serif text
CHART_W = 640.0  # the time axis' length
ROW_H = 30.0
BAR_Y, BAR_H = 5.0, 20.0  # an agent's bar, within its row
MODEL_Y, TOOL_Y, CALL_H = 8.0, 16.0, 6.0  # its calls' lanes, within the bar
AXIS_H = 24.0  # the tick labels above the rows
GAP = 12.0  # between the names and the chart
MARGIN = 8.0


_STYLE = (
    "<style>.swarmcore-timeline{font:12px system-ui,-apple-system,'Segoe UI',sans-serif}"
    ".name{fill:#111827;dominant-baseline:central}.note{fill:#6b7280;font-style:italic;"
    "dominant-baseline:central}.tick line{stroke:#e5e7eb}.tick text{font-size:11px;"
    "fill:#4b5563;text-anchor:middle}.row:nth-child(even) .band{fill:#f9fafb}.band{fill:none}"
    ".agent{fill:#e5e7eb;stroke:#6b7280}.agent.succeeded{fill:#dcfce7;stroke:#16a34a}"
    ".agent.failed{fill:#fee2e2;stroke:#dc2626}.agent.skipped{fill:#f3f4f6;stroke:#9ca3af}"
    ".model{fill:#2563eb}.tool{fill:#ca8a04}</style>"
)


@dataclass(slots=True)
class _Row:
    agent: str
    attempts: list[AgentResult | AgentFailure] = field(
        default_factory=list[AgentResult | AgentFailure]
    )

    def start(self) -> float:
        return min((s for a in self.attempts if (s := a.started_at) is not None), default=math.inf)


def timeline_svg(record: RunRecord) -> str:
    """The run's agents and their calls as a Gantt chart: a self-contained SVG document.

    Args:
        record: A stored run (``store.get_run(run_id)``).

    Returns:
        An ``<svg>`` element with one ``<g class="row" data-agent="NAME">`` per agent
        (results and failures, in the order they started; agents without a start
        time last). A timed attempt is a ``<rect class="agent STATUS">`` (``succeeded``,
        ``failed`` or ``skipped``) holding ``<rect class="model">`` and
        ``<rect class="tool">`` bars, each with a ``<title>``; an untimed row has
        a ``<text class="note">``. Ticks along the top are ``<g class="tick">``,
        labelled in seconds from the run's start.
    """
    rows: dict[str, _Row] = {}
    for attempt in [*record.failures, *record.results]:
        rows.setdefault(attempt.agent_name, _Row(attempt.agent_name)).attempts.append(attempt)
    ordered = sorted(rows.values(), key=_Row.start)  # stable: untimed rows keep record order
    for row in ordered:
        row.attempts.sort(key=lambda a: math.inf if a.started_at is None else a.started_at)

    starts = [s for row in ordered if (s := row.start()) != math.inf]
    origin = min([record.started_at, *starts])
    ends = [_end(a) for row in ordered for a in row.attempts if a.started_at is not None]
    span = max([e - origin for e in ends if e is not None] + [0.0])
    step = _tick_step(span)
    span = max(step, math.ceil(span / step - 1e-9) * step)
    scale = CHART_W / span

    label_w = max([CHAR_W * len(row.agent) for row in ordered] + [40.0])
    left = MARGIN + label_w + GAP
    note_w = CHAR_W * len(NO_TIMING)
    last_tick = CHAR_W * len(_seconds(span)) / 2  # centred on the axis' end: keep it whole
    width = left + max(CHART_W + last_tick, note_w) + MARGIN
    height = MARGIN + AXIS_H + ROW_H * max(len(ordered), 1) + MARGIN
    top = MARGIN + AXIS_H

    def x(t: float) -> float:
        return left + (t - origin) * scale

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="swarmcore-timeline" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" height="{_n(height)}" '
        f'role="img" aria-label="{_text("the timeline of run " + record.run_id)}">',
        _STYLE,
        '<g class="axis">',
    ]
    k = 0
    while k * step <= span + 1e-9:
        tx = left + k * step * scale
        parts.append(
            f'<g class="tick"><line x1="{_n(tx)}" y1="{_n(top - 4)}" x2="{_n(tx)}" '
            f'y2="{_n(height - MARGIN)}"/><text x="{_n(tx)}" y="{_n(top - 10)}">'
            f"{_seconds(k * step)}</text></g>"
        )
        k += 1
    parts.append('</g><g class="rows">')
    for i, row in enumerate(ordered):
        y = top + i * ROW_H
        parts.append(
            f'<g class="row" data-agent="{_text(row.agent)}">'
            f'<rect class="band" x="0" y="{_n(y)}" width="{_n(width)}" height="{_n(ROW_H)}"/>'
            f'<text class="name" x="{_n(MARGIN)}" y="{_n(y + ROW_H / 2)}">{_text(row.agent)}</text>'
        )
        timed = [a for a in row.attempts if a.started_at is not None]
        for attempt in timed:
            parts.extend(_attempt(attempt, x, y))
        if not timed:
            never = all(isinstance(a, AgentFailure) and a.cancelled for a in row.attempts)
            parts.append(
                f'<text class="note" x="{_n(left)}" y="{_n(y + ROW_H / 2)}">'
                f"{NOT_RUN if never else NO_TIMING}</text>"
            )
        parts.append("</g>")
    parts.append("</g></svg>")
    return "".join(parts)


def _attempt(
    attempt: AgentResult | AgentFailure, x: Callable[[float], float], y: float
) -> list[str]:
    """One timed attempt: its bar, with its model and tool calls inside."""
    start = attempt.started_at
    assert start is not None
    end = _end(attempt)
    assert end is not None
    if isinstance(attempt, AgentResult):
        status = "succeeded"
        tip = f"{attempt.agent_name}: succeeded in {_seconds(attempt.duration_seconds)}"
        tip += f", {attempt.token_usage.total_tokens} tokens, model {attempt.model}"
    else:
        status = "skipped" if attempt.cancelled else "failed"
        tip = f"{attempt.agent_name}: {attempt.error_type} after {_seconds(end - start)}"
        tip += f": {attempt.message}"
    if attempt.attempts > 1:
        tip += f" (attempt {attempt.attempts})"
    out = [_bar(f"agent {status}", x(start), x(end), y + BAR_Y, BAR_H, tip)]
    if isinstance(attempt, AgentResult):
        for call in attempt.llm_calls:
            if call.started_at is not None:
                tip = (
                    f"model {call.model}: {call.token_usage.total_tokens} tokens "
                    f"({call.token_usage.prompt_tokens} in, {call.token_usage.completion_tokens} "
                    f"out), {_seconds(call.duration_seconds)}, "
                    f"{call.attempts} attempt{'s' if call.attempts != 1 else ''}"
                )
                s, e = call.started_at, call.started_at + call.duration_seconds
                out.append(_bar("model", x(s), x(e), y + MODEL_Y, CALL_H, tip))
        for tool in attempt.tool_calls:
            if tool.started_at is not None:
                tip = f"tool {tool.tool_name}: {_seconds(tool.duration_seconds)}"
                tip += "" if tool.error is None else f", failed: {tool.error}"
                s, e = tool.started_at, tool.started_at + tool.duration_seconds
                out.append(_bar("tool", x(s), x(e), y + TOOL_Y, CALL_H, tip))
    return out


def _bar(kind: str, x1: float, x2: float, y: float, h: float, tip: str) -> str:
    w = max(x2 - x1, 1.0)  # an instant still shows
    return (
        f'<rect class="{kind}" x="{_n(x1)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
        f'rx="2"><title>{_text(tip)}</title></rect>'
    )


def _end(attempt: AgentResult | AgentFailure) -> float | None:
    if attempt.started_at is None:
        return None
    return attempt.started_at + (attempt.duration_seconds or 0.0)


def _tick_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about five ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / 5
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _seconds(value: float) -> str:
    return f"{value:.3g}s" if value < 10 else f"{value:.0f}s"
