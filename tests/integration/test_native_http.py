"""The native backend's own HTTP: what the openai SDK did for it before it spoke the protocol.

Server-sent events in every shape a server may send them, an error inside a
stream, proxies from the environment, credentials in a base URL, and the
headers every request carries. Each server here is a plain ``http.server`` on
127.0.0.1 that writes exactly the bytes a test needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from swarmcore import Agent, ModelError, RetryPolicy, Swarm
from swarmcore.events import TextDelta, ToolCallDelta, ToolCallStarted
from tests.helpers import http_server

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.01)

Respond = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


@contextmanager
def serving(respond: Respond) -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """A server whose every POST ``respond`` answers; yields its base URL and what it saw."""
    seen: list[tuple[str, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            headers: dict[str, str] = {}
            for name, value in self.headers.items():  # a header sent twice reads "a, b"
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            seen.append((self.path, headers))
            respond(self, body)

        def log_message(self, *args: object) -> None:
            pass

    with http_server(Handler) as base:
        yield f"{base}/v1", seen


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def completion(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    reply = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    return json.dumps({**reply, "usage": usage}).encode()


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def agent(base: str, **kwargs: Any) -> Agent:
    return Agent("a", "x", model="openai/gpt-4o-mini", api_base=base, api_key="sk-native", **kwargs)


async def streamed(base: str) -> tuple[str, list[str], Any]:
    deltas: list[str] = []
    result: Any = None
    async for event in Swarm(agent(base, retry=FAST)).stream("go", text=True):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        result = getattr(event, "result", result)
    return result["a"].output, deltas, result["a"]


async def test_a_stream_in_any_shape_the_protocol_allows() -> None:
    """CRLF endings, comments, an event field, data split over lines, and a 200 KB line."""
    long_arguments = json.dumps({"term": "t" * 200_000})

    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if "tools" in body and len(body["messages"]) == 2:  # the first turn: one huge tool call
            call = {"index": 0, "id": "c1", "function": {"name": "lookup", "arguments": ""}}
            parts = [
                chunk({"role": "assistant", "tool_calls": [call]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": long_arguments}}]}),
                chunk({}, "tool_calls"),
            ]
            events = "".join(f"data: {json.dumps(p)}\n\n" for p in parts) + "data: [DONE]\n\n"
        else:
            usage = {"prompt_tokens": 40, "completion_tokens": 6}
            hello = json.dumps(chunk({"content": "Hel"}))
            events = (
                ": keep-alive comment\r\n\r\n"
                f"event: message\r\ndata: {hello}\r\n\r\n"
                # One event's data over two lines: joined by a newline, still JSON.
                'data: {"choices": [{"index": 0,\ndata: "delta": {"content": "lo"}}]}\n\n'
                f"data: {json.dumps(chunk({}, 'stop'))}\n\n"
                f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n"
                "data: [DONE]\n\n"
            )
        send(handler, 200, events.encode(), "text/event-stream")

    looked_up: list[int] = []

    def lookup(term: str) -> str:
        """Look a term up.

        Args:
            term: What to look up.
        """
        looked_up.append(len(term))
        return "found"

    with serving(respond) as (base, seen):
        deltas: list[str] = []
        result: Any = None
        async for event in Swarm(agent(base, tools=[lookup])).stream("go", text=True):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
            result = getattr(event, "result", result)
    assert looked_up == [200_000]
    assert deltas == ["Hel", "lo"]
    assert result["a"].output == "Hello"
    assert result["a"].llm_calls[1].token_usage.prompt_tokens == 40
    assert len(seen) == 2


def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: What to look up.
    """
    return f"{term} facts"


async def test_a_tool_call_a_server_sends_whole_to_a_streaming_request_is_one_piece() -> None:
    # A server that ignores "stream" answers JSON: what would have streamed is published
    # whole, each call's arguments as one piece, before the call starts.
    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if body["messages"][-1]["role"] == "tool":
            send(handler, 200, completion("Tea facts."), "application/json")
            return
        function = {"name": "lookup", "arguments": '{"term": "tea"}'}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": function}],
        }
        reply = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
        send(handler, 200, json.dumps(reply).encode(), "application/json")

    with serving(respond) as (base, _):
        worker = agent(base, tools=[lookup])
        seen = [
            event
            async for event in Swarm(worker).stream("go", text=True)
            if isinstance(event, ToolCallDelta | ToolCallStarted)
        ]
    assert [type(e) for e in seen] == [ToolCallDelta, ToolCallStarted]
    delta = seen[0]
    assert isinstance(delta, ToolCallDelta)
    assert (delta.index, delta.call_id, delta.name, delta.arguments) == (
        0,
        "c1",
        "lookup",
        '{"term": "tea"}',
    )


