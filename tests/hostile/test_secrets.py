"""Hostile table: credentials outside the old name pattern, in tools' errors, and cut in two.

Issue 40's secrets points, each case a row named for it:

- which environment variables hold a credential, in both directions
  (``PGPASSWORD`` and ``MYSQL_PWD`` do; ``PATH``, ``PWD`` and ``PASSENGER_*`` do not);
- a key standing across the point where a text is shortened: redacted whole
  first, so no prefix of it survives the cut;
- a Python tool whose exception quotes a credential, and a provider echoing
  database passwords: the key reaches neither the model provider, the error,
  the ``swarmcore.*`` logs, the events nor the run store;
- an A2A task failing with such a credential: its message is redacted.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sqlite3
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, closing
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from google.protobuf.json_format import MessageToDict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swarmcore import Agent, Flow, RetryPolicy, Swarm, SwarmError
from swarmcore._serving import error_message
from swarmcore.a2a import RemoteAgent
from swarmcore.cli import main
from swarmcore.llm._errors import classify
from swarmcore.llm._redaction import env_secrets, is_secret_name, redact
from swarmcore.llm._types import CallSpec
from swarmcore.mcp import MCPServer
from swarmcore.store import SQLiteStore
from swarmcore.testing import Call, Fail, FunctionModel, MockOpenAIServer, RecordedRequest, Reply
from swarmcore.tracing import OpenTelemetryTracer
from tests.helpers import http_server
from tests.hostile.leaks import describe_error, describe_event
from tests.serving import bound_socket, serve

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0)

# --- point 4: which environment variables hold a credential ---------------------------------

DB_PASSWORD = "pG-7fQ2wXr9LmTz4"
URL_PASSWORD = "u7Rk2Lq9Wm4Zx8Np"
SECRET_ENV = [
    # (name, value, the credential env_secrets() must give)
    ("PGPASSWORD", DB_PASSWORD, DB_PASSWORD),
    ("MYSQL_PWD", "my-Sq1pWd-88aa", "my-Sq1pWd-88aa"),
    ("DB_PASS", "dbPass-4410-xkcd", "dbPass-4410-xkcd"),
    ("SMTP_PASSWORD", "smtp-Pw-99321zz", "smtp-Pw-99321zz"),
    ("REDIS_PASSWD", "r3dis-Passwd-17", "r3dis-Passwd-17"),
    ("GITHUB_PAT", "github_pat_11ABCDEFG0a1b2c3d4e5f6", "github_pat_11ABCDEFG0a1b2c3d4e5f6"),
    ("GH_TOKEN", "ghp_Z8yX7wV6uT5sR4qP3oN2", "ghp_Z8yX7wV6uT5sR4qP3oN2"),
    ("SSH_KEY_PASSPHRASE", "correct horse battery", "correct horse battery"),
    ("JWT_PRIVATE_KEY", "MIIEvQIBADANBgkqhkiG9w0", "MIIEvQIBADANBgkqhkiG9w0"),
    ("SIGNING_PRIVATE", "priv-88c1d2e3f4a5", "priv-88c1d2e3f4a5"),
    (
        "SENTRY_DSN",
        "https://f3a9c2e1d0b4@o1.ingest.sentry.io/7",
        "https://f3a9c2e1d0b4@o1.ingest.sentry.io/7",
    ),
    ("DJANGO_SECRET_KEY", "dj-9x8c7v6b5n4m3", "dj-9x8c7v6b5n4m3"),
    ("CLIENTSECRET", "cs-0a9b8c7d6e5f", "cs-0a9b8c7d6e5f"),
    (
        "AZURE_STORAGE_CONNECTION_STRING",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFy",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFy",
    ),
    ("DATABASE_URL", f"postgresql://app:{URL_PASSWORD}@db.internal:5432/app", URL_PASSWORD),
    ("SWARMCORE_DATABASE_URL", f"postgresql://swarm:{URL_PASSWORD}@localhost/runs", URL_PASSWORD),
    ("REDIS_URL", f"redis://:{URL_PASSWORD}@cache:6379/0", URL_PASSWORD),
    ("BROKER", f"amqp://guest:{URL_PASSWORD}@rabbit//", URL_PASSWORD),  # any name: the URL says
    ("OPENAI_API_KEY", "sk-proj-a1b2c3d4e5f6g7h8", "sk-proj-a1b2c3d4e5f6g7h8"),
    ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI/K7MDENG"),
]
PLAIN_ENV = [
    # (name, value): no credential, so text quoting the value is left as it is
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ("PWD", "/home/runner/work/project"),  # the working directory, not a password
    ("OLDPWD", "/home/runner/work"),
    ("PASSENGER_APP_ENV", "production"),
    ("PASSENGER_INSTANCE_REGISTRY_DIR", "/tmp/passenger-registry"),
    ("COMPASS_HOME", "/opt/compass-home"),
    ("HOME", "/home/runner"),
    ("SHELL", "/usr/bin/bash"),
    ("LANG", "en_US.UTF-8"),
    ("LD_LIBRARY_PATH", "/usr/local/lib64"),
    ("PYTHONPATH", "/srv/app/src"),
    ("TOKENIZERS_PARALLELISM", "false-by-default"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
    ("HOSTNAME", "build-runner-7"),
    ("SECRETARY_OFFICE", "second-floor"),
    ("DATABASE_URL", "postgresql://localhost:5432/app"),  # no password in it
]


@pytest.mark.parametrize(
    ("name", "value", "credential"), [pytest.param(*row, id=row[0]) for row in SECRET_ENV]
)
def test_credential_variables_are_secrets(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, credential: str
) -> None:
    monkeypatch.setenv(name, value)
    assert credential in env_secrets()
    text = f"the server said: {credential} was refused"
    assert credential not in redact(text, *env_secrets())


@pytest.mark.parametrize(("name", "value"), [pytest.param(*row, id=row[0]) for row in PLAIN_ENV])
def test_other_variables_are_not_secrets(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert value not in env_secrets()
    text = f"could not open {value} (see {name}); ran in {value}/sub."
    assert redact(text, *env_secrets()) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        *(
            pytest.param(n, True, id=n)
            for n in ("PGPASSWORD", "MYSQL_PWD", "DB_PASS", "GITHUB_PAT")
        ),
        *(pytest.param(n, True, id=n) for n in ("GPG_PASSPHRASE", "TLS_PRIVATE_KEY", "SENTRY_DSN")),
        *(pytest.param(n, True, id=n) for n in ("db-pass", "passphrase", "x-api-key")),
        *(pytest.param(n, False, id=n) for n in ("PWD", "OLDPWD", "PATH", "PASSENGER_USER")),
        *(pytest.param(n, False, id=n) for n in ("COMPASS_PASSES", "BYPASS_CACHE", "max_tokens")),
        *(pytest.param(n, False, id=n) for n in ("SECRETARY", "DATABASE_URL", "PATCH_LEVEL")),
    ],
)
def test_the_one_name_rule(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


REDACT_TABLE = [
    pytest.param(
        "connect postgresql://app:hunter2@db/app failed",
        (),
        "connect postgresql://***@db/app failed",
        id="url-userinfo-short-password-by-shape",
    ),
    pytest.param(
        "clone https://ghp_Z8yX7wV6uT5sR4qP3oN2@github.com/acme/x",
        (),
        "clone https://***@github.com/acme/x",
        id="url-token-as-user-by-shape",
    ),
    pytest.param(
        'FATAL: password authentication failed for user "postgres" (postgresql)',
        ("postgres",),
        'FATAL: password authentication failed for user "***" (postgresql)',
        id="word-password-only-as-a-word",
    ),
    pytest.param(
        "passwords and the password manager",
        ("password",),
        "passwords and the *** manager",
        id="dictionary-password-does-not-mangle-words",
    ),
    pytest.param(
        "key%3Dab12cd34ef56 and\\nab12cd34ef56",
        ("ab12cd34ef56",),
        "key%3D*** and\\n***",
        id="mixed-value-anywhere-even-glued",
    ),
    pytest.param(
        "token\\nqwPzLkRtYuIoPaSdFg",
        ("qwPzLkRtYuIoPaSdFg",),
        "token\\n***",
        id="long-letters-only-value-anywhere",
    ),
    pytest.param("the PWD is /srv", ("PWD",), "the PWD is /srv", id="tiny-value-kept"),
]


@pytest.mark.parametrize(("text", "secrets", "expected"), REDACT_TABLE)
def test_redact(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, *secrets) == expected


# --- a hostile run: what every path let out --------------------------------------------------


def _store_text(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return "\n".join(db.iterdump())


class _Logs:
    """Every ``swarmcore.*`` record at any level, tracebacks included, while in use."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.handler = logging.StreamHandler(self.out)
        self.handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.logger = logging.getLogger("swarmcore")
        self.level = self.logger.level

    def __enter__(self) -> _Logs:
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *_: object) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)

    @property
    def text(self) -> str:
        return self.out.getvalue()


