"""The result records live in ``swarmcore.results``; ``swarmcore.models`` still names them."""

from __future__ import annotations

import swarmcore
import swarmcore.models
import swarmcore.results
from swarmcore.results import (
    AgentFailure,
    AgentResult,
    Decision,
    LLMCallRecord,
    SwarmResult,
    TokenUsage,
    ToolCallRecord,
)
from swarmcore.store import records


def _the_same_result() -> SwarmResult:
    usage = TokenUsage(prompt_tokens=3, completion_tokens=2)
    call = LLMCallRecord(
        model="m",
        duration_seconds=1.0,
        token_usage=usage,
        cost=0.25,
        finish_reason="stop",
        started_at=4.0,
    )
    tool = ToolCallRecord(call_id="1", tool_name="t", arguments="{}", result="r", started_at=5.0)
    agent = AgentResult(
        agent_name="a",
        output="o",
        summary="s",
        model="m",
        duration_seconds=2.0,
        token_usage=usage,
        tool_calls=[tool],
        llm_calls=[call],
        started_at=3.0,
    )
    return SwarmResult(
        output="o",
        context={"a": "o"},
        history=[agent],
        duration_seconds=2.5,
        failures=[
            AgentFailure(agent_name="b", error_type="ModelError", message="down", retryable=True)
        ],
        run_id="old",
        decisions=[Decision(kind="route", step="r", value="a", by="predicate")],
    )


def test_the_old_module_names_the_same_classes_and_helpers() -> None:
    for name in swarmcore.models.__all__:
        assert getattr(swarmcore.models, name) is getattr(swarmcore.results, name), name
    assert swarmcore.AgentResult is AgentResult
    assert AgentResult.__module__ == "swarmcore.results"


def test_a_recorded_result_loads_as_the_classes_of_swarmcore_results() -> None:
    # Durable records name record types, not modules: the committed JSON fixture
    # (tests/fixtures/records, read by test_records.py) loads whatever module holds them.
    document = records.dumps(_the_same_result())
    assert "swarmcore.models" not in document
    assert "swarmcore.results" not in document
    loaded = records.loads(document)
    assert type(loaded) is SwarmResult
    assert type(loaded.history[0].llm_calls[0]) is LLMCallRecord
    assert loaded == _the_same_result()
    assert loaded.cost == 0.25