async def test_an_error_inside_a_stream_is_the_provider_s_error() -> None:
    """A server that fails after the 200 sends an ``error`` event; it is named, key redacted."""

    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        error = {"error": {"message": "overloaded with sk-native inside", "type": "server_error"}}
        events = f"data: {json.dumps(chunk({'content': 'Hi'}))}\n\ndata: {json.dumps(error)}\n\n"
        send(handler, 200, events.encode(), "text/event-stream")

    with serving(respond) as (base, seen), pytest.raises(ModelError) as caught:
        await streamed(base)
    text = str(caught.value)
    assert "overloaded with" in text
    assert "sk-native" not in text
    assert caught.value.__cause__ is None
    # The server failed while it answered: retried, as LiteLLM retries it (the conformance table).
    assert caught.value.retryable
    assert len(seen) == 2


async def test_a_connection_lost_mid_stream_is_retried_then_named() -> None:
    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", "100000")  # promised, never sent
        handler.end_headers()
        handler.wfile.write(f"data: {json.dumps(chunk({'content': 'Hi'}))}\n\n".encode())
        handler.wfile.flush()
        handler.close_connection = True

    with serving(respond) as (base, seen), pytest.raises(ModelError) as caught:
        await streamed(base)
    assert caught.value.retryable
    assert base in str(caught.value)  # where it was going
    assert len(seen) == 2  # FAST: one retry


async def test_every_request_carries_the_key_and_who_sent_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")

    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send(handler, 200, completion("ok"), "application/json")

    with serving(respond) as (base, seen):
        settings = {"project": "proj-2", "extra_query": {"api-version": "7"}}
        assert (await agent(base, model_settings=settings).run("go")).output == "ok"
    path, headers = seen[0]
    assert path == "/v1/chat/completions?api-version=7"
    assert headers["authorization"] == "Bearer sk-native"
    assert headers["openai-organization"] == "org-1"
    assert headers["openai-project"] == "proj-2"
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"].startswith("swarmcore/")


async def test_a_header_the_agent_sets_replaces_ours_whatever_its_case() -> None:
    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send(handler, 200, completion("ok"), "application/json")

    with serving(respond) as (base, seen):
        settings = {"extra_headers": {"authorization": "Token gateway-1", "user-agent": "mine"}}
        assert (await agent(base, model_settings=settings).run("go")).output == "ok"
    headers = seen[0][1]
    assert headers["authorization"] == "Token gateway-1"  # one header, the agent's
    assert headers["user-agent"] == "mine"


async def test_a_proxy_from_the_environment_is_used_and_no_proxy_honoured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HTTP_PROXY sends the request through the proxy (absolute URI); NO_PROXY skips it."""

    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send(handler, 200, completion("through"), "application/json")

    with serving(respond) as (proxy, through), serving(respond) as (base, direct):
        monkeypatch.setenv("HTTP_PROXY", proxy.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        target = base.replace("127.0.0.1", "model.test")  # a name only the proxy resolves
        assert (await agent(target).run("go")).output == "through"
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert (await agent(base).run("go")).output == "through"
    assert [path for path, _ in through] == [target + "/chat/completions"]
    assert [path for path, _ in direct] == ["/v1/chat/completions"]


async def test_credentials_in_the_base_url_do_not_replace_the_key() -> None:
    def respond(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send(handler, 200, completion("ok"), "application/json")

    with serving(respond) as (base, seen):
        with_user = base.replace("http://", "http://user:hunter2@")
        assert (await agent(with_user).run("go")).output == "ok"
    assert seen[0][1]["authorization"] == "Bearer sk-native"


async def test_a_base_url_that_is_not_a_url_says_so() -> None:
    with pytest.raises(ModelError, match="is not a URL; check the agent's api_base") as caught:
        await agent("127.0.0.1:9/v1").run("go")
    assert not caught.value.retryable
