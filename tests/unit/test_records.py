"""Run records are versioned JSON, validated on the way back; a pickle is refused, never loaded.

``tests/fixtures/records/values-v1.json`` holds one record document of every kind,
written by the release that introduced record version 1 (``dumps`` of
:func:`expected`). It is committed and never regenerated to make a test pass: when
it stops loading, a change broke every run a durable engine has recorded, and
needs a new ``RECORD_VERSION`` with an upgrade step.
"""

from __future__ import annotations

import base64
import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.errors import BudgetExceeded, GroupError, ModelError, SwarmError
from swarmcore.llm._types import LLMReply, ToolCall
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
from swarmcore.store._base import RunSummary
from tests.unit.test_errors_pickle import EXAMPLES, partial

FIXTURE = Path(__file__).parents[1] / "fixtures" / "records" / "values-v1.json"


def _result() -> SwarmResult:
    usage = TokenUsage(prompt_tokens=3, completion_tokens=2, cached_tokens=1)
    call = LLMCallRecord(
        model="m",
        duration_seconds=1.0,
        token_usage=usage,
        cost=0.25,
        finish_reason="stop",
        tool_calls=1,
        started_at=4.0,
    )
    tool = ToolCallRecord(
        call_id="1", tool_name="t", arguments='{"q": 1}', result="r", approval="allowed"
    )
    agent = AgentResult(
        agent_name="a",
        output='{"ok": true}',
        summary="s",
        model="m",
        duration_seconds=2.0,
        token_usage=usage,
        tool_calls=[tool],
        llm_calls=[call],
        messages=[{"role": "user", "content": "go"}],
        parsed={"ok": True},
        started_at=3.0,
    )
    return SwarmResult(
        output='{"ok": true}',
        context={"a": '{"ok": true}'},
        history=[agent],
        duration_seconds=2.5,
        failures=[AgentFailure(agent_name="b", error_type="ModelError", message="down")],
        run_id="run-1",
        decisions=[Decision(kind="route", step="r", value="a", by="predicate")],
    )


def _model_error() -> ModelError:
    error = ModelError(
        "provider said no", agent_name="a", model="m", status_code=429, retry_after=1.5
    )
    error.partial = _result()
    return error


def expected() -> dict[str, Any]:
    """What each fixture document holds (the fixture is ``dumps`` of each value)."""
    return {
        "run_inputs": {
            "args": (
                {"version": "0123abcd", "flow": "a >> b", "agents": 2, "generation": 1},
                "run-1",
                "the task",
                {"topic": "x"},
                {"$who": "cli", "n": [1, 2.5, None]},
            ),
            "kwargs": {},
        },
        "swarm_result": _result(),
        "agent_result": _result().history[0],
        "llm_reply": LLMReply(
            None,
            (ToolCall("c1", "t", '{"q": 1}'),),
            TokenUsage(prompt_tokens=5, completion_tokens=1),
            None,
            "tool_calls",
            0.5,
            "m",
            2,
            6.0,
            "m-2024",
        ),
        "tool_record": _result().history[0].tool_calls[0],
        "approval": Approval.edit({"q": 2}),
        "approval_request": ApprovalRequest("a", "t", {"q": 1}, "c1"),
        "model_error": _model_error(),
        "group_error": GroupError(
            "group failed",
            failures=[AgentFailure(agent_name="b", error_type="X", message="m")],
            required=2,
        ),
        "budget_error": BudgetExceeded(
            "spent",
            agent_name="a",
            spent_cost=0.5,
            spent_tokens=9,
            max_cost=float("inf"),
            max_tokens=None,
        ),
        "builtin_error": ValueError("bad value"),
        "plain": [None, True, 3, 1.5, "text"],
    }


def _same(loaded: object, value: object) -> None:
    if isinstance(value, BaseException):
        assert type(loaded) is type(value)
        assert str(loaded) == str(value)
        assert vars(loaded) == vars(value)
    else:
        assert loaded == value


def test_the_committed_fixture_loads_as_the_values_it_recorded() -> None:
    documents: dict[str, str] = json.loads(FIXTURE.read_text())
    values = expected()
    assert set(documents) == set(values)
    for name, document in documents.items():
        assert json.loads(document)["swarmcore"] == 1, name
        _same(records.loads(document), values[name])


@pytest.mark.parametrize("name", sorted(expected()))
def test_each_value_survives_the_record_encoding(name: str) -> None:
    value = expected()[name]
    _same(records.loads(records.dumps(value)), value)


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_every_swarm_error_comes_back_as_its_class_with_its_partial(error: SwarmError) -> None:
    error = copy.copy(error)
    error.partial = partial()
    loaded = records.loads(records.dumps(error))
    assert type(loaded) is type(error)
    assert loaded.args == error.args
    assert vars(loaded) == vars(error)


def test_a_document_is_json_naming_its_records_not_python_classes() -> None:
    document = json.loads(records.dumps(_model_error()))
    assert document["value"]["$error"] == "swarmcore.errors.ModelError"
    partial_result = document["value"]["attributes"]["partial"]
    assert partial_result["$record"] == "SwarmResult"
    assert partial_result["data"]["history"][0]["agent_name"] == "a"


