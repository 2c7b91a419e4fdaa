"""The Flow model: immutable execution plans composed with ``>>`` (sequence) and ``|`` (parallel).

A flow is a sequence of steps. A step is one node (an Agent) or a parallel
group; a group's members are nodes or branches, and a branch is a Flow that
runs its own steps in order::

    a >> (b | c) >> d          three steps: a, the group (b, c), d
    (a >> b) | c               one group: the branch a >> b, and c

This module is pure data: it never imports ``agent.py`` (Agent inherits
``FlowNode`` from here) and does no I/O. It reads expressions through
:mod:`~swarmcore._flow.parse` and draws flows through their shape
(:mod:`~swarmcore._flow.shape`, :mod:`~swarmcore._flow.render`); none of those
imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from swarmcore._checks import check_number
from swarmcore._flow.parse import (
    ChainExpr,
    Expr,
    NameExpr,
    ParallelExpr,
    name_table,
    parse_expression,
)
from swarmcore._flow.render import render_expression, render_mermaid, step_expression
from swarmcore._flow.shape import AgentShape, ControlShape, FlowShape, GroupShape, NodeShape
from swarmcore._policies import GroupPolicy, check_group_policy
from swarmcore.errors import UserError

if TYPE_CHECKING:
    from typing import Self


class Composable:
    """Gives ``>>`` and ``|`` to nodes and flows."""

    __slots__ = ()

    def __rshift__(self, other: object) -> Flow:
        return chain(self, _operand(">>", self, other, right=True))

    def __rrshift__(self, other: object) -> Flow:
        return chain(_operand(">>", self, other, right=False), self)

    def __or__(self, other: object) -> Flow:
        return parallel(self, _operand("|", self, other, right=True))

    def __ror__(self, other: object) -> Flow:
        return parallel(_operand("|", self, other, right=False), self)


def _operand(op: str, this: Composable, other: object, *, right: bool) -> object:
    """``other`` if ``>>``/``|`` can take it; else say what it got (not chain() or parallel())."""
    if isinstance(other, Flow | FlowNode):
        return other
    mine = f"{type(this).__name__} {this.name!r}" if isinstance(this, FlowNode) else "a Flow"
    sides = (mine, _describe(other)) if right else (_describe(other), mine)
    hint = ""
    if isinstance(other, str):
        hint = (
            " Use the Agent object, not its name; to build a flow from text such as "
            "'a >> (b | c)', use Flow.parse(text, agents)."
        )
    raise UserError(
        f"{sides[0]} {op} {sides[1]}: {op} takes an Agent or a Flow on each side.{hint}"
    )


class FlowNode(Composable):
    """A single step of a flow. ``Agent`` is the node users compose."""

    __slots__ = ()

    name: str
    """The node's name, unique within a flow (a field of the subclass)."""


class ControlNode(FlowNode):
    """A step that decides at run time what runs: a route, a loop or a plan (``control.py``).

    Its agents belong to the flow (``flow.agents`` lists them, names stay
    unique); the node itself is not an agent.
    """

    __slots__ = ()

    def inner_agents(self) -> tuple[FlowNode, ...]:
        """Every agent the node may run, in flow order."""
        raise NotImplementedError

    def inner_flows(self) -> tuple[Flow, ...]:
        """The sub-flows the node holds (branches, a body)."""
        return ()

    def entry_agents(self) -> tuple[FlowNode, ...]:
        """The agents that may start the node."""
        raise NotImplementedError

    def exit_agents(self) -> tuple[FlowNode, ...]:
        """The agents whose outputs may end the node."""
        raise NotImplementedError

    def rebuild(
        self, flow: Callable[[Flow], Flow], agent: Callable[[FlowNode], FlowNode]
    ) -> ControlNode:
        """The same node with every sub-flow and agent replaced (for ``Flow.map_agents``)."""
        raise NotImplementedError

    def shape(self) -> ControlShape:
        """The node's shape: its kind, names and limits (drawing and the store read it)."""
        raise NotImplementedError

    def label(self) -> str:
        """How the node appears in an expression, e.g. ``route{short: a, long: b}``."""
        return step_expression(self.shape())


Member: TypeAlias = "FlowNode | Flow"
"""A member of a parallel group: a node, or a branch (a multi-step Flow)."""


