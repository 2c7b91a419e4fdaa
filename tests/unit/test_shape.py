from __future__ import annotations

import ast
from pathlib import Path

import pytest

from swarmcore import Agent, Flow, Swarm, chain, loop, parallel, plan, route
from swarmcore._flow import (
    AgentShape,
    FlowShape,
    GroupShape,
    LoopShape,
    PlanShape,
    RouteShape,
    StepShape,
    render_expression,
    render_mermaid,
    render_tree,
    shape_of,
    step_expression,
)
from swarmcore._policies import Quorum
from swarmcore.events import Event, RunStarted
from swarmcore.testing import offline_model

A, B, C, D, E, R, J, P = (Agent(n, f"{n} instructions") for n in "abcdeRJP")


def pick(context: object) -> str:
    return "x"


# Each flow with the JSON the store has always kept for it (shape_of before the
# typed shape existed) and the tree `swarmcore graph --format tree` drew for it
# (swarmcore.cli.tree). Both are written out literally so any change shows.
CASES: dict[str, tuple[Flow, str, str]] = {
    "agent": (chain(A), '["a"]', "a"),
    "chain": (A >> B >> C, '["a","b","c"]', "a\nb\nc"),
    "group": (
        A >> (B | C) >> D,
        '["a",{"group":["b","c"],"policy":"all","retries":null},"d"]',
        "a\nparallel\n├─ b\n└─ c\nd",
    ),
    "branch": (
        (A >> B) | C,
        '[{"group":[["a","b"],"c"],"policy":"all","retries":null}]',
        "parallel\n├─ a\n│  b\n└─ c",
    ),
    "nested": (
        A >> ((B >> (C | D)) | E),
        '["a",{"group":[["b",{"group":["c","d"],"policy":"all","retries":null}],"e"],'
        '"policy":"all","retries":null}]',
        "a\nparallel\n├─ b\n│  parallel\n│  ├─ c\n│  └─ d\n└─ e",
    ),
    "best-effort": (
        A >> parallel(B, C, policy="best_effort"),
        '["a",{"group":["b","c"],"policy":"best_effort","retries":null}]',
        "a\nparallel (best effort)\n├─ b\n└─ c",
    ),
    "quorum-retries": (
        parallel(A, B, C, policy=Quorum(2), retries=1) >> D,
        '[{"group":["a","b","c"],"policy":"quorum(2)","retries":1},"d"]',
        "parallel (quorum 2 of 3, retries 1)\n├─ a\n├─ b\n└─ c\nd",
    ),
    "group-with-policy-in-a-group": (
        parallel(parallel(A, B, policy="best_effort"), C),
        '[{"group":[[{"group":["a","b"],"policy":"best_effort","retries":null}],"c"],'
        '"policy":"all","retries":null}]',
        "parallel\n├─ parallel (best effort)\n│  ├─ a\n│  └─ b\n└─ c",
    ),
    "route-by-router": (
        A >> route({"short": B, "long": C >> D}, by=R) >> E,
        '["a",{"route":"R_route","by":"R","branches":{"short":["b"],"long":["c","d"]}},"e"]',
        "a\nR_route (route, by router R)\n├─ short: b\n└─ long: c\n         d\ne",
    ),
    "route-by-predicate": (
        route({"x": A, "y": B | C}, by=pick, name="pick"),
        '[{"route":"pick","by":"predicate","branches":{"x":["a"],'
        '"y":[{"group":["b","c"],"policy":"all","retries":null}]}}]',
        "pick (route, by predicate)\n├─ x: a\n└─ y: parallel\n      ├─ b\n      └─ c",
    ),
    "loop-with-judge": (
        A >> loop(B >> C, until=J, max_iterations=4) >> D,
        '["a",{"loop":"loop","body":["b","c"],"judge":"J","max":4},"d"]',
        "a\nloop (loop, at most 4, judge J)\n└─ b\n   c\nd",
    ),
    "loop-with-predicate": (
        loop(A >> (B | C), until=pick, max_iterations=2),
        '[{"loop":"loop","body":["a",{"group":["b","c"],"policy":"all","retries":null}],'
        '"judge":null,"max":2}]',
        "loop (loop, at most 2, until a predicate)\n└─ a\n   parallel\n   ├─ b\n   └─ c",
    ),
    "loop-counted": (
        loop(A, max_iterations=3, name="again"),
        '[{"loop":"again","body":["a"],"judge":null,"max":3}]',
        "again (loop, at most 3)\n└─ a",
    ),
    "plan": (
        A >> plan(P, [B, C, D]) >> E,
        '["a",{"plan":"P_plan","planner":"P","agents":["b","c","d"]},"e"]',
        "a\nP (plans from b, c, d)\ne",
    ),
    "route-in-a-group": (
        route({"q": A}, by=pick) | B,
        '[{"group":[{"route":"route","by":"predicate","branches":{"q":["a"]}},"b"],'
        '"policy":"all","retries":null}]',
        "parallel\n├─ route (route, by predicate)\n│  └─ q: a\n└─ b",
    ),
}


@pytest.mark.parametrize(("flow", "json_text", "tree"), CASES.values(), ids=CASES.keys())
def test_shape_of_is_the_json_the_store_has_always_kept(
    flow: Flow, json_text: str, tree: str
) -> None:
    assert shape_of(flow) == json_text
    assert flow.shape().to_json() == json_text


@pytest.mark.parametrize(("flow", "json_text", "tree"), CASES.values(), ids=CASES.keys())
def test_json_round_trip(flow: Flow, json_text: str, tree: str) -> None:
    shape = FlowShape.from_json(json_text)
    assert shape == flow.shape()
    assert shape.to_json() == json_text
    assert shape.names() == flow.names


