"""Reading a stored run's shape: its agents in flow order, for ``runs show``.

The shape is the JSON the store keeps of the flow (``RunRecord.shape``), read
back with ``FlowShape.from_json``.
"""

from __future__ import annotations

from collections.abc import Iterator

from swarmcore._flow.shape import AgentShape, FlowShape, GroupShape, StepShape
from swarmcore.results import AgentKey
from swarmcore.store import RunRecord


def agent_order(record: RunRecord) -> tuple[list[str], bool]:
    """Agent names in flow order, from the stored shape (then any the shape lacks).

    Agents inside routes, loops and plans are listed only when they ran (a
    loop's as its iterations, ``w#1``, ``w#2``...). Also says whether the flow
    had any such agents, so that not every agent was expected to run.
    """
    ran = [r.agent_name for r in record.results] + [f.agent_name for f in record.failures]
    try:
        expected = list(_expected(FlowShape.from_json(record.shape).steps))
    except ValueError:  # an unreadable shape: list the agents as they ran
        expected = []
    keys = {n: AgentKey.parse(n) for n in ran}
    names: list[str] = []
    for name, maybe in expected:
        runs = [n for n, key in keys.items() if key.base == name and key.iteration is not None]
        for n in runs or ([name] if not maybe or name in ran else []):
            if n not in names:
                names.append(n)
    return _with_runs(names, ran), any(maybe for _, maybe in expected)


def _expected(steps: tuple[StepShape, ...]) -> Iterator[tuple[str, bool]]:
    """Each agent's name in flow order, and whether it runs only if a route, loop or plan says."""
    for step in steps:
        match step:
            case AgentShape():
                yield step.name, False
            case GroupShape():
                for member in step.members:
                    yield from _expected(
                        member.steps if isinstance(member, FlowShape) else (member,)
                    )
            case _:
                yield from ((name, True) for name in step.names())


def _with_runs(names: list[str], ran: list[str]) -> list[str]:
    """``names``, a loop's iterations in the order they ran (w#1, c#1, w#2...), then the rest."""
    iterations = iter(sorted(filter(_looped, names), key=ran.index))
    ordered = [next(iterations) if _looped(n) else n for n in names]
    return ordered + [n for n in ran if n not in ordered]


def _looped(name: str) -> bool:
    return AgentKey.parse(name).iteration is not None
