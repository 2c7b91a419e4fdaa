"""flow_svg: the flow's shape laid out as a self-contained SVG, read back with ElementTree."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from itertools import combinations

import pytest

from swarmcore import Agent, Flow, loop, parallel, plan, route
from swarmcore._flow import FlowShape
from swarmcore._policies import Quorum
from swarmcore._ui.graph import flow_svg
from swarmcore.testing import offline_model

SVG = "{http://www.w3.org/2000/svg}"
MODEL = offline_model()


def agent(name: str) -> Agent:
    return Agent(name, f"{name} instructions", model=MODEL)


A, B, C, D, E, F, R, J, P = (agent(n) for n in "abcdefRJP")


def pick(context: object) -> str:
    return "x"


@dataclass(frozen=True)
class Box:
    classes: frozenset[str]
    x: float
    y: float
    w: float
    h: float
    title: str
    text: str

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def _box(g: ET.Element) -> Box:
    rect = g.find(f"{SVG}rect")
    assert rect is not None
    x, y, w, h = (float(rect.attrib[k]) for k in ("x", "y", "width", "height"))
    title, text = g.findtext(f"{SVG}title", ""), g.findtext(f"{SVG}text")
    assert text is not None
    return Box(frozenset(g.attrib["class"].split()), x, y, w, h, title, text)


def agents(root: ET.Element) -> dict[str, Box]:
    """Every agent node by its data-agent; fails if a name is drawn twice."""
    found: dict[str, Box] = {}
    for g in root.iter(f"{SVG}g"):
        if "data-agent" in g.attrib:
            name = g.attrib["data-agent"]
            assert name not in found, f"{name} drawn twice"
            found[name] = _box(g)
    return found


def edges(root: ET.Element, kind: str = "edge") -> list[ET.Element]:
    return [p for p in root.iter(f"{SVG}path") if kind in p.attrib.get("class", "").split()]


def frames(root: ET.Element, kind: str) -> list[Box]:
    return [
        _box(g)
        for g in root.iter(f"{SVG}g")
        if g.attrib.get("class", "").split() == ["frame", kind]
    ]


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if cls in t.attrib.get("class", "")]


def points(path: ET.Element) -> list[tuple[float, float]]:
    """The points a path's ``d`` passes through (M, C, H and V, absolute)."""
    found: list[tuple[float, float]] = []
    for command, args in re.findall(r"([MCHV])([^MCHV]*)", path.attrib["d"]):
        numbers = [float(n) for n in args.split()]
        x, y = found[-1] if found else (0.0, 0.0)
        if command == "H":
            found.append((numbers[0], y))
        elif command == "V":
            found.append((x, numbers[0]))
        else:
            found += list(zip(numbers[::2], numbers[1::2], strict=True))
    return found


def ends(path: ET.Element) -> tuple[tuple[float, float], tuple[float, float]]:
    found = points(path)
    return found[0], found[-1]


def overlaps_x(a: Box, b: Box) -> bool:
    return a.x < b.right and b.x < a.right


def test_diamond_columns_rows_and_four_edges() -> None:
    root = parse(flow_svg((A >> (B | C) >> D).shape()))
    nodes = agents(root)
    a, b, c, d = (nodes[n] for n in "abcd")
    assert overlaps_x(b, c)
    assert b.x == c.x
    assert b.y != c.y
    assert b.bottom <= c.y or c.bottom <= b.y
    assert a.right < b.x
    assert a.right < c.x
    assert max(b.right, c.right) < d.x
    fork_join = edges(root)
    assert len(fork_join) == 4
    starts_ends = sorted(ends(p) for p in fork_join)
    # a's right side to b's and c's left sides; their right sides to d's left side.
    assert [s for s, _ in starts_ends].count((a.right, a.y + a.h / 2)) == 2
    assert [e for _, e in starts_ends].count((d.x, d.y + d.h / 2)) == 2


def test_every_agent_once_with_its_status_class() -> None:
    flow = (
        A
        >> ((B >> (C | D)) | E)
        >> route({"short": agent("s"), "long": agent("l1") >> agent("l2")}, by=R)
        >> loop(agent("w") >> agent("cr"), until=J, max_iterations=4)
        >> parallel(agent("q1"), agent("q2"), policy=Quorum(1), retries=2)
        >> plan(P, [agent("f"), agent("g")])
    )
    statuses = {
        "a": "succeeded",
        "b": "failed",
        "c": "running",
        "e": "skipped",
        "R": "no such status",
        "w#1": "succeeded",
        "w#2": "failed",  # the newest iteration stands for the loop's agent
        "cr#1": "succeeded",
    }
    svg = flow_svg(flow.shape(), statuses)
    nodes = agents(parse(svg))
    assert sorted(nodes) == sorted(flow.names)
    expected = {"a": "succeeded", "b": "failed", "c": "running", "e": "skipped", "w": "failed"}
    expected |= {"cr": "succeeded"}
    for name, box in nodes.items():
        status = expected.get(name, "pending")
        assert box.classes == {"node", "agent", status}, name
        assert box.text == name
        assert box.title == f"{name}: {status}"
    assert "no such status" not in svg
    # No two agents overlap, and the viewBox holds every box.
    for one, other in combinations(nodes.values(), 2):
        assert not (overlaps_x(one, other) and one.y < other.bottom and other.y < one.bottom)
    root = parse(svg)
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    for g in root.iter(f"{SVG}g"):
        if g.find(f"{SVG}rect") is not None:
            box = _box(g)
            assert box.x >= 0
            assert box.right <= width
            assert box.y >= 0
            assert box.bottom <= height
    assert frames(root, "group")[0].text == "quorum 1 of 2, retries 2"


