"""An MCP server's question (elicitation) as an AG-UI interrupt, answered by the official client.

The flow's tool is a real MCP server's (tests/integration/_mcp_elicit_server.py,
over stdio) that asks mid-call for a form's values or for a URL to be opened;
with no ``elicit`` callback and no ``approve``, the client answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.testing import TemporaryPostgres
from tests.ag_ui.conftest import drive, named
from tests.helpers import desk_flow
from tests.serving import serve


def interrupt_of(run: dict[str, Any]) -> dict[str, Any]:
    finished = run["events"][-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"]["type"] == "interrupt"
    [interrupt] = finished["outcome"]["interrupts"]
    return interrupt


async def test_a_form_is_an_interrupt_with_its_schema_and_the_clients_values_fill_it(
    node: str, tmp_path: Path
) -> None:
    bookings = tmp_path / "bookings"
    swarm, _model = desk_flow("book", {"room": "12"}, bookings)
    answer = {"action": "accept", "content": {"name": "Ada", "nights": 3}}
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(node, url, "book room 12", answers=[answer])
    asked, resumed = driven["runs"]
    interrupt = interrupt_of(asked)
    assert interrupt["reason"] == "mcp_elicitation"
    assert interrupt["message"] == "Who is the booking for, and for how many nights?"
    [start] = named(asked["events"], "TOOL_CALL_START")
    assert interrupt["toolCallId"] == start["toolCallId"]
    assert interrupt["id"] == f"{start['toolCallId']}#elicitation1"
    schema = interrupt["responseSchema"]
    assert schema["required"] == ["action"]
    assert schema["properties"]["action"]["enum"] == ["accept", "decline", "cancel"]
    assert set(schema["properties"]["content"]["required"]) == {"name", "nights"}
    shown = interrupt["metadata"]["swarmcore"]
    assert (shown["mode"], shown["server"], shown["tool"]) == ("form", "desk", "book")
    assert shown["requested_schema"] == schema["properties"]["content"]
    # The question's events reach the client too.
    custom = [e["name"] for e in named(asked["events"], "CUSTOM")]
    assert "swarmcore.ElicitationRequested" in custom
    # The call started in the paused run; the run that resumes sends it again, then its result.
    [again] = named(resumed["events"], "TOOL_CALL_START")
    assert again["toolCallId"] == start["toolCallId"]
    [result] = named(resumed["events"], "TOOL_CALL_RESULT")
    assert result["content"] == "booked 12 for Ada, 3 nights"
    assert resumed["events"][-1]["result"] == {"output": "done"}
    assert bookings.read_text() == "12 Ada\n"
    assert driven["pendingInterrupts"] == []


async def test_a_url_request_shows_its_url_and_a_decline_reaches_the_server(
    node: str, tmp_path: Path
) -> None:
    swarm, _model = desk_flow("login", {}, tmp_path / "bookings")
    answer = {"action": "decline", "reason": "not on this machine"}
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(node, url, "log in", answers=[answer])
    asked, resumed = driven["runs"]
    interrupt = interrupt_of(asked)
    assert interrupt["reason"] == "mcp_elicitation"
    assert "https://desk.example/login" in interrupt["message"]
    shown = interrupt["metadata"]["swarmcore"]
    assert (shown["mode"], shown["url"]) == ("url", "https://desk.example/login")
    assert "content" not in interrupt["responseSchema"]["properties"]
    [result] = named(resumed["events"], "TOOL_CALL_RESULT")
    assert result["content"] == "login decline: not on this machine"


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def test_values_that_do_not_fit_the_form_are_refused_and_the_run_still_waits(
    tmp_path: Path,
) -> None:
    bookings = tmp_path / "bookings"
    swarm, _model = desk_flow("book", {"room": "7"}, bookings)
    message = {"id": "m1", "role": "user", "content": "book room 7"}
    with serve(swarm.to_ag_ui()) as url:
        async with httpx.AsyncClient(timeout=60) as http:

            async def post(run_id: str, **more: Any) -> list[dict[str, Any]]:
                body = {"threadId": "t", "runId": run_id, "messages": [message], **more}
                return sse_events((await http.post(f"{url}/", json=body)).text)

            asked = await post("r1")
            [interrupt] = asked[-1]["outcome"]["interrupts"]
            entry = {"interruptId": interrupt["id"], "status": "resolved"}
            wrong = {"action": "accept", "content": {"name": "Ada", "nights": "three"}}
            bad = await post("r2", resume=[{**entry, "payload": wrong}])
            assert (bad[-1]["type"], bad[-1]["code"]) == ("RUN_ERROR", "invalid_resume")
            assert "nights" in bad[-1]["message"]
            nonsense = await post("r3", resume=[{**entry, "payload": {"approved": True}}])
            assert '"action": "accept"' in nonsense[-1]["message"]
            assert not bookings.exists()
            right = {"action": "accept", "content": {"name": "Ada", "nights": 2}}
            done = await post("r4", resume=[{**entry, "payload": right}])
    assert done[-1]["outcome"] == {"type": "success"}
    [result] = [e for e in done if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "booked 7 for Ada, 2 nights"


async def test_on_a_durable_engine_the_question_waits_in_the_engine_and_the_client_answers(
    node: str, postgres: TemporaryPostgres, tmp_path: Path
) -> None:
    bookings = tmp_path / "bookings"
    swarm, model = desk_flow("book", {"room": "12"}, bookings)
    engine = DBOSEngine(postgres.new_database(), worker_id="agui-elicit")
    try:
        swarm = Swarm(swarm.flow, engine=engine)
        answer = {"action": "accept", "content": {"name": "Ada", "nights": 2}}
        with serve(swarm.to_ag_ui()) as url:
            driven = await drive(node, url, "book room 12", answers=[answer])
        paused, resumed = driven["runs"]
        interrupt = interrupt_of(paused)
        assert interrupt["reason"] == "mcp_elicitation"
        run_id, _, question = interrupt["id"].partition("/")
        assert question.endswith("#elicitation1")
        assert interrupt["metadata"]["swarmcore"]["run"] == run_id
        [result] = named(resumed["events"], "TOOL_CALL_RESULT")
        assert result["content"] == "booked 12 for Ada, 2 nights"
        assert resumed["events"][-1]["outcome"] == {"type": "success"}
        assert bookings.read_text() == "12 Ada\n"  # the tool body ran once, after the answer
        handle = await engine.handle(run_id)
        assert await handle.status() == "SUCCESS"
    finally:
        await engine.shutdown()
    assert model.requests  # the flow's model, held to the end
