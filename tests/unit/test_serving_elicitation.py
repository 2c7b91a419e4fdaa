"""How a served flow's client answers an MCP server's question (AG-UI and A2A share it)."""

from __future__ import annotations

import pytest

from swarmcore import Approval
from swarmcore._serving import elicitation_answer_schema, read_elicitation_answer
from swarmcore.mcp import Elicitation

FORM = Elicitation(
    server="desk",
    agent_name="clerk",
    tool_name="book",
    call_id="call_1",
    mode="form",
    message="Who for?",
    requested_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "nights": {"type": "integer"}},
        "required": ["name"],
    },
)
URL = Elicitation(
    server="desk",
    agent_name="clerk",
    tool_name="login",
    call_id="call_2",
    mode="url",
    message="Log in",
    url="https://desk.example/login",
)


@pytest.mark.parametrize(
    ("asked", "answer", "decision"),
    [
        (FORM, {"action": "accept", "content": {"name": "Ada"}}, Approval.edit({"name": "Ada"})),
        (URL, {"action": "accept", "content": {"ignored": 1}}, Approval.allow()),
        (FORM, {"action": "decline", "reason": "no"}, Approval.deny("no")),
        (FORM, {"action": "decline"}, Approval.deny("the user declined")),
        (URL, {"action": "cancel"}, Approval.deny("the user cancelled")),
    ],
)
def test_an_answer_becomes_the_decision_the_server_hears(
    asked: Elicitation, answer: dict[str, object], decision: Approval
) -> None:
    assert read_elicitation_answer(asked, answer) == decision


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"approved": True}, '{"action": "accept", "content"'),
        (True, '{"action": "decline", "reason": "..."}'),
        ({"action": "accept", "content": "Ada"}, "'content' must be an object"),
        ({"action": "accept", "content": {"nights": 2}}, "'name' is a required property"),
        ({"action": "accept", "content": {"name": "Ada", "nights": "2"}}, "nights"),
    ],
)
def test_a_wrong_answer_says_what_to_send(answer: object, says: str) -> None:
    problem = read_elicitation_answer(FORM, answer)
    assert isinstance(problem, str)
    assert says in problem


def test_the_answers_schema_holds_the_form_and_a_url_request_has_no_content() -> None:
    form = elicitation_answer_schema(FORM)
    assert form["properties"]["content"] == FORM.requested_schema
    assert form["required"] == ["action"]
    assert "content" not in elicitation_answer_schema(URL)["properties"]