def test_nested_groups() -> None:
    root = parse(flow_svg((A >> ((B >> C) | D) >> E).shape()))
    nodes = agents(root)
    a, b, c, d, e = (nodes[n] for n in "abcde")
    assert b.y == c.y
    assert b.right < c.x
    assert b.x == d.x
    assert d.y >= b.bottom
    assert a.right < b.x
    assert max(c.right, d.right) < e.x
    assert len(edges(root)) == 5  # a->b, a->d, b->c, c->e, d->e
    # The shorter branch d runs on (a tail, not an edge) to where b >> c ends, so the
    # edges joining e start at one x and cross no node.
    (tail,) = [p for p in root.iter(f"{SVG}path") if p.attrib.get("class") == "tail"]
    assert ends(tail) == ((d.right, d.y + d.h / 2), (c.right, d.y + d.h / 2))
    into_e = [p for p in edges(root) if ends(p)[1] == (e.x, e.y + e.h / 2)]
    assert sorted(ends(p)[0] for p in into_e) == [
        (c.right, c.y + c.h / 2),
        (c.right, d.y + d.h / 2),
    ]

    root = parse(flow_svg((A >> ((B >> (C | D)) | E) >> F).shape()))
    nodes = agents(root)
    c, d, e, f = (nodes[n] for n in "cdef")
    assert c.x == d.x
    assert c.y != d.y
    assert nodes["b"].right < c.x
    assert max(c.right, d.right, e.right) < f.x
    assert len(edges(root)) == 7  # a->b, a->e, b->c, b->d, c->f, d->f, e->f


def test_many_to_many_goes_through_a_join_dot() -> None:
    root = parse(flow_svg(((A | B) >> (C | D)).shape()))
    assert len(list(root.iter(f"{SVG}circle"))) == 1
    assert len(edges(root)) == 4  # two into the dot, two out of it
    assert sum(1 for p in edges(root) if "marker-end" in p.attrib) == 2


def test_route_draws_its_router_and_its_branches_as_alternatives() -> None:
    root = parse(flow_svg((A >> route({"short": B, "long": C >> D}, by=R) >> E).shape()))
    nodes = agents(root)
    r, b, c, d = (nodes[n] for n in "Rbcd")
    (frame,) = frames(root, "route")
    assert frame.text == "route R_route"
    for box in (r, b, c, d):
        assert frame.x < box.x
        assert box.right < frame.right
    assert r.right < b.x
    assert b.x == c.x
    assert b.y != c.y
    assert c.right < d.x
    choices = edges(root, "choice")
    assert len(choices) == 2
    assert all(ends(p)[0] == (r.right, r.y + r.h / 2) for p in choices)
    assert sorted(texts(root, "edge-label")) == ["long", "short"]
    assert nodes["a"].right < frame.x
    assert frame.right < nodes["e"].x


def test_route_by_predicate_has_a_decider_that_is_no_agent() -> None:
    root = parse(flow_svg(route({"x": A, "y": B | C}, by=pick, name="pick").shape()))
    assert sorted(agents(root)) == ["a", "b", "c"]
    deciders = [g for g in root.iter(f"{SVG}g") if g.attrib.get("class") == "node decider"]
    assert len(deciders) == 1
    assert _box(deciders[0]).text == "predicate"
    assert len(edges(root, "choice")) == 3  # to a, and to each of b and c
    assert sorted(texts(root, "edge-label")) == ["x", "y", "y"]


