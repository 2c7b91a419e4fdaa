"""Fault injection over real HTTP against MockOpenAIServer on 127.0.0.1, on both backends."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
import traceback

import pytest

from swarmcore import (
    Agent,
    AgentDefaults,
    ModelError,
    RetryPolicy,
    Swarm,
    limit_model,
    parallel,
)
from swarmcore.testing import Fail, LiteLLMProxy, MockOpenAIServer, RecordedRequest, Reply

# Once per model backend: the native OpenAI one and LiteLLM must behave the same.
pytestmark = pytest.mark.usefixtures("each_backend")


FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.02, jitter=0)
SECRET = "sk-proj-SECRETabcdef0123456789"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. context_length_exceeded",
            "longer than its context window",
        ),
        (
            "Your request was rejected as a result of our safety system. content_policy_violation",
            "refused the request under its content policy",
        ),
    ],
    ids=["context-window", "content-policy"],
)
async def test_context_window_and_content_policy_fail_at_once(
    mock_openai_server: MockOpenAIServer, message: str, expected: str
) -> None:
    mock_openai_server.add(Fail(400, message), "never")
    agent = Agent("w", "x", retry=FAST, **mock_openai_server.model_kwargs)
    with pytest.raises(ModelError, match=expected) as caught:
        await agent.run("go")
    assert not caught.value.retryable
    assert len(mock_openai_server.requests) == 1


async def test_retry_after_header_over_http(mock_openai_server: MockOpenAIServer) -> None:
    mock_openai_server.add(Fail(429, "Rate limit reached", headers={"Retry-After": "1"}), "ok")
    agent = Agent("r", "x", retry=FAST, **mock_openai_server.model_kwargs)
    start = time.perf_counter()
    result = await agent.run("go")
    assert time.perf_counter() - start >= 1.0
    assert result.llm_calls[0].attempts == 2


async def test_a_hanging_server_never_hangs_the_run(mock_openai_server: MockOpenAIServer) -> None:
    mock_openai_server.add(Reply(text="late", delay=60), Reply(text="late", delay=60))
    agent = Agent("h", "x", **mock_openai_server.model_kwargs)
    defaults = AgentDefaults(call_timeout=0.3, retry=RetryPolicy(max_retries=1, initial_delay=0))
    start = time.perf_counter()
    with pytest.raises(ModelError, match=r"did not answer within 0\.3s \(attempt 2 of 2\)"):
        await Swarm(agent, defaults=defaults).run("go")
    assert time.perf_counter() - start < 10


async def test_fallback_model_over_http() -> None:
    def by_model(request: RecordedRequest) -> Reply | Fail:
        return Fail(503, "overloaded") if request.model == "primary" else Reply(text="backup ok")

    with MockOpenAIServer(responder=by_model) as server:
        agent = Agent(
            "f",
            "x",
            model="openai/primary",
            fallback_models=["openai/backup"],
            api_base=server.url,
            api_key="sk-test-local",
            retry=RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0),
        )
        result = await agent.run("go")
    assert result.output == "backup ok"
    assert result.model == "openai/backup"
    assert [r.model for r in server.requests] == ["primary", "primary", "backup"]


async def test_api_keys_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    echo_key = f"Incorrect API key provided: {SECRET}. You can find your key at ..."
    with MockOpenAIServer([Fail(500, echo_key), Fail(401, echo_key)]) as server:
        agent = Agent("k", "x", model="openai/m", api_base=server.url, api_key=SECRET, retry=FAST)
        with caplog.at_level(logging.DEBUG), pytest.raises(ModelError) as caught:
            await Swarm(agent).run("go")
    error = caught.value
    assert error.status_code == 401
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"  # it did reach the provider
    shown = [str(error), repr(error), repr(agent), caplog.text]
    assert error.partial is not None
    shown.append(error.partial.model_dump_json())
    shown.append("".join(traceback.format_exception(error)))  # what an uncaught error prints
    for text in shown:
        assert SECRET not in text
        assert "SECRETabcdef" not in text
    assert "retry 1 of 2" in caplog.text  # the 500 was retried and logged, key redacted


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: bound, read, closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("where", "netloc", "source"),
    [
        ("env", "127.0.0.1:{port}", "OPENAI_BASE_URL"),
        ("api_base", "127.0.0.1:{port}", "the agent's api_base"),
        ("env", "user:hunter2secret@127.0.0.1:{port}", "OPENAI_BASE_URL"),
    ],
    ids=["openai-base-url", "agent-api-base", "credentials-in-url"],
)
async def test_a_refused_connection_names_the_url_and_the_setting(
    monkeypatch: pytest.MonkeyPatch, where: str, netloc: str, source: str
) -> None:
    port = _closed_port()
    base = f"http://{netloc.format(port=port)}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    if where == "env":
        monkeypatch.setenv("OPENAI_BASE_URL", base)
    extra = {"api_base": base} if where == "api_base" else {}
    # A model name of its own: check_key remembers a model whose key it found in the environment.
    agent = Agent("c", "x", model="openai/unreachable-model", retry=FAST, **extra)
    with pytest.raises(ModelError) as caught:
        await agent.run("go")
    error = caught.value
    text = str(error)
    assert f"could not connect to http://127.0.0.1:{port}/v1" in text
    assert f"attempt 3 of 3). Is the server running, and is the URL right (set by {source})?" in (
        text
    )
    assert "hunter2secret" not in text
    # Nothing answered: no status, and no advice about rate limits.
    assert error.status_code is None
    assert "status 500" not in text
    assert "InternalServerError" not in text
    assert "limit_model" not in text
    assert error.retryable  # a restarting server comes back; fallback models get their turn


def test_a_refused_connection_is_named_from_run_sync_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # run_sync once ran the loop inside its `except RuntimeError` (no running loop), so
    # LiteLLM's re-raised error chained to that RuntimeError instead of the connection
    # error, and a refused connection read as "InternalServerError, status 500".
    port = _closed_port()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent(
        "c",
        "x",
        model="openai/unreachable-sync-model",
        api_base=f"http://127.0.0.1:{port}/v1",
        retry=0,
    )
    with pytest.raises(ModelError) as caught:
        agent.run_sync("go")
    assert f"could not connect to http://127.0.0.1:{port}/v1" in str(caught.value)
    assert "InternalServerError" not in str(caught.value)
    with pytest.raises(ModelError, match="could not connect"):
        Swarm(agent).run_sync("go")


async def test_a_rejected_key_from_the_environment_names_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wrong-key")
    with MockOpenAIServer([Fail(401, "Incorrect API key provided")]) as server:
        agent = Agent("k", "x", model="openai/env-key-model", api_base=server.url)
        with pytest.raises(ModelError, match=r"rejected the API key \(401\)") as caught:
            await agent.run("go")
    assert "Check the key in OPENAI_API_KEY." in str(caught.value)


async def test_a_misspelt_model_on_a_custom_endpoint_is_a_warning(
    mock_openai_server: MockOpenAIServer,
) -> None:
    mock_openai_server.add("typo served", "known served")
    endpoint = {"api_base": mock_openai_server.url, "api_key": "sk-test-local"}
    typo = Agent("t", "x", model="openai/gpt-4o-mnii", **endpoint)
    with pytest.warns(UserWarning, match="did you mean 'openai/gpt-4o-mini'"):
        result = await typo.run("go")
    assert result.output == "typo served"  # the endpoint serves any name: sent as it is
    known = Agent("k", "x", model="openai/gpt-4o-mini", **endpoint)
    assert (await known.run("go")).output == "known served"  # no warning (warnings are errors)


async def test_cancelling_a_run_over_http_returns_promptly(
    mock_openai_server: MockOpenAIServer,
) -> None:
    mock_openai_server.add(Reply(text="late", delay=60))
    agent = Agent("c", "x", **mock_openai_server.model_kwargs)
    run = asyncio.create_task(Swarm(agent).run("go"))
    for _ in range(200):
        if mock_openai_server.requests:
            break
        await asyncio.sleep(0.02)
    assert mock_openai_server.requests, "the request never reached the server"
    start = time.perf_counter()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert time.perf_counter() - start < 2


async def test_limiter_queues_a_wide_fan_out_over_http() -> None:
    in_flight = 0
    peak = 0
    guard = threading.Lock()  # the server answers on its own threads

    def answer(request: RecordedRequest) -> Reply:
        nonlocal in_flight, peak
        with guard:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with guard:
            in_flight -= 1
        return Reply(text="ok")

    with MockOpenAIServer(responder=answer) as server:
        limit_model("openai/limited", max_in_flight=3)
        try:
            members = [
                Agent(f"a{i}", "x", model="openai/limited", api_base=server.url, api_key="sk-t")
                for i in range(12)
            ]
            flow = parallel(*members)
            results = await asyncio.gather(Swarm(flow).run("one"), Swarm(flow).run("two"))
        finally:
            limit_model("openai/limited")
    assert all(len(r.history) == 12 for r in results)
    assert peak <= 3
    assert len(server.requests) == 24


class _TricklingServer:
    """An OpenAI-compatible endpoint that sends its reply one byte at a time, slowly.

    Every read gets a byte well within the timeout, so only a bound on the whole
    call, not LiteLLM's per-read one, stops it.
    """

    def __init__(self, byte_every: float) -> None:
        import json
        import socket

        body = json.dumps(
            {
                "id": "chatcmpl-slow",
                "object": "chat.completion",
                "created": 0,
                "model": "slow",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "late " * 20},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self._reply = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        self._body = body
        self._every = byte_every
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)  # the request; its content does not matter here
                conn.sendall(self._reply)
                for byte in self._body:
                    if self._stop.wait(self._every):
                        return
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:  # the client gave up: good
                        break

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


async def test_a_trickling_reply_is_bounded_by_call_timeout() -> None:
    # LiteLLM's timeout= becomes aiohttp's per-read timeout: a byte every 0.1 s would
    # keep a 0.5 s call alive for the whole ~35 s body without swarmcore's own bound.
    server = _TricklingServer(byte_every=0.1)
    try:
        agent = Agent(
            "t",
            "x",
            model="openai/slow",
            api_base=f"http://127.0.0.1:{server.port}/v1",
            api_key="sk-test",
            call_timeout=0.5,
            retry=0,
        )
        # Without swarmcore's bound the whole body would arrive (~35 s) and the call succeed.
        with pytest.raises(ModelError, match=r"did not answer within 0\.5s"):
            await agent.run("go")
    finally:
        server.close()


# --- LiteLLM Proxy's own answers, as it sends them (testing.LiteLLMProxy) ---------------


def _gateway_agent(server: MockOpenAIServer, model: str = "openai/test-model") -> Agent:
    return Agent("g", "x", model=model, api_base=server.url, api_key="sk-test-local", retry=FAST)


async def test_a_gateways_context_window_error_says_so() -> None:
    script = [LiteLLMProxy.context_window_exceeded("test-model"), "never"]
    with MockOpenAIServer(script) as server, pytest.raises(ModelError) as caught:
        await _gateway_agent(server).run("go")
    assert str(caught.value) == (
        "Agent 'g': openai/test-model rejected the prompt as longer than its context window "
        "(400). Shorten the task or instructions, use context_mode='pull', or pick a model "
        "with a larger window."
    )
    assert not caught.value.retryable
    assert len(server.requests) == 1


async def test_a_model_the_gateway_does_not_serve_is_named_with_the_closest_name() -> None:
    with MockOpenAIServer([LiteLLMProxy.invalid_model("gpt-4o-mni")]) as server:
        agent = _gateway_agent(server, "openai/gpt-4o-mni")
        with pytest.warns(UserWarning, match="did you mean"), pytest.raises(ModelError) as caught:
            await agent.run("go")
        url = server.url
    assert str(caught.value) == (
        "Agent 'g': openai/gpt-4o-mni: model not found on this endpoint (400): "
        "/chat/completions: Invalid model name passed in model=gpt-4o-mni. Call `/v1/models` "
        "to view available models for your key. Check the name against the models the "
        f"endpoint serves (GET {url}/models). Did you mean 'openai/gpt-4o-mini'?"
    )
    assert caught.value.status_code == 400
    assert not caught.value.retryable
    assert len(server.requests) == 1


async def test_a_gateway_that_lists_its_models_suggests_one_of_them() -> None:
    listed = (
        "/chat/completions: Invalid model name passed in model=team-modle. "
        "This key can only access models=['team-model', 'team-embedder']"
    )
    with (
        MockOpenAIServer([Fail(400, listed)]) as server,
        pytest.raises(ModelError, match="model not found on this endpoint") as caught,
    ):
        await _gateway_agent(server, "openai/team-modle").run("go")
    assert str(caught.value).endswith("Did you mean 'openai/team-model'?")


async def test_a_gateways_no_db_answer_to_a_wrong_key_is_an_authentication_error() -> None:
    script = [LiteLLMProxy.no_connected_db(), "never"]
    with MockOpenAIServer(script) as server, pytest.raises(ModelError) as caught:
        await _gateway_agent(server).run("go")
    assert str(caught.value) == (
        "Agent 'g': openai/test-model rejected the API key (400: 'No connected db.', which a "
        "LiteLLM Proxy without a database answers to any key but its master key). Check the "
        "key passed as api_key= (or in model_settings)."
    )
    assert not caught.value.retryable
    assert len(server.requests) == 1


async def test_a_gateways_error_reads_the_same_on_both_backends() -> None:
    # No "litellm.RateLimitError: RateLimitError: OpenAIException - " of LiteLLM's own in front.
    with MockOpenAIServer([LiteLLMProxy.rate_limited("test-model")]) as server:
        agent = Agent("g", "x", retry=0, **server.model_kwargs)
        with pytest.raises(ModelError) as caught:
            await agent.run("go")
    assert str(caught.value) == (
        "Agent 'g': openai/test-model failed on attempt 1 of 1 (RateLimitError, status 429): "
        "litellm.RateLimitError: this is a mock rate limit error. This is transient: retry "
        "later, raise the agent's retry, add fallback_models, or limit the model's requests "
        "with swarmcore.limit_model()."
    )


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (408, "APIError", True),
        (409, "ConflictError", False),
        (413, "APIError", False),
        (502, "InternalServerError", True),
        (503, "InternalServerError", True),
        (504, "InternalServerError", True),
        (529, "InternalServerError", True),
    ],
)
async def test_a_status_is_named_by_the_same_class_on_both_backends(
    status: int, kind: str, retryable: bool
) -> None:
    with MockOpenAIServer([Fail(status, f"refused with {status}")]) as server:
        agent = Agent("g", "x", retry=0, **server.model_kwargs)
        with pytest.raises(ModelError) as caught:
            await agent.run("go")
    error = caught.value
    assert f"({kind}, status {status}): refused with {status}" in str(error)
    assert (error.status_code, error.retryable) == (status, retryable)


async def test_a_key_echoed_at_the_length_limit_is_still_redacted() -> None:
    # The provider's text is cut to 300 characters and the key straddles the cut: it
    # is redacted before the cut, so no part of it shows (it has no known key shape).
    secret = "tok_SECRETabcdef0123456789"
    echo = "x" * 280 + " {credential} was refused"
    with MockOpenAIServer([Fail(400, echo, echo_credential=True)]) as server:
        agent = Agent("k", "x", model="openai/m", api_base=server.url, api_key=secret, retry=0)
        with pytest.raises(ModelError) as caught:
            await agent.run("go")
    assert server.headers[0]["authorization"] == f"Bearer {secret}"
    assert "x" * 280 + " *** was refused" in str(caught.value)
    assert "tok_SEC" not in str(caught.value)