async def _failing_run(flow: Flow, server: MockOpenAIServer, tmp: Path) -> dict[str, str]:
    """Run ``flow`` until it fails; the text each path let out, by path."""
    db = tmp / "runs.db"
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    swarm = Swarm(flow, store=SQLiteStore(db), hooks=[OpenTelemetryTracer(tracing)])
    seen: list[str] = []

    async def stream() -> None:
        async for event in swarm.stream("What is the weather in Lyon?"):
            seen.append(describe_event(event))

    with _Logs() as logs, pytest.raises(SwarmError) as caught:
        await stream()
    assert caught.value.partial is not None
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        assert main(["runs", "show", "--store", str(db), caught.value.partial.run_id]) == 0
    return {
        "error": describe_error(caught.value),
        "logs": logs.text,
        "events": "\n".join(seen),
        "store": _store_text(db),
        "provider": "\n".join(map(repr, server.raw_bodies)),
        "span": _spans_text(exporter),
        "cli": shown.getvalue(),
    }


def _spans_text(exporter: InMemorySpanExporter) -> str:
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [span.name, str(span.status.description), repr(dict(span.attributes or {}))]
        parts += [f"{e.name} {dict(e.attributes or {})!r}" for e in span.events]
    return "\n".join(parts)


# --- points 3 and 4: tools quoting credentials, a provider echoing database passwords -------