def test_loop_draws_its_body_judge_and_a_labelled_back_edge() -> None:
    shape = (A >> loop(B >> C, until=J, max_iterations=4) >> D).shape()
    root = parse(flow_svg(shape))
    nodes = agents(root)
    b, c, j = (nodes[n] for n in "bcJ")
    (frame,) = frames(root, "loop")
    assert frame.text == "loop loop"
    assert b.right < c.x
    assert c.right < j.x
    (back,) = edges(root, "back")
    start, end = ends(back)
    assert start == (j.right, j.y + j.h / 2)
    assert end == (b.x, b.y + b.h / 2)
    # The back-edge runs under the body, inside the frame.
    lane = max(y for _, y in points(back))
    assert max(b.bottom, c.bottom, j.bottom) < lane < frame.bottom
    assert texts(root, "back") == ["max 4 iterations, until J says done"]

    counted = parse(flow_svg(loop(A, max_iterations=3, name="again").shape()))
    assert texts(counted, "back") == ["max 3 iterations"]
    by_predicate = parse(flow_svg(loop(A >> B, until=pick, max_iterations=2).shape()))
    assert texts(by_predicate, "back") == ["max 2 iterations, until a predicate says done"]


def test_plan_draws_its_planner_and_worker_pool_as_a_group() -> None:
    root = parse(flow_svg((A >> plan(P, [B, C, D]) >> E).shape()))
    nodes = agents(root)
    p, workers = nodes["P"], [nodes[n] for n in "bcd"]
    (frame,) = frames(root, "plan")
    assert frame.text == "plan P_plan"
    assert len({w.x for w in workers}) == 1
    assert len({w.y for w in workers}) == 3
    assert all(p.right < w.x and w.right < frame.right for w in workers)
    choices = edges(root, "choice")
    assert len(choices) == 3
    assert all(ends(e)[0] == (p.right, p.y + p.h / 2) for e in choices)


def test_a_stored_shape_draws_like_the_flow() -> None:
    flow: Flow = A >> (B | C) >> route({"x": D}, by=R) >> plan(P, [E, F])
    stored = FlowShape.from_json(flow.shape().to_json())
    assert flow_svg(stored, {"a": "failed"}) == flow_svg(flow.shape(), {"a": "failed"})


def test_a_longer_name_gets_a_wider_node() -> None:
    nodes = agents(parse(flow_svg((A >> agent("a_much_longer_agent_name")).shape())))
    assert nodes["a_much_longer_agent_name"].w > nodes["a"].w + 100


HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "a&amp;b]]>' x=\"y",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_user_text_is_escaped(name: str) -> None:
    # Agent() refuses such names; a stored shape (read from a store) does not.
    data = [
        name,
        {"group": [name + "1", name + "2"], "policy": "best_effort", "retries": None},
        {"route": name, "by": name + "r", "branches": {name: [name + "3"]}},
        {"loop": name, "body": [name + "4"], "judge": name + "j", "max": 2},
        {"plan": name, "planner": name + "p", "agents": [name + "5"]},
    ]
    shape = FlowShape.from_json(json.dumps(data))
    svg = flow_svg(shape, {name: "<script>x</script>", name + "1": "succeeded"})
    assert "<script" not in svg.lower()
    assert "href" not in svg.lower()
    assert "onerror" not in svg or "<img" not in svg
    root = parse(svg)
    nodes = agents(root)
    assert sorted(nodes) == sorted(shape.names())  # each name round-trips exactly
    assert nodes[name].classes == {"node", "agent", "pending"}
    assert nodes[name].text == name
    assert nodes[name].title == f"{name}: pending"
    assert nodes[name + "1"].classes == {"node", "agent", "succeeded"}
    assert frames(root, "route")[0].text == f"route {name}"
    assert frames(root, "loop")[0].text == f"loop {name}"
    assert frames(root, "plan")[0].text == f"plan {name}"
    assert name in texts(root, "edge-label")
    # Only the SVG's own elements: nothing a name could have opened.
    tags = {el.tag.removeprefix(SVG) for el in root.iter()}
    assert tags <= {
        "svg",
        "style",
        "defs",
        "marker",
        "path",
        "g",
        "rect",
        "text",
        "title",
        "circle",
    }


def test_characters_xml_cannot_hold_are_replaced() -> None:
    shape = FlowShape.from_json(json.dumps(["bad\x00name\x1b"]))
    (name,) = agents(parse(flow_svg(shape)))
    assert name == "bad\ufffdname\ufffd"


def test_no_script_no_link_one_style() -> None:
    svg = flow_svg((A >> (B | C)).shape())
    root = parse(svg)
    assert "<script" not in svg
    assert "href" not in svg
    assert "http" not in svg.replace(SVG[1:-1], "")
    assert len(list(root.iter(f"{SVG}style"))) == 1
    for el in root.iter():
        assert not any(k.startswith("on") for k in el.attrib)


def test_a_frame_is_wide_enough_for_its_labels() -> None:
    shape = loop(A, until=J, max_iterations=3, name="a_rather_long_loop_name").shape()
    root = parse(flow_svg(shape))
    (frame,) = frames(root, "loop")
    (back,) = texts(root, "back")
    # 11px text advances at least 6px a character.
    assert frame.w >= 6 * len(frame.text)
    assert frame.w >= 6 * len(back)
    _, _, width, _ = (float(v) for v in root.attrib["viewBox"].split())
    assert frame.right <= width
