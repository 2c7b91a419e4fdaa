"""Hostile model replies: what an OpenAI-compatible server answers that is not a chat completion.

Each row is a server's answer to an agent's first request: a stream that is no
stream (an HTML page, an empty body, chunks without choices, a stream cut
before its ``finish_reason``), a body or chunk that is malformed (bad JSON, a
list, bytes that are not UTF-8, a number for text, JSON nested too deeply),
an empty answer, or token usage no reply can have (negative, fractional, a
string, absurd). On both backends it must be a retryable ``ModelError`` that
says what was wrong, never a raw Python exception and never a success: the
next attempt (or the fallback model) gets the server's proper answer, which
is the one recorded; without another attempt, the run fails and the store
says so.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from swarmcore import Agent, ModelError, RetryPolicy, Swarm
from swarmcore.events import ModelFallback, RetryScheduled, TextDelta
from swarmcore.results import TokenUsage
from swarmcore.store import open_store
from tests.helpers import http_server

pytestmark = [
    # Once per model backend: the native OpenAI one and LiteLLM must behave the same.
    pytest.mark.usefixtures("each_backend"),
    # LiteLLM warns before it raises on a field of the wrong type; a warning, as in use.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

GOOD = "the proper answer"
KEY = "sk-hostile-replies-0123456789abcdefXYZ"
GOOD_USAGE = {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}
ONE_RETRY = RetryPolicy(max_retries=1, initial_delay=0, max_delay=0, jitter=0)
NO_RETRY = RetryPolicy(max_retries=0)


@dataclass(frozen=True)
class Hostile:
    """One bad answer: its bytes, its Content-Type, what each backend must say of it."""

    body: bytes
    says: str
    """A pattern the error must match on the native backend."""
    litellm_says: str | None = None
    """The pattern on LiteLLM, which sees less of the reply; ``says`` when None."""
    content_type: str = "application/json"
    streamed: bool = False
    """Whether it answers a streaming request."""
    status: int = 200

    def pattern(self, backend: str) -> str:
        return self.litellm_says if backend == "litellm" and self.litellm_says else self.says


# --- proper and hostile bodies --------------------------------------------------------------


def completion(content: Any = GOOD, usage: Any = GOOD_USAGE, finish: str = "stop") -> bytes:
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": finish}
    body = {"id": "c1", "object": "chat.completion", "choices": [choice], "usage": usage}
    return json.dumps(body).encode()


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def calling(tool_calls: object) -> bytes:
    """A completion whose message carries ``tool_calls`` as given."""
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return json.dumps({"object": "chat.completion", "choices": [choice]}).encode()


def events(*parts: object, done: bool = True) -> bytes:
    """Server-sent events: each part as one event's data (JSON unless already text)."""
    lines = [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in parts]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def stream(text: str = GOOD, usage: Any = GOOD_USAGE) -> bytes:
    return events(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": text}),
        chunk({}, "stop"),
        {"object": "chat.completion.chunk", "choices": [], "usage": usage},
    )


DEEP = "[" * 100_000 + "]" * 100_000
SSE = "text/event-stream"
MALFORMED = r"answered with a malformed reply \(.*"
EMPTY = r"answered with neither text nor tool calls \(finish_reason 'stop'"
NO_CALLS = r"answered with neither text nor tool calls \(finish_reason 'tool_calls'"
LITELLM_UNREAD = MALFORMED + r"LiteLLM could not read it as a chat completion"
NOT_A_STREAM = r"not a stream"
LITELLM_NOT_A_STREAM = r"carried no chat-completion chunk and no finish_reason: not a stream"


def rows(streamed: bool, *params: Any) -> list[Any]:
    return [pytest.param(replace(p.values[0], streamed=streamed), id=p.id) for p in params]