WEATHER_KEY = "wx-8Hc2Nq6Rv1Tz9Lp4"
ECHOED = {
    "PGPASSWORD": DB_PASSWORD,
    "MYSQL_PWD": "my-Sq1pWd-88aa",
    "DB_PASS": "dbPass-4410-xkcd",
    "GITHUB_PAT": "github_pat_11ABCDEFG0a1b2c3d4e5f6",
    "GPG_PASSPHRASE": "correct horse battery",
}
HOSTILE_ENV = {
    **ECHOED,
    "WEATHER_API_KEY": WEATHER_KEY,
    "DATABASE_URL": f"postgresql://app:{URL_PASSWORD}@db.internal:5432/app",
}
# The provider quotes every credential it could know of, after a 500 (retried, so logged).
ECHO_TEXT = "Upstream refused the request: " + "; ".join(f"{k}={v}" for k, v in ECHOED.items())


def _weather(city: str) -> str:
    """The weather in a city (an HTTP API whose key goes in the query, as many do)."""
    url = f"{os.environ['WEATHER_URL']}/weather?q={city}&api_key={os.environ['WEATHER_API_KEY']}"
    response = httpx.get(url)  # the local server refuses a GET: httpx's error quotes the URL
    response.raise_for_status()
    return response.text


def _orders(customer: str) -> str:
    """A customer's orders (from a database that refuses the connection)."""
    raise ConnectionError(f"could not connect to {os.environ['DATABASE_URL']} for {customer}")


HOSTILE_SOURCES = {
    "tool-http-error-url-with-api_key": WEATHER_KEY,
    "tool-error-quoting-DATABASE_URL": URL_PASSWORD,
    **{f"provider-echoes-{name}": value for name, value in ECHOED.items()},
}
HOSTILE_PATHS = ("error", "logs", "events", "store", "provider", "span", "cli")


@pytest.fixture
def hostile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in HOSTILE_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def hostile_runs() -> dict[str, dict[str, str]]:
    """One hostile run per backend, made when a row first needs it and shared by its rows."""
    return {}


