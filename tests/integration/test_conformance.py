"""One conformance table for both model backends, over real HTTP on 127.0.0.1.

Every row is one behaviour: what an agent asks, what the server answers, and
what must come out of it. Each row runs on the native backend (OpenAI's
protocol over aiohttp) and on LiteLLM, forced per agent
(``Agent(backend=...)``), against ``MockOpenAIServer`` (or, for
what that server cannot send, a raw one below); the two outcomes must be
equal to each other and to the row's expectation. A difference between the
backends that is inherent is written in the row (``differs``), with its
reason, and only the fields it names may differ.

Sections: the request built (what the server received), the reply parsed
(text, usage, cost, finish reason), streaming events, tool calls, and every
error the server can produce (status, error class, retryable, message).

The rows ``MockOpenAIServer`` answers run once more on the native backend's
Responses API (``api="responses"``): what comes out must be what chat
completions gave; only the request's shape is the API's own.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
from pydantic import BaseModel

from swarmcore import Agent, AgentResult, ModelError, RetryPolicy, Swarm
from swarmcore.events import (
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    TextDelta,
    ToolCallDelta,
)
from swarmcore.llm import _price_data as price_data
from swarmcore.llm.choice import CHAT_ONLY_SETTINGS
from swarmcore.testing import Call, Fail, LiteLLMProxy, MockOpenAIServer, Reply
from tests.helpers import http_server

Step = Reply | Fail

BACKENDS = ("native", "litellm")
MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-local"
NO_RETRY = RetryPolicy(max_retries=0)
SYSTEM = (
    "You answer.\n\nEnd your answer with a one-line summary of it, on a line of its own, "
    "inside <summary></summary> tags."
)


def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: What to look up.
    """
    return f"{term} facts"


class Verdict(BaseModel):
    """A structured answer, for the ``response_format`` row."""

    score: int


# --- running one row on one backend ------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one run on one backend came to: compared field by field across backends."""

    request: Mapping[str, Any] = field(default_factory=dict[str, Any])
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    query: str = ""
    later: tuple[Mapping[str, Any], ...] = ()
    """The bodies of the run's later requests (after tool calls, retries)."""
    output: str | None = None
    usage: tuple[int, int, int, int] | None = None
    cost: float | None = None
    finish_reasons: tuple[str | None, ...] = ()
    replies: tuple[tuple[str | None, int, int], ...] = ()
    """Per model call: the model the reply named, the attempts it took, its tool calls."""
    deltas: tuple[str, ...] = ()
    tool_call_deltas: tuple[tuple[int, str, str, str], ...] = ()
    """Each streamed piece of a tool call's arguments: its call's index, id, name, and the piece."""
    events: tuple[str, ...] = ()
    tool_calls: tuple[tuple[str, str, str, str], ...] = ()
    error: str | None = None
    """``ModelError`` and what it said: class name, status, retryable, retry_after, message."""


def agent(backend: str, api_base: str, **kwargs: Any) -> Agent:
    options: dict[str, Any] = {"model": MODEL, "retry": NO_RETRY, **kwargs}
    return Agent("a", "You answer.", api_base=api_base, api_key=KEY, backend=backend, **options)


async def run(worker: Agent, *, stream: bool) -> tuple[AgentResult | None, list[object]]:
    """Run ``worker`` once, streaming text or not; its result and every event.

    ``Swarm.stream`` either way, for the events; ``text=True`` streams the model's replies.
    """
    seen: list[object] = []
    result: AgentResult | None = None
    async for event in Swarm(worker).stream("go", text=stream):
        seen.append(event)
        if isinstance(event, RunFinished) and event.result is not None:
            result = event.result["a"]
    return result, seen