STREAMED = rows(
    True,
    pytest.param(
        Hostile(
            b"<html><body>Sign in to the gateway</body></html>",
            MALFORMED + r"the reply to a "
            r"streaming request carries no server-sent events \(Content-Type 'text/html'\)",
            LITELLM_NOT_A_STREAM,
            content_type="text/html",
        ),
        id="html-page-200",
    ),
    pytest.param(
        Hostile(
            b"",
            MALFORMED + r"carries no server-sent events \(Content-Type 'text/event-stream'\)",
            LITELLM_NOT_A_STREAM,
            content_type=SSE,
        ),
        id="empty-body",
    ),
    pytest.param(
        Hostile(
            events({"id": "x", "object": "something.else"}, {"data": [1, 2]}),
            MALFORMED + r"the stream's 2 chunks carry no choices: not a chat-completion stream",
            LITELLM_NOT_A_STREAM,
            content_type=SSE,
        ),
        id="chunks-without-choices",
    ),
    pytest.param(
        Hostile(
            events(
                chunk({"content": "The first half of"}),
                chunk({"content": " an answer"}),
                done=False,
            ),
            MALFORMED
            + r"the stream ended after 2 chunks without a finish_reason: it was cut short",
            MALFORMED + r"the stream ended after 2 text chunks without a finish_reason",
            content_type=SSE,
        ),
        id="cut-before-finish-and-done",
    ),
    pytest.param(
        Hostile(
            events(chunk({"content": "The first half of"})),
            MALFORMED + r"the stream ended after 1 chunk without a finish_reason",
            MALFORMED + r"the stream ended after 1 text chunk without a finish_reason",
            content_type=SSE,
        ),
        id="done-without-finish-reason",
    ),
    pytest.param(
        Hostile(
            events(chunk({"role": "assistant", "content": ""}), chunk({}, "stop")),
            EMPTY,
            content_type=SSE,
        ),
        id="empty-answer",
    ),
    pytest.param(
        Hostile(
            events(chunk({"content": "Hel"}), "{not json"),
            MALFORMED + r"a stream event's data is not JSON \(Expecting property name",
            MALFORMED + r"it is not JSON \(Expecting property name",
            content_type=SSE,
        ),
        id="bad-json-chunk",
    ),
    pytest.param(
        Hostile(
            events([1, 2]),
            MALFORMED + r"stream chunk 1 is a list of 2 items, not a JSON object",
            MALFORMED + r"not a chat completion \(AttributeError: 'list' object",
            content_type=SSE,
        ),
        id="list-chunk",
    ),
    pytest.param(
        Hostile(
            b'data: {"choices": [\xff\xfe]}\n\n',
            MALFORMED + r"not UTF-8 text \(byte 0xff at",
            content_type=SSE,
        ),
        id="invalid-utf8-chunk",
    ),
    pytest.param(
        Hostile(
            events(chunk({"content": 5}), chunk({}, "stop")),
            MALFORMED + r"stream chunk 1's delta\.content is a number \(5\), not text",
            EMPTY,
            content_type=SSE,
        ),  # LiteLLM drops the number: nothing is left
        id="number-as-content",
    ),
    pytest.param(
        Hostile(
            events(DEEP),
            MALFORMED + r"a stream event's data is JSON nested too deeply",
            MALFORMED + r"JSON nested too deeply",
            content_type=SSE,
        ),
        id="nested-100000-deep",
    ),
    pytest.param(
        Hostile(
            stream(usage={"prompt_tokens": -9_940_000, "completion_tokens": 5}),
            MALFORMED + r"usage\.prompt_tokens is -9940000, not a token count",
            content_type=SSE,
        ),
        id="negative-usage",
    ),
    pytest.param(
        Hostile(
            events(
                chunk({"tool_calls": [{"index": "x", "id": "c1", "function": {"name": "f"}}]}),
                chunk({}, "tool_calls"),
            ),
            MALFORMED + r"stream chunk 1 has a tool call whose index is text of 1 character",
            NO_CALLS,  # LiteLLM drops the call
            content_type=SSE,
        ),
        id="tool-call-index-is-text",
    ),
    pytest.param(
        Hostile(
            events(
                chunk({"tool_calls": [{"index": 0, "id": "c1", "function": "lookup"}]}),
                chunk({}, "tool_calls"),
            ),
            MALFORMED + r"stream chunk 1's tool call 0 function is text of 6 characters, not a "
            r"JSON object",
            NO_CALLS,
            content_type=SSE,
        ),
        id="tool-call-function-is-text",
    ),
)

