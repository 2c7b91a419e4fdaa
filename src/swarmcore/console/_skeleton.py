"""The flow's skeleton: every agent's row, shown as waiting from the run's start.

The rows are built from the flow's shape, which RunStarted carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from swarmcore._flow.shape import AgentShape, FlowShape, GroupShape, MemberShape, StepShape
from swarmcore.console._rows import Row, RunState, walk, walk_agents
from swarmcore.events import RunStarted


def skeleton(event: RunStarted, state: RunState) -> list[Row]:
    """The rows of the run's flow, with its agents and groups indexed in ``state``.

    Gives no rows when the event carries no shape (one made by hand) or the
    flow has a route, loop or plan; the tree then grows from the events as they
    come. A control step gets no rows ahead of time because which of its agents
    run, and how many times, is known only while it runs.
    """
    if event.shape is None or not _plain(event.shape.steps):
        return []
    steps = _rows(event.shape.steps)
    for row in walk_agents(steps):
        state.agents[row.label] = row
    _index_groups(steps, state)
    return steps


def _plain(steps: tuple[StepShape, ...]) -> bool:
    """Whether ``steps`` hold only agents and parallel groups, at any depth."""
    return all(
        isinstance(step, AgentShape)
        or (isinstance(step, GroupShape) and all(_plain(_steps(m)) for m in step.members))
        for step in steps
    )


def _rows(steps: tuple[StepShape, ...]) -> list[Row]:
    """An agent row per agent; a group row per group, holding a row (or a branch) per member."""
    rows: list[Row] = []
    for step in steps:
        if isinstance(step, GroupShape):
            members = [_rows(_steps(member)) for member in step.members]
            children = [m[0] if len(m) == 1 else Row("branch", "branch", m) for m in members]
            rows.append(Row("parallel", "group", children))
        elif isinstance(step, AgentShape):
            rows.append(Row(step.name, "agent"))
    return rows


def _steps(member: MemberShape) -> tuple[StepShape, ...]:
    return member.steps if isinstance(member, FlowShape) else (member,)


def _index_groups(rows: Sequence[Row], state: RunState) -> None:
    for row in walk(rows):
        if row.kind == "group":
            state.groups[frozenset(a.label for a in walk_agents(row.children))] = row