def outcome_of(result: AgentResult | None, seen: list[object], error: ModelError | None) -> Outcome:
    deltas = tuple(e.text for e in seen if isinstance(e, TextDelta))
    tool_call_deltas = tuple(
        (e.index, e.call_id, e.name, e.arguments) for e in seen if isinstance(e, ToolCallDelta)
    )
    first = next((e for e in seen if isinstance(e, TextDelta)), None)
    kinds = tuple(
        type(e).__name__
        for e in seen
        if isinstance(e, ModelCallStarted | ModelCallFinished) or e is first
    )
    calls = [e for e in seen if isinstance(e, ModelCallFinished)]
    replies = tuple((e.response_model, e.attempts, e.tool_calls) for e in calls)
    if error is not None:
        said = (
            f"{type(error).__name__} status={error.status_code} retryable={error.retryable} "
            f"retry_after={error.retry_after}: {error}"
        )
        said = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", said)  # each run its own server
        return Outcome(
            deltas=deltas,
            tool_call_deltas=tool_call_deltas,
            events=kinds,
            replies=replies,
            error=said,
        )
    assert result is not None
    usage = result.token_usage
    return Outcome(
        output=result.output,
        usage=(
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            usage.reasoning_tokens,
        ),
        cost=result.cost,
        finish_reasons=tuple(c.finish_reason for c in result.llm_calls),
        replies=replies,
        deltas=deltas,
        tool_call_deltas=tool_call_deltas,
        events=kinds,
        tool_calls=tuple(
            (t.call_id, t.tool_name, t.arguments, t.result) for t in result.tool_calls
        ),
    )


# Headers each client adds of its own (its name, the openai SDK's x-stainless-*, the
# connection's): not what the agent asked to send.
_CLIENT_HEADERS = re.compile(r"^(user-agent|x-stainless-.*|connection|host|content-length)$")


