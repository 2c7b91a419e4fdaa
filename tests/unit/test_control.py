"""route(), loop() and plan(): their runs, decisions, events, store records and drawings."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from swarmcore import (
    Agent,
    Decision,
    Flow,
    ModelError,
    OutputValidationError,
    Swarm,
    SwarmResult,
    UserError,
    loop,
    plan,
    route,
)
from swarmcore._flow import shape_of
from swarmcore._structured import SCHEMA_PROMPT
from swarmcore.context import SharedContext
from swarmcore.control import Loop, Plan, Route
from swarmcore.events import (
    Event,
    LoopFinished,
    LoopIteration,
    PlanMade,
    RouteChosen,
    RunStarted,
    StepFinished,
    StepStarted,
)
from swarmcore.store import SQLiteStore
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.helpers import framed, nonce_of, summarised

Answer = str | Reply | Fail


class Team:
    """One FunctionModel for many agents, keyed on the first word of the instructions.

    Each agent answers from its own queue of replies, then ``<name> output``;
    requests are kept and counted per agent. Keep the Team referenced while a
    run is going: test models are registered weakly.
    """

    def __init__(self, replies: dict[str, list[Answer]] | None = None) -> None:
        self.replies = {k: list(v) for k, v in (replies or {}).items()}
        self.calls: Counter[str] = Counter()
        self.requests: defaultdict[str, list[RecordedRequest]] = defaultdict(list)
        self.function = FunctionModel(self._answer)

    def _answer(self, request: RecordedRequest) -> Answer:
        who = request.system.split()[0]
        self.calls[who] += 1
        self.requests[who].append(request)
        queue = self.replies.get(who)
        if queue:
            return queue.pop(0)
        return f"{who} output"

    def agent(self, name: str, **settings: Any) -> Agent:
        return Agent(name, f"{name} does its part.", model=self.function.model, **settings)

    def agents(self, *names: str) -> list[Agent]:
        return [self.agent(n) for n in names]


def names_of(result: SwarmResult) -> list[str]:
    return [r.agent_name for r in result.history]


def schema_in(system: str) -> dict[str, Any]:
    """The JSON schema a text-protocol structured answer must match, read from the prompt."""
    start = system.index(SCHEMA_PROMPT) + len(SCHEMA_PROMPT)
    return json.loads(system[start:].strip().split("\n", 1)[0])


def pick(branch: str | None) -> Any:
    return lambda _ctx: branch  # pyright: ignore[reportUnknownLambdaType]


# --- 1. routes chosen by a predicate ---------------------------------------------------------


async def test_a_predicate_route_runs_only_the_chosen_branch() -> None:
    team = Team({"a": ["this needs depth"]})
    a, d = team.agents("a", "d")
    quick_model, deep_model = ScriptedModel(["short answer"]), ScriptedModel(["long answer"])
    s = Agent("s", "s answers fast.", model=quick_model.model)
    ln = Agent("l", "l answers at length.", model=deep_model.model)
    views: list[tuple[list[str], str | None]] = []

    def by(ctx: SharedContext) -> str:
        views.append((ctx.keys(), ctx.get("a")))
        return "deep" if "depth" in (ctx.get("a") or "") else "quick"

    result = await Swarm(a >> route({"quick": s, "deep": ln}, by=by) >> d, context_mode="push").run(
        "task"
    )
    assert views == [(["a"], "this needs depth")]
    assert quick_model.requests == []  # the other branch's model is never asked
    deep_model.assert_consumed()
    assert ("a", None, "this needs depth") in framed(deep_model.requests[0].system)
    assert team.calls == Counter({"a": 1, "d": 1})
    assert names_of(result) == ["a", "l", "d"]
    assert list(result.context) == ["a", "l", "d"]
    assert ("l", None, "long answer") in framed(
        team.requests["d"][0].system
    )  # the branch's output in full
    assert "short answer" not in team.requests["d"][0].system
    assert result.output == "d output"
    assert result.decisions == [Decision(kind="route", step="route", value="deep", by="predicate")]


async def test_a_predicate_route_takes_the_other_branch_too() -> None:
    team = Team({"a": ["easy"]})
    a, s, ln, d = team.agents("a", "s", "l", "d")

    def by(ctx: SharedContext) -> str:
        return "deep" if "depth" in (ctx.get("a") or "") else "quick"

    flow = a >> route({"quick": s, "deep": ln}, by=by) >> d
    result = await Swarm(flow).run("task")
    assert names_of(result) == ["a", "s", "d"]
    assert team.calls["l"] == 0
    assert result.decisions[0].value == "quick"


async def test_an_async_predicate_is_awaited() -> None:
    team = Team()
    a, s, ln = team.agents("a", "s", "l")

    async def by(ctx: SharedContext) -> str:
        assert ctx.get("a") == "a output"
        return "quick"

    result = await Swarm(a >> route({"quick": s, "deep": ln}, by=by)).run("task")
    assert names_of(result) == ["a", "s"]
    assert team.calls["l"] == 0
    assert result.decisions == [Decision(kind="route", step="route", value="quick", by="predicate")]


async def test_default_branch_runs_when_the_predicate_returns_none() -> None:
    team = Team()
    a, s, ln = team.agents("a", "s", "l")
    result = await Swarm(a >> route({"quick": s, "deep": ln}, by=pick(None), default="deep")).run(
        "task"
    )
    assert names_of(result) == ["a", "l"]
    assert team.calls["s"] == 0
    assert result.decisions[0].value == "deep"


async def test_none_without_a_default_is_an_error_naming_the_branches() -> None:
    team = Team()
    a, s, ln = team.agents("a", "s", "l")
    with pytest.raises(UserError, match=r"chose None.*\['quick', 'deep'\]"):
        await Swarm(a >> route({"quick": s, "deep": ln}, by=pick(None))).run("task")
    assert team.calls["s"] == team.calls["l"] == 0


async def test_an_unknown_branch_name_is_a_user_error_with_the_partial_result() -> None:
    team = Team()
    a, s, ln, d = team.agents("a", "s", "l", "d")
    with pytest.raises(UserError) as info:
        await Swarm(a >> route({"quick": s, "deep": ln}, by=pick("medium")) >> d).run("task")
    message = str(info.value)
    assert "'medium'" in message
    assert "['quick', 'deep']" in message
    partial = info.value.partial
    assert partial is not None
    assert names_of(partial) == ["a"]
    assert partial.context == {"a": "a output"}
    assert partial.decisions == []
    assert team.calls == Counter({"a": 1})


async def test_a_raising_predicate_is_a_user_error() -> None:
    team = Team()
    a, s, ln = team.agents("a", "s", "l")

    def by(_ctx: SharedContext) -> str:
        raise KeyError("no such field")

    with pytest.raises(UserError, match=r"Route 'route': its predicate raised KeyError") as info:
        await Swarm(a >> route({"quick": s, "deep": ln}, by=by)).run("task")
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.partial is not None
    assert names_of(info.value.partial) == ["a"]
    assert team.calls == Counter({"a": 1})


async def test_an_unhashable_predicate_answer_is_a_user_error() -> None:
    team = Team()
    a, s, ln = team.agents("a", "s", "l")
    with pytest.raises(UserError, match="not a branch") as info:
        await Swarm(a >> route({"quick": s, "deep": ln}, by=pick(["deep"]))).run("task")  # type: ignore[arg-type]
    assert info.value.partial is not None


async def test_branches_can_be_multi_step_flows_and_parallel_groups() -> None:
    team = Team()
    s1, s2, p1, p2, d = team.agents("s1", "s2", "p1", "p2", "d")
    branches = {"chain": s1 >> s2, "fan": p1 | p2}

    chained = await Swarm(route(branches, by=pick("chain")) >> d, context_mode="push").run("t")
    assert names_of(chained) == ["s1", "s2", "d"]
    assert ("s2", None, "s2 output") in framed(team.requests["d"][0].system)
    # s1 is an earlier step, but its short output (no summary) is its own summary: shown whole.
    assert ("s1", None, "s1 output") in framed(team.requests["d"][0].system)
    assert summarised(team.requests["d"][0].system) == []
    assert team.calls["p1"] == team.calls["p2"] == 0

    fanned = await Swarm(route(branches, by=pick("fan"))).run("t")
    assert names_of(fanned) == ["p1", "p2"]
    assert fanned.output == "## p1\n\np1 output\n\n## p2\n\np2 output"
    assert team.calls["s1"] == 1  # only from the first run


async def test_a_route_as_the_last_step_gives_the_chosen_branch_output() -> None:
    team = Team({"l": ["the long answer"]})
    a, s, ln = team.agents("a", "s", "l")
    result = await Swarm(a >> route({"quick": s, "deep": ln}, by=pick("deep"))).run("task")
    assert result.output == "the long answer"


async def test_a_route_inside_a_branch_of_a_parallel_group() -> None:
    team = Team()
    a, s, ln, y, x, d = team.agents("a", "s", "l", "y", "x", "d")
    flow = a >> ((route({"quick": s, "deep": ln}, by=pick("quick")) >> y) | x) >> d
    result = await Swarm(flow).run("task")
    assert names_of(result) == ["a", "s", "y", "x", "d"]
    assert team.calls["l"] == 0
    assert result.decisions == [Decision(kind="route", step="route", value="quick", by="predicate")]


async def test_a_route_as_a_direct_member_of_a_parallel_group() -> None:
    team = Team({"l": ["long"]})
    a, s, ln, x, d = team.agents("a", "s", "l", "x", "d")
    flow = a >> (route({"quick": s, "deep": ln}, by=pick("deep")) | x) >> d
    result = await Swarm(flow).run("task")
    assert flow.names == ("a", "s", "l", "x", "d")
    assert names_of(result) == ["a", "l", "x", "d"]
    assert team.calls["s"] == 0


def test_a_route_in_a_parallel_group_shows_its_branches_in_the_expression() -> None:
    team = Team()
    s, ln, x = team.agents("s", "l", "x")
    flow = route({"quick": s, "deep": ln}, by=pick("deep")) | x
    assert flow.expression() == "route{quick: s, deep: l} | x"


def test_route_arguments_are_checked() -> None:
    team = Team()
    s, ln = team.agents("s", "l")
    with pytest.raises(UserError, match="dict of branch name"):
        route({}, by=pick("x"))
    with pytest.raises(UserError, match="function of the context or a router Agent"):
        route({"quick": s}, by="quick")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"default='slow'.*not a branch"):
        route({"quick": s}, by=pick("quick"), default="slow")
    with pytest.raises(UserError):
        route({"not a name": s}, by=pick("quick"))
    with pytest.raises(UserError, match="must be an Agent or a Flow"):
        route({"quick": "s"}, by=pick("quick"))
    with pytest.raises(UserError, match="two agents named 's'"):
        route({"quick": s, "deep": s >> ln}, by=pick("quick"))


# --- 2. routes chosen by a router agent ------------------------------------------------------


async def test_a_router_agent_chooses_from_the_branch_names() -> None:
    team = Team({"l": ["long answer"]})
    a, s, ln, d = team.agents("a", "s", "l", "d")
    router_model = ScriptedModel(['{"branch": "deep", "reason": "it is subtle"}'])
    triage = Agent("triage", "triage decides.", model=router_model.model)
    flow = a >> route({"quick": s, "deep": ln}, by=triage) >> d
    assert flow.names == ("a", "triage", "s", "l", "d")
    result = await Swarm(flow, context_mode="push").run("task")

    router_model.assert_consumed()
    request = router_model.requests[0]
    assert request.system.startswith("triage decides.")
    assert "- quick: s" in request.system
    assert "- deep: l" in request.system
    assert ("a", None, "a output") in framed(request.system)  # the router sees the steps before it
    schema = schema_in(request.system)
    assert schema["properties"]["branch"]["enum"] == ["quick", "deep"]
    assert schema["required"] == ["branch"]

    assert names_of(result) == ["a", "triage", "l", "d"]
    assert team.calls["s"] == 0
    assert json.loads(result["triage"].output) == {"branch": "deep", "reason": "it is subtle"}
    assert result.decisions == [
        Decision(
            kind="route", step="triage_route", value="deep", by="triage", detail="it is subtle"
        )
    ]
    assert ("l", None, "long answer") in framed(team.requests["d"][0].system)


async def test_an_invalid_router_answer_goes_back_to_the_router() -> None:
    team = Team()
    s, ln = team.agents("s", "l")
    router_model = ScriptedModel(['{"branch": "medium"}', '{"branch": "quick", "reason": "short"}'])
    triage = Agent("triage", "triage decides.", model=router_model.model)
    result = await Swarm(route({"quick": s, "deep": ln}, by=triage, name="pick")).run("task")
    router_model.assert_consumed()
    retry = router_model.requests[1]
    assert "Your answer was rejected" in retry.user
    assert "'quick' or 'deep'" in retry.user
    assert len(result["triage"].llm_calls) == 2
    assert names_of(result) == ["triage", "s"]
    assert team.calls["l"] == 0
    assert result.decisions == [
        Decision(kind="route", step="pick", value="quick", by="triage", detail="short")
    ]


async def test_a_router_that_never_answers_a_branch_fails_the_run() -> None:
    team = Team()
    s, ln = team.agents("s", "l")
    router_model = ScriptedModel(['{"branch": "x"}'] * 3)
    triage = Agent("triage", "triage decides.", model=router_model.model, output_retries=1)
    with pytest.raises(OutputValidationError) as info:
        await Swarm(route({"quick": s, "deep": ln}, by=triage)).run("task")
    assert len(router_model.requests) == 2
    assert team.calls["s"] == team.calls["l"] == 0
    assert info.value.partial is not None
    assert info.value.partial.decisions == []


def test_the_router_step_is_named_after_the_router() -> None:
    team = Team()
    s, ln, triage = team.agents("s", "l", "triage")
    (node,) = route({"quick": s, "deep": ln}, by=triage).step_tuple
    assert isinstance(node, Route)
    assert node.name == "triage_route"
    assert node.router is triage
    (named,) = route({"quick": s}, by=triage, name="choose").step_tuple
    assert named.name == "choose"


# --- 3. loops -----------------------------------------------------------------------------------


async def test_loop_iterations_are_named_and_kept_in_order() -> None:
    team = Team({"w": ["draft 1", "draft 2", "draft 3"], "c": ["crit 1", "ok: crit 2", "x"]})
    a, w, c, d = team.agents("a", "w", "c", "d")
    seen: list[tuple[str | None, list[str]]] = []

    def done(ctx: SharedContext) -> bool:
        seen.append((ctx.latest("c"), ctx.keys()))
        return (ctx.latest("c") or "").startswith("ok")

    flow = a >> loop(w >> c, until=done, max_iterations=4) >> d
    result = await Swarm(flow).run("task")
    expected = ["a", "w#1", "c#1", "w#2", "c#2", "d"]
    assert names_of(result) == expected
    assert list(result.context) == expected
    assert seen == [
        ("crit 1", ["a", "w#1", "c#1"]),
        ("ok: crit 2", ["a", "w#1", "c#1", "w#2", "c#2"]),
    ]
    assert team.calls == Counter({"a": 1, "w": 2, "c": 2, "d": 1})
    assert result.decisions == [Decision(kind="loop", step="loop", value="2", by="until")]
    assert result["w"].agent_name == "w#2"
    assert result["w"].output == "draft 2"
    assert result["w#1"].output == "draft 1"
    assert result.context["c#1"] == "crit 1"


async def test_the_second_iteration_reads_the_first_in_pull_mode() -> None:
    team = Team(
        {
            "w": ["draft 1", Reply.tool("get_context", agent_name="c#1"), "draft 2"],
            "c": ["crit 1", "crit 2"],
        }
    )
    w, c = team.agents("w", "c")
    result = await Swarm(loop(w >> c, max_iterations=2), context_mode="pull").run("task")
    assert names_of(result) == ["w#1", "c#1", "w#2", "c#2"]
    first, second, third = team.requests["w"]
    assert "Shared context" not in first.system
    assert "- w#1 (" in second.system
    assert "- c#1 (" in second.system
    assert "get_context" in second.tool_names
    assert [framed(str(m["content"]), nonce_of(second.system)) for m in third.tool_results] == [
        [("c#1", None, "crit 1")]
    ]
    assert result.output == "crit 2"


async def test_the_second_iteration_sees_the_first_in_push_mode() -> None:
    team = Team({"w": ["draft 1", "draft 2"], "c": ["crit 1", "crit 2"]})
    w, c = team.agents("w", "c")
    await Swarm(loop(w >> c, max_iterations=2), context_mode="push").run("task")
    second = team.requests["w"][1].system
    assert ("c#1", None, "crit 1") in framed(second)  # the previous step in full
    assert ("w#1", None, "draft 1") in framed(second)  # its own summary: shown whole
    critic = team.requests["c"][1].system
    assert ("w#2", None, "draft 2") in framed(critic)
    assert ("c#1", None, "crit 1") in framed(critic)
    assert summarised(critic) == []  # every output here is short and its own summary


async def test_a_loop_that_is_never_done_stops_at_max_iterations() -> None:
    team = Team()
    w, c = team.agents("w", "c")
    result = await Swarm(loop(w >> c, until=lambda _ctx: False, max_iterations=3)).run("task")
    assert names_of(result) == ["w#1", "c#1", "w#2", "c#2", "w#3", "c#3"]
    assert team.calls == Counter({"w": 3, "c": 3})
    assert result.decisions == [Decision(kind="loop", step="loop", value="3", by="max_iterations")]


async def test_a_loop_without_until_runs_exactly_max_iterations() -> None:
    team = Team()
    (w,) = team.agents("w")
    result = await Swarm(loop(w, max_iterations=2, name="polish")).run("task")
    assert names_of(result) == ["w#1", "w#2"]
    assert team.calls == Counter({"w": 2})
    assert result.decisions == [
        Decision(kind="loop", step="polish", value="2", by="max_iterations")
    ]


async def test_an_async_until_that_is_done_at_once_runs_one_iteration() -> None:
    team = Team()
    (w,) = team.agents("w")

    async def done(ctx: SharedContext) -> bool:
        return ctx.latest("w") == "w output"

    result = await Swarm(loop(w, until=done, max_iterations=5)).run("task")
    assert names_of(result) == ["w#1"]
    assert result.decisions[0].value == "1"
    assert result.decisions[0].by == "until"


async def test_a_judge_ends_the_loop_and_its_feedback_reaches_the_next_iteration() -> None:
    team = Team({"w": ["draft 1", "draft 2"]})
    w, d = team.agents("w", "d")
    judge_model = ScriptedModel(
        [
            '{"done": false, "feedback": "more detail"}',
            '{"done": true, "feedback": "fine now"}',
        ]
    )
    editor = Agent("editor", "editor judges.", model=judge_model.model)
    flow = loop(w, until=editor, max_iterations=3) >> d
    assert flow.names == ("w", "editor", "d")
    result = await Swarm(flow, context_mode="push").run("task")

    judge_model.assert_consumed()
    assert names_of(result) == ["w#1", "editor#1", "w#2", "editor#2", "d"]
    assert team.calls == Counter({"w": 2, "d": 1})
    first_verdict = judge_model.requests[0].system
    assert "Judge the latest iteration of: w" in first_verdict
    assert ("w#1", None, "draft 1") in framed(first_verdict)
    assert schema_in(first_verdict)["required"] == ["done"]
    assert "more detail" in team.requests["w"][1].system
    assert "more detail" not in team.requests["w"][0].system
    assert result.decisions == [
        Decision(kind="loop", step="loop", value="2", by="editor", detail="fine now")
    ]
    # The agent after the loop gets the last iteration's exit in full.
    after = team.requests["d"][0].system
    assert ("w#2", None, "draft 2") in framed(after)
    assert ("w#1", None, "draft 1") in framed(after)  # short, no summary: shown whole
    assert summarised(after) == ["editor#1", "editor#2"]
    assert result["editor"].agent_name == "editor#2"


async def test_a_judge_that_is_never_satisfied_stops_at_max_iterations() -> None:
    team = Team()
    (w,) = team.agents("w")
    judge_model = ScriptedModel(
        ['{"done": false, "feedback": "again"}', '{"done": false, "feedback": "still weak"}']
    )
    editor = Agent("editor", "editor judges.", model=judge_model.model)
    result = await Swarm(loop(w, until=editor, max_iterations=2)).run("task")
    judge_model.assert_consumed()
    assert names_of(result) == ["w#1", "editor#1", "w#2", "editor#2"]
    assert result.decisions == [
        Decision(kind="loop", step="loop", value="2", by="max_iterations", detail="still weak")
    ]
    assert result.output == "w output"  # the body's exit ends the loop, not the judge


def test_loop_arguments_are_checked() -> None:
    team = Team()
    w, c, p = team.agents("w", "c", "p")
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(UserError, match="max_iterations"):
            loop(w, max_iterations=bad)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="loops and plans cannot run inside a loop"):
        loop(loop(w) >> c)
    with pytest.raises(UserError, match="loops and plans cannot run inside a loop"):
        loop(c >> route({"x": loop(w)}, by=pick("x")))
    with pytest.raises(UserError, match="loops and plans cannot run inside a loop"):
        loop(plan(p, [w]))
    with pytest.raises(UserError, match="until"):
        loop(w, until="done")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="loop\\(\\) body must be an Agent or a Flow"):
        loop("w")


async def test_a_failure_in_the_second_iteration_keeps_the_first_as_partial() -> None:
    team = Team({"c": ["crit 1", Fail(400, "critic broke")]})
    w, c, d = team.agents("w", "c", "d")
    with pytest.raises(ModelError, match="Agent 'c#2'") as info:
        await Swarm(loop(w >> c, max_iterations=3) >> d).run("task")
    partial = info.value.partial
    assert partial is not None
    assert names_of(partial) == ["w#1", "c#1", "w#2"]
    assert [f.agent_name for f in partial.failures] == ["c#2"]
    assert partial.decisions == []
    assert team.calls["d"] == 0


async def test_a_predicate_route_inside_a_loop_decides_every_iteration() -> None:
    team = Team()
    s, ln = team.agents("s", "l")
    turns = iter(["quick", "deep"])
    result = await Swarm(
        loop(route({"quick": s, "deep": ln}, by=lambda _ctx: next(turns)), max_iterations=2)
    ).run("task")
    assert names_of(result) == ["s#1", "l#2"]
    assert [(d.kind, d.value) for d in result.decisions] == [
        ("route", "quick"),
        ("route", "deep"),
        ("loop", "2"),
    ]


async def test_a_router_route_inside_a_loop() -> None:
    team = Team()
    s, ln = team.agents("s", "l")
    router_model = ScriptedModel(['{"branch": "quick"}', '{"branch": "deep"}'])
    triage = Agent("triage", "triage decides.", model=router_model.model)
    result = await Swarm(loop(route({"quick": s, "deep": ln}, by=triage), max_iterations=2)).run(
        "task"
    )
    assert names_of(result) == ["triage#1", "s#1", "triage#2", "l#2"]


# --- 4. plans --------------------------------------------------------------------------------


async def test_a_plan_runs_exactly_the_planned_flow() -> None:
    team = Team()
    a, b, c, d = team.agents("a", "b", "c", "d")
    planner_model = ScriptedModel(['{"flow": "a >> (b | c)", "reason": "r"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    flow = plan(planner, [a, b, c, d])
    assert flow.names == ("planner", "a", "b", "c", "d")
    result = await Swarm(flow).run("the goal")

    planner_model.assert_consumed()
    system = planner_model.requests[0].system
    for name in "abcd":
        assert f"- {name}: {name} does its part." in system
    assert "'>>'" in system
    assert "'|'" in system
    assert "flow expression" in system
    assert schema_in(system)["required"] == ["flow"]
    assert planner_model.requests[0].user == "the goal"

    assert team.calls == Counter({"a": 1, "b": 1, "c": 1})  # d's model never called
    assert names_of(result) == ["planner", "a", "b", "c"]
    assert result.output == "## b\n\nb output\n\n## c\n\nc output"
    assert result.decisions == [
        Decision(kind="plan", step="planner_plan", value="a >> (b | c)", by="planner", detail="r")
    ]
    assert result.decisions[0].attempts == 1


async def test_an_unknown_agent_in_a_plan_goes_back_to_the_planner() -> None:
    team = Team()
    agents = team.agents("researcher", "analyst", "writer")
    planner_model = ScriptedModel(
        ['{"flow": "researcher >> analist"}', '{"flow": "researcher >> analyst"}']
    )
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    result = await Swarm(plan(planner, agents)).run("goal")
    planner_model.assert_consumed()
    feedback = planner_model.requests[1].user
    assert "Your answer was rejected" in feedback
    assert "unknown agent 'analist'" in feedback
    assert "Did you mean 'analyst'" in feedback
    assert names_of(result) == ["planner", "researcher", "analyst"]
    assert team.calls["writer"] == 0
    assert result.decisions[0].value == "researcher >> analyst"
    assert result.decisions[0].attempts == 2
    assert result["planner"].rejections == 1


async def test_a_plan_counts_rejections_not_messages_that_look_like_them() -> None:
    # The count is the loop's typed record, not a match on the feedback's wording:
    # a goal that reads like the feedback is not a rejected answer.
    team = Team()
    agents = team.agents("a", "b")
    planner_model = ScriptedModel(['{"flow": "a >> b"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    result = await Swarm(plan(planner, agents)).run("Your answer was late; plan again.")
    assert result["planner"].messages[1]["content"].startswith("Your answer was")
    assert result["planner"].rejections == 0
    assert result.decisions[0].attempts == 1


async def test_a_syntax_error_in_a_plan_goes_back_with_its_column() -> None:
    team = Team()
    a, b, c = team.agents("a", "b", "c")
    planner_model = ScriptedModel(['{"flow": "a >> (b | c"}', '{"flow": "c >> a"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    result = await Swarm(plan(planner, [a, b, c])).run("goal")
    feedback = planner_model.requests[1].user
    assert "column" in feedback
    assert "missing ')'" in feedback
    assert names_of(result) == ["planner", "c", "a"]  # in the planned order
    assert result.decisions[0].attempts == 2
    assert result.output == "a output"


async def test_a_plan_fails_after_max_attempts_bad_answers() -> None:
    team = Team()
    a, b = team.agents("a", "b")
    planner_model = ScriptedModel(['{"flow": "a >> zz"}', '{"flow": "a >>"}', '{"flow": "a"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    with pytest.raises(OutputValidationError, match="planner") as info:
        await Swarm(plan(planner, [a, b], max_attempts=2)).run("goal")
    assert len(planner_model.requests) == 2
    assert planner_model.remaining == 1
    assert team.calls == Counter()
    assert info.value.partial is not None
    assert info.value.partial.decisions == []


async def test_a_plan_composes_with_steps_before_and_after() -> None:
    team = Team({"b": ["b found it"]})
    intake, a, b, final = team.agents("intake", "a", "b", "final")
    planner_model = ScriptedModel(['{"flow": "b >> a", "reason": "b first"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    flow = intake >> plan(planner, [a, b]) >> final
    assert flow.names == ("intake", "planner", "a", "b", "final")
    result = await Swarm(flow, context_mode="push").run("goal")
    assert ("intake", None, "intake output") in framed(planner_model.requests[0].system)
    assert names_of(result) == ["intake", "planner", "b", "a", "final"]
    assert list(result.context) == ["intake", "planner", "b", "a", "final"]
    assert ("b", None, "b found it") in framed(team.requests["a"][0].system)
    assert ("a", None, "a output") in framed(team.requests["final"][0].system)
    assert result.output == "final output"
    assert result.decisions == [
        Decision(kind="plan", step="planner_plan", value="b >> a", by="planner", detail="b first")
    ]


def test_plan_arguments_are_checked() -> None:
    team = Team()
    a, p = team.agents("a", "p")
    with pytest.raises(UserError, match="planner Agent"):
        plan("p", [a])  # type: ignore[arg-type]
    with pytest.raises(UserError, match="non-empty list"):
        plan(p, [])
    with pytest.raises(UserError, match="non-empty list"):
        plan(p, ["a"])  # type: ignore[list-item]
    with pytest.raises(UserError, match="max_attempts"):
        plan(p, [a], max_attempts=0)
    (node,) = plan(p, [a], name="make_plan").step_tuple
    assert isinstance(node, Plan)
    assert node.name == "make_plan"


# --- 5. events --------------------------------------------------------------------------------


async def test_control_steps_publish_their_events_inside_their_step_span() -> None:
    team = Team({"c": ["meh", "ok"]})
    a, s, ln, w, c, x, y = team.agents("a", "s", "l", "w", "c", "x", "y")
    planner_model = ScriptedModel(['{"flow": "x >> y", "reason": "both"}'])
    planner = Agent("planner", "planner plans.", model=planner_model.model)
    flow = (
        a
        >> route({"quick": s, "deep": ln}, by=pick("quick"))
        >> loop(w >> c, until=lambda ctx: ctx.latest("c") == "ok", max_iterations=3)
        >> plan(planner, [x, y])
    )
    seen: list[Event] = []
    await Swarm(flow, hooks=[seen.append]).run("task")

    (run,) = [e for e in seen if isinstance(e, RunStarted)]
    starts = {e.step: e for e in seen if isinstance(e, StepStarted)}
    finishes = {e.step: e for e in seen if isinstance(e, StepFinished)}
    route_step = starts["route{quick: s, deep: l}"]
    loop_step = starts["loop{w >> c}"]
    plan_step = starts["planner_plan{plan from x, y}"]
    for step in (route_step, loop_step, plan_step):
        assert step.parent_id == run.span_id
        assert finishes[step.step].span_id == step.span_id
        assert finishes[step.step].error is None
    assert route_step.agents == ("s", "l")
    assert loop_step.agents == ("w", "c")
    assert plan_step.agents == ("planner", "x", "y")

    (chosen,) = [e for e in seen if isinstance(e, RouteChosen)]
    assert (chosen.route, chosen.branch, chosen.by, chosen.reason) == (
        "route",
        "quick",
        "predicate",
        "",
    )
    assert chosen.parent_id == route_step.span_id
    assert chosen.run_id == run.run_id

    iterations = [e for e in seen if isinstance(e, LoopIteration)]
    assert [(e.loop, e.iteration, e.max_iterations, e.agents) for e in iterations] == [
        ("loop", 1, 3, ("w#1", "c#1")),
        ("loop", 2, 3, ("w#2", "c#2")),
    ]
    assert all(e.parent_id == loop_step.span_id for e in iterations)
    (finished,) = [e for e in seen if isinstance(e, LoopFinished)]
    assert (finished.loop, finished.iterations, finished.reason) == ("loop", 2, "until")
    assert finished.parent_id == loop_step.span_id

    (made,) = [e for e in seen if isinstance(e, PlanMade)]
    assert (made.plan, made.planner, made.expression, made.attempts, made.reason) == (
        "planner_plan",
        "planner",
        "x >> y",
        1,
        "both",
    )
    assert made.parent_id == plan_step.span_id

    # The steps inside the control steps are steps of their own, nested inside.
    assert starts["s"].parent_id == route_step.span_id
    assert starts["w#2"].parent_id == loop_step.span_id
    assert starts["y"].parent_id == plan_step.span_id
    # The point events come in run order.
    order = [
        type(e)
        for e in seen
        if isinstance(e, RouteChosen | LoopIteration | LoopFinished | PlanMade)
    ]
    assert order == [RouteChosen, LoopIteration, LoopIteration, LoopFinished, PlanMade]


async def test_a_router_and_a_judge_are_named_in_their_events() -> None:
    team = Team()
    s, ln, w = team.agents("s", "l", "w")
    router_model = ScriptedModel(['{"branch": "deep", "reason": "hard"}'])
    judge_model = ScriptedModel(['{"done": true, "feedback": "good"}'])
    triage = Agent("triage", "triage decides.", model=router_model.model)
    editor = Agent("editor", "editor judges.", model=judge_model.model)
    seen: list[Event] = []
    flow = route({"quick": s, "deep": ln}, by=triage) >> loop(w, until=editor)
    await Swarm(flow, hooks=[seen.append]).run("task")
    (chosen,) = [e for e in seen if isinstance(e, RouteChosen)]
    assert (chosen.route, chosen.branch, chosen.by, chosen.reason) == (
        "triage_route",
        "deep",
        "triage",
        "hard",
    )
    (finished,) = [e for e in seen if isinstance(e, LoopFinished)]
    assert (finished.iterations, finished.reason, finished.feedback) == (1, "judge", "good")


async def test_the_loop_step_lists_its_failed_iteration() -> None:
    team = Team({"c": ["crit 1", Fail(400, "critic broke")]})
    w, c = team.agents("w", "c")
    seen: list[Event] = []
    with pytest.raises(ModelError):
        await Swarm(loop(w >> c, max_iterations=2), hooks=[seen.append]).run("task")
    (finished,) = [e for e in seen if isinstance(e, StepFinished) and e.step == "loop{w >> c}"]
    assert finished.error is not None
    assert finished.failed == ("c#2",)


# --- 6. the run store ----------------------------------------------------------------------


async def test_decisions_and_iterations_are_stored(tmp_path: Path) -> None:
    team = Team()
    a, s, ln, w, d = team.agents("a", "s", "l", "w", "d")
    flow = a >> route({"quick": s, "deep": ln}, by=pick("deep")) >> loop(w, max_iterations=2) >> d
    swarm = Swarm(flow, store=tmp_path / "runs.db")
    result = await swarm.run("task")
    assert swarm.store is not None
    record = swarm.store.get_run(result.run_id)
    assert record is not None
    assert record.status == "succeeded"
    assert record.decisions == result.decisions
    assert [(x.kind, x.value) for x in record.decisions] == [("route", "deep"), ("loop", "2")]
    assert sorted(r.agent_name for r in record.results) == ["a", "d", "l", "w#1", "w#2"]
    assert record.shape == shape_of(flow)
    # A second connection reads the same thing.
    other = SQLiteStore(tmp_path / "runs.db")
    try:
        again = other.get_run(result.run_id)
        assert again is not None
        assert again.decisions == result.decisions
    finally:
        other.close()


async def test_resume_continues_a_loop_without_rerunning_finished_iterations(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    calls: Counter[str] = Counter()
    broken = {"on": True}

    def answer(request: RecordedRequest) -> Answer:
        who = request.system.split()[0]
        calls[who] += 1
        if who == "c" and calls[who] == 2 and broken["on"]:  # c#2 fails while the flag is on
            return Fail(400, "critic broke")
        return f"{who} {calls[who]}"

    model = FunctionModel(answer)
    w, c, d = (Agent(n, f"{n} does its part.", model=model.model) for n in ("w", "c", "d"))

    def flow() -> Flow:
        return loop(w >> c, max_iterations=2) >> d

    swarm = Swarm(flow(), store=db)
    with pytest.raises(ModelError, match="Agent 'c#2'") as info:
        await swarm.run("task")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    assert calls == Counter({"w": 2, "c": 2})
    assert swarm.store is not None
    stored = swarm.store.get_run(run_id)
    assert stored is not None
    assert stored.status == "failed"
    assert sorted(r.agent_name for r in stored.results) == ["c#1", "w#1", "w#2"]
    assert [f.agent_name for f in stored.failures] == ["c#2"]

    broken["on"] = False
    again = Swarm(flow(), store=db)
    result = await again.resume(run_id)
    assert calls == Counter({"w": 2, "c": 3, "d": 1})  # only c#2 and d ran again
    assert len(model.requests) == 6
    assert names_of(result) == ["w#1", "c#1", "w#2", "c#2", "d"]
    assert result.context["w#2"] == "w 2"
    assert result.context["c#2"] == "c 3"
    assert result.output == "d 1"
    assert result.decisions == [Decision(kind="loop", step="loop", value="2", by="max_iterations")]
    assert result.run_id == run_id
    assert again.store is not None
    record = again.store.get_run(run_id)
    assert record is not None
    assert record.status == "succeeded"
    assert record.decisions == result.decisions


async def test_resume_does_not_store_a_decision_twice(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    team = Team({"c": ["crit 1", Fail(400, "critic broke")]})
    a, s, w, c = team.agents("a", "s", "w", "c")
    flow = a >> route({"go": s}, by=pick("go")) >> loop(w >> c, max_iterations=2)
    swarm = Swarm(flow, store=db)
    with pytest.raises(ModelError) as info:
        await swarm.run("task")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    result = await swarm.resume(run_id)
    assert [(x.kind, x.value) for x in result.decisions] == [("route", "go"), ("loop", "2")]
    assert swarm.store is not None
    record = swarm.store.get_run(run_id)
    assert record is not None
    assert record.decisions == result.decisions


async def test_a_route_changes_the_flow_shape(tmp_path: Path) -> None:
    team = Team()
    a, b, c = team.agents("a", "b", "c")
    plain = a >> b
    routed = a >> route({"x": b}, by=pick("x"))
    assert shape_of(plain) != shape_of(routed)
    assert shape_of(routed) == shape_of(a >> route({"x": b}, by=pick("x")))
    assert shape_of(routed) != shape_of(a >> route({"y": b}, by=pick("y")))
    assert shape_of(loop(b, max_iterations=2)) != shape_of(loop(b, max_iterations=3))
    assert shape_of(plan(a, [b])) != shape_of(plan(a, [b, c]))
    db = tmp_path / "runs.db"
    first = await Swarm(routed, store=db).run("task")
    with pytest.raises(UserError, match="another shape"):
        await Swarm(plain, store=db).resume(first.run_id)


# --- 7. expressions, Mermaid and agents ------------------------------------------------------


def test_expressions_show_routes_loops_and_plans() -> None:
    team = Team()
    a, s, ln, w, c, d, p, x = team.agents("a", "s", "l", "w", "c", "d", "p", "x")
    flow = a >> route({"quick": s, "deep": ln}, by=pick("quick")) >> loop(w >> c) >> d
    assert flow.expression() == "a >> route{quick: s, deep: l} >> loop{w >> c} >> d"
    assert repr(flow) == "Flow(a >> route{quick: s, deep: l} >> loop{w >> c} >> d)"
    assert plan(p, [x]).expression() == "p_plan{plan from x}"
    (node,) = loop(w >> c, max_iterations=4).step_tuple
    assert repr(node) == "Loop(loop{w >> c}, max_iterations=4)"


def test_mermaid_draws_a_route_as_a_decision_with_labelled_edges() -> None:
    team = Team()
    a, s1, s2, ln, d = team.agents("a", "s1", "s2", "l", "d")
    text = (a >> route({"quick": s1 >> s2, "deep": ln}, by=pick("quick")) >> d).to_mermaid()
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "flowchart LR"
    assert 'route{"route"}' in lines
    assert "a --> route" in lines
    assert '-->|"quick"| s1' in text
    assert 'route -->|"quick"| s1' in lines
    assert 'route -->|"deep"| l' in lines
    assert "s1 --> s2" in lines
    assert "s2 --> d" in lines
    assert "l --> d" in lines
    assert "s1 --> d" not in lines


def test_mermaid_draws_a_router_before_its_decision() -> None:
    team = Team()
    a, s, ln, triage = team.agents("a", "s", "l", "triage")
    lines = [
        x.strip() for x in (a >> route({"q": s, "d": ln}, by=triage)).to_mermaid().splitlines()
    ]
    assert "a --> triage" in lines
    assert "triage --> triage_route" in lines
    assert 'triage_route{"triage_route"}' in lines
    assert 'triage_route -->|"q"| s' in lines


def test_mermaid_draws_a_loop_as_a_subgraph_with_a_dotted_back_edge() -> None:
    team = Team()
    a, w, c, d, editor = team.agents("a", "w", "c", "d", "editor")
    text = (a >> loop(w >> c, until=pick(True), max_iterations=3) >> d).to_mermaid()
    lines = [x.strip() for x in text.splitlines()]
    start = lines.index('subgraph loop["loop: at most 3"]')
    end = lines.index("end", start)
    assert "w --> c" in lines[start:end]
    assert "a --> w" in lines
    assert 'c -.->|"not done"| w' in lines
    assert "c --> d" in lines

    plain = [x.strip() for x in loop(w >> c, max_iterations=2).to_mermaid().splitlines()]
    assert 'c -.->|"next iteration"| w' in plain

    judged = [x.strip() for x in (loop(w >> c, until=editor) >> d).to_mermaid().splitlines()]
    assert "c --> editor" in judged
    assert 'editor -.->|"not done"| w' in judged
    assert "editor --> d" in judged
    assert "c --> d" not in judged


def test_mermaid_puts_a_one_agent_loop_body_inside_its_subgraph() -> None:
    team = Team()
    (w,) = team.agents("w")
    lines = [x.strip() for x in loop(w, max_iterations=2).to_mermaid().splitlines()]
    start = lines.index('subgraph loop["loop: at most 2"]')
    end = lines.index("end", start)
    assert any("w" in line.split() for line in lines[start + 1 : end])


def test_mermaid_draws_a_plan_with_may_use_edges() -> None:
    team = Team()
    intake, planner, a, b, final = team.agents("intake", "planner", "a", "b", "final")
    text = (intake >> plan(planner, [a, b]) >> final).to_mermaid()
    lines = [x.strip() for x in text.splitlines()]
    assert "intake --> planner" in lines
    assert 'planner -.->|"may use"| a' in lines
    assert 'planner -.->|"may use"| b' in lines
    assert "a --> final" in lines
    assert "b --> final" in lines
    assert 'planner["planner"]' in lines


def test_mermaid_of_plain_flows_is_unchanged() -> None:
    team = Team()
    a, b, c, d, e = team.agents("a", "b", "c", "d", "e")
    assert (a >> (b | c) >> d).to_mermaid() == "\n".join(
        [
            "flowchart LR",
            '    a["a"]',
            '    b["b"]',
            '    c["c"]',
            '    d["d"]',
            "    a --> b",
            "    a --> c",
            "    b --> d",
            "    c --> d",
        ]
    )
    assert (a >> b).to_mermaid("TD") == 'flowchart TD\n    a["a"]\n    b["b"]\n    a --> b'
    branchy = (a >> ((b >> c) | d) >> e).to_mermaid()
    edges = {x.strip() for x in branchy.splitlines() if "-->" in x}
    assert edges == {"a --> b", "a --> d", "b --> c", "c --> e", "d --> e"}


def test_flow_agents_list_every_agent_of_every_control_step() -> None:
    team = Team()
    a, triage, s, l1, l2, w, c, editor, planner, x, y = team.agents(
        "a", "triage", "s", "l1", "l2", "w", "c", "editor", "planner", "x", "y"
    )
    flow = (
        a
        >> route({"quick": s, "deep": l1 >> l2}, by=triage)
        >> loop(w >> c, until=editor)
        >> plan(planner, [x, y])
    )
    assert flow.names == (
        "a",
        "triage",
        "s",
        "l1",
        "l2",
        "w",
        "c",
        "editor",
        "planner",
        "x",
        "y",
    )
    assert flow.agents[1] is triage
    assert len(flow) == 4


def test_duplicate_names_across_control_steps_are_refused() -> None:
    team = Team()
    a, s, ln, w = team.agents("a", "s", "l", "w")
    with pytest.raises(UserError, match="two agents named 's'"):
        route({"quick": s, "deep": s}, by=pick("quick"))
    with pytest.raises(UserError, match="two agents named 'a'"):
        a >> route({"quick": a, "deep": ln}, by=pick("quick"))
    with pytest.raises(UserError, match="two agents named 'w'"):
        loop(w) >> w
    with pytest.raises(UserError, match="two agents named 's'"):
        route({"quick": s, "deep": ln}, by=s)
    with pytest.raises(UserError, match="two agents named 'w'"):
        loop(w, until=w)


async def test_map_agents_keeps_routes_and_loops() -> None:
    team = Team()
    other = Team()
    a, s, ln, w, editor = team.agents("a", "s", "l", "w", "editor")
    flow = a >> route({"quick": s, "deep": ln}, by=pick("deep")) >> loop(w, until=editor)
    moved = flow.map_agents(lambda node: node.clone(model=other.function.model))  # type: ignore[attr-defined]
    assert moved.names == flow.names
    assert moved.expression() == flow.expression()
    assert shape_of(moved) == shape_of(flow)
    assert isinstance(moved.step_tuple[1], Route)
    assert isinstance(moved.step_tuple[2], Loop)
    assert all(isinstance(n, Agent) and n.model == other.function.model for n in moved.agents)
    judged = moved.step_tuple[2]
    assert isinstance(judged, Loop)
    assert judged.judge is not None
    assert judged.judge.model == other.function.model


async def test_dry_run_walks_a_flow_with_a_route_and_a_loop() -> None:
    team = Team()
    a, s, ln, w = team.agents("a", "s", "l", "w")
    flow = a >> route({"quick": s, "deep": ln}, by=pick("deep")) >> loop(w, max_iterations=2)
    report = await Swarm(flow).dry_run("x")
    calls = {e.agent_name: e.model_calls for e in report.agents}
    assert list(calls) == ["a", "s", "l", "w"]
    assert calls["a"] >= 1
    assert calls["l"] >= 1
    assert calls["s"] == 0
    assert team.calls == Counter()  # nothing reached the real models


async def test_dry_run_counts_the_calls_of_loop_iterations() -> None:
    team = Team()
    (w,) = team.agents("w")
    report = await Swarm(loop(w, max_iterations=2)).dry_run("x")
    assert report.agents[0].model_calls >= 2


async def test_dry_run_of_a_flow_with_a_plan() -> None:
    team = Team()
    planner, a, b = team.agents("planner", "a", "b")
    report = await Swarm(plan(planner, [a, b])).dry_run("x")
    assert report.agents[0].model_calls >= 1


# --- 8. Swarm.map ---------------------------------------------------------------------------


async def test_map_takes_a_branch_per_task_and_keeps_the_input_order() -> None:
    def answer(request: RecordedRequest) -> str:
        who = request.system.split()[0]
        return f"{who} on {request.user}"

    model = FunctionModel(answer)
    a, s, ln = (Agent(n, f"{n} does its part.", model=model.model) for n in ("a", "s", "l"))
    by = lambda ctx: "deep" if "hard" in (ctx.get("a") or "") else "quick"  # noqa: E731
    outcomes = await Swarm(a >> route({"quick": s, "deep": ln}, by=by)).map(
        ["easy one", "hard one"], concurrency=2
    )
    first, second = outcomes
    assert isinstance(first, SwarmResult)
    assert isinstance(second, SwarmResult)
    assert first.output == "s on easy one"
    assert second.output == "l on hard one"
    assert [d.value for d in first.decisions] == ["quick"]
    assert [d.value for d in second.decisions] == ["deep"]
    assert names_of(first) == ["a", "s"]
    assert names_of(second) == ["a", "l"]
