"""Start times: agents, model calls and tool calls know when they started (a timeline)."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, ModelError, Swarm
from swarmcore.llm._types import LLMReply
from swarmcore.results import AgentResult, LLMCallRecord, TokenUsage, ToolCallRecord
from swarmcore.store import SQLiteStore, records
from swarmcore.testing import Call, Fail, FunctionModel, RecordedRequest, Reply

# Ends are start (time.time) plus a duration (perf_counter): two clocks, so orderings
# that compare an end with a start allow this much; the delays below are 20 times it.
SLACK = 0.01
DELAY = 0.2


def end(record: AgentResult | LLMCallRecord | ToolCallRecord) -> float:
    assert record.started_at is not None
    return record.started_at + record.duration_seconds


def diamond_model() -> FunctionModel:
    """b calls the ``lookup`` tool, then answers; b and c take DELAY per call, so they overlap."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        delay = DELAY if who in ("b", "c") else 0.0
        if who == "b" and not request.tool_results:
            return Reply(tool_calls=(Call("lookup", {"topic": "x"}),), delay=delay)
        return Reply(text=f"{who} output", delay=delay)

    return FunctionModel(answer)


def lookup(topic: str) -> str:
    """Look a topic up."""
    time.sleep(0.02)  # a tool call with a span of its own
    return f"facts about {topic}"


async def test_a_stored_diamond_keeps_when_each_agent_model_call_and_tool_call_started(
    tmp_path: Path,
) -> None:
    model = diamond_model()
    a, c, d = (Agent(n, f"{n} does its part.", model=model.model) for n in "acd")
    b = Agent("b", "b does its part.", model=model.model, tools=[lookup])
    store = SQLiteStore(tmp_path / "runs.db")
    before = time.time()
    result = await Swarm(a >> (b | c) >> d, store=store).run("the task")
    after = time.time()

    record = store.get_run(result.run_id)
    assert record is not None
    got = {r.agent_name: r for r in record.results}
    assert sorted(got) == ["a", "b", "c", "d"]
    assert got == {r.agent_name: r for r in result.history}  # the JSON round trip kept them
    for r in got.values():
        assert r.started_at is not None
        assert before <= r.started_at <= after
    ra, rb, rc, rd = (got[n] for n in "abcd")
    assert rb.started_at is not None
    assert rc.started_at is not None
    assert rd.started_at is not None
    assert end(ra) <= min(rb.started_at, rc.started_at) + SLACK
    # b and c ran in parallel: each started before the other ended.
    assert rb.started_at < end(rc)
    assert rc.started_at < end(rb)
    assert rd.started_at >= max(end(rb), end(rc)) - SLACK

    for r in got.values():  # each model call lies within its agent's span, in order
        assert r.llm_calls
        assert r.started_at is not None
        starts = [call.started_at for call in r.llm_calls]
        assert all(s is not None for s in starts)
        assert starts == sorted(starts)
        for call in r.llm_calls:
            assert call.started_at is not None
            assert r.started_at <= call.started_at
            assert end(call) <= end(r) + SLACK

    [asked, answered] = rb.llm_calls
    [tool] = rb.tool_calls
    assert tool.tool_name == "lookup"
    assert tool.error is None
    assert asked.started_at is not None
    assert answered.started_at is not None
    assert tool.started_at is not None
    # The tool ran after the model call that asked for it, before the one that read it.
    assert end(asked) - SLACK <= tool.started_at <= end(tool) <= answered.started_at + SLACK


async def test_a_failed_agent_keeps_when_its_attempt_started(tmp_path: Path) -> None:
    model = FunctionModel(lambda _request: Fail(400, "no"))
    store = SQLiteStore(tmp_path / "runs.db")
    before = time.time()
    with pytest.raises(ModelError):
        await Swarm(Agent("a", "a fails.", model=model.model), store=store).run("go")
    [stored] = store.list_runs()
    record = store.get_run(stored.run_id)
    assert record is not None
    [failure] = record.failures
    assert failure.started_at is not None
    assert before <= failure.started_at <= time.time()


async def test_a_record_stored_before_start_times_existed_loads_with_none(tmp_path: Path) -> None:
    model = diamond_model()
    b = Agent("b", "b does its part.", model=model.model, tools=[lookup])
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    result = await Swarm(b, store=store).run("go")

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "started_at"}  # type: ignore[misc]
        if isinstance(value, list):
            return [strip(v) for v in value]  # type: ignore[misc]
        return value

    with closing(sqlite3.connect(path)) as db, db:
        [(body,)] = db.execute("SELECT body FROM agents WHERE run_id = ?", (result.run_id,))
        old = strip(json.loads(body))
        assert "started_at" not in json.dumps(old)
        db.execute("UPDATE agents SET body = ? WHERE run_id = ?", (json.dumps(old), result.run_id))

    record = SQLiteStore(path).get_run(result.run_id)
    assert record is not None
    [loaded] = record.results
    assert loaded.started_at is None
    assert [c.started_at for c in loaded.llm_calls] == [None, None]
    assert [t.started_at for t in loaded.tool_calls] == [None]
    assert loaded.output == "b output"


def test_start_times_survive_the_record_encoding() -> None:
    """A durable engine records model replies, tool records and agent results as JSON."""
    tool = ToolCallRecord(call_id="1", tool_name="t", arguments="{}", result="r", started_at=5.0)
    call = LLMCallRecord(
        model="m",
        duration_seconds=1.0,
        token_usage=TokenUsage(prompt_tokens=3),
        cost=None,
        finish_reason="stop",
        started_at=4.0,
    )
    result = AgentResult(
        agent_name="a",
        output="o",
        summary="o",
        model="m",
        duration_seconds=2.0,
        tool_calls=[tool],
        llm_calls=[call],
        started_at=3.0,
    )
    reply = LLMReply("hi", (), TokenUsage(), None, "stop", 0.5, "m", 2).timed(1.5, 3, 6.0)
    assert reply.started_at == 6.0
    assert records.loads(records.dumps(result)) == result
    assert records.loads(records.dumps(reply)) == reply
    # A reply recorded before started_at and response_model existed: they are None.
    old = json.loads(records.dumps(reply))
    del old["value"]["data"]["started_at"], old["value"]["data"]["response_model"]
    old_reply = records.loads(json.dumps(old))
    assert isinstance(old_reply, LLMReply)
    assert (old_reply.started_at, old_reply.response_model) == (None, None)
    assert (old_reply.text, old_reply.duration_seconds, old_reply.attempts) == ("hi", 1.5, 3)
