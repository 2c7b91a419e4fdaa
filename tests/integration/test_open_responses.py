"""MockOpenAIServer's ``/v1/responses`` and the native backend's requests, held to the
Open Responses specification's own types.

No Open Responses acceptance suite is published on a package registry (its
compliance tests run from the specification's repository, under Bun); what they
check of a response's and a request's shape, these tests check with the
specification's generated pydantic types (``openresponses-types``, a dev
dependency): every JSON response is a ``ResponseResource``, every streamed event
the event its ``type`` names, every request swarmcore sends a ``CreateResponseBody``.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import openresponses_types as spec
import pytest
from pydantic import BaseModel

from swarmcore import Agent, Swarm
from swarmcore.testing import Call, MockOpenAIServer, Reply

# The events MockOpenAIServer streams, by type, as the specification defines them.
EVENTS: dict[str, type[BaseModel]] = {
    "response.created": spec.ResponseCreatedStreamingEvent,
    "response.output_item.added": spec.ResponseOutputItemAddedStreamingEvent,
    "response.output_text.delta": spec.ResponseOutputTextDeltaStreamingEvent,
    "response.output_text.done": spec.ResponseOutputTextDoneStreamingEvent,
    "response.function_call_arguments.delta": spec.ResponseFunctionCallArgumentsDeltaStreamingEvent,
    "response.function_call_arguments.done": spec.ResponseFunctionCallArgumentsDoneStreamingEvent,
    "response.reasoning_summary_text.delta": spec.ResponseReasoningSummaryDeltaStreamingEvent,
    "response.reasoning_summary_text.done": spec.ResponseReasoningSummaryDoneStreamingEvent,
    "response.output_item.done": spec.ResponseOutputItemDoneStreamingEvent,
    "response.completed": spec.ResponseCompletedStreamingEvent,
    "response.incomplete": spec.ResponseIncompleteStreamingEvent,
}

_ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    "strict": False,
}

# The compliance suite's requests (basic, system prompt, tool calling, multi-turn), and
# what a reasoning model and a cut response answer.
CASES: dict[str, tuple[Reply, dict[str, Any]]] = {
    "basic-response": (Reply(text="Hello."), {"input": "Say hello."}),
    "system-prompt": (
        Reply(text="Arr."),
        {
            "input": [
                {"type": "message", "role": "system", "content": "Talk like a pirate."},
                {"type": "message", "role": "user", "content": "Hi."},
            ]
        },
    ),
    "tool-calling": (
        Reply(tool_calls=(Call("add", {"a": 1}),)),
        {"input": "Add 1.", "tools": [_ADD], "tool_choice": "auto"},
    ),
    "multi-turn": (
        Reply(text="Still 2."),
        {
            "input": [
                {"type": "message", "role": "user", "content": "1 + 1?"},
                {"type": "message", "role": "assistant", "content": "2."},
                {"type": "message", "role": "user", "content": "Sure?"},
            ]
        },
    ),
    "reasoning": (
        Reply(text="4", encrypted_reasoning="gAAA", reasoning_summary="Two and two."),
        {
            "input": "2 + 2?",
            "reasoning": {"effort": "low", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "store": False,
        },
    ),
    "incomplete": (
        Reply(text="Cut", incomplete="max_output_tokens"),
        {"input": "Write a lot.", "max_output_tokens": 16},
    ),
}


def _post(url: str, body: dict[str, Any]) -> tuple[str, str]:
    request = urllib.request.Request(
        f"{url}/responses", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:  # 127.0.0.1 only
        return response.read().decode(), response.headers.get_content_type()


@pytest.mark.parametrize("case", list(CASES))
def test_a_response_is_a_response_resource(case: str) -> None:
    reply, body = CASES[case]
    with MockOpenAIServer([reply]) as server:
        text, _ = _post(server.url, {"model": "test-model", **body})
    answer = spec.ResponseResource.model_validate_json(text)
    assert answer.status == ("incomplete" if reply.incomplete else "completed")
    assert answer.usage is not None


@pytest.mark.parametrize("case", list(CASES))
def test_a_stream_is_events_the_specification_defines(case: str) -> None:
    reply, body = CASES[case]
    with MockOpenAIServer([reply]) as server:
        text, kind = _post(server.url, {"model": "test-model", **body, "stream": True})
    assert kind == "text/event-stream"
    seen: list[str] = []
    for block in filter(None, text.split("\n\n")):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data: dict[str, Any] = json.loads(fields["data"])
        assert fields["event"] == data["type"]
        EVENTS[data["type"]].model_validate(data)
        seen.append(data["type"])
    assert seen[0] == "response.created"
    assert seen[-1] == ("response.incomplete" if reply.incomplete else "response.completed")
    numbers = [
        json.loads(b.split("data: ", 1)[1])["sequence_number"] for b in text.split("\n\n") if b
    ]
    assert numbers == list(range(len(seen)))


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Sum(BaseModel):
    """A structured answer."""

    n: int


async def test_the_backends_requests_are_create_response_bodies() -> None:
    script = [
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, id="c1"),), encrypted_reasoning="enc"),
        Reply(text="3"),
        Reply(text='{"n": 3}'),
    ]
    with MockOpenAIServer(script) as server:
        settings = {"reasoning_effort": "high", "max_tokens": 100, "parallel_tool_calls": True}
        options = {**server.model_kwargs, "model": "openai/o4-mini"}
        adder = Agent("adder", "You add.", tools=[add], model_settings=settings, **options)
        await adder.run("1 + 2?")  # o4-mini with tools: the Responses API by default
        typed = Agent(
            "typed",
            "You add.",
            output_type=Sum,
            output_protocol="native",
            api="responses",
            **server.model_kwargs,
        )
        async for _ in Swarm(typed).stream("1 + 2?", text=True):
            pass
    assert server.paths == ["/v1/responses"] * 3
    sent = [
        spec.CreateResponseBody.model_validate(body).model_dump(mode="json", exclude_none=True)
        for body in server.raw_bodies
    ]
    # What the specification read of them: the tool loop's second request hands the
    # reasoning back before the call it led to; the typed one asks for its JSON schema.
    second = sent[1]["input"]
    assert [item.get("type") for item in second] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second[1]["encrypted_content"] == "enc"
    assert sent[1]["reasoning"] == {"effort": "high"}
    assert sent[2]["text"]["format"]["type"] == "json_schema"
