"""A flow drawn as a picture: :func:`flow_svg` lays out a :class:`FlowShape` as an SVG.

The shape is a series-parallel graph, drawn left to right: steps follow each
other in columns; a group stacks its branches (each laid out the same way) with
fork and join edges; a route draws its decider, then its branches with dashed
edges (only one runs); a loop frames its body (and judge) with a back-edge
labelled with its limit; a plan frames its planner and the agents it may use.

Each agent is one node carrying ``data-agent`` and a status class, so a page
can find and colour it. Every piece of text is escaped (a shape read from a
store is untrusted), and the SVG holds no script and no link: it is safe to
inline into a page. Sizes come from the layout; text width is estimated from
the number of characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from swarmcore._flow.shape import (
    AgentShape,
    FlowShape,
    GroupShape,
    LoopShape,
    PlanShape,
    RouteShape,
    StepShape,
)
from swarmcore._ui.svg import number as _n
from swarmcore._ui.svg import text as _text
from swarmcore.results import AgentKey

STATUSES = frozenset({"pending", "running", "succeeded", "failed", "skipped"})
"""The status classes a node can carry; any other status is drawn as ``pending``."""

NODE_H = 32.0
CHAR_W = 7.2  # a generous mean advance for 12px sans-serif text
NODE_PAD = 12.0  # text to the node's border, each side
MIN_NODE_W = 44.0
GAP_X = 44.0  # between columns: edges (and a join dot) live here
GAP_Y = 14.0  # between stacked branches
PAD = 12.0  # inside a frame, each side
LABEL_H = 16.0  # a frame's title line
BACK_H = 24.0  # under a loop's body: its back-edge and its label
MARGIN = 8.0

_Point: TypeAlias = tuple[float, float]
_Port: TypeAlias = tuple[_Point, "str | None"]  # an entry point, and the label of edges into it

_STYLE = (
    "<style>.swarmcore-flow{font:12px system-ui,-apple-system,'Segoe UI',sans-serif}"
    ".node rect{fill:#fff;stroke:#6b7280;stroke-width:1.5}.arrow,.join{fill:#6b7280}"
    ".node text{text-anchor:middle;dominant-baseline:central;fill:#111827}"
    ".node.succeeded rect{fill:#dcfce7;stroke:#16a34a}"
    ".node.failed rect{fill:#fee2e2;stroke:#dc2626}"
    ".node.running rect{fill:#dbeafe;stroke:#2563eb}.node.decider rect{fill:#fef9c3;stroke:#ca8a04}"
    ".node.skipped rect{fill:#f3f4f6;stroke:#9ca3af;stroke-dasharray:4 3}"
    ".node.skipped text{fill:#6b7280}"
    ".edge,.tail{fill:none;stroke:#6b7280;stroke-width:1.5}.edge.choice{stroke-dasharray:5 4}"
    ".edge.back{stroke:#7c3aed}.edge-label,.frame text{font-size:11px;fill:#4b5563}"
    ".frame rect{fill:none;stroke:#9ca3af;stroke-dasharray:2 3}.frame.route rect{stroke:#ca8a04}"
    ".frame.loop rect{stroke:#7c3aed}.frame.plan rect{stroke:#0891b2}</style>"
)
_DEFS = (
    '<defs><marker id="swarmcore-arrow" viewBox="0 0 8 8" refX="8" refY="4" '
    'markerWidth="7" markerHeight="7" orient="auto">'
    '<path class="arrow" d="M0 0L8 4L0 8z"/></marker></defs>'
)
_ARROW = ' marker-end="url(#swarmcore-arrow)"'


def flow_svg(shape: FlowShape, statuses: Mapping[str, str] | None = None) -> str:
    """The flow drawn as a self-contained SVG document (no script, no external reference).

    Args:
        shape: The flow's shape (``flow.shape()`` or a stored run's, via
            :meth:`FlowShape.from_json`).
        statuses: Agent name to status (``pending``, ``running``, ``succeeded``,
            ``failed`` or ``skipped``), drawn as the node's class; a missing
            or unknown status is ``pending``. Without the agent's own name, a
            loop's iterations (``name#k``) stand for it, the newest first.

    Returns:
        An ``<svg>`` element whose agents are ``<g class="node agent STATUS"
        data-agent="NAME">`` with a ``<title>`` tooltip, a rounded ``<rect>``
        and a ``<text>``; edges are ``<path class="edge ...">`` (``choice``:
        one of a route's or plan's alternatives; ``back``: a loop's back-edge);
        routes, loops, plans and groups with a policy are ``<g class="frame KIND">``.
    """
    item = _flow(shape)
    width, height = _size(item)
    canvas = _Canvas(statuses or {})
    canvas.draw(item, MARGIN, MARGIN)
    w, h = _n(width + 2 * MARGIN), _n(height + 2 * MARGIN)
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="swarmcore-flow" '
            f'viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
            f'aria-label="{_text("the flow: " + ", ".join(shape.names()))}">',
            _STYLE,
            _DEFS,
            '<g class="frames">',
            *canvas.frames,
            '</g><g class="edges">',
            *canvas.edges,
            '</g><g class="nodes">',
            *canvas.nodes,
            "</g></svg>",
        ]
    )


# --- the layout tree: what a shape is drawn as -------------------------------------


@dataclass(frozen=True, slots=True)
class _Leaf:
    label: str
    agent: str | None  # None: a predicate deciding a route, not an agent


@dataclass(frozen=True, slots=True)
class _Series:
    items: tuple[_Item, ...]
    choice: bool = False  # the first link goes to alternatives (a route's, a plan's)


@dataclass(frozen=True, slots=True)
class _Stack:
    items: tuple[_Item, ...]
    keys: tuple[str | None, ...]  # the label on the edges into each item


@dataclass(frozen=True, slots=True)
class _Frame:
    item: _Item
    label: str
    kind: str  # group, route, loop or plan
    back: str | None = None  # a loop's back-edge label


_Item: TypeAlias = "_Leaf | _Series | _Stack | _Frame"


def _flow(shape: FlowShape) -> _Item:
    items = tuple(_step(step) for step in shape.steps)
    return items[0] if len(items) == 1 else _Series(items)


def _step(step: StepShape | FlowShape) -> _Item:
    match step:
        case FlowShape():
            return _flow(step)
        case AgentShape():
            return _Leaf(step.name, step.name)
        case GroupShape():
            stack = _Stack(tuple(_step(m) for m in step.members), (None,) * len(step.members))
            label = _group_label(step)
            return stack if label is None else _Frame(stack, label, "group")
        case RouteShape():
            by = (
                _Leaf("predicate", None) if step.router is None else _Leaf(step.router, step.router)
            )
            branches = _Stack(
                tuple(_flow(branch) for _, branch in step.branches),
                tuple(key for key, _ in step.branches),
            )
            return _Frame(_Series((by, branches), choice=True), f"route {step.name}", "route")
        case LoopShape():
            body = _flow(step.body)
            judge = step.judge
            inner = body if judge is None else _Series((body, _Leaf(judge, judge)))
            until = (
                f", until {judge} says done"
                if judge is not None
                else ", until a predicate says done"
                if step.predicate
                else ""
            )
            back = f"max {step.max_iterations} iterations{until}"
            return _Frame(inner, f"loop {step.name}", "loop", back)
        case PlanShape():
            pool = _Stack(tuple(_Leaf(a, a) for a in step.agents), (None,) * len(step.agents))
            planner = _Leaf(step.planner, step.planner)
            return _Frame(_Series((planner, pool), choice=True), f"plan {step.name}", "plan")


def _group_label(group: GroupShape) -> str | None:
    parts: list[str] = []
    if group.policy == "best_effort":
        parts.append("best effort")
    elif group.policy != "all":
        parts.append(f"quorum {group.policy.k} of {len(group.members)}")
    if group.retries is not None:
        parts.append(f"retries {group.retries}")
    return ", ".join(parts) or None


# --- sizes ---------------------------------------------------------------------------


def _text_w(text: str) -> float:
    return len(text) * CHAR_W


def _node_w(label: str) -> float:
    return max(MIN_NODE_W, _text_w(label) + 2 * NODE_PAD)


def _gaps(series: _Series) -> list[float]:
    """The gap before each item after the first; wide enough for a route's branch keys."""
    gaps = [GAP_X] * (len(series.items) - 1)
    second = series.items[1] if len(series.items) > 1 else None
    if series.choice and isinstance(second, _Stack):
        widest = max((_text_w(key) for key in second.keys if key is not None), default=0.0)
        gaps[0] = max(GAP_X, widest + 24)
    return gaps


def _size(item: _Item) -> tuple[float, float]:
    match item:
        case _Leaf():
            return _node_w(item.label), NODE_H
        case _Series():
            sizes = [_size(child) for child in item.items]
            return sum(w for w, _ in sizes) + sum(_gaps(item)), max(h for _, h in sizes)
        case _Stack():
            sizes = [_size(child) for child in item.items]
            return max(w for w, _ in sizes), sum(h for _, h in sizes) + GAP_Y * (len(sizes) - 1)
        case _Frame():
            w, h = _size(item.item)
            back = 0.0 if item.back is None else _text_w(item.back)
            width = max(w, _text_w(item.label), back) + 2 * PAD
            return width, h + 2 * PAD + LABEL_H + (0.0 if item.back is None else BACK_H)


# --- drawing -------------------------------------------------------------------------


class _Canvas:
    """Draws a layout tree at absolute coordinates into three layers of SVG elements."""

    def __init__(self, statuses: Mapping[str, str]) -> None:
        self.statuses = statuses
        self.frames: list[str] = []
        self.edges: list[str] = []
        self.nodes: list[str] = []
        # A loop records iteration k of `name` as `name#k`: the newest stands for the agent.
        self.newest: dict[str, tuple[int, str]] = {}
        for name, status in statuses.items():
            key = AgentKey.parse(name)
            if key.iteration and key.iteration >= self.newest.get(key.base, (-1, ""))[0]:
                self.newest[key.base] = (key.iteration, status)

    def draw(self, item: _Item, x: float, y: float) -> tuple[list[_Port], list[_Point]]:
        """Draw ``item`` with its top-left at ``(x, y)``; its entry and exit points."""
        match item:
            case _Leaf():
                w = _node_w(item.label)
                self.node(item, x, y, w)
                return [((x, y + NODE_H / 2), None)], [(x + w, y + NODE_H / 2)]
            case _Series():
                height = _size(item)[1]
                ins: list[_Port] = []
                outs: list[_Point] = []
                for k, (child, gap) in enumerate(zip(item.items, [0.0, *_gaps(item)], strict=True)):
                    w, h = _size(child)
                    x += gap
                    child_ins, child_outs = self.draw(child, x, y + (height - h) / 2)
                    if k == 0:
                        ins = child_ins
                    else:
                        join = (x - gap / 2, y + height / 2)
                        self.link(outs, child_ins, join, choice=item.choice and k == 1)
                    outs = child_outs
                    x += w
                return ins, outs
            case _Stack():
                ins, outs = [], []
                right = x + _size(item)[0]
                for key, child in zip(item.keys, item.items, strict=True):
                    child_ins, child_outs = self.draw(child, x, y)
                    ins += [(point, label if key is None else key) for point, label in child_ins]
                    # A shorter branch runs on straight to the stack's right side, so the
                    # edges that join it never cross a longer branch's nodes.
                    for ox, oy in child_outs:
                        if ox < right:
                            self.edges.append(
                                f'<path class="tail" d="M{_n(ox)} {_n(oy)}H{_n(right)}"/>'
                            )
                    outs += [(right, oy) for _, oy in child_outs]
                    y += _size(child)[1] + GAP_Y
                return ins, outs
            case _Frame():
                w, h = _size(item)
                self.frames.append(
                    f'<g class="frame {item.kind}"><rect x="{_n(x)}" y="{_n(y)}" '
                    f'width="{_n(w)}" height="{_n(h)}" rx="8"/>'
                    f'<text x="{_n(x + PAD)}" y="{_n(y + PAD + 6)}">{_text(item.label)}</text></g>'
                )
                ins, outs = self.draw(item.item, x + PAD, y + PAD + LABEL_H)
                if item.back is not None:
                    self.back(ins, outs, (x + PAD, y + h - PAD - BACK_H + 8), item.back)
                return ins, outs

    def node(self, leaf: _Leaf, x: float, y: float, w: float) -> None:
        label = _text(leaf.label)
        if leaf.agent is None:
            head = '<g class="node decider">'
            tip = f"{label}: a Python predicate chooses the branch"
        else:
            status = self.status(leaf.agent)
            head = f'<g class="node agent {status}" data-agent="{_text(leaf.agent)}">'
            tip = f"{label}: {status}"
        self.nodes.append(
            f"{head}<title>{tip}</title>"
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(NODE_H)}" rx="6"/>'
            f'<text x="{_n(x + w / 2)}" y="{_n(y + NODE_H / 2)}">{label}</text></g>'
        )

    def status(self, agent: str) -> str:
        status = self.statuses.get(agent)
        if status is None and agent in self.newest:
            status = self.newest[agent][1]
        return status if status in STATUSES else "pending"

    def link(self, outs: list[_Point], ins: list[_Port], join: _Point, *, choice: bool) -> None:
        """Edges from each exit of a step to each entry of the next (via a dot if many to many)."""
        kind = "edge choice" if choice else "edge"
        if len(outs) > 1 and len(ins) > 1:
            self.nodes.append(f'<circle class="join" cx="{_n(join[0])}" cy="{_n(join[1])}" r="3"/>')
            for out in outs:
                self.edge(out, join, "edge", None, arrow=False)
            outs = [join]
        for out in outs:
            for point, label in ins:
                self.edge(out, point, kind, label)

    def edge(
        self, a: _Point, b: _Point, kind: str, label: str | None, *, arrow: bool = True
    ) -> None:
        (x1, y1), (x2, y2) = a, b
        mid = (x1 + x2) / 2
        path = f"M{_n(x1)} {_n(y1)}C{_n(mid)} {_n(y1)} {_n(mid)} {_n(y2)} {_n(x2)} {_n(y2)}"
        self.edges.append(f'<path class="{kind}" d="{path}"{_ARROW if arrow else ""}/>')
        if label is not None:
            self.edges.append(
                f'<text class="edge-label" x="{_n(x2 - 4)}" y="{_n(y2 - 5)}" '
                f'text-anchor="end">{_text(label)}</text>'
            )

    def back(self, ins: list[_Port], outs: list[_Point], at: _Point, label: str) -> None:
        """A loop's back-edge: from the body's (lowest) end, under it, to its (lowest) start."""
        sx, sy = max(outs, key=lambda p: (p[0], p[1]))
        ex, ey = min((p for p, _ in ins), key=lambda p: (p[0], -p[1]))
        left, lane = at
        path = f"M{_n(sx)} {_n(sy)}H{_n(sx + 8)}V{_n(lane)}H{_n(ex - 8)}V{_n(ey)}H{_n(ex)}"
        self.edges.append(f'<path class="edge back" d="{path}"{_ARROW}/>')
        self.edges.append(
            f'<text class="edge-label back" x="{_n(left)}" y="{_n(lane + 13)}" '
            f'text-anchor="start">{_text(label)}</text>'
        )