def sent(
    body: Mapping[str, Any], headers: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    return dict(body), {k: v for k, v in headers.items() if not _CLIENT_HEADERS.match(k)}


# --- a server for what MockOpenAIServer cannot send ----------------------------------------


@dataclass
class Received:
    """What a raw server received: each request's path (with its query), body and headers."""

    paths: list[str] = field(default_factory=list[str])
    bodies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    headers: list[dict[str, str]] = field(default_factory=list[dict[str, str]])


@contextmanager
def raw_server(status: int, body: bytes, content_type: str) -> Iterator[tuple[str, Received]]:
    """Answers every POST with ``body`` as it is; yields its base URL and what it received."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.paths.append(self.path)
            received.bodies.append(json.loads(asked or b"{}"))
            received.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            """Quiet."""

    with http_server(Handler) as base:
        yield f"{base}/v1", received


def completion(message: dict[str, Any], finish_reason: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10},
        }
    ).encode()


def sent_to(model: str, system_role: str, **settings: Any) -> dict[str, Any]:
    """The body of a first request to ``model``, its system prompt sent with ``system_role``."""
    messages = [{"role": system_role, "content": SYSTEM}, {"role": "user", "content": "go"}]
    return {"model": model, "messages": messages, **settings}


def error_body(code: str | None) -> bytes:
    """An OpenAI ``error`` object, sent with a 200 in place of a reply (or of a stream's chunk)."""
    error = {"message": "The server is overloaded.", "type": "server_error", "code": code}
    return json.dumps({"error": error}).encode()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on: a connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One behaviour, asked of both backends alike.

    Args:
        script: What ``MockOpenAIServer`` answers, in order.
        agent: The agent's keyword arguments (``model_settings``, ``tools``...).
        stream: Whether the run streams (``Swarm.stream``) or not.
        expect: Fields of the ``Outcome`` and their expected values; a string
            for ``error`` is a regular expression it must match.
        raw: Instead of ``MockOpenAIServer``: a raw server's status, body and
            content type; or ``"refused"`` for a port nothing listens on.
        differs: Fields that differ between the backends by nature, with why.
        native: Where they differ, what the native backend's outcome holds.
        litellm: Where they differ, what LiteLLM's outcome holds.
    """

    script: tuple[Step, ...] = ()
    agent: Mapping[str, Any] = field(default_factory=dict[str, Any])
    stream: bool = False
    expect: Mapping[str, Any] = field(default_factory=dict[str, Any])
    raw: tuple[int, bytes, str] | str | None = None
    differs: Mapping[str, str] = field(default_factory=dict[str, str])
    native: Mapping[str, Any] = field(default_factory=dict[str, Any])
    litellm: Mapping[str, Any] = field(default_factory=dict[str, Any])


def error_row(
    step: Step, status: int | None, retryable: bool, message: str, retry_after: float | None = None
) -> Row:
    said = f"ModelError status={status} retryable={retryable} retry_after={retry_after}: "
    return Row(script=(step,), expect={"error": "^" + re.escape(said) + message})


ASKED = "Agent 'a': openai/gpt-4o-mini"
TRANSIENT = (
    " This is transient: retry later, raise the agent's retry, add fallback_models, or limit "
    "the model's requests with swarmcore.limit_model()."
)


def transient(kind: str, status: int, text: str, wait: str = "") -> str:
    said = f"{ASKED} failed on attempt 1 of 1 ({kind}, status {status}): {text}.{wait}{TRANSIENT}"
    return re.escape(said) + "$"


def said(text: str) -> str:
    return re.escape(f"{ASKED}{text}")


USAGE = Reply(
    text="Tea is a drink.",
    prompt_tokens=1200,
    completion_tokens=300,
    cached_tokens=1000,
    reasoning_tokens=200,
)
PRICE = price_data.cost(MODEL, 1200, 300, cached_tokens=1000, reasoning_tokens=200)
TOOLS = (
    Reply(
        tool_calls=[
            Call("lookup", {"term": "tea"}, id="c1"),
            Call("lookup", {"term": "oat"}, id="c2"),
        ]
    ),
    Reply(text="Tea and oats.", prompt_tokens=40, completion_tokens=6),
)
TOOL_CALLS = (
    ("c1", "lookup", '{"term": "tea"}', "tea facts"),
    ("c2", "lookup", '{"term": "oat"}', "oat facts"),
)
WHOLE = ("ModelCallStarted", "ModelCallFinished")
TEXT_THEN_DONE = ("ModelCallStarted", "TextDelta", "ModelCallFinished")
SETTINGS = {
    "temperature": 0.25,
    "seed": 7,
    "max_tokens": 50,
    "tool_choice": "auto",
    "extra_body": {"top_k": 3},
    "extra_headers": {"X-Trace-Id": "t-1"},
}

REQUESTS = {
    # The body as sent: the model without LiteLLM's prefix, the messages, the tools, every
    # setting (extra_body merged in), and none of swarmcore's own (backend, retries).
    "settings-and-tools": Row(
        script=(Reply(text="ok"),),
        agent={"model_settings": SETTINGS, "tools": [lookup]},
        expect={
            "request": {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "go"},
                ],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "lookup",
                            "description": "Look a term up.",
                            "parameters": {
                                "additionalProperties": False,
                                "properties": {
                                    "term": {"description": "What to look up.", "type": "string"}
                                },
                                "required": ["term"],
                                "type": "object",
                            },
                        },
                    }
                ],
                "temperature": 0.25,
                "seed": 7,
                "max_tokens": 50,
                "tool_choice": "auto",
                "top_k": 3,
            },
            "headers": {
                "accept": "application/json",
                "accept-encoding": "gzip, deflate",
                "authorization": f"Bearer {KEY}",
                "content-type": "application/json",
                "x-trace-id": "t-1",
            },
        },
    ),
    # OpenAI's reasoning models refuse max_tokens: both rename it.
    "reasoning-model-max-completion-tokens": Row(
        script=(Reply(text="ok"),),
        agent={"model": "openai/gpt-5", "model_settings": {"max_tokens": 50}},
        expect={
            "request": {
                "model": "gpt-5",
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "go"},
                ],
                "max_completion_tokens": 50,
            }
        },
    ),
    # LiteLLM demotes the system prompt of an o-series model its map does not mark
    # supports_system_messages (o3-mini, o3, o4-mini) to a user message; OpenAI takes it
    # as a system (developer) message, and the native backend sends it as one.
    "o-series-system-prompt": Row(
        script=(Reply(text="ok", prompt_tokens=10, completion_tokens=1),),
        agent={"model": "openai/o3-mini", "model_settings": {"max_tokens": 50}},
        expect={"output": "ok"},
        native={"request": sent_to("o3-mini", "system", max_completion_tokens=50)},
        litellm={"request": sent_to("o3-mini", "user", max_completion_tokens=50)},
        differs={
            "request": "LiteLLM's o-series transformation sends the system prompt as a user "
            "message where its map leaves supports_system_messages unset; native sends it as "
            "the system message OpenAI documents"
        },
    ),
    "response-format": Row(
        script=(Reply(text='{"score": 3}'),),
        agent={"output_type": Verdict},
        expect={
            "output": '{\n  "score": 3\n}',
            "request": {
                "model": "gpt-4o-mini",
                "messages": [
                    {
                        "role": "system",
                        "content": "You answer.\n\nAnswer with only a JSON value that matches "
                        "the Verdict schema.",
                    },
                    {"role": "user", "content": "go"},
                ],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "Verdict",
                        "schema": Verdict.model_json_schema(),
                        "strict": False,
                    },
                },
            },
        },
    ),
    "streamed-request": Row(
        script=(Reply(text="ok"),),
        stream=True,
        expect={
            "request": {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "go"},
                ],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        },
    ),
    # LiteLLM's acompletion has no query parameters for chat completions: it puts any
    # argument it does not know into the body, extra_query included.
    "extra-query": Row(
        raw=(200, completion({"role": "assistant", "content": "ok"}, "stop"), "application/json"),
        agent={"model_settings": {"extra_query": {"api-version": "7"}}},
        expect={"output": "ok"},
        differs={
            "request": "LiteLLM sends extra_query in the body (it has no query for chat calls)",
            "query": "the native backend sends extra_query as the URL's query",
        },
    ),
}

REPLIES = {
    # Text, usage with its cached and reasoning details, and the price of that usage.
    "usage-and-cost": Row(
        script=(USAGE,),
        expect={
            "output": "Tea is a drink.",
            "usage": (1200, 300, 1000, 200),
            "cost": PRICE,
            "finish_reasons": ("stop",),
        },
    ),
    "usage-and-cost-streamed": Row(
        script=(USAGE,),
        stream=True,
        expect={
            "output": "Tea is a drink.",
            "usage": (1200, 300, 1000, 200),
            "cost": PRICE,
            "finish_reasons": ("stop",),
            "deltas": ("Tea is a", " drink."),
            "events": TEXT_THEN_DONE,
        },
    ),
    # The model the reply names (a dated snapshot) is kept beside the one asked for.
    "dated-response-model": Row(
        script=(Reply(text="ok", model="gpt-4o-mini-2024-07-18"),),
        expect={"replies": (("gpt-4o-mini-2024-07-18", 1, 0),)},
    ),
    "dated-response-model-streamed": Row(
        script=(Reply(text="ok", model="gpt-4o-mini-2024-07-18"),),
        stream=True,
        expect={"replies": (("gpt-4o-mini-2024-07-18", 1, 0),), "deltas": ("ok",)},
    ),
    # A 429 asking for no wait, then the answer: one call of two attempts.
    "retried-after-429": Row(
        script=(Fail(429, "Slow down.", headers={"Retry-After": "0"}), Reply(text="ok")),
        agent={"retry": RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.02, jitter=0)},
        expect={"output": "ok", "replies": (("gpt-4o-mini", 2, 0),)},
    ),
    # A gateway's reported cost wins over the price map, for a model the map does not know.
    "gateway-cost": Row(
        script=(LiteLLMProxy.reply("ok", cost=0.00055, prompt_tokens=10, completion_tokens=2),),
        agent={"model": "openai/team-model"},
        expect={"output": "ok", "cost": 0.00055, "usage": (10, 2, 0, 0)},
    ),
    "gateway-cost-streamed": Row(
        script=(LiteLLMProxy.reply("ok", cost=0.00055, prompt_tokens=10, completion_tokens=2),),
        agent={"model": "openai/team-model"},
        stream=True,
        expect={"output": "ok", "cost": 0.00055, "usage": (10, 2, 0, 0), "deltas": ("ok",)},
    ),
    # A server that ignores "stream" and answers JSON: the native backend reads the reply it
    # is (published whole); LiteLLM reads a stream's answer only as events, finds none, and
    # reports a malformed reply (retryable).
    "stream-ignored": Row(
        raw=(200, completion({"role": "assistant", "content": "Tea."}, "stop"), "application/json"),
        stream=True,
        native={"output": "Tea.", "deltas": ("Tea.",), "usage": (10, 0, 0, 0)},
        litellm={
            "error": re.escape("ModelError status=None retryable=True retry_after=None: ")
            + said(" answered with a malformed reply (the reply to a streaming request carried")
        },
        differs={
            name: "LiteLLM reads the answer to a streaming request only as server-sent events"
            for name in (
                "output",
                "usage",
                "cost",
                "finish_reasons",
                "replies",
                "deltas",
                "events",
                "error",
            )
        },
    ),
    "unpriced": Row(
        script=(Reply(text="ok", prompt_tokens=10, completion_tokens=2),),
        agent={"model": "openai/team-model"},
        expect={"output": "ok", "cost": None, "usage": (10, 2, 0, 0)},
    ),
}

TOOL_ROWS = {
    # Arguments that are not JSON, and a tool nobody offered: each answered to the model as
    # an error, which it then corrects.
    "bad-arguments-and-unknown-tool": Row(
        script=(
            Reply(tool_calls=[Call("lookup", "{not json", id="c1"), Call("search", {}, id="c2")]),
            Reply(text="Sorry."),
        ),
        agent={"tools": [lookup]},
        expect={"output": "Sorry.", "finish_reasons": ("tool_calls", "stop")},
    ),
    # Text and a call in one reply, streamed: the text is published, the call run.
    "text-and-tool-call-streamed": Row(
        script=(
            Reply(text="Looking tea up.", tool_calls=[Call("lookup", {"term": "tea"}, id="c1")]),
            Reply(text="Tea."),
        ),
        agent={"tools": [lookup]},
        stream=True,
        expect={
            "output": "Tea.",
            "tool_calls": (("c1", "lookup", '{"term": "tea"}', "tea facts"),),
            "deltas": ("Looking ", "tea up.", "Tea."),
            "tool_call_deltas": ((0, "c1", "lookup", '{"term":'), (0, "c1", "lookup", ' "tea"}')),
            "replies": (("gpt-4o-mini", 1, 1), ("gpt-4o-mini", 1, 0)),
        },
    ),
    # Two calls in one reply (parallel), run and answered in order, then the final text.
    "parallel-tool-calls": Row(
        script=TOOLS,
        agent={"tools": [lookup]},
        expect={
            "output": "Tea and oats.",
            "tool_calls": TOOL_CALLS,
            "finish_reasons": ("tool_calls", "stop"),
        },
    ),
    # The same, streamed: each call's arguments arrive in pieces, after its name; each
    # piece is published naming its call.
    "parallel-tool-calls-streamed": Row(
        script=TOOLS,
        agent={"tools": [lookup]},
        stream=True,
        expect={
            "output": "Tea and oats.",
            "tool_calls": TOOL_CALLS,
            "finish_reasons": ("tool_calls", "stop"),
            "deltas": ("Tea and ", "oats."),
            "tool_call_deltas": (
                (0, "c1", "lookup", '{"term":'),
                (0, "c1", "lookup", ' "tea"}'),
                (1, "c2", "lookup", '{"term":'),
                (1, "c2", "lookup", ' "oat"}'),
            ),
            "events": (*WHOLE, *TEXT_THEN_DONE),
        },
    ),
}

ERRORS = {
    "400": error_row(
        Fail(400, "Invalid value for 'seed'."),
        400,
        False,
        said(" rejected the request (400): Invalid value for 'seed'. Check the agent's model")
        + " settings and tools\\.$",
    ),
    "401": error_row(
        Fail(401, "Incorrect API key provided."),
        401,
        False,
        said(" rejected the API key (401). Check the key passed"),
    ),
    "403": error_row(
        Fail(403, "Not allowed."),
        403,
        False,
        said(" denied permission (403): Not allowed. Check that the key may use this model.") + "$",
    ),
    "404": error_row(
        Fail(404, "The model does not exist."),
        404,
        False,
        said(" was not found (404): The model does not exist. Check the model name"),
    ),
    # LiteLLM calls any error whose text says "Request timed out" a Timeout, with status 408
    # whatever the status: both read the status the server sent.
    "408": error_row(
        Fail(408, "Request timed out."),
        408,
        True,
        transient("APIError", 408, "Request timed out"),
    ),
    "409": error_row(
        Fail(409, "Conflict with another request."),
        409,
        False,
        said(" failed (ConflictError, status 409): Conflict with another request") + "$",
    ),
    "413": error_row(
        Fail(413, "Request entity too large."),
        413,
        False,
        said(" failed (APIError, status 413): Request entity too large") + "$",
    ),
    "422": error_row(
        Fail(422, "Unprocessable entity."),
        422,
        False,
        said(" rejected the request (422): Unprocessable entity. Check the agent's"),
    ),
    "429-retry-after": error_row(
        Fail(429, "Slow down.", headers={"Retry-After": "30"}),
        429,
        True,
        transient("RateLimitError", 429, "Slow down", " The provider asked to wait 30s."),
        retry_after=30.0,
    ),
    "429-retry-after-ms": error_row(
        Fail(429, "Slow down.", headers={"retry-after-ms": "1500"}),
        429,
        True,
        transient("RateLimitError", 429, "Slow down", " The provider asked to wait 1.5s."),
        retry_after=1.5,
    ),
    "429-litellm-proxy": error_row(
        LiteLLMProxy.rate_limited(),
        429,
        True,
        said(
            " failed on attempt 1 of 1 (RateLimitError, status 429): litellm.RateLimitError: "
            "this is a mock rate limit error."
        ),
    ),
    "invalid-model-litellm-proxy": error_row(
        LiteLLMProxy.invalid_model("gpt-4o-mini"),
        400,
        False,
        said(" : model not found on this endpoint (400)").replace(re.escape(" :"), ":"),
    ),
    "no-connected-db-litellm-proxy": error_row(
        LiteLLMProxy.no_connected_db(),
        400,
        False,
        said(" rejected the API key (400: 'No connected db.'"),
    ),
    "500": error_row(Fail(500, "Boom."), 500, True, transient("InternalServerError", 500, "Boom")),
    "502": error_row(
        Fail(502, "Bad gateway."), 502, True, transient("InternalServerError", 502, "Bad gateway")
    ),
    "503": error_row(
        Fail(503, "Overloaded."), 503, True, transient("InternalServerError", 503, "Overloaded")
    ),
    "504": error_row(
        Fail(504, "Gateway timeout."),
        504,
        True,
        transient("InternalServerError", 504, "Gateway timeout"),
    ),
    "504-request-timed-out": error_row(
        Fail(504, "Request timed out."),
        504,
        True,
        transient("InternalServerError", 504, "Request timed out"),
    ),
    "context-window": error_row(
        Fail(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. (context_length_exceeded)",
        ),
        400,
        False,
        said(" rejected the prompt as longer than its context window (400). Shorten"),
    ),
    "context-window-litellm-proxy": error_row(
        LiteLLMProxy.context_window_exceeded(),
        400,
        False,
        said(" rejected the prompt as longer than its context window (400). Shorten"),
    ),
    "content-policy": error_row(
        Fail(400, "Your request was rejected by our safety system. (content_policy_violation)"),
        400,
        False,
        said(
            " refused the request under its content policy (400): Your request was rejected "
            "by our safety system. (content_policy_violation)"
        )
        + "$",
    ),
    "content-filter-finish": Row(
        raw=(
            200,
            completion({"role": "assistant", "content": None}, "content_filter"),
            "application/json",
        ),
        expect={
            "error": re.escape("ModelError status=None retryable=False retry_after=None: ")
            + said(
                " answered with neither text nor tool calls (attempt 1 of 1): its content "
                "filter stopped it"
            )
        },
    ),
    "empty-answer": Row(
        raw=(200, completion({"role": "assistant", "content": ""}, "stop"), "application/json"),
        expect={
            "error": re.escape("ModelError status=None retryable=True retry_after=None: ")
            + said(" answered with neither text nor tool calls (finish_reason 'stop'; attempt 1")
        },
    ),
    "empty-answer-at-token-limit": Row(
        raw=(200, completion({"role": "assistant", "content": None}, "length"), "application/json"),
        expect={
            "error": re.escape("ModelError status=None retryable=False retry_after=None: ")
            + said(" answered with neither text nor tool calls (attempt 1 of 1): it stopped at")
        },
    ),
    "malformed-json": Row(
        raw=(200, b'{"id": "chatcmpl-1", "choices": [', "application/json"),
        expect={
            "error": re.escape("ModelError status=None retryable=True retry_after=None: ")
            + said(" answered with a malformed reply (")
            + r".*is not JSON \(Expecting value: line 1 column 34 \(char 33\)\); attempt 1 of 1\)"
            + re.escape(". This may be transient")
        },
        differs={
            "error": "what was malformed is named as each client found it: the native backend "
            "knows it read the reply's body ('the reply's body is not JSON'), LiteLLM's error "
            "only that something was not ('it is not JSON')"
        },
    ),
    **{
        f"error-in-reply-{how}-code-{code}": Row(
            raw=(200, body, kind),
            stream=how == "streamed",
            expect={"error": expected},
        )
        for code, expected in (
            # A code that is an HTTP status is read as the status (LiteLLM's reading).
            (
                "503",
                "^"
                + re.escape("ModelError status=503 retryable=True retry_after=None: ")
                + transient("InternalServerError", 503, "The server is overloaded"),
            ),
            # Any other code (OpenAI's are words, or null): the server failed mid-answer.
            *(
                (
                    other,
                    "^"
                    + re.escape("ModelError status=None retryable=True retry_after=None: ")
                    + said(
                        " sent an error in place of its reply (attempt 1 of 1): The server is "
                        "overloaded. This may be transient: retries and fallback_models apply."
                    )
                    + "$",
                )
                for other in (None, "server_error")
            ),
        )
        for how, body, kind in (
            ("whole", error_body(code), "application/json"),
            ("streamed", b"data: " + error_body(code) + b"\n\n", "text/event-stream"),
        )
    },
    "connection-refused": Row(
        raw="refused",
        expect={
            "error": re.escape("ModelError status=None retryable=True retry_after=None: ")
            + said(" could not connect to http://127.0.0.1:PORT/v1")
            + r".* \(.*attempt 1 of 1\)\. Is the server running"
        },
    ),
    "timeout": Row(
        script=(Reply(text="late", delay=5),),
        agent={"call_timeout": 0.5},
        expect={
            "error": re.escape("ModelError status=None retryable=True retry_after=None: ")
            + said(
                " did not answer within 0.5s (attempt 1 of 1); raise the agent's call_timeout "
                "or retry."
            )
            + "$"
        },
    ),
}

TABLE = {
    **{f"request-{k}": v for k, v in REQUESTS.items()},
    **{f"reply-{k}": v for k, v in REPLIES.items()},
    **{f"tools-{k}": v for k, v in TOOL_ROWS.items()},
    **{f"error-{k}": v for k, v in ERRORS.items()},
}


@dataclass
class Serving:
    """Where a row's requests go, and what the server received (shared by both backends)."""

    url: str
    bodies: list[dict[str, Any]]
    headers: list[dict[str, str]]
    paths: list[str]
    add: Callable[[], None] = lambda: None
    """Queue the row's script again, for the next backend's run."""


@contextmanager
def serving(row: Row) -> Iterator[Serving]:
    """The server ``row`` asks for: ``MockOpenAIServer``, a raw one, or a closed port."""
    if row.raw == "refused":
        yield Serving(f"http://127.0.0.1:{closed_port()}/v1", [], [], [])
    elif isinstance(row.raw, tuple):
        with raw_server(*row.raw) as (url, received):
            yield Serving(url, received.bodies, received.headers, received.paths)
    else:
        with MockOpenAIServer() as server:
            yield Serving(
                server.url,
                server.raw_bodies,
                server.headers,
                [],
                add=lambda: server.add(*row.script),
            )


async def outcome(row: Row, backend: str, server: Serving) -> Outcome:
    """Run ``row`` on ``backend``: what the server received and what came out."""
    server.add()
    start = len(server.bodies)
    found = await attempt(row, agent(backend, server.url, **row.agent))
    asked = [sent(b, h) for b, h in zip(server.bodies[start:], server.headers[start:], strict=True)]
    if not asked:
        return found
    query = urlsplit(server.paths[start]).query if server.paths else ""
    return replace(
        found,
        request=asked[0][0],
        headers=asked[0][1],
        query=query,
        later=tuple(body for body, _ in asked[1:]),
    )


async def attempt(row: Row, worker: Agent) -> Outcome:
    try:
        result, seen = await run(worker, stream=row.stream)
    except ModelError as exc:
        return outcome_of(None, [], exc)
    return outcome_of(result, seen, None)


def matches(name: str, found: object, expected: object) -> bool:
    if name == "error" and isinstance(expected, str) and isinstance(found, str):
        return re.search(expected, found) is not None
    if name == "cost" and isinstance(expected, float) and isinstance(found, float):
        return found == pytest.approx(expected, rel=1e-9)
    if name == "headers" and isinstance(expected, dict) and isinstance(found, dict):
        asked = cast("dict[str, str]", expected)
        return all(cast("dict[str, str]", found).get(k) == v for k, v in asked.items())
    return found == expected


@pytest.mark.parametrize("row", TABLE.values(), ids=TABLE.keys())
async def test_both_backends_behave_alike(row: Row) -> None:
    with serving(row) as server:
        native, litellm = [await outcome(row, backend, server) for backend in BACKENDS]
    for backend, found, own in (("native", native, row.native), ("litellm", litellm, row.litellm)):
        for name, expected in {**row.expect, **own}.items():
            value = getattr(found, name)
            assert matches(name, value, expected), f"{backend}: {name} = {value!r}"
    if row.differs:  # a difference fixed since: the row should say so no more
        assert any(getattr(native, n) != getattr(litellm, n) for n in row.differs), row.differs
    for name in Outcome.__dataclass_fields__:
        if name in row.differs:
            continue
        elif name == "cost" and native.cost is not None and litellm.cost is not None:
            assert native.cost == pytest.approx(litellm.cost, rel=1e-9)
        else:
            assert getattr(native, name) == getattr(litellm, name), name


# --- the same rows on the Responses API --------------------------------------------------

# What a request carries is the API's own shape (tests/unit/test_responses_api.py checks
# it); everything that comes out of the run must be what chat completions gave.
_SHAPE = frozenset({"request", "headers", "query", "later"})
SERVED = {name: row for name, row in TABLE.items() if row.raw is None}
"""The rows MockOpenAIServer answers: it serves the Responses API from the same script."""


def _for_responses(options: Mapping[str, Any]) -> dict[str, Any]:
    """A row's agent options without the settings only chat completions take (``seed``...):
    an agent choosing the Responses API beside one is refused when it is built."""
    settings: Mapping[str, Any] = options.get("model_settings", {})
    kept = {k: v for k, v in settings.items() if k not in CHAT_ONLY_SETTINGS}
    return {**options, "model_settings": kept} if settings else dict(options)


@pytest.mark.parametrize("row", SERVED.values(), ids=SERVED.keys())
async def test_the_responses_api_behaves_as_chat_completions(row: Row) -> None:
    with serving(row) as server:
        chat = await outcome(row, "native", server)
        server.add()
        options = _for_responses(row.agent)
        responses = await attempt(row, agent("native", server.url, api="responses", **options))
    # A reply that states no token counts is counted from the request's text, whose shape
    # is the API's: its usage (and so its cost) is the mock server's estimate, not a reading.
    stated = all(
        not isinstance(step, Reply) or step.prompt_tokens is not None for step in row.script
    )
    for name in Outcome.__dataclass_fields__:
        if name in _SHAPE or (name in ("usage", "cost") and not stated):
            continue
        if name == "cost" and chat.cost is not None and responses.cost is not None:
            assert responses.cost == pytest.approx(chat.cost, rel=1e-9)
        else:
            assert getattr(responses, name) == getattr(chat, name), name
