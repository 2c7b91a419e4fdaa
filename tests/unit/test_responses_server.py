"""MockOpenAIServer's Responses API: the same script answers POST /v1/responses."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from swarmcore.testing import Call, MockOpenAIServer, Reply


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:  # 127.0.0.1 only
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def test_responses_reply_carries_reasoning_calls_and_usage() -> None:
    reply = Reply(
        text="looking",
        tool_calls=(Call("search", {"q": "x"}, id="call_9"),),
        prompt_tokens=50,
        completion_tokens=20,
        cached_tokens=10,
        reasoning_tokens=7,
        encrypted_reasoning="gAAA-secret",
    )
    with MockOpenAIServer([reply]) as server:
        answer = _post(
            f"{server.url}/responses",
            {"model": "m", "instructions": "be brief", "input": "find x", "store": False},
        )
    kinds = [item["type"] for item in answer["output"]]
    assert kinds == ["reasoning", "message", "function_call"]
    assert answer["output"][0]["encrypted_content"] == "gAAA-secret"
    assert answer["output"][1]["content"][0] == {
        "type": "output_text",
        "text": "looking",
        "annotations": [],
    }
    call = answer["output"][2]
    assert (call["call_id"], call["name"], json.loads(call["arguments"])) == (
        "call_9",
        "search",
        {"q": "x"},
    )
    assert answer["status"] == "completed"
    assert answer["usage"] == {
        "input_tokens": 50,
        "input_tokens_details": {"cached_tokens": 10},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 7},
        "total_tokens": 70,
    }
    recorded = server.requests[0]
    assert (recorded.system, recorded.user) == ("be brief", "find x")
    assert recorded.params == {"store": False}


def test_responses_request_is_recorded_as_chat_messages_and_raw() -> None:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ]
    tool = {"type": "function", "name": "add", "parameters": {"type": "object"}, "strict": False}
    with MockOpenAIServer([Reply(text="done", incomplete="max_output_tokens")]) as server:
        answer = _post(f"{server.url}/responses", {"model": "m", "input": items, "tools": [tool]})
    assert answer["status"] == "incomplete"
    assert answer["incomplete_details"] == {"reason": "max_output_tokens"}
    recorded = server.requests[0]
    assert recorded.user == "hi"
    assert recorded.called_tools == ["add"]
    assert recorded.tool_results == [{"role": "tool", "tool_call_id": "c1", "content": "3"}]
    assert recorded.tool_names == ["add"]
    assert server.raw_bodies[0]["input"][1]["encrypted_content"] == "enc"