class Group(tuple[Member, ...]):
    """A parallel group: its members (a tuple), and what it needs to succeed.

    Build one with ``|`` or :func:`parallel`; set a policy with
    ``parallel(..., policy=...)`` or :meth:`Flow.with_policy`.

    Attributes:
        policy: ``"all"``, ``"best_effort"`` or ``Quorum(k)``.
        retries: How many times a member agent that failed transiently is run again.
    """

    policy: GroupPolicy
    retries: int | None

    def __new__(
        cls, members: Iterable[Member], policy: GroupPolicy = "all", retries: int | None = None
    ) -> Group:
        """A group of ``members``; use :func:`parallel`, which validates the policy."""
        group = super().__new__(cls, members)
        group.policy = policy
        group.retries = retries
        return group

    @property
    def is_default(self) -> bool:
        """True for a plain ``a | b`` group, which merges into an enclosing group."""
        return self.policy == "all" and self.retries is None

    def __eq__(self, other: object) -> bool:
        same_members = super().__eq__(other)
        if isinstance(other, Group):
            return same_members and (self.policy, self.retries) == (other.policy, other.retries)
        return same_members

    def __hash__(self) -> int:
        return hash((tuple(self), self.policy, self.retries))

    def __repr__(self) -> str:
        return f"Group({list(self)!r}, policy={self.policy!r}, retries={self.retries!r})"


Step: TypeAlias = "FlowNode | Group"
"""A step: a node, or a parallel group."""


class Flow(Composable):
    """An immutable execution plan.

    Build flows with ``>>``, ``|``, :func:`chain` and :func:`parallel` rather
    than by hand. ``Flow(steps)`` accepts the public shape of ``flow.steps``
    (``list[Agent | list[Agent | Flow]]``) and validates it the same way.

    Raises:
        UserError: The flow is empty, holds something that is not an Agent or
            a Flow, or has two agents with the same name.
    """

    __slots__ = ("_agents", "_steps")

    _steps: tuple[Step, ...]
    _agents: tuple[FlowNode, ...]

    def __init__(self, steps: Sequence[FlowNode | Flow | Sequence[FlowNode | Flow]]) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise UserError(f"Flow() takes a list of steps, got {_describe(steps)}.")
        built = _normalise_steps(list(steps))
        object.__setattr__(self, "_steps", built)
        object.__setattr__(self, "_agents", tuple(_walk_nodes(built)))
        _check_names(self._agents)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Flow is immutable; build a new one with >>, | or chain().")

    @property
    def steps(self) -> list[FlowNode | list[FlowNode | Flow]]:
        """The steps, as a fresh list: a node, or a list (a parallel group)."""
        return [s if isinstance(s, FlowNode) else list(s) for s in self._steps]

    @property
    def step_tuple(self) -> tuple[Step, ...]:
        """The steps as stored (tuples); for code that walks the flow."""
        return self._steps

    @property
    def agents(self) -> list[FlowNode]:
        """Every agent in flow order (depth-first through groups and branches)."""
        return list(self._agents)

    @property
    def names(self) -> tuple[str, ...]:
        """Every agent's name in flow order."""
        return tuple(a.name for a in self._agents)

    def exits(self) -> tuple[FlowNode, ...]:
        """The agents whose outputs end the flow (the last step's terminal agents)."""
        return step_exits(self._steps[-1])

    def entries(self) -> tuple[FlowNode, ...]:
        """The agents that start the flow (the first step's entry agents)."""
        return step_entries(self._steps[0])

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[FlowNode | list[FlowNode | Flow]]:
        return iter(self.steps)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flow) and self._steps == other._steps

    def __hash__(self) -> int:
        return hash(self._steps)

    def __repr__(self) -> str:
        return f"Flow({self.expression()})"

    def expression(self) -> str:
        """The flow in the ``>>``/``|`` expression language, e.g. ``a >> (b | c) >> d``."""
        return render_expression(self.shape())

    def shape(self) -> FlowShape:
        """The flow's shape: agent names, order, groups, branches, policies and control steps.

        ``flow.shape().to_json()`` is what the store keeps; two flows with the
        same shape can continue each other's stored runs, even when their
        agents' instructions or models differ.
        """
        return FlowShape(tuple(_step_shape(step) for step in self._steps))

    @classmethod
    def parse(cls, expression: str, agents: Iterable[FlowNode] | Mapping[str, FlowNode]) -> Flow:
        """Build a flow from its expression, e.g. ``"researcher >> (analyst | critic) >> writer"``.

        The expression language is the one :meth:`expression` prints: names,
        ``>>``, ``|`` and parentheses (see :mod:`swarmcore._flow.parse`). It is
        parsed, never evaluated, so it is safe for text a model wrote; a
        surrounding pair of backticks or a Markdown fence, and a trailing
        period, are ignored. ``Flow.parse(f.expression(), f.agents) == f`` for
        any flow ``f`` whose groups have the default policy.

        Args:
            expression: The flow in the ``>>``/``|`` language.
            agents: The agents the names refer to, keyed by their ``name``; or
                a mapping of name to agent.

        Raises:
            UserError: The expression is not a string, too long or nested too
                deeply; a syntax error (with its position); an unknown name
                (with the closest known names); an agent used twice; or
                ``agents`` is not agents, or has two with the same name.
        """
        table = name_table(agents, FlowNode)

        def build(expr: Expr) -> FlowNode | Flow:
            match expr:
                case NameExpr():
                    return table[expr.name]
                case ChainExpr():
                    return chain(*map(build, expr.items))
                case ParallelExpr():
                    return parallel(*map(build, expr.items))

        return chain(build(parse_expression(expression, {k: a.name for k, a in table.items()})))

    def map_agents(self, fn: Callable[[FlowNode], FlowNode]) -> Flow:
        """The same shape (groups, branches, policies) with every agent replaced by ``fn(agent)``.

        Raises:
            UserError: ``fn`` returned something that is not a node, or duplicate names.
        """

        def node(item: FlowNode) -> FlowNode:
            new = fn(item)
            if not isinstance(new, FlowNode):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
                raise UserError(f"map_agents() must return Agents, got {_describe(new)}.")
            return new

        def one(item: FlowNode) -> FlowNode:
            if isinstance(item, ControlNode):
                return item.rebuild(lambda f: f.map_agents(fn), node)
            return node(item)

        def steps(items: tuple[Step, ...]) -> tuple[Step, ...]:
            out: list[Step] = []
            for step in items:
                if isinstance(step, FlowNode):
                    out.append(one(step))
                else:
                    members = tuple(
                        _from_steps(steps(m.step_tuple)) if isinstance(m, Flow) else one(m)
                        for m in step
                    )
                    out.append(Group(members, step.policy, step.retries))
            return tuple(out)

        return _from_steps(steps(self._steps))

    def with_policy(self, policy: GroupPolicy = "all", *, retries: int | None = None) -> Flow:
        """This flow, a single parallel group, with a failure policy.

        ``(b | c | d).with_policy(Quorum(2))`` continues once two succeeded;
        ``.with_policy("best_effort")`` continues past failures and tells later
        agents which members failed.

        Args:
            policy: ``"all"`` (default), ``"best_effort"`` or ``Quorum(k)``.
            retries: Runs again a member agent that failed transiently (a
                model outage that outlasted its retries, its own timeout) up
                to this many times; None uses the Swarm's ``step_retries``.

        Raises:
            UserError: The flow is not one parallel group, or the policy is invalid.
        """
        if len(self._steps) != 1 or not isinstance(self._steps[0], Group):
            raise UserError(
                f"with_policy() applies to one parallel group such as (b | c), not "
                f"{self.expression()!r}; wrap the group in parentheses before >>."
            )
        group = self._steps[0]
        return _from_steps((_make_group(tuple(group), policy, retries),))

    def to_mermaid(self, direction: str = "LR") -> str:
        """Render the flow as a Mermaid flowchart.

        Args:
            direction: Mermaid direction: ``LR`` (left to right) or ``TD`` (top down).

        Returns:
            Mermaid source text, ready for a Markdown ``mermaid`` block.

        Raises:
            UserError: An unknown direction.
        """
        return render_mermaid(self.shape(), direction)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


