"""``swarmcore graph``: a flow as Mermaid, its expression, or a tree for the terminal."""

from __future__ import annotations

import argparse

from swarmcore.cli.targets import as_flow, load_target
from swarmcore.control import Loop, Plan, Route
from swarmcore.flow import Flow, Group, Step
from swarmcore.policies import Quorum

__all__ = ["command_graph", "tree"]


def command_graph(args: argparse.Namespace) -> int:
    """``swarmcore graph``: print the target flow as Mermaid, its expression or a tree."""
    flow = as_flow(load_target(args.target))
    if args.format == "text":
        print(flow.expression())
    elif args.format == "tree":
        print(tree(flow))
    else:
        print(flow.to_mermaid())
    return 0


def tree(flow: Flow) -> str:
    """``flow`` drawn for a terminal, top to bottom in the order things run.

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
    return "\n".join(_tree_lines(flow.step_tuple))


def _tree_lines(steps: tuple[Step, ...]) -> list[str]:
    lines: list[str] = []
    for step in steps:
        if isinstance(step, Group):
            drawn = [
                _tree_lines(m.step_tuple) if isinstance(m, Flow) else _tree_lines((m,))
                for m in step
            ]
            lines += _under(_group_label(step), drawn)
        elif isinstance(step, Route):
            by = f"router {step.router.name}" if step.router is not None else "predicate"
            drawn = [_labelled(k, _tree_lines(f.step_tuple)) for k, f in step.branches.items()]
            lines += _under(f"{step.name} (route, by {by})", drawn)
        elif isinstance(step, Loop):
            until = f", judge {step.judge.name}" if step.judge is not None else ""
            until = until or (", until a predicate" if step.until is not None else "")
            label = f"{step.name} (loop, at most {step.max_iterations}{until})"
            lines += _under(label, [_tree_lines(step.body.step_tuple)])
        elif isinstance(step, Plan):
            names = ", ".join(a.name for a in step.agents)
            lines.append(f"{step.planner.name} (plans from {names})")
        else:
            lines.append(step.name)
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


def _group_label(group: Group) -> str:
    details: list[str] = []
    if isinstance(group.policy, Quorum):
        details.append(f"quorum {group.policy.k} of {len(group)}")
    elif group.policy == "best_effort":
        details.append("best effort")
    if group.retries is not None:
        details.append(f"retries {group.retries}")
    return "parallel" + (f" ({', '.join(details)})" if details else "")
