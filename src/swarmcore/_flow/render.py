"""Drawing a flow from its shape: the ``>>``/``|`` expression, a Mermaid chart, a terminal tree.

Each function reads a :class:`~swarmcore._flow.shape.FlowShape` (``flow.shape()``,
or ``FlowShape.from_json`` for a stored run), so a live flow and a stored one
are drawn by the same code.
"""

from __future__ import annotations

from swarmcore._flow.shape import (
    AgentShape,
    FlowShape,
    GroupShape,
    LoopShape,
    MemberShape,
    PlanShape,
    RouteShape,
    StepShape,
)
from swarmcore._policies import Quorum
from swarmcore.errors import UserError

_DIRECTIONS = ("LR", "TD", "TB", "RL", "BT")


# --- the expression ------------------------------------------------------------------


def render_expression(shape: FlowShape) -> str:
    """The flow in the ``>>``/``|`` language, e.g. ``a >> (b | c) >> d``.

    Routes, loops and plans appear as ``name{...}`` (``route{short: a, long: b}``,
    ``loop{w >> c}``, ``p_plan{plan from a, b}``), which ``Flow.parse`` does
    not read back; groups' policies do not appear.
    """
    nested = len(shape.steps) > 1
    return " >> ".join(_step_text(step, nested=nested) for step in shape.steps)


def step_expression(step: StepShape) -> str:
    """One step in the ``>>``/``|`` language; a group without parentheses (``b | c``)."""
    return _step_text(step, nested=False)


def _step_text(step: StepShape, *, nested: bool) -> str:
    match step:
        case AgentShape():
            return step.name
        case GroupShape():
            text = " | ".join(_member_text(member) for member in step.members)
            return f"({text})" if nested else text
        case RouteShape():
            branches = ", ".join(f"{key}: {render_expression(f)}" for key, f in step.branches)
            return f"{step.name}{{{branches}}}"
        case LoopShape():
            return f"{step.name}{{{render_expression(step.body)}}}"
        case PlanShape():
            return f"{step.name}{{plan from {', '.join(step.agents)}}}"


def _member_text(member: MemberShape) -> str:
    if isinstance(member, FlowShape):
        return f"({render_expression(member)})"
    return _step_text(member, nested=False)


# --- Mermaid -------------------------------------------------------------------------


def render_mermaid(shape: FlowShape, direction: str = "LR") -> str:
    """The flow as a Mermaid flowchart, ready for a Markdown ``mermaid`` block.

    Args:
        shape: The flow's shape.
        direction: Mermaid direction: ``LR`` (left to right) or ``TD`` (top down);
            ``TB``, ``RL`` and ``BT`` also work.

    Raises:
        UserError: An unknown direction.
    """
    if direction not in _DIRECTIONS:
        raise UserError(f"direction must be one of LR, TD, TB, RL, BT, got {direction!r}.")
    lines = [f"flowchart {direction}"]
    lines += [f'    {_id(name)}["{name}"]' for name in shape.names()]
    lines += _mermaid_steps(shape.steps, [])[0]
    return "\n".join(lines)


def _id(name: str) -> str:
    """A Mermaid node id for a name (``writer#2`` is not a valid id)."""
    return name.replace("#", "_")


def _mermaid_steps(steps: tuple[StepShape, ...], prev: list[str]) -> tuple[list[str], list[str]]:
    """Mermaid lines for ``steps`` drawn after the node ids ``prev``; and the last exit ids."""
    lines: list[str] = []
    for step in steps:
        match step:
            case AgentShape():
                lines += [f"    {p} --> {_id(step.name)}" for p in prev]
                prev = [_id(step.name)]
            case GroupShape():
                exits: list[str] = []
                for member in step.members:
                    inner = member.steps if isinstance(member, FlowShape) else (member,)
                    more, out = _mermaid_steps(inner, prev)
                    lines += more
                    exits += out
                prev = exits
            case RouteShape():
                more, prev = _mermaid_route(step, prev)
                lines += more
            case LoopShape():
                more, prev = _mermaid_loop(step, prev)
                lines += more
            case PlanShape():
                planner = _id(step.planner)
                lines += [f"    {p} --> {planner}" for p in prev]
                lines += [f'    {planner} -.->|"may use"| {_id(a)}' for a in step.agents]
                prev = [_id(a) for a in step.agents]
    return lines, prev


