"""The Responses API over HTTP: agents' runs against MockOpenAIServer's ``/v1/responses``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from swarmcore import Agent, ModelError, RetryPolicy, Swarm
from swarmcore.events import (
    Event,
    ModelCallFinished,
    ModelFallback,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from swarmcore.testing import Call, Fail, MockOpenAIServer, RecordedRequest, Reply
from swarmcore.tracing import OpenTelemetryTracer
from tests.helpers import http_server


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize(
    ("chosen", "settings"),
    [
        ({"api": "responses"}, {"reasoning_effort": "high"}),
        ({}, {"reasoning": {"effort": "high"}}),  # o4-mini with tools: Responses by default
    ],
    ids=["api-responses-reasoning-effort", "default-api-reasoning"],
)
async def test_a_reasoning_agent_hands_its_encrypted_reasoning_back_on_each_turn(
    chosen: dict[str, Any], settings: dict[str, Any]
) -> None:
    script = [
        Reply(
            tool_calls=(Call("add", {"a": 1, "b": 2}, id="c1"),),
            encrypted_reasoning="enc-1",
            reasoning_tokens=11,
            cached_tokens=4,
            prompt_tokens=40,
            completion_tokens=20,
        ),
        Reply(tool_calls=(Call("add", {"a": 3, "b": 3}, id="c2"),), encrypted_reasoning="enc-2"),
        Reply(text="The sums are 3 and 6.", encrypted_reasoning="enc-3"),
    ]
    with MockOpenAIServer(script) as server:
        agent = Agent(
            "adder",
            "You add numbers with the add tool.",
            tools=[add],
            model_settings=settings,
            **{**server.model_kwargs, "model": "openai/o4-mini", **chosen},
        )
        result = await agent.run("What are 1 + 2 and 3 + 3?")

    assert result.output == "The sums are 3 and 6."
    bodies = server.raw_bodies
    assert server.paths == ["/v1/responses"] * 3
    for body in bodies:  # every turn went to /v1/responses, shaped as its API asks
        assert "messages" not in body
        assert body["reasoning"] == {"effort": "high"}
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["instructions"].startswith("You add numbers with the add tool.")
        assert [t["name"] for t in body["tools"]] == ["add"]

    def handed_back(body: dict[str, Any]) -> list[object]:
        items: list[dict[str, Any]] = body["input"]
        return [i["encrypted_content"] for i in items if i.get("type") == "reasoning"]

    assert [handed_back(body) for body in bodies] == [[], ["enc-1"], ["enc-1", "enc-2"]]
    # Each reasoning item goes back just before the calls it led to, answered in order.
    second: list[dict[str, Any]] = bodies[1]["input"]
    assert [i.get("type", "message") for i in second] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second[3] == {"type": "function_call_output", "call_id": "c1", "output": "3"}
    first = result.llm_calls[0].token_usage
    assert (first.prompt_tokens, first.completion_tokens) == (40, 20)
    assert (first.reasoning_tokens, first.cached_tokens) == (11, 4)


async def test_a_responses_agent_and_a_chat_agent_run_in_one_swarm() -> None:
    with MockOpenAIServer(["draft", "final"]) as server:
        writer = Agent("writer", "Write.", api="responses", **server.model_kwargs)
        editor = Agent("editor", "Edit.", **server.model_kwargs)
        result = await Swarm(writer >> editor).run("a poem")
    assert result.output == "final"
    assert server.paths == ["/v1/responses", "/v1/chat/completions"]  # one request on each
    assert ["input" in body for body in server.raw_bodies] == [True, False]
    assert ["messages" in body for body in server.raw_bodies] == [False, True]
    # The editor read the writer's output, whichever API carried it.
    assert "draft" in json.dumps(server.raw_bodies[1]["messages"])


async def test_a_streamed_tool_loop_sends_text_deltas_and_keeps_the_reasoning() -> None:
    script = [
        Reply(tool_calls=(Call("add", {"a": 2, "b": 2}, id="c1"),), encrypted_reasoning="enc-1"),
        Reply(
            text="Two and two make four.",
            encrypted_reasoning="enc-2",
            reasoning_summary="The tool said four; say so.",
            reasoning_tokens=9,
        ),
    ]
    with MockOpenAIServer(script) as server:
        agent = Agent("adder", "Add.", tools=[add], api="responses", **server.model_kwargs)
        deltas: list[str] = []
        summary: list[str] = []
        async for event in Swarm(agent).stream("2 + 2?", text=True):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
            elif isinstance(event, ReasoningDelta):
                summary.append(event.text)
    assert len(deltas) > 1  # in pieces, as they came
    assert "".join(deltas).startswith("Two and two make four.")
    # The summary streams as its own events, apart from the answer's text.
    assert "".join(summary) == "The tool said four; say so."
    assert all(body["stream"] is True for body in server.raw_bodies)
    second: list[dict[str, Any]] = server.raw_bodies[1]["input"]
    assert [i.get("encrypted_content") for i in second if i.get("type") == "reasoning"] == ["enc-1"]


async def test_a_response_cut_at_max_output_tokens_fails_as_a_cut_chat_completion_does() -> None:
    # A reasoning model that spent its tokens reasoning: incomplete, with no text at all.
    script = [Reply(incomplete="max_output_tokens", reasoning_tokens=50)]
    with MockOpenAIServer(script) as server:
        agent = Agent(
            "a",
            "Answer.",
            api="responses",
            model_settings={"max_tokens": 50},
            **server.model_kwargs,
        )
        with pytest.raises(ModelError, match="stopped at its token limit") as caught:
            await agent.run("go")
    assert caught.value.retryable is False  # another attempt meets the same limit
    assert len(server.raw_bodies) == 1
    assert server.raw_bodies[0]["max_output_tokens"] == 50


@contextmanager
def answering(events: bytes, kind: str = "text/event-stream") -> Iterator[str]:
    """A server whose every POST answers 200 with ``events`` (of type ``kind``); yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(events)))
            self.end_headers()
            self.wfile.write(events)

        def log_message(self, *args: object) -> None:
            pass

    with http_server(Handler) as base:
        yield f"{base}/v1"


