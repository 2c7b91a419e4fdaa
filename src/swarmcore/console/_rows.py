"""What the console knows of a run: its rows (agents, groups, branches) and their state."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

Status: TypeAlias = Literal["waiting", "running", "done", "failed", "cancelled", "skipped"]
"""Where a row stands."""
FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled", "skipped"})
"""The statuses a row never leaves."""


@dataclass(slots=True, eq=False)
class Row:
    """One line of the tree: an agent, a parallel group or a branch of a group."""

    label: str
    """The agent's name; ``parallel`` or ``branch`` for the others."""
    kind: Literal["agent", "group", "branch"]
    children: list[Row] = field(default_factory=list["Row"])
    """A group's members, a branch's steps."""
    status: Status = "waiting"
    started: float | None = None
    ended: float | None = None
    duration: float | None = None
    policy: str | None = None
    """A group's policy, as its StepStarted gave it."""
    attempt: int = 1
    calls: int = 0
    """Model calls the agent made (answered ones)."""
    tokens: int = 0
    cost: float = 0.0
    unpriced: bool = False
    """Whether any of the agent's model calls was unpriced."""
    tools: dict[int, str] = field(default_factory=dict[int, str])
    """Tool calls in flight: span id to tool name."""
    activity: str = ""
    """What a running agent is doing: a model call, tools, a retry."""
    error: str = ""
    text_tail: str = ""
    """The last characters the agent streamed."""


@dataclass(slots=True, eq=False)
class RunState:
    """What one run looks like so far; never shared between runs."""

    run_id: str
    flow: str
    """The flow's expression, as RunStarted gave it (empty when the start was not seen)."""
    started: float
    open: bool = False
    """Seen starting and not yet finished."""
    live: bool = False
    """Drawn in the live display."""
    steps: list[Row] = field(default_factory=list[Row])
    """The top-level rows, in flow order."""
    agents: dict[str, Row] = field(default_factory=dict[str, Row])
    """Agent name to its row."""
    groups: dict[frozenset[str], Row] = field(default_factory=dict[frozenset[str], Row])
    """A parallel group's agents to its row."""
    spans: dict[int, Row] = field(default_factory=dict[int, Row])
    """Step, agent and model-call span ids to their row."""
    indent: dict[int, int] = field(default_factory=dict[int, int])
    """Span id to the indentation of plain lines for events inside it."""

    @property
    def short_id(self) -> str:
        """The run id's first characters, as lines show it."""
        return self.run_id[:6]


def walk(rows: Sequence[Row]) -> Iterator[Row]:
    """Every row of ``rows`` and below, depth first in flow order."""
    for row in rows:
        yield row
        yield from walk(row.children)


def walk_agents(rows: Sequence[Row]) -> Iterator[Row]:
    """The agent rows of ``rows`` and below, in flow order."""
    return (row for row in walk(rows) if row.kind == "agent")


def close_rows(state: RunState, now: float) -> None:
    """At the run's end: what still runs was cancelled, what still waits was never run."""
    for row in walk(state.steps):
        if row.kind == "branch":
            continue
        if row.status == "running":
            row.status, row.ended = "cancelled", now
            if row.kind == "agent" and not row.error:
                row.error = "cancelled"
        elif row.status == "waiting":
            row.status = "skipped"
