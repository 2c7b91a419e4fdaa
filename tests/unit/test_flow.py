from __future__ import annotations

import copy

import pytest

from swarmcore import Agent, Flow, UserError, chain, parallel


def make(*names: str) -> list[Agent]:
    return [Agent(n, f"{n} instructions") for n in names]


def test_sequence_and_parallel_shapes() -> None:
    a, b, c, d = make("a", "b", "c", "d")
    flow = a >> (b | c) >> d
    assert flow.steps == [a, [b, c], d]
    assert [x.name for x in flow.agents] == ["a", "b", "c", "d"]
    assert chain(a, parallel(b, c), d) == flow


def test_three_way_parallel_is_one_group() -> None:
    a, b, c = make("a", "b", "c")
    assert (a | b | c).steps == [[a, b, c]]
    assert parallel(a, parallel(b, c)).steps == [[a, b, c]]


def test_branch_is_a_multi_step_flow() -> None:
    a, b, c, d = make("a", "b", "c", "d")
    flow = (a >> b) | c
    (group,) = flow.steps
    assert isinstance(group, list)
    branch, other = group
    assert isinstance(branch, Flow)
    assert branch.steps == [a, b]
    assert other is c
    assert [x.name for x in (d >> flow).agents] == ["d", "a", "b", "c"]


def test_building_never_mutates_operands() -> None:
    a, b, c = make("a", "b", "c")
    left = a >> b
    before = left.steps
    _ = left >> c
    _ = left | c
    assert left.steps == before
    with pytest.raises(AttributeError, match="immutable"):
        left._steps = ()  # type: ignore[misc]
    steps = left.steps
    steps.append(c)
    assert len(left.steps) == 2
    assert copy.deepcopy(left) is left


def test_chain_splices_flows() -> None:
    a, b, c = make("a", "b", "c")
    assert chain(a >> b, c).steps == [a, b, c]
    assert chain(a).steps == [a]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda a, b: chain(), "at least one"),
        (lambda a, b: parallel(), "at least one"),
        (
            lambda a, b: a >> "writer",
            r"^Agent 'a' >> str 'writer': >> takes an Agent or a Flow on each side\. Use the "
            r"Agent object, not its name; to build a flow from text such as 'a >> \(b \| c\)', "
            r"use Flow\.parse\(text, agents\)\.$",
        ),
        (lambda a, b: "writer" >> a, r"^str 'writer' >> Agent 'a': >> takes an Agent or a Flow"),
        (lambda a, b: (a >> b) | 3, r"^a Flow \| int 3: \| takes an Agent or a Flow on each"),
        (lambda a, b: chain(a, 42), "int 42 at position 2"),
        (lambda a, b: a | None, r"^Agent 'a' \| NoneType None: \| takes an Agent or a Flow"),
        (lambda a, b: a >> a, "two agents named 'a'"),
        (
            lambda a, b: a >> (b | Agent("a", "again")),
            r"two agents named 'a'.*rename one \(agent\.clone\(name='a_2'\)\)",
        ),
        (lambda a, b: Flow([]), "at least one step"),
        (lambda a, b: Flow("a"), "takes a list of steps"),
    ],
    ids=[
        "empty-chain",
        "empty-parallel",
        "string",
        "string-on-the-left",
        "flow-or-int",
        "int",
        "none",
        "same-agent",
        "dup-name",
        "flow-empty",
        "flow-str",
    ],
)
def test_invalid_flows_fail_at_construction(build, message: str) -> None:  # type: ignore[no-untyped-def]
    a, b = make("a", "b")
    with pytest.raises(UserError, match=message):
        build(a, b)


def test_public_constructor_accepts_the_steps_shape() -> None:
    a, b, c, d = make("a", "b", "c", "d")
    assert Flow([a, [b, c], d]) == a >> (b | c) >> d
    assert Flow([[a >> b, c]]) == (a >> b) | c


def test_repr_and_expression() -> None:
    a, b, c, d = make("a", "b", "c", "d")
    assert repr(a >> (b | c) >> d) == "Flow(a >> (b | c) >> d)"
    assert repr(b | c) == "Flow(b | c)"
    assert repr(((a >> b) | c) >> d) == "Flow(((a >> b) | c) >> d)"


def test_mermaid_edges_follow_the_flow() -> None:
    a, b, c, d, e = make("a", "b", "c", "d", "e")
    text = (a >> ((b >> c) | d) >> e).to_mermaid()
    assert text.splitlines()[0] == "flowchart LR"
    edges = {line.strip() for line in text.splitlines() if "-->" in line}
    assert edges == {"a --> b", "a --> d", "b --> c", "c --> e", "d --> e"}
    with pytest.raises(UserError, match="direction"):
        (a >> b).to_mermaid("sideways")


def test_exits_and_entries() -> None:
    a, b, c, d = make("a", "b", "c", "d")
    flow = a >> ((b >> c) | d)
    assert [x.name for x in flow.exits()] == ["c", "d"]
    assert [x.name for x in flow.entries()] == ["a"]
