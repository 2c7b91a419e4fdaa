"""MCP elicitation against a real server (the official SDK's), over stdio and streamable HTTP.

The server asks mid-call for a form or for a URL to be opened; the server's
``elicit`` callback answers, else the run's approval callback, else swarmcore
declines and the server is told why. What was asked and answered is on the
call's record and in the events.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, Approval, ApprovalRequest, Swarm, UserError, events
from swarmcore.console import ConsoleProgress
from swarmcore.mcp import Elicitation, ElicitationAnswer, MCPServer
from swarmcore.results import ToolCallRecord
from swarmcore.testing import Call, Reply, ScriptedModel
from tests.helpers import script_server

SERVER = Path(__file__).parent / "_mcp_elicit_server.py"


def desk_stdio(bookings: Path, **options: Any) -> MCPServer:
    env = {"MCP_TEST_BOOKINGS": str(bookings)}
    return MCPServer.stdio(sys.executable, [str(SERVER), "stdio"], env=env, name="desk", **options)


@pytest.fixture
def desk_url(tmp_path: Path) -> Iterator[str]:
    """The server over streamable HTTP in a subprocess: its endpoint, stopped after the test."""
    env = {"MCP_TEST_BOOKINGS": str(tmp_path / "bookings"), "PATH": ""}
    with script_server(SERVER, "http", env=env) as url:
        yield url


def one_call(tool: str, arguments: dict[str, Any] | None = None) -> ScriptedModel:
    return ScriptedModel([Reply(tool_calls=[Call(tool, arguments or {})]), Reply(text="done")])


async def run_once(
    server: MCPServer, tool: str, arguments: dict[str, Any] | None = None, **options: Any
) -> tuple[ToolCallRecord, list[events.Event]]:
    model = one_call(tool, arguments)
    agent = Agent("clerk", "x", model=model.model, tools=[server])
    seen: list[events.Event] = []
    swarm = Swarm(agent, **options)
    swarm.on(events.ElicitationRequested)(seen.append)
    swarm.on(events.ElicitationAnswered)(seen.append)
    result = await swarm.run("book it")
    [record] = result.history[-1].tool_calls
    return record, seen


async def test_the_servers_elicit_callback_fills_a_form_over_stdio(tmp_path: Path) -> None:
    bookings = tmp_path / "bookings"
    asked: list[Elicitation] = []

    def elicit(request: Elicitation) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.accept({"name": "Ada", "nights": 3})

    record, seen = await run_once(desk_stdio(bookings, elicit=elicit), "book", {"room": "12"})

    assert record.result == "booked 12 for Ada, 3 nights"
    [request] = asked
    assert (request.server, request.tool_name, request.agent_name) == ("desk", "book", "clerk")
    assert request.mode == "form"
    assert request.call_id == record.call_id
    assert request.requested_schema is not None
    assert set(request.requested_schema["required"]) == {"name", "nights"}
    [answer] = record.elicitations
    assert (answer.action, answer.answered_by, answer.mode) == ("accept", "elicit", "form")
    assert answer.content == '{"name": "Ada", "nights": 3}'
    assert [type(e).__name__ for e in seen] == ["ElicitationRequested", "ElicitationAnswered"]
    assert bookings.read_text() == "12 Ada\n"


async def test_a_form_answer_that_does_not_fit_the_schema_is_declined_with_the_problem(
    tmp_path: Path,
) -> None:
    bookings = tmp_path / "bookings"

    async def elicit(request: Elicitation) -> ElicitationAnswer:
        return ElicitationAnswer.accept({"name": "Ada", "nights": "three"})

    record, _ = await run_once(desk_stdio(bookings, elicit=elicit), "book", {"room": "12"})

    assert record.result.startswith("not booked (decline): the answer did not fit the form")
    assert "nights" in record.result
    [answer] = record.elicitations
    assert answer.action == "decline"
    assert answer.content is None
    assert not bookings.exists()  # nothing was booked on bad values


async def test_with_no_one_to_ask_the_server_is_declined_with_a_reason(tmp_path: Path) -> None:
    bookings = tmp_path / "bookings"
    record, seen = await run_once(desk_stdio(bookings), "book", {"room": "12"})

    assert record.result.startswith("not booked (decline): no one can answer questions")
    [answer] = record.elicitations
    assert (answer.action, answer.answered_by) == ("decline", "nobody")
    assert isinstance(seen[-1], events.ElicitationAnswered)
    assert seen[-1].answered_by == "nobody"
    assert not bookings.exists()


async def test_the_runs_approval_callback_answers_when_the_server_has_no_elicit(
    tmp_path: Path,
) -> None:
    bookings = tmp_path / "bookings"
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        assert request.elicitation is not None
        if request.elicitation.mode == "url":
            return Approval.deny("not now")
        return Approval.edit({"name": "Grace", "nights": 1})

    record, _ = await run_once(desk_stdio(bookings), "book", {"room": "7"}, approve=approve)
    assert record.result == "booked 7 for Grace, 1 nights"
    assert record.elicitations[0].answered_by == "approve"
    [request] = asked
    assert request.call_id == f"{record.call_id}#elicitation1"
    assert request.arguments["message"].startswith("Who is the booking for")

    record, _ = await run_once(desk_stdio(bookings), "login", approve=approve)
    assert record.result == "login decline: not now"


async def test_a_url_request_is_an_event_with_the_url_and_its_answer_goes_back(
    tmp_path: Path,
) -> None:
    opened: list[str] = []

    def elicit(request: Elicitation) -> ElicitationAnswer:
        assert request.mode == "url"
        assert request.url is not None
        opened.append(request.url)
        return ElicitationAnswer.accept()

    record, seen = await run_once(desk_stdio(tmp_path / "b", elicit=elicit), "login")

    assert record.result == "login accept: "
    assert opened == ["https://desk.example/login"]
    requested = [e for e in seen if isinstance(e, events.ElicitationRequested)]
    assert [(e.mode, e.url) for e in requested] == [("url", "https://desk.example/login")]
    assert record.elicitations[0].url == "https://desk.example/login"


async def test_an_elicit_callback_returning_something_else_stops_the_agent_clearly(
    tmp_path: Path,
) -> None:
    def elicit(request: Elicitation) -> Any:
        return {"name": "Ada"}

    server = desk_stdio(tmp_path / "b", elicit=elicit)
    model = one_call("book", {"room": "1"})
    agent = Agent("clerk", "x", model=model.model, tools=[server])
    with pytest.raises(UserError, match=r"returned dict; return ElicitationAnswer\.accept"):
        await agent.run("book it")


async def test_elicitation_over_streamable_http(desk_url: str, tmp_path: Path) -> None:
    def elicit(request: Elicitation) -> ElicitationAnswer:
        if request.mode == "url":
            return ElicitationAnswer.decline("no browser here")
        return ElicitationAnswer.accept({"name": "Lin", "nights": 2})

    server = MCPServer.http(desk_url, name="desk", elicit=elicit)
    record, _ = await run_once(server, "book", {"room": "3"})
    assert record.result == "booked 3 for Lin, 2 nights"
    record, _ = await run_once(server, "login")
    assert record.result == "login decline: no browser here"
    assert record.elicitations[0].reason == "no browser here"


async def test_a_credential_in_an_answer_is_redacted_from_the_record(tmp_path: Path) -> None:
    secret = "sk-desk-0123456789abcdef"
    env = {"MCP_TEST_BOOKINGS": str(tmp_path / "b"), "DESK_API_KEY": secret}
    server = MCPServer.stdio(
        sys.executable,
        [str(SERVER), "stdio"],
        env=env,
        name="desk",
        elicit=lambda request: ElicitationAnswer.accept({"name": secret, "nights": 1}),
    )
    record, _ = await run_once(server, "book", {"room": "12"})

    assert record.elicitations[0].content is not None
    assert secret not in record.elicitations[0].content  # the server still got the value
    assert (tmp_path / "b").read_text() == f"12 {secret}\n"


async def test_the_console_shows_a_url_to_open_at_every_verbosity(tmp_path: Path) -> None:
    out = io.StringIO()
    server = desk_stdio(tmp_path / "b", elicit=lambda request: ElicitationAnswer.accept())
    model = one_call("login")
    agent = Agent("clerk", "x", model=model.model, tools=[server])
    await Swarm(agent, hooks=[ConsoleProgress("minimal", file=out)]).run("log in")
    assert (
        "clerk tool login: desk asks to open https://desk.example/login: Log in" in out.getvalue()
    )
