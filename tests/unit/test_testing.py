from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from swarmcore import Agent, ModelError, Swarm, chain
from swarmcore.testing import (
    OfflineModel,
    Reply,
    ScriptedModel,
    UnconsumedSteps,
    UnexpectedModelCall,
    choose_model,
    example_arguments,
    offline_model,
)


class Filter(BaseModel):
    field: str
    minimum: int = 0


def query_db(
    table: Literal["users", "orders"],
    filters: list[Filter],
    limit: int | None = None,
    tags: dict[str, bool] | None = None,
) -> str:
    """Query a table.

    Args:
        table: Which table.
        filters: Row filters.
        limit: Most rows.
        tags: Flags.
    """
    return f"{table}:{len(filters)}:{limit}"


async def test_offline_model_calls_offered_tools_with_schema_valid_arguments() -> None:
    model = OfflineModel()
    agent = Agent("db", "You query databases.", model=model.model, tools=[query_db])
    result = await agent.run("How many users signed up?")
    (call,) = result.tool_calls
    assert call.error is None
    assert call.result == "users:1:None"
    assert result.output.startswith(
        "Offline answer (You query databases.) to: How many users signed up?"
    )
    assert "query_db(" in result.output
    assert "users:1:None" in result.output
    assert result.summary == "You query databases.: answered with 1 tool results."
    assert result.token_usage.prompt_tokens > 0
    assert result.token_usage.completion_tokens > 0


def test_example_arguments_follow_the_schema() -> None:
    from swarmcore import function_tool

    args = example_arguments(function_tool(query_db).parameters)
    assert args["table"] == "users"
    assert args["filters"] == [{"field": "example field", "minimum": 0}]


async def test_offline_model_is_deterministic() -> None:
    model = offline_model()
    a, b = Agent("a", "A works.", model=model), Agent("b", "B works.", model=model)
    first = await Swarm(a >> b, context_mode="pull").run("tea")
    second = await Swarm(a >> b, context_mode="pull").run("tea")
    assert first.context == second.context
    assert "get_context" in [t.tool_name for t in first["b"].tool_calls]


async def test_scripted_model_fails_loudly_past_its_script() -> None:
    model = ScriptedModel(["only one"])
    agent = Agent("s", "x", model=model.model)
    await agent.run("go")
    with pytest.raises(ModelError, match="past the end of its script \\(1 steps\\)"):
        await agent.run("again")
    assert model.unexpected_calls == 1
    assert len(model.requests) == 2
    with pytest.raises(UnexpectedModelCall):
        model.assert_consumed()


def test_scripted_model_reports_unused_steps() -> None:
    model = ScriptedModel([Reply(text="a"), "b"])
    assert model.remaining == 2
    with pytest.raises(UnconsumedSteps, match="2 of 2 steps unused"):
        model.assert_consumed()


def test_choose_model_falls_back_offline_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    model, line = choose_model()
    assert model == offline_model()
    assert "Running offline" in line
    assert "OPENAI_API_KEY" in line
    monkeypatch.setenv("SWARMCORE_MODEL", "anthropic/claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert choose_model() == (
        "anthropic/claude-sonnet-4-5",
        "Running on anthropic/claude-sonnet-4-5.",
    )


async def test_a_collected_test_model_says_to_keep_a_reference() -> None:
    import gc

    agent = Agent("a", "x", model=ScriptedModel(["never"]).model, retry=0)
    gc.collect()
    with pytest.raises(ModelError, match="was garbage-collected: keep a reference"):
        await agent.run("go")


# --- the offline model and structured output -------------------------------------------


class _Verdict(BaseModel):
    decision: Literal["ship", "hold"]
    reasons: list[str]


@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_offline_model_answers_structured_agents_with_valid_json(protocol: str) -> None:
    offline = OfflineModel()
    judge = Agent(
        "judge", "Judge.", model=offline.model, output_type=_Verdict, output_protocol=protocol
    )
    result = await judge.run("ship it?")
    assert result.parsed == _Verdict(decision="ship", reasons=["example reasons"])
    assert len(offline.requests) == 1  # valid at once: no answer sent back


async def test_dry_run_counts_a_structured_agent_without_failing() -> None:
    m = offline_model()
    flow = Agent("a", "A.", model=m) >> Agent("judge", "Judge.", model=m, output_type=_Verdict)
    report = await Swarm(flow).dry_run("release")
    assert [e.agent_name for e in report.agents] == ["a", "judge"]
    assert all(e.model_calls >= 1 for e in report.agents)


async def test_offline_model_lists_then_reads_the_latest_with_auto_modes_one_tool() -> None:
    model = OfflineModel()
    flow = chain(*[Agent(f"a{i}", f"Step {i} of the work.", model=model.model) for i in range(12)])
    result = await Swarm(flow, context_mode="auto").run("tea")  # long: not all of it fits
    last = [r for r in model.requests if r.system.startswith("Step 11")]
    assert [r.called_tools for r in last] == [
        [],
        ["read_context"],
        ["read_context", "read_context", "read_context"],
    ]
    assert [json.loads(c.arguments) for c in result["a11"].tool_calls] == [
        {},
        {"agent_name": "a9"},
        {"agent_name": "a10"},
    ]
