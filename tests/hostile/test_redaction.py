"""Hostile table: a credential echoed by a provider or an MCP server never leaves swarmcore.

Each source below puts a key of its own shape where swarmcore passes it on (the
environment LiteLLM reads, ``model_settings``, ``api_key=``, an MCP server's
headers), and the far end echoes that key in its error, as careless providers
do. One failing run per source is captured on every path text leaves by; each
row of the table asserts that the key is absent from one path, so a regression
fails by name (``gemini-key-in-env/traceback``...).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from swarmcore import Agent, RetryPolicy, Swarm, SwarmError
from swarmcore.cli import main
from swarmcore.llm import redact
from swarmcore.llm._redaction import is_secret_name, secret_values
from swarmcore.mcp import MCPServer
from swarmcore.store import SQLiteStore
from swarmcore.testing import (
    Fail,
    FunctionModel,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
)
from swarmcore.tracing import OpenTelemetryTracer
from tests.helpers import script_server
from tests.hostile.leaks import describe_error, describe_event

# Once per model backend: the native OpenAI one and LiteLLM must behave the same.
pytestmark = pytest.mark.usefixtures("each_backend")


FAST = RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0)
MCP_HTTP_SERVER = Path(__file__).parents[1] / "integration" / "_mcp_http_server.py"

GEMINI_KEY = "AIzaSyD3" + "q7Xk2LmN9pR4tV6wY8zA1bC3dE5fG7h"  # AIza + 35 characters
AZURE_KEY = "3f9a1c0e7b2d48e6a5c1f0b9d8e7a6c5"  # 32 hex digits
OPENAI_KEY = "sk-" + "Zx81QwErTy45UiOp09AsDfGh23JkLzXc"
MCP_TOKEN = "mT0k3n.Rq7vW2xY9zB4nC6dF8gH1jK5"  # no known shape at all
HEADER_TOKEN = "hdr.9Kq2Lm7Np4RtVx0Wz"  # no known shape either
MCP_RIGHT_TOKEN = "rt.Lq3Wm8Xn2Yp6Zr9Tv"  # the one the MCP server accepts

# The provider's error quotes the key it was sent: a 500 (retried, so logged) then a 400.
ECHO = "Invalid request: the key {credential} may not use this deployment."
ECHOING_PROVIDER = (
    Fail(500, f"Upstream failed for {{credential}}. {ECHO}", echo_credential=True),
    Fail(400, ECHO, echo_credential=True),
)


@dataclass
class Captured:
    """Every text one failing run let out, by path."""

    secret: str
    texts: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class Source:
    """Where the key comes from, and the agent that uses it."""

    id: str
    secret: str
    build: Callable[[MockOpenAIServer, str], Agent]
    env: dict[str, str] = field(default_factory=dict[str, str])
    """Environment variables set for the run (LiteLLM reads the provider's)."""
    reaches_provider: bool = True
    """Whether the key is sent to the (echoing) model provider; else to the MCP server."""


def _gemini_key_in_env(server: MockOpenAIServer, _: str) -> Agent:
    # No api_key: LiteLLM takes the provider's key from OPENAI_API_KEY.
    return Agent("writer", "Write.", model="openai/test-model", api_base=server.url, retry=FAST)


def _azure_key_in_model_settings(server: MockOpenAIServer, _: str) -> Agent:
    # Azure sends the key as an `api-key` header to {api_base}/openai/deployments/...
    return Agent(
        "writer",
        "Write.",
        model="azure/test-deployment",
        api_base=server.url.removesuffix("/v1"),
        model_settings={"api_key": AZURE_KEY, "api_version": "2024-06-01"},
        retry=FAST,
    )


def _openai_key_argument(server: MockOpenAIServer, _: str) -> Agent:
    return Agent(
        "writer",
        "Write.",
        model="openai/test-model",
        api_base=server.url,
        api_key=OPENAI_KEY,
        retry=FAST,
    )


def _token_in_extra_headers(server: MockOpenAIServer, _: str) -> Agent:
    # The header given to the (OpenAI-compatible) server replaces the one from api_key.
    return Agent(
        "writer",
        "Write.",
        model="openai/test-model",
        api_base=server.url,
        api_key="sk-test-local",
        model_settings={"extra_headers": {"Authorization": f"Bearer {HEADER_TOKEN}"}},
        retry=FAST,
    )


def _mcp_header(_: MockOpenAIServer, mcp_url: str) -> Agent:
    server = MCPServer.http(
        mcp_url, headers={"Authorization": f"Bearer {MCP_TOKEN}"}, name="web", timeout=20
    )
    return Agent("writer", "Write.", model=ScriptedModel([]).model, tools=[server])


SOURCES = {
    s.id: s
    for s in (
        Source("gemini-key-in-env", GEMINI_KEY, _gemini_key_in_env, {"OPENAI_API_KEY": GEMINI_KEY}),
        Source("azure-hex-key-in-model_settings", AZURE_KEY, _azure_key_in_model_settings),
        Source("sk-key-as-api_key", OPENAI_KEY, _openai_key_argument),
        Source("token-in-extra_headers", HEADER_TOKEN, _token_in_extra_headers),
        Source("random-token-in-mcp-header", MCP_TOKEN, _mcp_header, reaches_provider=False),
    )
}

PATHS = ("message", "traceback", "partial", "stream-events", "log-lines", "span", "store", "cli")
TABLE = [pytest.param(s, p, id=f"{s}/{p}") for s in SOURCES for p in PATHS]


def _spans_text(exporter: InMemorySpanExporter) -> str:
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [span.name, str(span.status.description), repr(dict(span.attributes or {}))]
        parts += [f"{e.name} {dict(e.attributes or {})!r}" for e in span.events]
    return "\n".join(parts)


def _store_text(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return "\n".join(db.iterdump())


async def _stream(swarm: Swarm, into: list[str]) -> None:
    async for event in swarm.stream("Write a haiku."):
        into.append(describe_event(event))


async def _capture(source: Source, mcp_url: str, tmp: Path) -> Captured:
    """Run the source's agent against an echoing far end and keep what came out on each path."""
    captured = Captured(source.secret)
    texts = captured.texts
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    # swarmcore's records at every level, other libraries' from INFO: LiteLLM's own DEBUG
    # log prints raw provider responses, which swarmcore does not write.
    handler.addFilter(lambda r: r.name.startswith("swarmcore") or r.levelno >= logging.INFO)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    db = tmp / "runs.db"
    events: list[str] = []
    saved = {name: os.environ.get(name) for name in source.env}
    os.environ.update(source.env)
    try:
        with MockOpenAIServer(ECHOING_PROVIDER) as server:
            agent = source.build(server, mcp_url)
            swarm = Swarm(agent, hooks=[OpenTelemetryTracer(provider)], store=SQLiteStore(db))
            with pytest.raises(SwarmError) as caught:
                await _stream(swarm, events)
            if source.reaches_provider:  # the key did reach the provider, which echoed it back
                assert server.headers, f"the provider was never called: {caught.value}"
                assert source.secret in " ".join(server.headers[0].values())
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    error = caught.value
    texts["message"] = f"{error}\n{error!r}"
    texts["traceback"] = describe_error(error)
    assert error.partial is not None
    texts["partial"] = error.partial.model_dump_json()
    texts["stream-events"] = "\n".join(events)
    texts["log-lines"] = log.getvalue()
    texts["span"] = _spans_text(exporter)
    texts["store"] = _store_text(db)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(["runs", "show", "--store", str(db), error.partial.run_id])
    texts["cli"] = out.getvalue()
    assert status == 0, texts["cli"]
    return captured


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    """An MCP server over HTTP that quotes a rejected Authorization header in its error."""
    with script_server(MCP_HTTP_SERVER, MCP_RIGHT_TOKEN, "--echo-rejected") as url:
        yield url


@pytest.fixture(scope="module")
def capture(
    mcp_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], Awaitable[Captured]]:
    """One failing run per source, made when a row first needs it and shared by its rows."""
    done: dict[str, Captured] = {}

    async def get(source_id: str) -> Captured:
        if source_id not in done:
            tmp = tmp_path_factory.mktemp(source_id)
            done[source_id] = await _capture(SOURCES[source_id], mcp_url, tmp)
        return done[source_id]

    return get


@pytest.mark.parametrize(("source", "path"), TABLE)
async def test_an_echoed_key_never_leaves_swarmcore(
    capture: Callable[[str], Awaitable[Captured]], source: str, path: str
) -> None:
    captured = await capture(source)
    text = captured.texts[path]
    assert text.strip(), f"nothing was captured on {path}"
    assert captured.secret not in text, f"the key leaked on {path}:\n{text}"
    assert captured.secret[-12:] not in text, f"part of the key leaked on {path}:\n{text}"


# --- redact() itself: what is replaced, and what is left alone ---------------------------------

REDACT_TABLE = [
    pytest.param(f"bad key {AZURE_KEY}.", (AZURE_KEY,), "bad key ***.", id="hex-value"),
    pytest.param(f"got {GEMINI_KEY}", (GEMINI_KEY,), "got ***", id="aiza-value"),
    pytest.param(f"got {OPENAI_KEY}", (), "got sk-***", id="sk-shape-without-its-value"),
    pytest.param("got sk-proj-****abcd", (), "got sk-***", id="masked-sk-shape"),
    pytest.param("the token abc is short", ("abc",), "the token abc is short", id="short-kept"),
    pytest.param("ab1234567 ab12345678", ("ab12345678",), "ab1234567 ***", id="min-length-8"),
    pytest.param(
        "Bearer tok-long-value-1 and tok-long-value-1",
        ("Bearer tok-long-value-1", "tok-long-value-1"),
        "*** and ***",
        id="longest-first",
    ),
    pytest.param("nothing here", (None, ""), "nothing here", id="none-and-empty"),
    pytest.param(
        "dsn postgresql://app:pw@db/app", (), "dsn postgresql://***@db/app", id="url-userinfo"
    ),
]


@pytest.mark.parametrize(("text", "secrets", "expected"), REDACT_TABLE)
def test_redact(text: str, secrets: tuple[str | None, ...], expected: str) -> None:
    assert redact(text, *secrets) == expected


NAME_TABLE = [
    *(
        pytest.param(name, True, id=name)
        for name in (
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "AZURE_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "HF_TOKEN",
            "WATSONX_APIKEY",
            "api_key",
            "azure_ad_token",
            "x-api-key",
            "Authorization",
            "PGPASSWORD",
            "MYSQL_PWD",
            "DB_PASS",
            "GITHUB_PAT",
            "GPG_PASSPHRASE",
            "SSH_PRIVATE_KEY",
            "SENTRY_DSN",
        )
    ),
    *(
        pytest.param(name, False, id=name)
        for name in (
            "max_tokens",
            "PATH",
            "KEYBOARD_LAYOUT",
            "AZURE_API_BASE",
            "api_version",
            "PWD",
            "OLDPWD",
            "PASSENGER_APP_ENV",
            "COMPASS_HOME",
            "TOKENIZERS_PARALLELISM",
        )
    ),
]


@pytest.mark.parametrize(("name", "secret"), NAME_TABLE)
def test_which_names_hold_a_credential(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_secret_settings_are_found_at_any_depth_headers_whole() -> None:
    settings = {
        "api_key": AZURE_KEY,
        "temperature": 0.2,
        "api_version": "2024-06-01",
        "extra_headers": {"Authorization": f"Bearer {HEADER_TOKEN}", "X-Team": "research-team"},
        "vertex": {"vertex_credentials": GEMINI_KEY},
    }
    found = secret_values(api_key=OPENAI_KEY, settings=settings)
    assert sorted(found) == sorted(
        [OPENAI_KEY, AZURE_KEY, f"Bearer {HEADER_TOKEN}", HEADER_TOKEN, "research-team", GEMINI_KEY]
    )


# --- an MCP tool's error quoting the header: it goes back to the model, redacted ----------------

TOOL_PATHS = ("model-request", "result", "stream-events", "log-lines", "span", "store")


async def _capture_tool_echo(mcp_url: str, tmp: Path) -> dict[str, str]:
    server = MCPServer.http(
        mcp_url, headers={"Authorization": f"Bearer {MCP_RIGHT_TOKEN}"}, name="web", timeout=20
    )

    def answer(request: RecordedRequest) -> Reply:
        return Reply(text="done") if request.tool_results else Reply.tool("refuse")

    model = FunctionModel(answer)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    db = tmp / "runs.db"
    swarm = Swarm(
        Agent("writer", "Write.", model=model.model, tools=[server]),
        hooks=[OpenTelemetryTracer(provider)],
        store=SQLiteStore(db),
    )
    events: list[str] = []
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    logger = logging.getLogger("swarmcore")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        await _stream(swarm, events)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    (record,) = [c for r in model.requests for c in r.tool_results]
    assert "may not call this tool" in str(record), record  # the tool did fail, quoting
    return {
        "model-request": repr(model.requests[-1]),
        "result": events[-1],
        "stream-events": "\n".join(events),
        "log-lines": log.getvalue(),
        "span": _spans_text(exporter),
        "store": _store_text(db),
    }


@pytest.fixture(scope="module")
def tool_echo(
    mcp_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[], Awaitable[dict[str, str]]]:
    done: list[dict[str, str]] = []

    async def get() -> dict[str, str]:
        if not done:
            done.append(await _capture_tool_echo(mcp_url, tmp_path_factory.mktemp("tool")))
        return done[0]

    return get


@pytest.mark.parametrize("path", TOOL_PATHS)
async def test_an_mcp_tool_error_quoting_its_header_is_redacted(
    tool_echo: Callable[[], Awaitable[dict[str, str]]], path: str
) -> None:
    text = (await tool_echo())[path]
    assert text.strip(), f"nothing was captured on {path}"
    assert MCP_RIGHT_TOKEN not in text, f"the header leaked on {path}:\n{text}"
