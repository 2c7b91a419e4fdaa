"""The result records live in ``swarmcore.results``; ``swarmcore.models`` still names them."""

from __future__ import annotations

import base64
import pickle

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

# A SwarmResult holding one of every record, pickled by a release whose records lived in
# swarmcore.models: how a DBOS run recorded then names them.
OLD_MODULE_PICKLE = (
    "gASV6AQAAAAAAACMEHN3YXJtY29yZS5tb2RlbHOUjAtTd2FybVJlc3VsdJSTlCmBlH2UKIwIX19kaWN0X1+UfZQo"
    "jAZvdXRwdXSUjAFvlIwHY29udGV4dJR9lIwBYZRoCHOMB2hpc3RvcnmUXZRoAIwLQWdlbnRSZXN1bHSUk5QpgZR9"
    "lChoBX2UKIwKYWdlbnRfbmFtZZRoC2gHaAiMB3N1bW1hcnmUjAFzlIwFbW9kZWyUjAFtlIwQZHVyYXRpb25fc2Vj"
    "b25kc5RHQAAAAAAAAACMC3Rva2VuX3VzYWdllGgAjApUb2tlblVzYWdllJOUKYGUfZQoaAV9lCiMDXByb21wdF90"
    "b2tlbnOUSwOMEWNvbXBsZXRpb25fdG9rZW5zlEsCjA1jYWNoZWRfdG9rZW5zlEsAjBByZWFzb25pbmdfdG9rZW5z"
    "lEsAdYwSX19weWRhbnRpY19leHRyYV9flE6MF19fcHlkYW50aWNfZmllbGRzX3NldF9flI+UKGgfaCCQjBRfX3B5"
    "ZGFudGljX3ByaXZhdGVfX5ROdWKMCnRvb2xfY2FsbHOUXZRoAIwOVG9vbENhbGxSZWNvcmSUk5QpgZR9lChoBX2U"
    "KIwHY2FsbF9pZJSMATGUjAl0b29sX25hbWWUjAF0lIwJYXJndW1lbnRzlIwCe32UjAZyZXN1bHSUjAFylIwFZXJy"
    "b3KUTowOdHJ1bmNhdGVkX2Zyb22UTowGc2VydmVylE6MCGFwcHJvdmFslE5oGEcAAAAAAAAAAIwKc3RhcnRlZF9h"
    "dJRHQBQAAAAAAAB1aCNOaCSPlChoMmguaDRoOmgwkGgmTnViYYwJbGxtX2NhbGxzlF2UaACMDUxMTUNhbGxSZWNv"
    "cmSUk5QpgZR9lChoBX2UKGgWaBdoGEc/8AAAAAAAAGgZaBspgZR9lChoBX2UKGgfSwNoIEsCaCFLAGgiSwB1aCNO"
    "aCSPlChoH2ggkGgmTnVijARjb3N0lEc/0AAAAAAAAIwNZmluaXNoX3JlYXNvbpSMBHN0b3CUaCdLAIwIYXR0ZW1w"
    "dHOUSwFoOkdAEAAAAAAAAHVoI05oJI+UKGgYaBloSGg6aBZoR5BoJk51YmGMCG1lc3NhZ2VzlF2UaEpLAYwGcGFy"
    "c2VklE6MC2RlbGVnYXRpb25zlF2UaDpHQAgAAAAAAAB1aCNOaCSPlChoGGgZaCdoB2gTaBRoOmg8aBaQaCZOdWJh"
    "aBhHQAQAAAAAAACMCGZhaWx1cmVzlF2UaACMDEFnZW50RmFpbHVyZZSTlCmBlH2UKGgFfZQoaBOMAWKUjAplcnJv"
    "cl90eXBllIwKTW9kZWxFcnJvcpSMB21lc3NhZ2WUjARkb3dulIwJcmV0cnlhYmxllIiMCWNhbmNlbGxlZJSJaEpL"
    "AWgWjACUaBhOaDpOdWgjTmgkj5QoaFxoWmgTaF6QaCZOdWJhjAZydW5faWSUjANvbGSUjAlkZWNpc2lvbnOUXZRo"
    "AIwIRGVjaXNpb26Uk5QpgZR9lChoBX2UKIwEa2luZJSMBXJvdXRllIwEc3RlcJRoNYwFdmFsdWWUaAuMAmJ5lIwJ"
    "cHJlZGljYXRllIwGZGV0YWlslGhgaEpLAXVoI05oJI+UKGhraG9obmhtkGgmTnViYXVoI05oJI+UKGgYaAdoZGgJ"
    "aAxoYmhSkGgmTnViLg=="
)


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


def test_a_result_pickled_under_the_old_module_path_loads_as_the_new_classes() -> None:
    raw = base64.b64decode(OLD_MODULE_PICKLE)
    assert b"swarmcore.models" in raw
    old = pickle.loads(raw)
    assert type(old) is SwarmResult
    assert type(old.history[0].llm_calls[0]) is LLMCallRecord
    assert old == _the_same_result()
    assert old.cost == 0.25
    assert b"swarmcore.results" in pickle.dumps(old)  # written under the new path from now on
