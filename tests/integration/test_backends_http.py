"""Both model backends over real HTTP: what they send, what they stream, what they import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from swarmcore import Agent, ModelError, RetryPolicy, Swarm
from swarmcore.events import (
    ModelCallFinished,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from swarmcore.llm import _price_data as price_data
from swarmcore.testing import Call, Fail, MockOpenAIServer, Reply
from tests.helpers import http_server

pytestmark = pytest.mark.usefixtures("each_backend")


def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: What to look up.
    """
    return f"{term} facts"


async def test_streaming_publishes_text_and_tool_calls_with_usage(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(
        Reply(
            tool_calls=[Call("lookup", {"term": "tea"}, id="c1"), Call("lookup", {"term": "oat"})]
        ),
        Reply(text="Tea and oats, looked up.", prompt_tokens=40, completion_tokens=6),
    )
    agent = Agent("a", "You research.", tools=[lookup], **server.model_kwargs)
    deltas: list[str] = []
    finished: list[ModelCallFinished] = []
    last: RunFinished | None = None
    async for event in Swarm(agent).stream("go", text=True):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, ModelCallFinished):
            finished.append(event)
        elif isinstance(event, RunFinished):
            last = event
    assert last is not None
    assert last.result is not None
    result = last.result["a"]
    assert "".join(deltas) == "Tea and oats, looked up."
    assert len(deltas) > 1  # streamed in pieces, not as one
    assert [r.result for r in result.tool_calls] == ["tea facts", "oat facts"]
    assert result.llm_calls[1].token_usage.prompt_tokens == 40
    assert result.llm_calls[1].token_usage.completion_tokens == 6
    assert len(finished) == 2
    assert all(body["stream"] is True for body in server.raw_bodies)
    assert all(body["stream_options"] == {"include_usage": True} for body in server.raw_bodies)


PARALLEL = (
    Reply(
        tool_calls=[
            Call("lookup", {"term": "green tea"}, id="c1"),
            Call("lookup", {"term": "oat"}, id="c2"),
        ]
    ),
    Reply(text="Looked up."),
)


