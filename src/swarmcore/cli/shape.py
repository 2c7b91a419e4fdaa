"""Reading a stored run's shape: its agents in flow order, for ``runs show``.

The shape is the JSON the store keeps of the flow (``RunRecord.shape``);
this module is the only place the CLI walks it.
"""

from __future__ import annotations

import json
from typing import Any

from swarmcore.store import RunRecord

__all__ = ["agent_order"]


def agent_order(record: RunRecord) -> tuple[list[str], bool]:
    """Agent names in flow order, from the stored shape (then any the shape lacks).

    Agents inside routes, loops and plans are listed only when they ran (a
    loop's as its iterations, ``w#1``, ``w#2``...). Also says whether the flow
    had any such agents, so that not every agent was expected to run.
    """
    ran = [r.agent_name for r in record.results] + [f.agent_name for f in record.failures]
    names: list[str] = []
    optional = False

    def add(name: str, maybe: bool) -> None:
        runs = [n for n in ran if n.partition("#")[0] == name and "#" in n]
        for n in runs or ([name] if not maybe or name in ran else []):
            if n not in names:
                names.append(n)

    def walk(item: object, maybe: bool) -> None:
        nonlocal optional
        if isinstance(item, str):
            add(item, maybe)
        elif isinstance(item, list):
            parts: list[object] = item  # pyright: ignore[reportUnknownVariableType]
            for part in parts:
                walk(part, maybe)
        elif isinstance(item, dict):
            node: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
            if "group" in node:
                walk(node["group"], maybe)
                return
            optional = True
            for part in _control_parts(node):
                walk(part, True)

    try:
        walk(json.loads(record.shape), False)
    except ValueError:
        names.clear()
    return _with_runs(names, ran), optional


def _with_runs(names: list[str], ran: list[str]) -> list[str]:
    """``names``, a loop's iterations in the order they ran (w#1, c#1, w#2...), then the rest."""
    iterations = iter(sorted((n for n in names if "#" in n), key=ran.index))
    ordered = [next(iterations) if "#" in n else n for n in names]
    return ordered + [n for n in ran if n not in ordered]


def _control_parts(node: dict[str, Any]) -> list[object]:
    """What a route, loop or plan in a stored shape holds, in flow order."""
    if "route" in node:
        router = [] if node.get("by") == "predicate" else [str(node.get("by"))]
        return [*router, *dict(node.get("branches") or {}).values()]
    if "loop" in node:
        return [node.get("body"), *([str(node["judge"])] if node.get("judge") else [])]
    if "plan" in node:
        return [str(node.get("planner")), node.get("agents")]
    return []