def chain(*items: object) -> Flow:
    """Run ``items`` one after another: ``chain(a, parallel(b, c), d)``.

    Flows among the items are spliced in, so ``chain(a >> b, c)`` is ``a >> b >> c``.

    Raises:
        UserError: No items, an item that is not an Agent or Flow, or duplicate names.
    """
    if not items:
        raise UserError("chain() needs at least one Agent or Flow.")
    steps: list[Step] = []
    for position, item in enumerate(items, start=1):
        match item:
            case Flow():
                steps.extend(item.step_tuple)
            case FlowNode():
                steps.append(item)
            case _:
                raise UserError(_not_composable("chain()", position, item))
    return _from_steps(tuple(steps))


def parallel(*items: object, policy: GroupPolicy = "all", retries: int | None = None) -> Flow:
    """Run ``items`` at the same time, as one parallel group: ``parallel(b, c)``.

    A multi-step Flow among the items becomes a branch that runs its steps in
    order; a Flow that is itself a plain parallel group is merged into this one,
    so ``a | b | c`` is one group of three (a group with its own policy stays a
    group of its own).

    Args:
        *items: Agents and Flows.
        policy: What the group needs: ``"all"`` members (default; the first
            failure cancels the rest), ``"best_effort"`` (failures are recorded
            and the run goes on) or ``Quorum(k)`` (go on once k succeeded).
        retries: Runs again a member agent that failed transiently up to this
            many times; None uses the Swarm's ``step_retries``.

    Raises:
        UserError: No items, an item that is not an Agent or Flow, duplicate
            names, or an invalid policy.
    """
    if not items:
        raise UserError("parallel() needs at least one Agent or Flow.")
    members: list[Member] = []
    for position, item in enumerate(items, start=1):
        match item:
            case FlowNode():
                members.append(item)
            case Flow():
                members.extend(_as_members(item))
            case _:
                raise UserError(_not_composable("parallel()", position, item))
    if len(members) == 1 and policy == "all" and retries is None:
        only = members[0]
        return only if isinstance(only, Flow) else _from_steps((only,))
    return _from_steps((_make_group(tuple(members), policy, retries),))