WHOLE = rows(
    False,
    pytest.param(
        Hostile(
            b"{not json",
            MALFORMED + r"the reply's body is not JSON \(Expecting property",
            MALFORMED + r"it is not JSON \(Expecting property",
        ),
        id="bad-json",
    ),
    pytest.param(
        Hostile(
            b"[1, 2]",
            MALFORMED + r"the reply is a list of 2 items, not a JSON object",
            MALFORMED + r"LiteLLM could not read it as a chat completion; it received \[1, 2\]",
        ),
        id="a-list",
    ),
    pytest.param(
        Hostile(
            b"<html>Bad gateway</html>",
            MALFORMED + r"the reply's body is not JSON",
            MALFORMED + r"LiteLLM could not read it as a chat completion; it received "
            r"'<html>Bad gateway</html>'",
            content_type="text/html",
        ),
        id="html-page-200",
    ),
    pytest.param(
        Hostile(
            # The key where a cut at the message's limit would fall, were it cut first.
            b"<html>" + b"x" * 150 + KEY.encode() + b" is not allowed</html>",
            MALFORMED + r"the reply's body is not JSON",
            MALFORMED + r"LiteLLM could not read it as a chat completion; it received '<html>x+",
            content_type="text/html",
        ),
        id="html-page-quoting-the-key",
    ),
    pytest.param(
        Hostile(
            b"",
            MALFORMED + r"the reply's body is not JSON \(Expecting value",
            MALFORMED + r"it is not JSON \(Expecting value",
        ),
        id="empty-body",
    ),
    pytest.param(
        Hostile(
            completion().replace(b"proper", b"\xff\xfe"),
            MALFORMED + r"not UTF-8 text \(byte 0xff at",
        ),
        id="invalid-utf8",
    ),
    pytest.param(
        Hostile(
            completion(content=5),
            MALFORMED + r"choices\[0\]\.message\.content is a number \(5\), not text",
            MALFORMED + r"Message\.content: Input should be a valid string",
        ),
        id="number-as-content",
    ),
    pytest.param(
        Hostile(DEEP.encode(), MALFORMED + r"JSON nested too deeply to read"),
        id="nested-100000-deep",
    ),
    pytest.param(
        Hostile(
            b'{"object": "chat.completion", "choices": []}',
            MALFORMED + r"the reply has no choices: not a chat completion",
        ),
        id="no-choices",
    ),
    pytest.param(Hostile(completion(content=None), EMPTY), id="null-content"),
    pytest.param(Hostile(completion(content=" \n "), EMPTY), id="whitespace-content"),
    pytest.param(
        Hostile(
            completion(usage={"prompt_tokens": -9_940_000, "completion_tokens": 5}),
            MALFORMED + r"usage\.prompt_tokens is -9940000, not a token count",
        ),
        id="negative-usage",
    ),
    pytest.param(
        Hostile(
            completion(usage={"prompt_tokens": 12, "completion_tokens": 1.5}),
            MALFORMED + r"usage\.completion_tokens is 1\.5, not a token count",
            MALFORMED + r"Usage\.completion_tokens: Input should be a valid integer",
        ),
        id="fractional-usage",
    ),
    pytest.param(
        Hostile(
            completion(usage={"prompt_tokens": "lots", "completion_tokens": 1}),
            MALFORMED + r"usage\.prompt_tokens is a str, not a token count",
            MALFORMED + r"Usage\.prompt_tokens: Input should be a valid integer",
        ),
        id="string-usage",
    ),
    pytest.param(
        Hostile(
            completion(usage={"prompt_tokens": 10**15, "completion_tokens": 1}),
            MALFORMED + r"usage\.prompt_tokens is 1000000000000000, not a token count",
        ),
        id="absurd-usage",
    ),
    pytest.param(
        Hostile(
            calling("lookup"),
            MALFORMED
            + r"choices\[0\]\.message\.tool_calls is text of 6 characters, not a JSON array",
            LITELLM_UNREAD,
        ),
        id="tool-calls-not-a-list",
    ),
    pytest.param(
        Hostile(
            calling([{"id": "c1", "type": "function", "function": "lookup"}]),
            MALFORMED + r"tool_calls\[0\]\.function is text of 6 characters, not a JSON object",
            LITELLM_UNREAD,
        ),
        id="tool-call-function-is-text",
    ),
)


# --- a server that answers badly once, then properly -----------------------------------------


@dataclass
class Server:
    url: str
    models: list[str]
    """The model each request named, in order."""


