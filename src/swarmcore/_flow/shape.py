"""The flow's shape: its agents' names, order, groups, policies and control steps, as values.

A shape is what a flow *is* apart from its agents' instructions, models and
tools: every consumer that shows or compares a flow reads it (the store, the
console, the CLI, the viewer). Two flows with the same shape can continue each
other's stored runs. Build one with ``flow.shape()``; write it with
:meth:`FlowShape.to_json` (the canonical JSON stored with every run) and read a
stored one back with :meth:`FlowShape.from_json`.

The JSON is a list of steps: an agent is its name, a branch is a list of
steps, and a group, route, loop or plan is an object. ``a >> ((b >> c) | d)``
is::

    ["a",{"group":[["b","c"],"d"],"policy":"all","retries":null}]

This module is pure data: it imports nothing else from swarmcore's flow.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias, cast

from swarmcore._policies import GroupPolicy, Quorum

_QUORUM = re.compile(r"quorum\((\d+)\)")


@dataclass(frozen=True, slots=True)
class AgentShape:
    """An agent, as a step or a group member."""

    name: str
    """The agent's name."""
    parallel: ClassVar[bool] = False
    """Whether the step runs members at the same time (only a group does)."""

    def names(self) -> tuple[str, ...]:
        """The agent's name, as a one-name tuple."""
        return (self.name,)


@dataclass(frozen=True, slots=True)
class GroupShape:
    """A parallel group: its members and what it needs to succeed."""

    members: tuple[MemberShape, ...]
    """Agents, control steps and branches (a branch is a :class:`FlowShape`)."""
    policy: GroupPolicy = "all"
    """``"all"``, ``"best_effort"`` or ``Quorum(k)``."""
    retries: int | None = None
    """How many times a member that failed transiently runs again; None: the Swarm's default."""
    parallel: ClassVar[bool] = True
    """Whether the step runs members at the same time (only a group does)."""

    def names(self) -> tuple[str, ...]:
        """Every agent's name in flow order."""
        return tuple(name for member in self.members for name in member.names())

    @property
    def policy_text(self) -> str:
        """The policy as the JSON and events write it: ``all``, ``best_effort`` or ``quorum(k)``."""
        return self.policy if isinstance(self.policy, str) else f"quorum({self.policy.k})"


@dataclass(frozen=True, slots=True)
class RouteShape:
    """A route: the branch a router agent or a predicate chooses runs."""

    name: str
    """The step's name."""
    router: str | None
    """The router agent's name; None when a Python predicate chooses.

    The JSON writes None as ``"predicate"``, so a router agent named
    ``predicate`` reads back as None.
    """
    branches: tuple[tuple[str, FlowShape], ...]
    """Each branch's key and sub-flow, in the order they were given."""
    parallel: ClassVar[bool] = False
    """Whether the step runs members at the same time (only a group does)."""

    def names(self) -> tuple[str, ...]:
        """The router's name (if any), then every branch's agents, in flow order."""
        router = () if self.router is None else (self.router,)
        return router + tuple(name for _, branch in self.branches for name in branch.names())


@dataclass(frozen=True, slots=True)
class LoopShape:
    """A loop: its body repeats until a judge or a predicate says done, or ``max_iterations``."""

    name: str
    """The step's name."""
    body: FlowShape
    """The sub-flow each iteration runs."""
    judge: str | None
    """The judge agent's name; None when a predicate decides, or nothing does."""
    max_iterations: int
    """The most iterations."""
    # Not in the JSON (stored runs never had it) and so not in equality either: a
    # shape read back from JSON says False, and flows that differ only here have
    # always been able to continue each other's runs.
    predicate: bool = field(default=False, compare=False)
    """True when a Python predicate decides when to stop (for drawing the loop)."""
    parallel: ClassVar[bool] = False
    """Whether the step runs members at the same time (only a group does)."""

    def names(self) -> tuple[str, ...]:
        """The body's agents, then the judge's name (if any), in flow order."""
        return self.body.names() + (() if self.judge is None else (self.judge,))


@dataclass(frozen=True, slots=True)
class PlanShape:
    """A plan: a planner agent writes, at run time, a flow from the agents it may use."""

    name: str
    """The step's name."""
    planner: str
    """The planner agent's name."""
    agents: tuple[str, ...]
    """The names of the agents the planner may use."""
    parallel: ClassVar[bool] = False
    """Whether the step runs members at the same time (only a group does)."""

    def names(self) -> tuple[str, ...]:
        """The planner's name, then the agents', in flow order."""
        return (self.planner, *self.agents)


ControlShape: TypeAlias = RouteShape | LoopShape | PlanShape
"""A control step: a route, a loop or a plan."""

NodeShape: TypeAlias = AgentShape | ControlShape
"""A single node: an agent or a control step."""

StepShape: TypeAlias = NodeShape | GroupShape
"""A step of a flow: a node, or a parallel group."""

MemberShape: TypeAlias = "NodeShape | FlowShape"
"""A member of a parallel group: a node, or a branch (a multi-step sub-flow)."""