async def test_a_streamed_tool_call_publishes_its_arguments_in_pieces_before_it_starts(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(*PARALLEL)
    agent = Agent("a", "You research.", tools=[lookup], **server.model_kwargs)
    seen = [
        event
        async for event in Swarm(agent).stream("go", text=True)
        if isinstance(event, ToolCallDelta | ToolCallStarted)
    ]
    deltas = [e for e in seen if isinstance(e, ToolCallDelta)]
    started = [e for e in seen if isinstance(e, ToolCallStarted)]
    assert seen == [*deltas, *started]  # every piece before the calls start
    assert [(s.call_id, s.arguments) for s in started] == [
        ("c1", '{"term": "green tea"}'),
        ("c2", '{"term": "oat"}'),
    ]
    for index, call in enumerate(started):
        pieces = [d for d in deltas if d.index == index]
        assert len(pieces) > 1  # streamed in pieces, not whole
        assert {(d.agent_name, d.call_id, d.name) for d in pieces} == {
            ("a", call.call_id, "lookup")
        }
        assert "".join(d.arguments for d in pieces) == call.arguments


async def test_a_run_that_does_not_stream_publishes_no_tool_call_pieces(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(*PARALLEL)
    agent = Agent("a", "You research.", tools=[lookup], **server.model_kwargs)
    kinds = {type(event) async for event in Swarm(agent).stream("go")}
    assert ToolCallStarted in kinds
    assert ToolCallDelta not in kinds
    assert not any(body.get("stream") for body in server.raw_bodies)


async def test_settings_reach_the_endpoint_as_they_would_through_litellm(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(Reply(text="ok"))
    agent = Agent(
        "a",
        "x",
        model_settings={
            "temperature": 0.25,
            "seed": 7,
            "tool_choice": "none",
            "extra_headers": {"X-Trace-Id": "t-1"},
        },
        tools=[lookup],
        **server.model_kwargs,
    )
    await agent.run("go")
    body = server.raw_bodies[0]
    assert (body["temperature"], body["seed"], body["tool_choice"]) == (0.25, 7, "none")
    assert "backend" not in body
    assert "num_retries" not in body
    assert "max_retries" not in body
    assert server.headers[0]["x-trace-id"] == "t-1"


async def test_a_reasoning_model_gets_max_completion_tokens(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(Reply(text="ok"))
    kwargs = {**server.model_kwargs, "model": "openai/o3-mini"}
    await Agent("a", "x", model_settings={"max_tokens": 50}, **kwargs).run("go")
    body = server.raw_bodies[0]
    assert body["model"] == "o3-mini"
    assert body.get("max_completion_tokens") == 50
    assert "max_tokens" not in body


async def test_an_agent_may_pick_its_backend(mock_openai_server: MockOpenAIServer) -> None:
    server = mock_openai_server
    server.add(Reply(text="one"), Reply(text="two"))
    for backend in ("litellm", "native"):
        agent = Agent("a", "x", backend=backend, **server.model_kwargs)
        await agent.run("go")
    assert [b["model"] for b in server.raw_bodies] == ["test-model", "test-model"]
    assert not any("backend" in b for b in server.raw_bodies)
    agents = [h["user-agent"] for h in server.headers]  # the native backend names itself
    assert not agents[0].startswith("swarmcore/")
    assert agents[1].startswith("swarmcore/")


def test_a_native_run_never_imports_litellm_nor_the_openai_sdk(
    each_backend: str, tmp_path: Path
) -> None:
    """Two runs in two event loops, each with its own connection pool, closed when its loop ends."""
    script = tmp_path / "native.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys
            import swarmcore
            assert "litellm" not in sys.modules and "openai" not in sys.modules
            from swarmcore import Agent, Swarm
            from swarmcore.testing import MockOpenAIServer, Reply

            with MockOpenAIServer([Reply(text="first"), Reply(text="second")]) as server:
                agent = Agent("a", "x", **server.model_kwargs)
                for _ in range(2):  # a second asyncio.run: a new loop, a new pool
                    result = asyncio.run(Swarm(agent).run("go"))
                    print(result.output)
            print("litellm" in sys.modules, "openai" in sys.modules)
            """
        )
    )
    # Development mode reports a connection left open; LiteLLM's aiohttp transport leaves
    # them at every loop's end (not ours to fix), the native pool must not.
    strict = ["-X", "dev", "-W", "error::ResourceWarning"] if each_backend == "native" else []
    done = subprocess.run(
        [sys.executable, *strict, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # LiteLLM imports the openai SDK; the native path needs neither.
    on_litellm = str(each_backend == "litellm")
    assert done.stdout.split() == ["first", "second", on_litellm, on_litellm]
    if strict:
        assert "ResourceWarning" not in done.stderr
        assert "unclosed" not in done.stderr


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/o3-mini", "openai/gpt-5"])
async def test_both_backends_price_a_reply_alike(
    mock_openai_server: MockOpenAIServer, model: str
) -> None:
    """Cached prompt tokens at the cache rate, reasoning at the output rate: one figure."""
    server = mock_openai_server
    server.add(
        Reply(
            text="ok",
            prompt_tokens=1200,
            completion_tokens=300,
            cached_tokens=1000,
            reasoning_tokens=200,
        )
    )
    result = await Agent("a", "x", **{**server.model_kwargs, "model": model}).run("go")
    usage = result.llm_calls[0].token_usage
    assert (usage.cached_tokens, usage.reasoning_tokens) == (1000, 200)
    expected = price_data.cost(model, 1200, 300, cached_tokens=1000, reasoning_tokens=200)
    assert expected is not None
    assert expected < price_data.cost(model, 1200, 300)  # the cache discount is in it
    assert result.cost == pytest.approx(expected, rel=1e-9)


FAST = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.02, jitter=0, max_retry_after=5)


@pytest.mark.parametrize(
    ("failure", "expected", "retryable", "requests"),
    [
        (Fail(400, "Invalid value for 'seed'"), r"rejected the request \(400\): .*seed", False, 1),
        (
            Fail(401, "Incorrect API key"),
            r"rejected the API key \(401\)\. Check the key passed",
            False,
            1,
        ),
        (Fail(403, "Not allowed"), r"denied permission \(403\): .*Not allowed", False, 1),
        (
            Fail(404, "The model does not exist"),
            r"was not found \(404\): .*does not exist",
            False,
            1,
        ),
        (
            Fail(500, "boom"),
            r"failed on attempt 2 of 2 \(InternalServerError, status 500\): .*boom",
            True,
            2,
        ),
        (Fail(503, "overloaded"), r"status 503\): .*overloaded.* This is transient", True, 2),
        (
            Fail(429, "Slow down", headers={"retry-after-ms": "60000"}),
            r"\(RateLimitError, status 429\): .*Slow down\. The provider asked to wait 60s, longer",
            True,
            1,  # asked to wait longer than allowed: not retried
        ),
    ],
    ids=["400", "401", "403", "404", "500", "503", "429-retry-after-ms"],
)
async def test_each_failure_reads_the_same_on_both_backends(
    mock_openai_server: MockOpenAIServer,
    failure: Fail,
    expected: str,
    retryable: bool,
    requests: int,
) -> None:
    server = mock_openai_server
    server.add(failure, failure)
    agent = Agent("a", "x", retry=FAST, **server.model_kwargs)
    with pytest.raises(ModelError, match=expected) as caught:
        await agent.run("go")
    error = caught.value
    assert error.retryable is retryable
    assert error.status_code == failure.status_code
    assert len(server.requests) == requests
    assert "sk-test-local" not in str(error)
    assert error.__cause__ is None
    assert error.__context__ is None


class _NotJSON(BaseHTTPRequestHandler):
    served = 0

    def do_POST(self) -> None:
        type(self).served += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"<html>502 from a proxy</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


async def test_a_body_that_is_not_a_chat_completion_is_a_clear_error() -> None:
    """A proxy's error page with status 200: retried as a transient failure, then named."""
    _NotJSON.served = 0
    with http_server(_NotJSON) as base:
        agent = Agent("a", "x", model="openai/m", api_base=f"{base}/v1", api_key="sk-x", retry=FAST)
        with pytest.raises(ModelError) as caught:
            await agent.run("go")
    assert "Agent 'a': openai/m" in str(caught.value)
    assert "Expecting value" in str(caught.value)  # what was wrong with the body
    assert caught.value.retryable
    assert _NotJSON.served == 2  # FAST allows one retry