def test_a_pickle_is_refused_not_loaded() -> None:
    # What DBOS's default serializer wrote: base64 of a pickle. Loading it would run code.
    pickled = base64.b64encode(pickle.dumps(_result())).decode()
    with pytest.raises(ValueError, match="never unpickles"):
        records.loads(pickled)


def test_a_newer_record_version_is_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"newer swarmcore.*upgrade"):
        records.loads(json.dumps({"swarmcore": records.RECORD_VERSION + 1, "value": 1}))


def test_an_unknown_record_type_is_refused() -> None:
    document = {"swarmcore": 1, "value": {"$record": "os.system", "data": "rm"}}
    with pytest.raises(ValueError, match=r"Unknown record type 'os\.system'"):
        records.loads(json.dumps(document))


def test_a_record_that_does_not_validate_is_refused() -> None:
    document = {"swarmcore": 1, "value": {"$record": "TokenUsage", "data": {"prompt_tokens": -1}}}
    with pytest.raises(ValueError, match="prompt_tokens"):
        records.loads(json.dumps(document))


def test_a_value_no_record_holds_is_refused_when_written() -> None:
    with pytest.raises(TypeError, match=r"not .*Path"):
        records.dumps({"where": Path("/tmp")})


def test_an_error_of_another_library_comes_back_named() -> None:
    class Oops(Exception):
        pass

    loaded = records.loads(records.dumps(Oops("it broke")))
    assert isinstance(loaded, records.RecordedError)
    assert str(loaded) == "Oops: it broke"
    assert loaded.error_type.endswith("Oops")


def test_records_made_before_a_field_existed_load_with_its_default() -> None:
    # A result recorded before cached/reasoning tokens and start times existed.
    old = {
        "$record": "AgentResult",
        "data": {
            "agent_name": "a",
            "output": "o",
            "summary": "o",
            "model": "m",
            "duration_seconds": 0.5,
            "token_usage": {"prompt_tokens": 10, "completion_tokens": 5},
            "llm_calls": [
                {
                    "model": "m",
                    "duration_seconds": 0.5,
                    "token_usage": {"prompt_tokens": 10, "completion_tokens": 5},
                    "cost": None,
                    "finish_reason": "stop",
                }
            ],
        },
    }
    loaded = records.loads(json.dumps({"swarmcore": 1, "value": old}))
    assert isinstance(loaded, AgentResult)
    assert loaded.started_at is None
    assert loaded.llm_calls[0].started_at is None
    assert loaded.token_usage == TokenUsage(prompt_tokens=10, completion_tokens=5)
    assert (loaded.token_usage.cached_tokens, loaded.token_usage.reasoning_tokens) == (0, 0)
    summary = RunSummary.model_validate(
        {"run_id": "old", "flow": "a", "task": "t", "status": "succeeded", "started_at": 1.0}
    )
    assert (summary.tokens, summary.cost) == (0, 0.0)


DBOS_FIXTURE = FIXTURE.parent / "dbos-run-v1.json"
"""The raw rows a DBOS engine wrote for two runs (tests/integration/test_dbos_records.py)."""


def test_the_committed_dbos_rows_load_through_the_engines_serializer() -> None:
    from swarmcore.engines.dbos import RecordSerializer

    serializer = RecordSerializer()
    rows: dict[str, list[dict[str, Any]]] = json.loads(DBOS_FIXTURE.read_text())

    def value(row: dict[str, Any], column: str) -> Any:
        assert row["serialization"] == serializer.name()
        return serializer.deserialize(row[column])

    runs = {r["workflow_uuid"]: r for r in rows["workflow_status"]}
    about, run_id, task, variables, metadata = value(runs["records-run"], "inputs")["args"]
    assert (about["flow"], about["agents"], run_id, task) == (
        "payer >> grader",
        2,
        "records-run",
        "pay the invoice",
    )
    assert (variables, metadata) == ({}, {"who": "test"})
    result = value(runs["records-run"], "output")
    assert isinstance(result, SwarmResult)
    assert [r.agent_name for r in result.history] == ["payer", "grader"]
    assert result["grader"].parsed == {"title": "paid", "score": 7}  # the engine re-types it
    assert result["payer"].tool_calls[0].approval == "edited"
    assert isinstance(value(runs["records-run/payer/1"], "output"), AgentResult)
    failed = value(runs["records-failed"], "error")
    assert isinstance(failed, ModelError)
    assert (failed.agent_name, failed.status_code) == ("breaker", 400)
    assert isinstance(failed.partial, SwarmResult)
    assert [f.agent_name for f in failed.partial.failures] == ["breaker"]

    steps: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows["operation_outputs"]:  # the first of each: payer's first model call
        steps.setdefault((row["workflow_uuid"], row["function_name"]), row)
    reply = value(steps["records-run/payer/1", "model"], "output")
    assert isinstance(reply, LLMReply)
    assert reply.tool_calls[0].name == "pay"
    tool = value(steps["records-run/payer/1", "tool:pay"], "output")
    assert isinstance(tool, ToolCallRecord)
    assert (tool.arguments, tool.result) == ('{"amount": 100}', "paid 100")
    assert value(steps["records-run/payer/1", "DBOS.recv"], "output")["decision"] == "edit"
    step_error = value(steps["records-failed/breaker/1", "model"], "error")
    assert isinstance(step_error, ModelError)
    [asked, _] = rows["workflow_events_history"]
    assert ApprovalRequest(**value(asked, "value")).tool_name == "pay"