@dataclass(frozen=True, slots=True)
class FlowShape:
    """A flow's shape: its steps, in order. ``flow.shape()`` builds one."""

    steps: tuple[StepShape, ...]
    """The steps, in the order they run."""

    def names(self) -> tuple[str, ...]:
        """Every agent's name in flow order (those inside routes, loops and plans included)."""
        return tuple(name for step in self.steps for name in step.names())

    def to_json(self) -> str:
        """The canonical JSON the store keeps and compares (compact, keys in a fixed order)."""
        return json.dumps(_data(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> FlowShape:
        """The shape that :meth:`to_json` wrote, e.g. a stored run's.

        A loop read back says ``predicate=False`` (the JSON does not keep it).

        Raises:
            ValueError: ``text`` is not JSON, or not a flow's shape.
        """
        return _flow(json.loads(text))


# --- to JSON -------------------------------------------------------------------------


def _data(item: StepShape | FlowShape) -> object:
    """``item`` as plain JSON data."""
    match item:
        case AgentShape():
            return item.name
        case FlowShape():
            return [_data(step) for step in item.steps]
        case GroupShape():
            members = [_data(member) for member in item.members]
            return {"group": members, "policy": item.policy_text, "retries": item.retries}
        case RouteShape():
            branches = {key: _data(branch) for key, branch in item.branches}
            by = "predicate" if item.router is None else item.router
            return {"route": item.name, "by": by, "branches": branches}
        case LoopShape():
            body = _data(item.body)
            return {
                "loop": item.name,
                "body": body,
                "judge": item.judge,
                "max": item.max_iterations,
            }
        case PlanShape():
            return {"plan": item.name, "planner": item.planner, "agents": list(item.agents)}


# --- from JSON -----------------------------------------------------------------------


def _flow(data: object) -> FlowShape:
    steps = _list(data, "A flow's steps")
    if not steps:
        raise ValueError("A flow's shape has at least one step, got [].")
    return FlowShape(tuple(_step(step) for step in steps))


def _step(data: object) -> StepShape:
    fields = _object_or_none(data)
    if fields is None or "group" not in fields:
        return _node(data)
    members = _list(fields["group"], "A group's members")
    if not members:
        raise ValueError("A group in a flow's shape has at least one member, got [].")
    return GroupShape(
        tuple(_node(m) if _list_or_none(m) is None else _flow(m) for m in members),
        _policy(fields.get("policy", "all")),
        _optional_count(fields.get("retries"), "retries"),
    )


def _node(data: object) -> NodeShape:
    if isinstance(data, str):
        return AgentShape(data)
    fields = _dict(data, "A step is a name or an object")
    if "route" in fields:
        by = _text(fields.get("by"), "by")
        branches = _dict(fields.get("branches"), "A route's branches are an object")
        return RouteShape(
            _text(fields["route"], "route"),
            None if by == "predicate" else by,
            tuple((key, _flow(branch)) for key, branch in branches.items()),
        )
    if "loop" in fields:
        judge = fields.get("judge")
        return LoopShape(
            _text(fields["loop"], "loop"),
            _flow(fields.get("body")),
            None if judge is None else _text(judge, "judge"),
            _count(fields.get("max"), "max"),
        )
    if "plan" in fields:
        agents = _list(fields.get("agents"), "A plan's agents")
        return PlanShape(
            _text(fields["plan"], "plan"),
            _text(fields.get("planner"), "planner"),
            tuple(_text(name, "agents") for name in agents),
        )
    raise ValueError(f"An unknown kind of step in a flow's shape: {_short(data)}.")


def _list(data: object, what: str) -> list[object]:
    items = _list_or_none(data)
    if items is None:
        raise ValueError(f"{what} are a list in a flow's shape, got {_short(data)}.")
    return items


def _dict(data: object, what: str) -> dict[str, object]:
    fields = _object_or_none(data)
    if fields is None:
        raise ValueError(f"{what} in a flow's shape, got {_short(data)}.")
    return fields


def _list_or_none(data: object) -> list[object] | None:
    return cast("list[object]", data) if isinstance(data, list) else None


def _object_or_none(data: object) -> dict[str, object] | None:
    return cast("dict[str, object]", data) if isinstance(data, dict) else None


def _policy(data: object) -> GroupPolicy:
    if data == "all":
        return "all"
    if data == "best_effort":
        return "best_effort"
    quorum = _QUORUM.fullmatch(data) if isinstance(data, str) else None
    if quorum is None or int(quorum.group(1)) < 1:
        raise ValueError(f"A group's policy is all, best_effort or quorum(k), got {_short(data)}.")
    return Quorum(int(quorum.group(1)))


def _text(data: object, key: str) -> str:
    if not isinstance(data, str):
        raise ValueError(f"{key!r} in a flow's shape is a name, got {_short(data)}.")
    return data


def _count(data: object, key: str) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise ValueError(f"{key!r} in a flow's shape is a whole number, got {_short(data)}.")
    return data


def _optional_count(data: object, key: str) -> int | None:
    return None if data is None else _count(data, key)


def _short(data: object) -> str:
    text = json.dumps(data)  # data read from JSON, so it writes back
    return text if len(text) <= 40 else text[:37] + "..."