def _make_group(members: tuple[Member, ...], policy: object, retries: int | None) -> Group:
    checked = check_group_policy(policy, len(members))
    check_number(
        "A group", "retries", retries, whole=True, zero=True, none="the Swarm's step_retries"
    )
    return Group(members, checked, retries)


def step_entries(step: Step | Flow) -> tuple[FlowNode, ...]:
    """The agents that start ``step``."""
    match step:
        case ControlNode():
            return step.entry_agents()
        case FlowNode():
            return (step,)
        case Flow():
            return step.entries()
        case _:
            return tuple(a for m in step for a in step_entries(m))


def step_exits(step: Step | Flow) -> tuple[FlowNode, ...]:
    """The agents whose outputs end ``step``."""
    match step:
        case ControlNode():
            return step.exit_agents()
        case FlowNode():
            return (step,)
        case Flow():
            return step.exits()
        case _:
            return tuple(a for m in step for a in step_exits(m))


def control_nodes(steps: Iterable[Step]) -> list[ControlNode]:
    """Every route, loop and plan in ``steps`` at any depth, in flow order."""
    found: list[ControlNode] = []
    for step in steps:
        if isinstance(step, ControlNode):
            found.append(step)
            for inner in step.inner_flows():
                found += control_nodes(inner.step_tuple)
        elif isinstance(step, Group):
            for member in step:
                found += control_nodes(member.step_tuple if isinstance(member, Flow) else (member,))
    return found


def shape_of(flow: Flow) -> str:
    """The flow's shape as canonical JSON (``flow.shape().to_json()``), as the store keeps it.

    Two flows with the same shape can continue each other's stored runs, even
    when their agents' instructions or models differ.
    """
    return flow.shape().to_json()


def _step_shape(step: Step) -> NodeShape | GroupShape:
    if isinstance(step, Group):
        members = tuple(m.shape() if isinstance(m, Flow) else _node_shape(m) for m in step)
        return GroupShape(members, step.policy, step.retries)
    return _node_shape(step)


def _node_shape(node: FlowNode) -> NodeShape:
    return node.shape() if isinstance(node, ControlNode) else AgentShape(node.name)


# --- construction helpers ------------------------------------------------------------


def _from_steps(steps: tuple[Step, ...]) -> Flow:
    flow = Flow.__new__(Flow)
    object.__setattr__(flow, "_steps", steps)
    object.__setattr__(flow, "_agents", tuple(_walk_nodes(steps)))
    _check_names(flow._agents)  # pyright: ignore[reportPrivateUsage] -- same class
    return flow


def _as_members(flow: Flow) -> tuple[Member, ...]:
    """A flow as members of an enclosing group: a group merges in; a chain is one branch."""
    steps = flow.step_tuple
    if len(steps) != 1:
        return (flow,)
    (only,) = steps
    if isinstance(only, FlowNode):
        return (only,)
    return tuple(only) if only.is_default else (flow,)


def _normalise_steps(raw: list[Any]) -> tuple[Step, ...]:
    if not raw:
        raise UserError("A flow needs at least one step; pass one or more Agents.")
    steps: list[Step] = []
    for position, item in enumerate(raw, start=1):
        match item:
            case FlowNode():
                steps.append(item)
            case Flow():
                steps.extend(item.step_tuple)
            case Group():
                steps.append(item)
            case list() | tuple():
                members = tuple(item)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
                steps.extend(parallel(*members).step_tuple)  # pyright: ignore[reportUnknownArgumentType]
            case _:
                raise UserError(_not_composable("Flow()", position, item))
    return tuple(steps)


def _walk_nodes(steps: tuple[Step, ...]) -> Iterator[FlowNode]:
    for step in steps:
        match step:
            case ControlNode():
                yield from step.inner_agents()
            case FlowNode():
                yield step
            case Group():
                for member in step:
                    yield from _walk_nodes(
                        member.step_tuple if isinstance(member, Flow) else (member,)
                    )


def _check_names(agents: tuple[FlowNode, ...]) -> None:
    seen: set[str] = set()
    for agent in agents:
        if agent.name in seen:
            raise UserError(
                f"Flow has two agents named {agent.name!r}; names key the shared context, "
                f"so rename one (agent.clone(name='{agent.name}_2'))."
            )
        seen.add(agent.name)


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _not_composable(where: str, position: int, item: object) -> str:
    hint = " (did you mean the Agent object rather than its name?)" if isinstance(item, str) else ""
    return (
        f"{where} got {_describe(item)} at position {position}; "
        f"flows are built from Agent and Flow objects only{hint}."
    )
