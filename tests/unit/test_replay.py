"""Record and replay: a stored run answers its own requests offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmcore import Agent, ModelError, Swarm
from swarmcore._text_tools import text_tool_marker
from swarmcore.testing import FunctionModel, RecordedRequest, ReplayModel, Reply


def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: What to look up.
    """
    return f"{term}: steeped leaves"


def live_model() -> FunctionModel:
    """Stands in for a real provider: tools first, then text; b is slow so order varies."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if "lookup" in request.tool_names and not request.tool_results:
            return Reply.tool("lookup", term=f"{who} tea")
        delay = 0.05 if who == "b" else 0.0
        text = f"{who} says {len(request.messages)}\n<summary>{who} summary</summary>"
        return Reply(
            text=text,
            prompt_tokens=11,
            completion_tokens=7,
            cached_tokens=4,
            reasoning_tokens=2,
            delay=delay,
        )

    return FunctionModel(answer)


def build(model: str) -> list[Agent]:
    return [Agent(n, f"{n} works on tea.", model=model, tools=[lookup]) for n in "abcd"]


async def test_a_stored_run_replays_offline_with_identical_results(tmp_path: Path) -> None:
    live = live_model()
    a, b, c, d = build(live.model)
    flow = a >> (b | c) >> d
    original = await Swarm(flow, store=tmp_path / "runs.db").run("tea")
    calls_before = len(live.requests)

    replay = ReplayModel.from_store(tmp_path / "runs.db", original.run_id)
    assert replay.task == "tea"
    replayed = await Swarm(replay.flow(flow)).run(replay.task)
    assert len(live.requests) == calls_before  # the live model was not called
    assert replayed.output == original.output == replay.output
    assert replayed.context == original.context
    assert replayed.token_usage == original.token_usage
    assert (original.token_usage.cached_tokens, original.token_usage.reasoning_tokens) == (16, 8)

    def tools(result: object) -> list[tuple[str, str, str]]:
        return [
            (t.tool_name, t.arguments, t.result)
            for r in result.history  # type: ignore[attr-defined]
            for t in r.tool_calls
        ]

    assert tools(replayed) == tools(original)
    assert replay.unmatched == []
    assert replay.remaining == 0
    # Parallel agents may arrive in any order: replay the pair reversed in time.
    assert {r.agent_name for r in replayed.history} == set("abcd")


async def test_replay_from_a_result_in_memory_works_in_push_mode() -> None:
    live = live_model()
    a, b = build(live.model)[:2]
    original = await Swarm(a >> b, context_mode="push").run("tea")
    replay = ReplayModel(original.history, task="tea")
    replayed = await Swarm(replay.flow(a >> b), context_mode="push").run("tea")
    assert replayed.output == original.output


async def test_a_request_the_recording_lacks_fails_loudly_and_says_where() -> None:
    live = live_model()
    a, b = build(live.model)[:2]
    original = await Swarm(a >> b).run("tea")
    replay = ReplayModel(original.history)
    changed = b.clone(instructions="b now works on coffee.")
    with pytest.raises(ModelError, match="holds no reply to this request") as caught:
        await Swarm(replay.flow(a >> changed)).run("tea")
    message = str(caught.value)
    assert "departs from the nearest recorded request at message 1 (system)" in message
    assert "b now works on coffee" in message
    assert len(replay.unmatched) == 1


async def test_a_text_tool_protocol_run_replays_whatever_marker_it_was_recorded_under() -> None:
    """A recording's tool-call marker may differ (an older release drew it at random)."""

    def answer(request: RecordedRequest) -> Reply:
        if not request.user.startswith("Tool results:"):
            return Reply.tool("lookup", term="green tea")  # written as the marked block
        return Reply(text="Green tea is steeped.\n<summary>tea</summary>")

    live = FunctionModel(answer)
    agent = Agent("a", "Find tea facts.", model=live.model, tools=[lookup], tool_protocol="text")
    original = await Swarm(agent).run("tea")
    assert [t.result for t in original["a"].tool_calls] == ["green tea: steeped leaves"]
    system = original["a"].messages[0]["content"]
    marker = text_tool_marker(system)
    assert marker is not None
    recorded = [
        r.model_copy(update={"messages": json.loads(json.dumps(r.messages).replace(marker, STALE))})
        for r in original.history
    ]

    replay = ReplayModel(recorded, task="tea")
    replayed = await Swarm(agent.clone(model=replay.model)).run("tea")
    assert replay.unmatched == []
    assert [t.result for t in replayed["a"].tool_calls] == ["green tea: steeped leaves"]
    assert replayed.output == original.output == "Green tea is steeped."
    assert replayed["a"].messages[0]["content"] == system  # the same inputs, the same prompt


STALE = "0123456789abcdef"


async def test_a_replay_runs_offline_whatever_backend_the_agents_chose(tmp_path: Path) -> None:
    live = live_model()
    a, b = build(live.model)[:2]
    original = await Swarm(a >> b, store=tmp_path / "runs.db").run("tea")
    replay = ReplayModel.from_store(tmp_path / "runs.db", original.run_id)
    native = [agent.clone(backend="native") for agent in (a, b)]  # as deployed, say
    replayed = await Swarm(replay.flow(native[0] >> native[1])).run(replay.task)
    assert replayed.output == original.output