@contextmanager
def serving(hostile: Hostile, *, bad_for: str | None = None) -> Iterator[Server]:
    """A server whose first answer is ``hostile`` (or every answer to model ``bad_for``)."""
    server = Server("", [])
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            with lock:
                server.models.append(body["model"])
                first = len(server.models) == 1
            bad = body["model"] == bad_for if bad_for is not None else first
            if bad:
                self._send(hostile.body, hostile.content_type, hostile.status)
            elif body.get("stream"):
                self._send(stream(), SSE)
            else:
                self._send(completion(), "application/json")

        def _send(self, data: bytes, kind: str, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    with http_server(Handler) as base:
        server.url = f"{base}/v1"
        yield server


def agent(server: Server, **kwargs: Any) -> Agent:
    return Agent("a", "Answer.", model="openai/primary", api_base=server.url, api_key=KEY, **kwargs)


async def run(swarm: Swarm, *, streamed: bool) -> tuple[Any, list[str], list[str]]:
    """The run's result, the errors its retries and fallbacks reported, and its text deltas."""
    result: Any = None
    errors: list[str] = []
    deltas: list[str] = []
    async for event in swarm.stream("go", text=streamed):
        if isinstance(event, RetryScheduled | ModelFallback):
            errors.append(event.error)
        elif isinstance(event, TextDelta):
            deltas.append(event.text)
        result = getattr(event, "result", result)
    return result, errors, deltas


def check_named(error: str, hostile: Hostile, backend: str) -> None:
    assert re.search(hostile.pattern(backend), error), error
    assert KEY[:12] not in error  # redacted whole, before anything is cut
    assert "Traceback" not in error
    assert len(error) < 600  # a sentence, not a dump of the reply


# --- the table, on both backends --------------------------------------------------------------


@pytest.mark.parametrize("hostile", STREAMED)
async def test_a_hostile_streamed_reply_is_retried_and_never_taken(
    hostile: Hostile, each_backend: str
) -> None:
    with serving(hostile) as server:
        result, errors, deltas = await run(Swarm(agent(server, retry=ONE_RETRY)), streamed=True)
    answer = result["a"]
    assert answer.output == GOOD
    assert len(errors) == 1
    check_named(errors[0], hostile, each_backend)
    assert [c.attempts for c in answer.llm_calls] == [2]  # one record: the proper answer's
    assert answer.llm_calls[0].token_usage == TokenUsage(prompt_tokens=30, completion_tokens=4)
    assert deltas[-1] == GOOD
    assert len(server.models) == 2


@pytest.mark.parametrize("hostile", WHOLE)
async def test_a_hostile_reply_is_retried_and_never_taken(
    hostile: Hostile, each_backend: str
) -> None:
    with serving(hostile) as server:
        result, errors, _ = await run(Swarm(agent(server, retry=ONE_RETRY)), streamed=False)
    answer = result["a"]
    assert answer.output == GOOD
    assert len(errors) == 1
    check_named(errors[0], hostile, each_backend)
    assert [c.attempts for c in answer.llm_calls] == [2]
    assert answer.llm_calls[0].token_usage == TokenUsage(prompt_tokens=30, completion_tokens=4)


@pytest.mark.parametrize("hostile", [*STREAMED, *WHOLE])
async def test_a_hostile_reply_falls_back_to_the_next_model(
    hostile: Hostile, each_backend: str
) -> None:
    """Retryable, so the fallback model is tried once the model's retries are spent."""
    with serving(hostile, bad_for="primary") as server:
        swarm = Swarm(agent(server, retry=NO_RETRY, fallback_models=["openai/backup"]))
        result, errors, _ = await run(swarm, streamed=hostile.streamed)
    assert result["a"].output == GOOD
    assert result["a"].model == "openai/backup"
    assert server.models == ["primary", "backup"]
    check_named(errors[0], hostile, each_backend)


@pytest.mark.parametrize("hostile", [*STREAMED, *WHOLE])
async def test_without_another_attempt_the_run_fails_and_is_stored_as_failed(
    hostile: Hostile, each_backend: str, tmp_path: Path
) -> None:
    store = tmp_path / "runs.db"
    with serving(hostile) as server:
        swarm = Swarm(agent(server, retry=NO_RETRY), store=store)
        with pytest.raises(ModelError) as caught:
            await run(swarm, streamed=hostile.streamed)
    error = caught.value
    assert error.retryable
    assert error.status_code is None  # the server answered 200: no status to blame
    assert error.__cause__ is None
    check_named(str(error), hostile, each_backend)
    assert len(server.models) == 1
    runs = open_store(store)
    try:
        (summary,) = runs.list_runs()
        stored = runs.get_run(summary.run_id)
    finally:
        runs.close()
    assert stored is not None
    assert stored.status == "failed"
    assert stored.results == []
    assert stored.tokens == 0


# --- what a stream that is no stream may still be ---------------------------------------------


async def test_json_answering_a_streaming_request_is_read_as_the_reply_or_retried(
    each_backend: str,
) -> None:
    """A server that ignores ``"stream": true`` answers JSON: the native backend reads it.

    LiteLLM's stream reader sees no chunk in it, so there it is a retryable error like
    any reply that is not a stream, and the next attempt (streamed) is taken.
    """
    hostile = Hostile(completion(), "", LITELLM_NOT_A_STREAM, streamed=True)
    with serving(hostile) as server:
        result, errors, deltas = await run(Swarm(agent(server, retry=ONE_RETRY)), streamed=True)
    answer = result["a"]
    assert answer.output == GOOD
    assert deltas[-1] == GOOD  # published whole, as one delta
    if each_backend == "native":
        assert errors == []
        assert [c.attempts for c in answer.llm_calls] == [1]
        assert len(server.models) == 1
    else:
        check_named(errors[0], hostile, each_backend)
        assert len(server.models) == 2


@pytest.mark.parametrize(
    ("finish", "says"),
    [
        ("length", r"stopped at its token limit first: raise max_tokens"),
        ("content_filter", r"its content filter stopped it"),
    ],
    ids=["length", "content-filter"],
)
async def test_an_empty_answer_another_attempt_would_repeat_is_not_retried(
    finish: str, says: str
) -> None:
    hostile = Hostile(completion(content="", finish=finish), says)
    with serving(hostile) as server, pytest.raises(ModelError, match=says) as caught:
        await Swarm(agent(server, retry=ONE_RETRY)).run("go")
    assert not caught.value.retryable
    assert len(server.models) == 1


def test_token_usage_is_never_negative() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        TokenUsage(prompt_tokens=-9_940_000)


@pytest.mark.parametrize(
    "hostile",
    [
        pytest.param(Hostile(b"<html>Bad gateway</html>", "", status=502), id="html-502"),
        pytest.param(Hostile(b"{not json", "", status=503), id="bad-json-503"),
        pytest.param(Hostile(b"", "", status=500), id="empty-500"),
    ],
)
async def test_an_error_status_whose_body_is_malformed_is_the_status_s_error(
    hostile: Hostile,
) -> None:
    """A body that does not parse under an error status is not a malformed reply."""
    with serving(hostile) as server:
        _, errors, _ = await run(Swarm(agent(server, retry=ONE_RETRY)), streamed=False)
    assert len(errors) == 1
    assert f"(InternalServerError, status {hostile.status})" in errors[0]
    assert "malformed" not in errors[0]


async def test_negative_usage_never_hands_a_token_budget_back(each_backend: str) -> None:
    """An endpoint reporting -9,940,000 tokens cannot let the agents after it run for free."""
    hostile = Hostile(completion(usage={"prompt_tokens": -9_940_000, "completion_tokens": 5}), "")
    with serving(hostile, bad_for="other") as server:
        first = agent(server, retry=NO_RETRY)
        later = [
            Agent(name, "Answer.", model="openai/other", api_base=server.url, api_key=KEY, retry=0)
            for name in ("b", "c")
        ]
        swarm = Swarm(first >> later[0] >> later[1], max_tokens=100)
        with pytest.raises(ModelError, match=r"usage\.prompt_tokens is -9940000") as caught:
            await swarm.run("go")
    assert caught.value.agent_name == "b"
    assert caught.value.partial is not None
    assert list(caught.value.partial.context) == ["a"]
    assert caught.value.partial.token_usage.total_tokens == 34
    assert server.models == ["primary", "other"]  # c never ran