@pytest.mark.parametrize(("flow", "json_text", "tree"), CASES.values(), ids=CASES.keys())
def test_tree_from_the_shape(flow: Flow, json_text: str, tree: str) -> None:
    assert render_tree(flow.shape()) == tree


@pytest.mark.parametrize(("flow", "json_text", "tree"), CASES.values(), ids=CASES.keys())
def test_a_stored_shape_draws_as_the_flow_does(flow: Flow, json_text: str, tree: str) -> None:
    stored = FlowShape.from_json(json_text)
    assert render_expression(stored) == flow.expression()
    if "until a predicate" in tree:  # the JSON does not keep what decides a loop
        assert render_tree(stored) == tree.replace(", until a predicate", "")
    else:
        assert render_tree(stored) == tree
        assert render_mermaid(stored) == flow.to_mermaid()


def test_every_kind_of_step_as_a_typed_value() -> None:
    flow = (
        A
        >> parallel(B >> C, D, policy=Quorum(1), retries=2)
        >> route({"x": E}, by=R)
        >> loop(J, until=pick, max_iterations=5, name="again")
        >> plan(P, [Agent("f", "x"), Agent("g", "x")])
    )
    expected = FlowShape(
        (
            AgentShape("a"),
            GroupShape(
                (FlowShape((AgentShape("b"), AgentShape("c"))), AgentShape("d")), Quorum(1), 2
            ),
            RouteShape("R_route", "R", (("x", FlowShape((AgentShape("e"),))),)),
            LoopShape("again", FlowShape((AgentShape("J"),)), None, 5, predicate=True),
            PlanShape("P_plan", "P", ("f", "g")),
        )
    )
    shape = flow.shape()
    assert shape == expected
    assert shape.steps[3] == LoopShape("again", FlowShape((AgentShape("J"),)), None, 5)
    assert isinstance(shape.steps[3], LoopShape)
    assert shape.steps[3].predicate
    assert FlowShape.from_json(shape.to_json()) == shape
    assert shape.names() == ("a", "b", "c", "d", "R", "e", "J", "P", "f", "g")
    assert [step.parallel for step in shape.steps] == [False, True, False, False, False]


@pytest.mark.parametrize(
    ("step", "text"),
    [
        (AgentShape("a"), "a"),
        (
            GroupShape((AgentShape("b"), FlowShape((AgentShape("c"), AgentShape("d"))))),
            "b | (c >> d)",
        ),
        (RouteShape("r", None, (("x", FlowShape((AgentShape("a"),))),)), "r{x: a}"),
        (LoopShape("l", FlowShape((AgentShape("a"), AgentShape("b"))), "j", 2), "l{a >> b}"),
        (PlanShape("p_plan", "p", ("a", "b")), "p_plan{plan from a, b}"),
    ],
    ids=["agent", "group", "route", "loop", "plan"],
)
def test_step_expression(step: StepShape, text: str) -> None:
    assert step_expression(step) == text


def test_group_policy_text() -> None:
    assert GroupShape((AgentShape("a"),)).policy_text == "all"
    assert GroupShape((AgentShape("a"),), "best_effort").policy_text == "best_effort"
    assert GroupShape((AgentShape("a"),), Quorum(1)).policy_text == "quorum(1)"


def test_control_node_label_is_its_step_expression() -> None:
    (node,) = route({"quick": A, "deep": B >> C}, by=pick).step_tuple
    assert node.label() == "route{quick: a, deep: b >> c}"
    assert repr(node) == "Route(route{quick: a, deep: b >> c})"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "Expecting value"),
        ("{}", "a list"),
        ("[]", "at least one step"),
        ("[1]", "a name or an object"),
        ('[{"what":"x"}]', "unknown kind of step"),
        ('[{"group":[],"policy":"all","retries":null}]', "at least one member"),
        ('[{"group":["a"],"policy":"most","retries":null}]', "all, best_effort or quorum"),
        ('[{"group":["a"],"policy":"quorum(0)","retries":null}]', "quorum"),
        ('[{"group":["a"],"policy":"all","retries":"1"}]', "'retries'"),
        ('[{"loop":"l","body":["a"],"judge":null,"max":true}]', "'max'"),
        ('[{"route":"r","by":"predicate","branches":[]}]', "branches"),
        ('[{"plan":"p","planner":"p","agents":[1]}]', "'agents'"),
    ],
)
def test_from_json_rejects_what_is_not_a_shape(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FlowShape.from_json(text)


async def test_run_started_carries_the_shape() -> None:
    model = offline_model()
    a, b, c = (Agent(n, "x", model=model) for n in "abc")
    flow = a >> (b | c)
    seen: list[Event] = []
    await Swarm(flow, hooks=[seen.append]).run("task")
    (started,) = [e for e in seen if isinstance(e, RunStarted)]
    assert started.shape == flow.shape()
    assert started.shape is not None
    assert started.shape.to_json() == shape_of(flow)


def test_flow_package_imports_point_one_way() -> None:
    package = Path(__file__).parents[2] / "src" / "swarmcore" / "_flow"
    imported: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        imported[path.stem] = {n for n in names if n.startswith("swarmcore")}
    outside = {
        n for names in imported.values() for n in names if not n.startswith("swarmcore._flow")
    }
    assert outside <= {"swarmcore.errors", "swarmcore._policies", "swarmcore._checks"}
    assert imported["shape"] <= {"swarmcore._policies"}
    assert imported["parse"] <= {"swarmcore.errors"}
    assert imported["render"] <= {
        "swarmcore.errors",
        "swarmcore._policies",
        "swarmcore._flow.shape",
    }
    assert "swarmcore._flow.model" not in imported["render"] | imported["parse"] | imported["shape"]