def _sse(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


@pytest.mark.parametrize(
    "failure",
    [
        _sse(
            "error", {"code": "server_error", "message": "overloaded with sk-responses-key inside"}
        ),
        _sse(
            "response.failed",
            {
                "response": {
                    "status": "failed",
                    "output": [],
                    "error": {
                        "code": "server_error",
                        "message": "overloaded with sk-responses-key inside",
                    },
                }
            },
        ),
    ],
    ids=["error-event", "response-failed"],
)
async def test_an_error_inside_a_responses_stream_is_the_provider_s_error(failure: str) -> None:
    events = _sse("response.output_text.delta", {"delta": "Hi"}) + failure
    with answering(events.encode()) as base:
        agent = Agent(
            "a",
            "x",
            model="openai/o4-mini",
            api="responses",
            api_base=base,
            api_key="sk-responses-key",
            retry=RetryPolicy(max_retries=0),
        )
        with pytest.raises(ModelError) as caught:
            async for _ in Swarm(agent).stream("go", text=True):
                pass
    text = str(caught.value)
    assert "overloaded with" in text
    assert "sk-responses-key" not in text  # the key the server echoed is redacted
    assert caught.value.retryable  # the server failed while it answered, as on chat completions


async def test_a_reply_that_is_no_response_names_the_responses_api() -> None:
    chat_completion = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
    with answering(json.dumps(chat_completion).encode(), "application/json") as base:
        agent = Agent(
            "a",
            "x",
            model="openai/o4-mini",
            api="responses",
            api_base=base,
            api_key="sk-responses-key",
            retry=RetryPolicy(max_retries=0),
        )
        with pytest.raises(ModelError, match="no output: not a Responses API response") as caught:
            await agent.run("go")
    assert "speaks OpenAI's Responses API." in str(caught.value)


class Sum(BaseModel):
    """A structured answer."""

    n: int


async def test_a_rejected_structured_answer_keeps_its_reasoning_for_the_retry() -> None:
    script = [
        Reply(text="four", encrypted_reasoning="enc-1"),
        Reply(text='{"n": 4}', encrypted_reasoning="enc-2"),
    ]
    with MockOpenAIServer(script) as server:
        agent = Agent(
            "a",
            "Add.",
            output_type=Sum,
            output_protocol="native",
            api="responses",
            **server.model_kwargs,
        )
        result = await agent.run("2 + 2?")
    assert result.output == '{\n  "n": 4\n}'
    first, second = server.raw_bodies
    assert first["text"]["format"]["type"] == "json_schema"
    assert first["text"]["format"]["name"] == "Sum"
    kinds = [(i.get("type", "message"), i.get("role")) for i in second["input"]]
    assert kinds == [
        ("message", "user"),
        ("reasoning", None),
        ("message", "assistant"),
        ("message", "user"),  # the feedback on the rejected answer
    ]
    assert second["input"][1]["encrypted_content"] == "enc-1"


@pytest.mark.parametrize(("api", "route"), [(None, "input"), ("chat_completions", "messages")])
async def test_an_openai_reasoning_model_with_tools_speaks_responses_unless_told(
    api: Any, route: str
) -> None:
    script = [Reply.tool("add", a=1, b=1), Reply(text="2")]
    with MockOpenAIServer(script) as server:
        options = {**server.model_kwargs, "model": "openai/o4-mini"}
        agent = Agent("a", "Add.", tools=[add], api=api, **options)
        assert (await agent.run("1 + 1?")).output == "2"
    assert all(route in body for body in server.raw_bodies)


async def test_a_streamed_tool_call_publishes_what_it_publishes_on_chat_completions() -> None:
    # Each piece of a call's arguments is a ToolCallDelta on either API, naming the call by
    # its place among the reply's calls (on the Responses API, reasoning and text items
    # come first in the output, and are not counted).
    async def seen(api: Any) -> tuple[list[tuple[str, str]], MockOpenAIServer]:
        calls = (Call("add", {"a": 2, "b": 2}, id="c1"), Call("add", {"a": 1, "b": 10}, id="c2"))
        script = [
            Reply(text="Adding them.", tool_calls=calls, encrypted_reasoning="enc-1"),
            Reply(text="Four."),
        ]
        kinds: list[tuple[str, str]] = []
        with MockOpenAIServer(script) as server:
            agent = Agent("adder", "Add.", tools=[add], api=api, **server.model_kwargs)
            async for event in Swarm(agent).stream("2 + 2?", text=True):
                kinds.append(_shown(event))
        return kinds, server

    on_chat, chat_server = await seen("chat_completions")
    on_responses, responses_server = await seen("responses")
    assert chat_server.paths == ["/v1/chat/completions"] * 2
    assert responses_server.paths == ["/v1/responses"] * 2
    assert on_responses == on_chat
    assert ("ToolCallStarted", '{"a": 2, "b": 2}') in on_responses
    deltas = "".join(text for kind, text in on_responses if kind == "TextDelta")
    assert deltas == "Adding them.Four."  # the arguments never stream as text
    pieces = [text for kind, text in on_responses if kind == "ToolCallDelta"]
    assert pieces == [
        '0 c1 add {"a": 2,',
        '0 c1 add  "b": 2}',
        '1 c2 add {"a": 1,',
        '1 c2 add  "b": 10',
        "1 c2 add }",
    ]
    first_start = on_responses.index(("ToolCallStarted", '{"a": 2, "b": 2}'))
    assert all(on_responses.index(("ToolCallDelta", p)) < first_start for p in pieces)


def _shown(event: Event) -> tuple[str, str]:
    """An event's kind, with what it carries that a consumer would show."""
    match event:
        case TextDelta(text=text) | ReasoningDelta(text=text):
            return type(event).__name__, text
        case ToolCallStarted(arguments=arguments):
            return "ToolCallStarted", arguments
        case ToolCallDelta(index=index, call_id=call_id, name=name, arguments=arguments):
            return "ToolCallDelta", f"{index} {call_id} {name} {arguments}"
        case _:
            return type(event).__name__, ""


async def test_a_responses_call_is_a_chat_span_naming_its_api_and_reasoning_tokens() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    thought = Reply(
        text="4", prompt_tokens=30, completion_tokens=12, reasoning_tokens=7, cached_tokens=3
    )
    with MockOpenAIServer([thought, "Four."]) as server:
        thinker = Agent(
            "thinker",
            "Think.",
            api="responses",
            **{**server.model_kwargs, "model": "openai/o4-mini"},
        )
        editor = Agent("editor", "Edit.", **server.model_kwargs)
        swarm = Swarm(thinker >> editor, hooks=[OpenTelemetryTracer(provider)])
        await swarm.run("2 + 2?")
    chats = {
        str((s.attributes or {})["gen_ai.agent.name"]): dict(s.attributes or {})
        for s in exporter.get_finished_spans()
        if s.name.startswith("chat ")
    }
    thinking, editing = chats["thinker"], chats["editor"]
    # The conventions name no "responses" operation: a Responses call is a chat, refined by
    # openai.api.type.
    assert thinking["gen_ai.operation.name"] == editing["gen_ai.operation.name"] == "chat"
    assert thinking["openai.api.type"] == "responses"
    assert editing["openai.api.type"] == "chat_completions"
    assert thinking["gen_ai.provider.name"] == "openai"
    assert thinking["gen_ai.request.model"] == "o4-mini"
    assert (thinking["gen_ai.usage.input_tokens"], thinking["gen_ai.usage.output_tokens"]) == (
        30,
        12,
    )
    assert thinking["gen_ai.usage.reasoning.output_tokens"] == 7
    assert thinking["gen_ai.usage.cache_read.input_tokens"] == 3
    assert "gen_ai.usage.reasoning.output_tokens" not in editing


async def test_a_responses_model_that_fails_falls_back_to_a_chat_completions_model() -> None:
    # o4-mini offered tools speaks the Responses API by default; its fallback gpt-4o-mini
    # speaks chat completions. Its second turn fails past its retries and crosses over.
    def answer(request: RecordedRequest) -> Reply | Fail:
        if request.model == "o4-mini":
            if request.tool_results:
                return Fail(503, "overloaded")
            return Reply(
                tool_calls=(Call("add", {"a": 1, "b": 2}, id="c1"),), encrypted_reasoning="enc-1"
            )
        return Reply(text="It is 3.")

    with MockOpenAIServer(responder=answer) as server:
        agent = Agent(
            "adder",
            "Add.",
            tools=[add],
            model="openai/o4-mini",
            fallback_models=["openai/gpt-4o-mini"],
            api_base=server.url,
            api_key="sk-test-local",
            retry=RetryPolicy(max_retries=0),
        )
        events: list[Event] = []
        async for event in Swarm(agent).stream("1 + 2?"):
            events.append(event)
    assert [e.result.output for e in events if isinstance(e, RunFinished)] == ["It is 3."]
    assert server.paths == ["/v1/responses", "/v1/responses", "/v1/chat/completions"]
    fallbacks = [e for e in events if isinstance(e, ModelFallback)]
    assert [(f.from_model, f.to_model) for f in fallbacks] == [
        ("openai/o4-mini", "openai/gpt-4o-mini")
    ]
    finished = [e for e in events if isinstance(e, ModelCallFinished)]
    assert [(f.model, f.api) for f in finished] == [
        ("openai/o4-mini", "responses"),
        ("openai/gpt-4o-mini", "chat_completions"),
    ]
    # The chat request carries the conversation so far, without the Responses reasoning items.
    messages: list[dict[str, Any]] = server.raw_bodies[2]["messages"]
    assert [m["role"] for m in messages][-2:] == ["assistant", "tool"]
    assert all("reasoning" not in m for m in messages)
    assert "enc-1" not in json.dumps(server.raw_bodies[2])