def _mermaid_route(route: RouteShape, prev: list[str]) -> tuple[list[str], list[str]]:
    """A decision node (after its router, if any) with an edge per branch, labelled by its key."""
    lines = [f'    {route.name}{{"{route.name}"}}']
    if route.router is not None:
        lines += [f"    {p} --> {_id(route.router)}" for p in prev]
        lines.append(f"    {_id(route.router)} --> {route.name}")
    else:
        lines += [f"    {p} --> {route.name}" for p in prev]
    exits: list[str] = []
    for key, branch in route.branches:
        more, out = _mermaid_steps(branch.steps, [])
        lines += [f'    {route.name} -->|"{key}"| {_id(a)}' for a in _entries(branch)]
        lines += more
        exits += out
    return lines, exits


def _mermaid_loop(loop: LoopShape, prev: list[str]) -> tuple[list[str], list[str]]:
    """A subgraph around the body, with a dotted edge back to its start."""
    label = f"{loop.name}: at most {loop.max_iterations}"
    lines = [f'    subgraph {loop.name}["{label}"]']
    lines += [f"        {_id(name)}" for name in loop.body.names()]  # places them inside
    more, exits = _mermaid_steps(loop.body.steps, [])
    lines += ["    " + line for line in more]
    lines.append("    end")
    entries = [_id(name) for name in _entries(loop.body)]
    lines += [f"    {p} --> {e}" for p in prev for e in entries]
    again = "not done" if loop.judge is not None or loop.predicate else "next iteration"
    if loop.judge is not None:
        judge = _id(loop.judge)
        lines += [f"    {x} --> {judge}" for x in exits]
        lines += [f'    {judge} -.->|"{again}"| {e}' for e in entries]
        return lines, [judge]
    lines += [f'    {x} -.->|"{again}"| {e}' for x in exits for e in entries]
    return lines, exits


def _entries(item: StepShape | FlowShape) -> tuple[str, ...]:
    """The names of the agents that may start ``item``."""
    match item:
        case AgentShape():
            return (item.name,)
        case FlowShape():
            return _entries(item.steps[0])
        case GroupShape():
            return tuple(name for member in item.members for name in _entries(member))
        case RouteShape():
            if item.router is not None:
                return (item.router,)
            return tuple(name for _, branch in item.branches for name in _entries(branch))
        case LoopShape():
            return _entries(item.body)
        case PlanShape():
            return (item.planner,)


# --- the tree ------------------------------------------------------------------------


def render_tree(shape: FlowShape) -> str:
    """The flow drawn for a terminal, top to bottom in the order things run.

    Steps of a sequence are stacked; a parallel group is a ``parallel`` line
    with its members beneath it, and a branch (a member that is a sequence)
    stacks its steps along its member's line::

        a >> (b | c) >> d        (x >> y) | z
        a                        parallel
        parallel                 ├─ x
        ├─ b                     │  y
        └─ c                     └─ z
        d
    """
    return "\n".join(_tree_lines(shape.steps))


def _tree_lines(steps: tuple[StepShape, ...]) -> list[str]:
    lines: list[str] = []
    for step in steps:
        match step:
            case AgentShape():
                lines.append(step.name)
            case GroupShape():
                drawn = [
                    _tree_lines(m.steps if isinstance(m, FlowShape) else (m,)) for m in step.members
                ]
                lines += _under(_group_label(step), drawn)
            case RouteShape():
                by = "predicate" if step.router is None else f"router {step.router}"
                drawn = [_labelled(key, _tree_lines(f.steps)) for key, f in step.branches]
                lines += _under(f"{step.name} (route, by {by})", drawn)
            case LoopShape():
                until = f", judge {step.judge}" if step.judge is not None else ""
                until = until or (", until a predicate" if step.predicate else "")
                label = f"{step.name} (loop, at most {step.max_iterations}{until})"
                lines += _under(label, [_tree_lines(step.body.steps)])
            case PlanShape():
                lines.append(f"{step.planner} (plans from {', '.join(step.agents)})")
    return lines


def _under(label: str, children: list[list[str]]) -> list[str]:
    """``label`` with each child's lines beneath it on a tree branch."""
    lines = [label]
    for index, drawn in enumerate(children):
        last = index == len(children) - 1
        first, rest = ("└─ ", "   ") if last else ("├─ ", "│  ")
        lines.append(first + drawn[0])
        lines.extend((rest + line).rstrip() for line in drawn[1:])
    return lines


def _labelled(label: str, lines: list[str]) -> list[str]:
    pad = " " * (len(label) + 2)
    return [f"{label}: {lines[0]}", *(pad + line for line in lines[1:])]


def _group_label(group: GroupShape) -> str:
    details: list[str] = []
    if isinstance(group.policy, Quorum):
        details.append(f"quorum {group.policy.k} of {len(group.members)}")
    elif group.policy == "best_effort":
        details.append("best effort")
    if group.retries is not None:
        details.append(f"retries {group.retries}")
    return "parallel" + (f" ({', '.join(details)})" if details else "")