@pytest.mark.usefixtures("hostile_env")
@pytest.mark.parametrize(
    ("source", "path"),
    [
        pytest.param(s, p, id=f"{s}/{p}")
        for s in HOSTILE_SOURCES
        for p in HOSTILE_PATHS
        if s.startswith("tool") or p != "provider"  # echoed keys come from the provider
    ],
)
async def test_a_hostile_run_lets_no_credential_out(
    each_backend: str,
    hostile_runs: dict[str, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    path: str,
) -> None:
    if each_backend not in hostile_runs:
        weather, orders = Reply.tool("_weather", city="Lyon"), Reply.tool("_orders", customer="c")
        script = [
            Reply(tool_calls=(*weather.tool_calls, *orders.tool_calls)),
            Reply(text="Lyon: no data."),  # the forecaster answers; its tool calls are kept
            Fail(500, ECHO_TEXT),  # then the writer's provider echoes, retried once
            Fail(400, ECHO_TEXT),
        ]
        with MockOpenAIServer(script) as server:
            monkeypatch.setenv("WEATHER_URL", server.url.removesuffix("/v1"))
            kwargs = {"retry": FAST, **server.model_kwargs}
            forecaster = Agent(
                "forecaster", "Give the weather.", tools=[_weather, _orders], **kwargs
            )
            flow = forecaster >> Agent("writer", "Write it up.", **kwargs)
            texts = await _failing_run(flow, server, tmp_path)
        results = {m["tool_call_id"]: m["content"] for m in server.requests[1].tool_results}
        assert len(results) == 2, results  # both tools ran, and failed quoting their credential
        assert "api_key=" in str(results)  # the tool quoted the URL it called
        assert "could not connect" in str(results)
        assert "Upstream refused" in texts["error"], texts["error"]  # the provider did echo
        assert "could not connect" in texts["store"]  # the tool calls are stored
        hostile_runs[each_backend] = texts
    text = hostile_runs[each_backend][path]
    assert text.strip(), f"nothing was captured on {path}"
    secret = HOSTILE_SOURCES[source]
    assert secret not in text, f"{source} leaked on {path}:\n{text}"


# --- point 1: a key standing across a cut leaves no part of itself --------------------------

CUT_KEY = "zQ9vL2mX7kR4pW8nT3bY6cH1dF5gJ0sA"  # no known shape: found by value only
INSIDE = 20
"""How many of CUT_KEY's characters stand before the cut."""
TOOL_LIMIT = 200


def _across(limit: int, before: str = "") -> str:
    """Text that, after ``before``, puts CUT_KEY's first INSIDE characters before ``limit``."""
    # Long after the key too, so the text is cut whether the key was redacted first or not.
    return "x" * (limit - INSIDE - len(before)) + CUT_KEY + " was refused" + " y" * 400


def _part_of_key(text: str) -> str | None:
    """The longest run of 8 or more of CUT_KEY's characters in ``text``, if any."""
    for size in range(len(CUT_KEY), 7, -1):
        for start in range(len(CUT_KEY) - size + 1):
            if CUT_KEY[start : start + size] in text:
                return CUT_KEY[start : start + size]
    return None


def _probe(city: str) -> str:
    """A tool whose error quotes the key across the point its result is cut."""
    raise RuntimeError(_across(TOOL_LIMIT, before="Tool '_probe' raised RuntimeError: "))


async def _cut_provider_error(tmp: Path) -> dict[str, str]:
    # The provider's message is cut to 300 characters (297 and "...").
    with MockOpenAIServer([Fail(500, _across(297)), Fail(400, _across(297))]) as server:
        agent = Agent("writer", "Write.", retry=FAST, **server.model_kwargs)
        return await _failing_run(agent, server, tmp)


async def _cut_tool_error(tmp: Path) -> dict[str, str]:
    # A tool's error is its result, cut to max_tool_result_chars; the agent after it fails.
    script = [Reply.tool("_probe", city="Lyon"), Reply(text="No data."), Fail(400, "no more")]
    with MockOpenAIServer(script) as server:
        prober = Agent(
            "prober",
            "Probe.",
            tools=[_probe],
            max_tool_result_chars=TOOL_LIMIT,
            **server.model_kwargs,
        )
        texts = await _failing_run(
            prober >> Agent("writer", "Write.", **server.model_kwargs), server, tmp
        )
    [result] = server.requests[1].tool_results
    assert "[truncated" in result["content"], result  # the error was cut
    return texts


CUTS: dict[str, Callable[[Path], Awaitable[dict[str, str]]]] = {
    "provider-error-at-300": _cut_provider_error,
    "tool-error-at-max_tool_result_chars": _cut_tool_error,
}
CUT_PATHS = {
    "provider-error-at-300": ("error", "logs", "events", "store", "span", "cli"),
    "tool-error-at-max_tool_result_chars": ("provider", "logs", "events", "store", "span"),
}


@pytest.fixture(scope="module")
def cut_runs() -> dict[tuple[str, str], dict[str, str]]:
    """One run per cut and backend, shared by the cut's rows."""
    return {}


@pytest.mark.parametrize(
    ("cut", "path"), [pytest.param(c, p, id=f"{c}/{p}") for c in CUTS for p in CUT_PATHS[c]]
)
async def test_a_key_across_a_cut_leaves_no_part_of_itself(
    each_backend: str,
    cut_runs: dict[tuple[str, str], dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cut: str,
    path: str,
) -> None:
    monkeypatch.setenv("CUTTER_API_KEY", CUT_KEY)
    if (cut, each_backend) not in cut_runs:
        cut_runs[cut, each_backend] = await CUTS[cut](tmp_path)
    text = cut_runs[cut, each_backend][path]
    assert "xxxxxxxx" in text, f"the text was not captured on {path}:\n{text}"
    assert _part_of_key(text) is None, f"{_part_of_key(text)!r} of the key is on {path}:\n{text}"


def test_an_a2a_task_message_is_redacted_before_it_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTTER_API_KEY", CUT_KEY)
    message = error_message(RuntimeError(_across(499)))  # cut to 499 characters and "…"
    assert message.endswith("…"), message
    assert _part_of_key(message) is None, message


GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key="


def test_a_connection_error_quoting_its_url_is_redacted_before_it_is_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The reason a connection failed is cut to 120 characters; the URL's query holds the key.
    monkeypatch.setenv("GEMINI_API_KEY", CUT_KEY)
    reason = GEMINI_URL + _across(117, before=GEMINI_URL)
    call = CallSpec(agent_name="a", model="gemini/gemini-2.5-flash")
    error = classify(ConnectionError(reason), call, call.model, 1)
    assert error is not None
    assert "could not connect" in str(error), error
    assert "xxxxxxxx" in str(error), error
    assert _part_of_key(str(error)) is None, error


# --- an A2A task failing with credentials in its error --------------------------------------


@asynccontextmanager
async def _a2a_client(url: str) -> AsyncGenerator[Client]:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)


A2A_SECRETS = {
    "PGPASSWORD": DB_PASSWORD,
    "DATABASE_URL": URL_PASSWORD,
    "GITHUB_PAT": ECHOED["GITHUB_PAT"],
}
A2A_PATHS = ("task-message", "responses", "logs", "store")


@pytest.fixture(scope="module")
def a2a_runs() -> dict[str, dict[str, str]]:
    return {}


@pytest.mark.usefixtures("hostile_env")
@pytest.mark.parametrize(
    ("secret", "path"),
    [pytest.param(s, p, id=f"{s}/{p}") for s in A2A_SECRETS for p in A2A_PATHS],
)
async def test_a_failed_a2a_task_tells_no_credential(
    each_backend: str,
    a2a_runs: dict[str, dict[str, str]],
    tmp_path: Path,
    secret: str,
    path: str,
) -> None:
    if each_backend not in a2a_runs:
        echo = f"refused: {ECHO_TEXT}; url={HOSTILE_ENV['DATABASE_URL']}"
        with MockOpenAIServer([Fail(400, echo)]) as provider:
            db = tmp_path / "runs.db"
            agent = Agent("a", "Do it.", retry=FAST, **provider.model_kwargs)
            swarm = Swarm(agent, store=SQLiteStore(db))
            with _Logs() as logs, serve(swarm.to_a2a()) as url:
                async with _a2a_client(url) as client:
                    message = Message(
                        role=Role.ROLE_USER, message_id="m-1", parts=[Part(text="go")]
                    )
                    responses = [
                        r async for r in client.send_message(SendMessageRequest(message=message))
                    ]
                    task = await client.get_task(GetTaskRequest(id=responses[0].task.id))
        told = " ".join(p.text for p in task.status.message.parts)
        assert "refused" in told, task  # the provider's message did reach the task
        a2a_runs[each_backend] = {
            "task-message": told,
            "responses": "\n".join(map(str, responses)) + str(task),
            "logs": logs.text,
            "store": _store_text(db),
        }
    text = a2a_runs[each_backend][path]
    assert text.strip(), f"nothing was captured on {path}"
    assert A2A_SECRETS[secret] not in text, f"{secret} leaked on {path}:\n{text}"


# --- a hostile A2A peer quoting the bearer token RemoteAgent sent it --------------------------


def _sse(result: object) -> bytes:
    return (
        b"data: " + json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode() + b"\n\n"
    )


def _peer_status(state: str, text: str) -> bytes:
    message = {"role": "ROLE_AGENT", "messageId": f"m-{state}", "parts": [{"text": text}]}
    status = {"state": state, "message": message}
    return _sse({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": status}})


PEER_CASES: dict[str, Callable[[], Response]] = {
    # A failed task whose status quotes the token across the 500 characters kept of it,
    # after a working status quoting it whole (a RemoteStatus event).
    "failed-task-message-at-500": lambda: Response(
        b"".join(
            [
                _sse(
                    {
                        "task": {
                            "id": "t1",
                            "contextId": "c1",
                            "status": {"state": "TASK_STATE_SUBMITTED"},
                        }
                    }
                ),
                _peer_status("TASK_STATE_WORKING", f"calling upstream with Bearer {CUT_KEY}"),
                _peer_status("TASK_STATE_FAILED", _across(499)),
            ]
        ),
        media_type="text/event-stream",
    ),
    # An HTTP 500 whose body quotes the token across the 300 characters kept of it.
    "http-500-body-at-300": lambda: Response(_across(299), status_code=500),
    # A page that is no JSON, beginning with the token across the 120 characters shown of it.
    "not-json-at-120": lambda: Response(_across(120), media_type="text/html"),
    # A JSON-RPC error quoting the token (the SDK's exception says it too).
    "jsonrpc-error-at-500": lambda: JSONResponse(
        {"jsonrpc": "2.0", "id": "1", "error": {"code": -32000, "message": _across(480)}}
    ),
    # A malformed field (dropped, and logged cut to 200 characters) quoting the token.
    "malformed-field-in-log-at-200": lambda: Response(
        _sse(
            {
                "statusUpdate": {
                    "taskId": "t1",
                    "contextId": "c1",
                    "status": {"state": "TASK_STATE_FAILED", "timestamp": _malformed()},
                }
            }
        ),
        media_type="text/event-stream",
    ),
}
DROPPED = 'StreamResponse.statusUpdate.status.timestamp = "'
"""How the log names the dropped field, before its value."""


def _malformed() -> str:
    """A timestamp quoting the key across the value's 80th character and the line's 200th."""
    first = 79 - INSIDE - 1  # after the JSON string's opening quote
    second = 199 - INSIDE - len(DROPPED)
    gap = second - first - len(CUT_KEY)
    return "x" * first + CUT_KEY + "x" * gap + CUT_KEY + " y" * 400


PEER_PATHS = {
    "failed-task-message-at-500": ("error", "logs", "events", "store"),
    "http-500-body-at-300": ("error", "logs", "events", "store"),
    "jsonrpc-error-at-500": ("error", "logs", "events", "store"),
    "not-json-at-120": ("error", "logs", "events", "store"),
    "malformed-field-in-log-at-200": ("logs",),
}


def _peer_app(base: str) -> Starlette:
    async def card(request: Request) -> Response:
        endpoint = f"{base}/{request.path_params['case']}/"
        card = AgentCard(
            name="Echo",
            description="Quotes what it was sent.",
            version="1.0.0",
            supported_interfaces=[
                AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version="1.0")
            ],
            capabilities=AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[AgentSkill(id="x", name="x", description="x", tags=["x"])],
        )
        return JSONResponse(MessageToDict(card))

    async def task(request: Request) -> Response:
        return PEER_CASES[request.path_params["case"]]()

    return Starlette(
        routes=[
            Route("/{case}/.well-known/agent-card.json", card),
            Route("/{case}/", task, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def echo_peer() -> Iterator[str]:
    sock = bound_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with serve(_peer_app(base), sock=sock, lifespan="off", grace=1):
        yield base


@pytest.fixture(scope="module")
def peer_runs() -> dict[str, dict[str, str]]:
    return {}


@pytest.mark.parametrize(
    ("case", "path"),
    [pytest.param(c, p, id=f"{c}/{p}") for c in PEER_CASES for p in PEER_PATHS[c]],
)
async def test_a_remote_agent_quoting_our_token_leaves_no_part_of_it(
    echo_peer: str, peer_runs: dict[str, dict[str, str]], tmp_path: Path, case: str, path: str
) -> None:
    if case not in peer_runs:
        remote = RemoteAgent(
            f"{echo_peer}/{case}",
            name="remote",
            headers={"Authorization": f"Bearer {CUT_KEY}"},
            retries=RetryPolicy(max_retries=0),
        )
        db = tmp_path / "runs.db"
        swarm = Swarm(remote, store=SQLiteStore(db))
        seen: list[str] = []

        async def stream() -> None:
            async for event in swarm.stream("Summarise the report."):
                seen.append(describe_event(event))

        with _Logs() as logs, pytest.raises(SwarmError) as caught:
            await stream()
        peer_runs[case] = {
            "error": describe_error(caught.value),
            "logs": logs.text,
            "events": "\n".join(seen),
            "store": _store_text(db),
        }
    text = peer_runs[case][path]
    assert "xxxxxxxx" in text, f"the remote's words were not captured on {path}:\n{text}"
    assert _part_of_key(text) is None, f"{_part_of_key(text)!r} of the token is on {path}:\n{text}"


# --- an MCP server quoting the credentials it was given in its tools' errors ----------------

MCP_ENV_SERVER = Path(__file__).parent / "_mcp_env_server.py"
MCP_ENV = {"DATABASE_URL": HOSTILE_ENV["DATABASE_URL"], "PGPASSWORD": DB_PASSWORD}
MCP_SECRETS = {"DATABASE_URL-password": URL_PASSWORD, "PGPASSWORD": DB_PASSWORD}
MCP_PATHS = ("model-request", "logs", "events", "store")


@pytest.fixture(scope="module")
def mcp_run() -> dict[str, dict[str, str]]:
    return {}


@pytest.mark.parametrize(
    ("secret", "path"),
    [pytest.param(s, p, id=f"{s}/{p}") for s in MCP_SECRETS for p in MCP_PATHS],
)
async def test_an_mcp_server_quoting_its_environment_is_redacted(
    mcp_run: dict[str, dict[str, str]], tmp_path: Path, secret: str, path: str
) -> None:
    if not mcp_run:
        server = MCPServer.stdio(sys.executable, [str(MCP_ENV_SERVER)], env=MCP_ENV, name="db")

        def answer(request: RecordedRequest) -> Reply:
            if request.tool_results:
                return Reply(text="The database is down.")
            return Reply(tool_calls=[Call("connect", {}), Call("login", {})])

        model = FunctionModel(answer)
        db = tmp_path / "runs.db"
        swarm = Swarm(
            Agent("dba", "Check it.", model=model.model, tools=[server]), store=SQLiteStore(db)
        )
        seen: list[str] = []
        with _Logs() as logs:
            async for event in swarm.stream("Is the database up?"):
                seen.append(describe_event(event))
        results = [str(r) for r in model.requests[-1].tool_results]
        assert "could not connect" in str(results), results  # the server did quote them
        assert "was rejected" in str(results), results
        mcp_run["texts"] = {
            "model-request": repr(model.requests[-1]),
            "logs": logs.text,
            "events": "\n".join(seen),
            "store": _store_text(db),
        }
    text = mcp_run["texts"][path]
    assert text.strip(), f"nothing was captured on {path}"
    assert MCP_SECRETS[secret] not in text, f"{secret} leaked on {path}:\n{text}"


# --- a server that misbehaves quoting the key: what it did is said redacted, then cut -------


class _EchoingHandler(BaseHTTPRequestHandler):
    """Answers every request with a Content-Encoding it was not asked for, quoting the key."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "x" * 20 + CUT_KEY + " y" * 600)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echoing_endpoint() -> Iterator[str]:
    with http_server(_EchoingHandler) as base:
        yield f"{base}/v1"


async def test_a_refusal_quoting_the_key_is_redacted_before_it_is_cut(
    echoing_endpoint: str,
) -> None:
    # The native backend says what a misbehaving server sent (here its Content-Encoding).
    agent = Agent(
        "writer",
        "Write.",
        model="openai/test-model",
        api_base=echoing_endpoint,
        api_key=CUT_KEY,
        retry=RetryPolicy(max_retries=0),
    )
    with pytest.raises(SwarmError) as caught:
        await Swarm(agent).run("Write a haiku.")
    text = describe_error(caught.value)
    assert "Content-Encoding" in text, text
    assert "xxxxxxxx" in text, text
    assert "…" in str(caught.value), caught.value  # what the server sent was cut
    assert _part_of_key(text) is None, f"{_part_of_key(text)!r} of the key is in:\n{text}"
