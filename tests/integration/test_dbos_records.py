"""What the DBOS engine writes into PostgreSQL is versioned JSON, never a pickle.

A run with a tool call, an approval decided from outside, a structured answer,
and a run that fails: every row DBOS wrote for them (workflow inputs, outputs and
errors, step outputs, events, messages) is read raw from DBOS's tables.

``SWARMCORE_WRITE_RECORD_FIXTURE=1`` writes those rows to
``tests/fixtures/records/dbos-run-v1.json``, the fixture ``tests/unit/test_records.py``
reads back through the engine's decoding. Only for a new record version: the
committed fixture is what runs recorded by earlier releases look like.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest
from pydantic import BaseModel

from swarmcore import Agent, Approval, Flow, Swarm, function_tool
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.errors import ModelError
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply

T = TypeVar("T")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "records" / "dbos-run-v1.json"
RUNS = ("records-run", "records-failed")

# Every column in which DBOS keeps a value it serialized, with the table's key columns.
QUERIES = {
    # A workflow's inputs and outcome sit in tables of their own (older DBOS: in its status).
    "workflow_status": "SELECT s.workflow_uuid, s.name, s.serialization, "
    "coalesce(i.inputs, s.inputs) AS inputs, coalesce(o.output, s.output) AS output, "
    "coalesce(o.error, s.error) AS error FROM dbos.workflow_status s "
    "LEFT JOIN dbos.workflow_input i USING (workflow_uuid) "
    "LEFT JOIN dbos.workflow_output o USING (workflow_uuid) "
    "WHERE s.workflow_uuid LIKE %(prefix)s ORDER BY s.workflow_uuid",
    "operation_outputs": "SELECT workflow_uuid, function_id, function_name, serialization, "
    "output, error FROM dbos.operation_outputs WHERE workflow_uuid LIKE %(prefix)s "
    "ORDER BY workflow_uuid, function_id",
    "workflow_events": "SELECT workflow_uuid, key, serialization, value "
    "FROM dbos.workflow_events WHERE workflow_uuid LIKE %(prefix)s ORDER BY workflow_uuid, key",
    "workflow_events_history": "SELECT workflow_uuid, function_id, key, serialization, value "
    "FROM dbos.workflow_events_history WHERE workflow_uuid LIKE %(prefix)s "
    "ORDER BY workflow_uuid, function_id",
    "notifications": "SELECT destination_uuid, topic, serialization, message "
    "FROM dbos.notifications WHERE destination_uuid LIKE %(prefix)s ORDER BY topic",
}
VALUES = {"inputs", "output", "error", "value", "message"}
"""The columns holding serialized values (the others say where a value belongs)."""


class Verdict(BaseModel):
    title: str
    score: int


def pay(amount: int) -> str:
    """Pay the invoice.

    Args:
        amount: Euros to pay.
    """
    return f"paid {amount}"


def flow(model: str) -> Flow:
    payer = Agent(
        "payer",
        "payer pays the invoice.",
        model=model,
        tools=[function_tool(pay, requires_approval=True)],
    )
    return payer >> Agent("grader", "grader grades it.", model=model, output_type=Verdict)


def model() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "payer" and "pay" not in request.called_tools:
            return Reply.tool("pay", amount=120)
        if who == "grader":
            return Reply(text='{"title": "paid", "score": 7}')
        if who == "breaker":
            return Fail(400, "the request is malformed")
        return Reply(text=f"{who} done\n<summary>{who} done</summary>")

    return FunctionModel(answer)


async def eventually(check: Callable[[], Awaitable[T]], what: str) -> T:
    deadline = time.monotonic() + 60
    while not (found := await check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
    return found


def raw_rows(database_url: str) -> dict[str, list[dict[str, Any]]]:
    """The rows DBOS wrote for :data:`RUNS` and their agents, as stored (text)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for table, query in QUERIES.items():
            found: list[dict[str, Any]] = []
            for run in RUNS:
                cursor = conn.execute(query, {"prefix": f"{run}%"})
                names = [c.name for c in cursor.description or ()]
                found += [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            rows[table] = found
    return rows


async def test_every_row_of_a_recorded_run_is_a_json_record_never_a_pickle(
    engine: DBOSEngine,
) -> None:
    answers = model()
    swarm = Swarm(flow(answers.model), engine=engine)
    running = asyncio.create_task(
        swarm.run("pay the invoice", run_id=RUNS[0], metadata={"who": "test"})
    )
    waiting = await eventually(lambda: swarm.pending_approvals(RUNS[0]), "the waiting call")
    await swarm.decide(RUNS[0], waiting[0].call_id, Approval.edit({"amount": 100}))
    result = await running
    assert result["grader"].parsed == Verdict(title="paid", score=7)
    assert result["payer"].tool_calls[0].result == "paid 100"
    breaker = Agent("breaker", "breaker breaks.", model=answers.model)
    with pytest.raises(ModelError):
        await Swarm(breaker, engine=engine).run("break", run_id=RUNS[1])

    rows = await asyncio.to_thread(raw_rows, engine.database_url)
    seen: dict[str, int] = {}
    for table, found in rows.items():
        for row in found:
            stored = {k: v for k, v in row.items() if k in VALUES and v is not None}
            for column, text in stored.items():
                document = json.loads(text)  # JSON, not base64 of a pickle
                if row["serialization"] == "portable_json":
                    # DBOS's own value (a durable sleep's wake-up time) in DBOS's JSON.
                    assert row["function_name"] == "DBOS.sleep", (table, row)
                    continue
                assert row["serialization"] == "swarmcore_json", (table, row)
                assert document["swarmcore"] == 1, (table, column, text[:80])
                seen[table] = seen.get(table, 0) + 1
    # Inputs, outputs and errors of the runs and agents; model, tool and approval steps;
    # the waiting call's event and the decision sent to it.
    assert set(seen) == set(QUERIES), seen
    steps = {r["function_name"] for r in rows["operation_outputs"]}
    assert {"model", "tool:pay"} <= steps
    errors = [r for r in rows["workflow_status"] if r["error"] is not None]
    assert {r["workflow_uuid"] for r in errors} == {"records-failed", "records-failed/breaker/1"}
    with psycopg.connect(engine.database_url, autocommit=True) as conn:
        pickled = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE serialization = 'py_pickle'"
        ).fetchone()
    assert pickled == (0,)

    if os.environ.get("SWARMCORE_WRITE_RECORD_FIXTURE"):
        FIXTURE.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
