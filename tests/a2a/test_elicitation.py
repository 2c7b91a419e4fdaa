"""An MCP server's question (elicitation) as an A2A ``input-required`` task, answered by the client.

The flow's tool is a real MCP server's (tests/integration/_mcp_elicit_server.py,
over stdio) that asks mid-call for a form's values or for a URL to be opened;
the a2a-sdk's client answers with its next message on the task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.types import Message, Role, SendMessageRequest, Task, TaskState

from tests.a2a.test_server import a2a_client, final_task, output_artifact, send, user_message
from tests.helpers import desk_flow
from tests.serving import serve


def data_message(data: dict[str, Any], *, task: Task) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=f"m-{id(data)}", parts=[new_data_part(data)])
    message.task_id, message.context_id = task.id, task.context_id
    return SendMessageRequest(message=message)


async def test_a_form_asks_for_input_with_its_schema_and_a_data_part_fills_it(
    tmp_path: Path,
) -> None:
    bookings = tmp_path / "bookings"
    swarm, model = desk_flow("book", {"room": "12"}, bookings)
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            asked = final_task(await send(client, user_message("book room 12")))
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            [text] = get_text_parts(asked.status.message.parts)
            assert "Who is the booking for" in text
            assert "name, nights" in text
            [question] = get_data_parts(asked.status.message.parts)
            assert question["type"] == "elicitation_request"
            assert (question["mode"], question["server"], question["tool"]) == (
                "form",
                "desk",
                "book",
            )
            assert set(question["requested_schema"]["required"]) == {"name", "nights"}
            # A bare "accept" gives no values: the task asks again, saying what is missing.
            bare = final_task(await send(client, user_message("accept", task=asked)))
            assert bare.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "do not fit its schema" in get_text_parts(bare.status.message.parts)[0]
            wrong = {"action": "accept", "content": {"name": "Ada", "nights": "three"}}
            again = final_task(await send(client, data_message(wrong, task=asked)))
            assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "nights" in get_text_parts(again.status.message.parts)[0]
            assert not bookings.exists()
            right = {"action": "accept", "content": {"name": "Ada", "nights": 3}}
            done = final_task(await send(client, data_message(right, task=asked)))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(output_artifact(done).parts) == ["done"]
    assert bookings.read_text() == "12 Ada\n"
    assert model.requests[1].tool_results[0]["content"] == "booked 12 for Ada, 3 nights"


async def test_a_url_request_shows_its_url_and_a_text_decline_reaches_the_server(
    tmp_path: Path,
) -> None:
    swarm, model = desk_flow("login", {}, tmp_path / "bookings")
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            asked = final_task(await send(client, user_message("log in")))
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "https://desk.example/login" in get_text_parts(asked.status.message.parts)[0]
            [question] = get_data_parts(asked.status.message.parts)
            assert (question["mode"], question["url"]) == ("url", "https://desk.example/login")
            done = final_task(await send(client, user_message("decline not here", task=asked)))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert model.requests[1].tool_results[0]["content"] == "login decline: not here"
