"""Hostile A2A peers against RemoteAgent: broken streams, compression bombs, forged usage, cards
that point elsewhere.

A peer here is a small Starlette app on 127.0.0.1 (:func:`hostile_peer`): each case is a path
with its own agent card and its own answer to a task, written byte by byte, so the peer can do
what no honest server would. Each table row asserts the error RemoteAgent raises and that
nothing is stored as a success; a regression fails by the row's name.
"""

from __future__ import annotations

import asyncio
import json
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from swarmcore import Agent, Swarm, events
from swarmcore._policies import RetryPolicy
from swarmcore.a2a import RemoteAgent, RemoteAgentError
from swarmcore.errors import BudgetExceeded
from swarmcore.store import SQLiteStore
from swarmcore.testing import FunctionModel, RecordedRequest, Reply
from tests.a2a.servers import Remote, a2a_server
from tests.serving import bound_socket, serve

NO_RETRY = RetryPolicy(max_retries=0)
ONE_RETRY = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.01, jitter=0)

# --- the hostile peer ------------------------------------------------------------------------

TASK = {"id": "t1", "contextId": "c1"}


def _event(result: object) -> bytes:
    """One server-sent event carrying a JSON-RPC result."""
    return (
        b"data: " + json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode() + b"\n\n"
    )


def _status(state: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"taskId": "t1", "contextId": "c1", "status": {"state": state}}
    if metadata is not None:
        update["metadata"] = metadata
    return {"statusUpdate": update}


def _chunk(text: str, *, append: bool = False) -> dict[str, Any]:
    artifact = {"artifactId": "answer", "parts": [{"text": text}]}
    return {
        "artifactUpdate": {
            "taskId": "t1",
            "contextId": "c1",
            "artifact": artifact,
            "append": append,
        }
    }


SUBMITTED = _event({"task": {**TASK, "status": {"state": "TASK_STATE_SUBMITTED"}}})
WORKING = _event(_status("TASK_STATE_WORKING"))
HALF = _event(_chunk("The answer is"))
COMPLETED = _event(_status("TASK_STATE_COMPLETED"))


def _v03_status(state: str, *, final: bool) -> bytes:
    update = {"taskId": "t1", "contextId": "c1", "status": {"state": state}, "final": final}
    return _event({"kind": "status-update", **update})


V03_SUBMITTED = _event({"kind": "task", **TASK, "status": {"state": "submitted"}})
V03_WORKING = _v03_status("working", final=False)
V03_HALF = _event(
    {
        "kind": "artifact-update",
        "taskId": "t1",
        "contextId": "c1",
        "artifact": {"artifactId": "answer", "parts": [{"kind": "text", "text": "The answer is"}]},
    }
)
V03_COMPLETED = _v03_status("completed", final=True)
SEND = {"1.0": "SendStreamingMessage", "0.3": "message/stream"}
GET = {"1.0": "GetTask", "0.3": "tasks/get"}
CANCEL = {"1.0": "CancelTask", "0.3": "tasks/cancel"}
SSE = "text/event-stream"


@dataclass
class Answer:
    """What the peer answers a task with: a body (sent in these chunks), its type and encoding."""

    chunks: list[bytes]
    content_type: str = SSE
    encoding: str | None = None
    status: int = 200
    between: Callable[[int], None] | None = None
    """Called (in the server's thread) before chunk N is sent, N >= 1: a peer that waits."""
    cut: bool = False
    """Drop the connection after the chunks, mid-body (no end of the chunked encoding)."""


@dataclass
class Peer:
    """A running hostile peer: its base URL, the answers it gives, what it saw."""

    url: str
    answers: dict[str, Answer] = field(default_factory=dict[str, Answer])
    cards: dict[str, str] = field(default_factory=dict[str, str])
    """A case's card names this endpoint URL instead of the case's own."""
    card_answers: dict[str, Answer] = field(default_factory=dict[str, Answer])
    """A case whose card itself is a hostile answer."""
    versions: dict[str, str] = field(default_factory=dict[str, str])
    """The A2A version a case's card names ("1.0" unless said)."""
    methods: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(case, JSON-RPC method) of every task request, in order."""

    def agent(self, case: str, **settings: Any) -> RemoteAgent:
        settings.setdefault("retries", NO_RETRY)
        return RemoteAgent(f"{self.url}/{case}", name=settings.pop("name", "remote"), **settings)


def _card(endpoint: str, version: str) -> dict[str, Any]:
    card = AgentCard(
        name="Hostile",
        description="Answers badly.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version=version)
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="x", name="x", description="x", tags=["x"])],
    )
    return MessageToDict(card)


class _Cut(Exception):
    """Raised mid-body: uvicorn drops the connection without ending the chunked body."""


def _streamed(answer: Answer) -> Response:
    headers = {"content-encoding": answer.encoding} if answer.encoding else {}

    async def chunks() -> AsyncIterator[bytes]:
        for i, chunk in enumerate(answer.chunks):
            if i and answer.between is not None:
                await asyncio.to_thread(answer.between, i)
            yield chunk
        if answer.cut:
            raise _Cut

    return StreamingResponse(
        chunks(), status_code=answer.status, media_type=answer.content_type, headers=headers
    )


def _app(peer: Peer) -> Starlette:
    async def card(request: Request) -> Response:
        case = request.path_params["case"]
        if case in peer.card_answers:
            return _streamed(peer.card_answers[case])
        endpoint = peer.cards.get(case, f"{peer.url}/{case}/")
        return JSONResponse(_card(endpoint, peer.versions.get(case, "1.0")))

    async def task(request: Request) -> Response:
        case = request.path_params["case"]
        body = json.loads(await request.body())
        method = body.get("method", "")
        peer.methods.append((case, method))
        if method in ("GetTask", "CancelTask"):  # the task is still at work, as far as it says
            state = "TASK_STATE_CANCELED" if method == "CancelTask" else "TASK_STATE_WORKING"
            result = {**TASK, "status": {"state": state}}
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": result})
        if method in ("tasks/get", "tasks/cancel"):  # the same, in A2A 0.3's words
            state = "canceled" if method == "tasks/cancel" else "working"
            result = {"kind": "task", **TASK, "status": {"state": state}}
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": result})
        return _streamed(peer.answers[case])

    return Starlette(
        routes=[
            Route("/{case}/.well-known/agent-card.json", card),
            Route("/{case}/", task, methods=["POST"]),
            Route("/{case}", task, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def peer() -> Generator[Peer]:
    sock = bound_socket()
    peer = Peer(f"http://127.0.0.1:{sock.getsockname()[1]}")
    with serve(_app(peer), sock=sock, lifespan="off", grace=1):
        yield peer


def stored(path: Path) -> tuple[str | None, list[str]]:
    """The status of the only run stored at ``path``, and the agents it stored results of."""
    store = SQLiteStore(path)
    try:
        [summary] = store.list_runs()
        record = store.get_run(summary.run_id)
        assert record is not None
        return record.status, sorted(r.agent_name for r in record.results)
    finally:
        store.close()


def _bomb(size: int, wbits: int) -> bytes:
    """``size`` zero bytes compressed (gzip for wbits 31, zlib for 15, raw deflate for -15)."""
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return z.compress(b"\0" * size) + z.flush()


BOMB = 20_000_000
"""What a bomb inflates to: a few kilobytes on the wire, far past any cap below."""
LIMIT_CHARS = 1_000
"""max_output_chars in the table: a response may hold 1,000 * 4 + 65,536 bytes decoded."""
LIMIT = "69,536 bytes once decoded"


# --- points 6 and 7: a reply that is no answer is never a success; a cap counts decoded bytes --


@dataclass(frozen=True)
class Broken:
    """A hostile answer to a task, and the error RemoteAgent must raise for it."""

    answer: Answer
    error: str
    """A regex the error message matches."""
    retryable: bool
    cancels: bool = False
    """Whether the task the remote started is cancelled, not left running."""
    dialect: str = "1.0"
    """The A2A version the peer's card names (the SDK speaks 0.3's methods and shapes to it)."""


BROKEN = [
    pytest.param(
        Broken(
            Answer([SUBMITTED, WORKING, HALF]),
            r"ended its event stream before the task finished \(still working\)",
            retryable=True,
            cancels=True,
        ),
        id="stream-ends-before-the-final-status",
    ),
    pytest.param(
        Broken(
            Answer([SUBMITTED, WORKING, HALF, COMPLETED[:-30]]),
            r"ended its event stream before the task finished \(still working\)",
            retryable=True,
            cancels=True,
        ),
        id="stream-cut-inside-the-final-event",
    ),
    pytest.param(
        Broken(Answer([]), r"ended its event stream before the task began", retryable=True),
        id="empty-event-stream",
    ),
    pytest.param(
        Broken(
            Answer([b": keep-alive\n\n", b": keep-alive\n\n"]),
            r"ended its event stream before the task began",
            retryable=True,
        ),
        id="event-stream-of-keep-alives-only",
    ),
    pytest.param(
        Broken(
            Answer([SUBMITTED, WORKING, HALF], cut=True),
            r"broke off the connection mid-reply \(RemoteProtocolError",
            retryable=True,
        ),
        id="connection-dropped-mid-body",
    ),
    pytest.param(
        Broken(
            Answer([], content_type="application/json"),
            r"sent an empty reply \(application/json\)",
            retryable=True,
        ),
        id="empty-json-body",
    ),
    pytest.param(
        Broken(
            Answer([b"<html><body>Please sign in</body></html>"], content_type="text/html"),
            r"not JSON \(text/html, beginning '<html><body>Please sign in.*A2A endpoint\?",
            retryable=False,
        ),
        id="html-page-with-200",
    ),
    pytest.param(
        Broken(
            Answer([b"OK"], content_type="text/plain"),
            r"not JSON \(text/plain, beginning 'OK'\)",
            retryable=False,
        ),
        id="plain-text-with-200",
    ),
    pytest.param(
        Broken(
            Answer([SUBMITTED, COMPLETED]),
            r"finished without an answer",
            retryable=False,
        ),
        id="completed-without-an-answer",
    ),
    pytest.param(
        Broken(
            Answer(
                [
                    b'{"jsonrpc":"2.0","id":"1","result":{"message":'
                    b'{"messageId":"m","role":"ROLE_AGENT","parts":[]}}}'
                ],
                content_type="application/json",
            ),
            r"finished without an answer",
            retryable=False,
        ),
        id="json-where-a-stream-was-asked-with-an-empty-message",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, 31)], encoding="gzip"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
        ),
        id="gzip-bomb-event-stream",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, 31)], content_type="application/json", encoding="gzip"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
        ),
        id="gzip-bomb-json-reply",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, 15)], encoding="deflate"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
        ),
        id="deflate-bomb",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, -15)], encoding="deflate"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
        ),
        id="raw-deflate-bomb",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB // 2, 31)[:-8], _bomb(BOMB // 2, 31)], encoding="gzip"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
        ),
        id="gzip-bomb-in-two-network-chunks",
    ),
    pytest.param(
        Broken(
            Answer([b"\x1f\x8b\x08\x00not gzip at all"], encoding="gzip"),
            r"sent a body that does not decode as gzip",
            retryable=False,
        ),
        id="corrupt-gzip",
    ),
    pytest.param(
        Broken(
            Answer([b"\x0b\x02\x80{}\x03"], content_type="application/json", encoding="br"),
            r"sent a body encoded as 'br', which was not asked for",
            retryable=False,
        ),
        id="encoding-not-asked-for",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, 31)], encoding="gzip, gzip"),
            r"sent a body encoded as 'gzip, gzip', which was not asked for",
            retryable=False,
        ),
        id="stacked-encodings",
    ),
    pytest.param(
        Broken(
            Answer([V03_SUBMITTED, V03_WORKING, V03_HALF]),
            r"ended its event stream before the task finished \(still working\)",
            retryable=True,
            cancels=True,
            dialect="0.3",
        ),
        id="a2a-0.3-stream-ends-before-the-final-status",
    ),
    pytest.param(
        Broken(
            Answer([V03_SUBMITTED, V03_WORKING, V03_HALF, V03_COMPLETED[:-30]]),
            r"ended its event stream before the task finished \(still working\)",
            retryable=True,
            cancels=True,
            dialect="0.3",
        ),
        id="a2a-0.3-stream-cut-inside-the-final-event",
    ),
    pytest.param(
        Broken(
            Answer([]),
            r"ended its event stream before the task began",
            retryable=True,
            dialect="0.3",
        ),
        id="a2a-0.3-empty-event-stream",
    ),
    pytest.param(
        Broken(
            Answer([_event([1, 2]), _event({"kind": "mystery"})]),  # the SDK skips both
            r"ended its event stream before the task began",
            retryable=True,
            dialect="0.3",
        ),
        id="a2a-0.3-stream-of-results-it-cannot-read",
    ),
    pytest.param(
        Broken(
            Answer([], content_type="application/json"),
            r"sent an empty reply \(application/json\)",
            retryable=True,
            dialect="0.3",
        ),
        id="a2a-0.3-empty-json-body",
    ),
    pytest.param(
        Broken(
            Answer([_bomb(BOMB, 31)], encoding="gzip"),
            rf"sent a response of more than {LIMIT}",
            retryable=False,
            dialect="0.3",
        ),
        id="a2a-0.3-gzip-bomb-event-stream",
    ),
]


@pytest.mark.parametrize("case", BROKEN)
async def test_a_broken_answer_is_an_error_and_never_stored_as_a_success(
    peer: Peer, case: Broken, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.id
    peer.answers[name] = case.answer
    peer.versions[name] = case.dialect
    remote = peer.agent(name, retries=ONE_RETRY, timeout=10, max_output_chars=LIMIT_CHARS)
    before = len(peer.methods)
    with pytest.raises(RemoteAgentError, match=case.error) as caught:
        await Swarm(remote, store=tmp_path / "runs.db").run("go")

    assert caught.value.retryable is case.retryable
    assert stored(tmp_path / "runs.db") == ("failed", [])
    methods = [method for case_, method in peer.methods[before:] if case_ == name]
    sends = methods.count(SEND[case.dialect])
    assert sends == (2 if case.retryable else 1)  # a transient failure is tried again, once
    assert GET[case.dialect] not in methods  # a cut stream is not taken for a task at work
    assert methods.count(CANCEL[case.dialect]) == (sends if case.cancels else 0)


async def test_a_card_that_inflates_past_the_cap_is_refused(peer: Peer) -> None:
    peer.card_answers["card-bomb"] = Answer(
        [_bomb(BOMB, 31)], content_type="application/json", encoding="gzip"
    )
    remote = peer.agent("card-bomb", max_output_chars=LIMIT_CHARS)
    with pytest.raises(RemoteAgentError, match=rf"sent a response of more than {LIMIT}"):
        await Swarm(remote).run("go")


async def test_a_json_answer_to_a_stream_request_is_read_as_the_answer(peer: Peer) -> None:
    """The other side of the table: one JSON reply where a stream was asked is a fine answer."""
    done = {**TASK, "status": {"state": "TASK_STATE_COMPLETED"}}
    done["artifacts"] = [{"artifactId": "a", "parts": [{"text": "Forty-two."}]}]
    reply = {"jsonrpc": "2.0", "id": "1", "result": {"task": done}}
    peer.answers["json-reply"] = Answer([json.dumps(reply).encode()], "application/json")
    assert (await Swarm(peer.agent("json-reply")).run("go")).output == "Forty-two."


async def test_a_compressed_answer_within_the_cap_is_read(peer: Peer) -> None:
    body = b"".join([SUBMITTED, WORKING, HALF, _event(_chunk(" 42.", append=True)), COMPLETED])
    peer.answers["gzip-ok"] = Answer([zlib.compress(body, wbits=31)], encoding="gzip")
    result = await Swarm(peer.agent("gzip-ok", max_output_chars=LIMIT_CHARS)).run("go")
    assert result.output == "The answer is 42."


async def test_a_sibling_agent_keeps_going_while_a_bomb_is_read() -> None:
    """The bomb's first half arrives and is read; the parallel agent runs to its end while the
    stream is open; then the second half passes the cap and the remote fails. By event order."""
    order: list[str] = []
    working = asyncio.Event()  # the remote's stream has been read into
    sibling_done = threading.Event()  # the peer sends the rest of the bomb only then

    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = z.compress(SUBMITTED + WORKING + b": " + b"\0" * 30_000) + z.flush(zlib.Z_SYNC_FLUSH)
    rest = z.compress(b"\0" * BOMB) + z.flush()
    sock = bound_socket()
    peer = Peer(f"http://127.0.0.1:{sock.getsockname()[1]}")
    peer.answers["bomb"] = Answer(
        [first, rest], encoding="gzip", between=lambda _: sibling_done.wait(30) and None
    )

    async def sibling(request: RecordedRequest) -> str:
        await working.wait()
        return "Sibling done."

    def hook(event: events.Event) -> None:
        if isinstance(event, events.RemoteStatus) and event.state == "working":
            order.append("remote working")
            working.set()
        if isinstance(event, events.AgentFinished):
            order.append(f"{event.agent_name} {'failed' if event.error else 'finished'}")
            if event.agent_name == "sibling":
                sibling_done.set()

    model = FunctionModel(sibling)
    flow = peer.agent("bomb", max_output_chars=LIMIT_CHARS, timeout=30) | Agent(
        "sibling", "y", model=model.model
    )
    refused = pytest.raises(RemoteAgentError, match=rf"sent a response of more than {LIMIT}")
    with serve(_app(peer), sock=sock, lifespan="off", grace=1), refused:
        await Swarm(flow, hooks=[hook]).run("go")
    assert order == ["remote working", "sibling finished", "remote failed"]


# --- point 16: a remote's usage never hands the budget back ------------------------------------


def _reporting(where: str, usage: dict[str, Any]) -> Answer:
    """An answer that reports ``usage`` in the task's, a status's or an artifact's metadata."""
    metadata = {"usage": usage}
    task = {**TASK, "status": {"state": "TASK_STATE_SUBMITTED"}}
    chunk = _chunk("The answer.")
    final = _status("TASK_STATE_COMPLETED")
    if where == "task":
        task["metadata"] = metadata
    elif where == "artifact":
        chunk["artifactUpdate"]["artifact"]["metadata"] = metadata
    else:
        final = _status("TASK_STATE_COMPLETED", metadata)
    return Answer([_event({"task": task}), _event(chunk), _event(final)])


USAGES = [
    pytest.param("status", {"prompt_tokens": -9_940_000, "completion_tokens": 0}, 0,
                 id="negative-prompt-tokens"),
    pytest.param("task", {"prompt_tokens": 10, "completion_tokens": -9_940_000}, 0,
                 id="negative-completion-tokens"),
    pytest.param("artifact", {"input_tokens": -5_000_000, "output_tokens": 3}, 0,
                 id="negative-input-tokens-in-an-artifact"),
    pytest.param("status", {"prompt_tokens": 1.5, "completion_tokens": 2}, 0,
                 id="fractional-tokens"),
    pytest.param("status", {"prompt_tokens": "100", "completion_tokens": 2}, 0,
                 id="tokens-as-a-string"),
    pytest.param("status", {"prompt_tokens": 7, "completion_tokens": 5, "cost": -50.0}, 12,
                 id="negative-cost-tokens-kept"),
    pytest.param("status", {"prompt_tokens": 7, "completion_tokens": 5}, 12,
                 id="honest-usage-is-counted"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "usage", "counted"), USAGES)
async def test_usage_a_remote_reports_never_undoes_the_budget(
    peer: Peer,
    where: str,
    usage: dict[str, Any],
    counted: int,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = request.node.callspec.id
    peer.answers[name] = _reporting(where, usage)
    spender = FunctionModel(
        lambda _: Reply(text="Spent.", prompt_tokens=30_000, completion_tokens=0)
    )
    last = FunctionModel(lambda _: "Should not run.")
    flow = (
        peer.agent(name)
        >> Agent("a", "x", model=spender.model)
        >> Agent("b", "y", model=last.model)
    )

    caplog.set_level("DEBUG", logger="swarmcore.a2a")
    with pytest.raises(BudgetExceeded) as caught:
        await Swarm(flow, max_tokens=30_000).run("go")
    assert caught.value.agent_name == "b"  # a spent the budget; the remote gave none of it back
    remote, _ = caught.value.partial.history
    assert remote.output == "The answer."  # the answer is kept; only the usage is not believed
    assert remote.token_usage.total_tokens == counted
    assert remote.llm_calls[0].cost is None
    ignored = "ignored the usage it reported" in caplog.text
    assert ignored is (counted == 0)


# --- point 17: credentials go only where the caller said ---------------------------------------

TOKEN = "Bearer s3cret-token-for-the-card-origin"


@pytest.fixture(scope="module")
def other() -> Generator[Remote]:
    """A real A2A agent on another origin (another port), recording the Authorization it gets."""
    with a2a_server() as server:
        yield server


def _elsewhere(peer: Peer, other: Remote) -> dict[str, str]:
    host, port = peer.url.removeprefix("http://").split(":")
    assert host == "127.0.0.1"
    return {
        "another-port": f"{other.url}/",
        "another-host": f"http://localhost:{port}/elsewhere/",
        "another-scheme": f"https://127.0.0.1:{port}/elsewhere/",
        "another-host-by-userinfo-trick": f"http://127.0.0.1:{port}@localhost:{port}/x/",
    }


@pytest.mark.parametrize(
    "where", ["another-port", "another-host", "another-scheme", "another-host-by-userinfo-trick"]
)
async def test_headers_never_follow_a_card_to_another_origin(
    peer: Peer, other: Remote, where: str, tmp_path: Path
) -> None:
    endpoint = _elsewhere(peer, other)[where]
    case = f"card-{where}"
    peer.cards[case] = endpoint
    seen_before, posts_before = len(other.seen.authorization), len(peer.methods)
    remote = peer.agent(case, headers={"Authorization": TOKEN})
    with pytest.raises(RemoteAgentError) as caught:
        await Swarm(remote, store=tmp_path / "runs.db").run("hello")

    message = str(caught.value)
    port = peer.url.rsplit(":", 1)[1]
    target = {
        "another-port": f"http://127.0.0.1:{other.url.rsplit(':', 1)[1]}",
        "another-host": f"http://localhost:{port}",
        "another-scheme": f"https://127.0.0.1:{port}",
        "another-host-by-userinfo-trick": f"http://localhost:{port}",
    }[where]
    assert (
        f"naming its endpoint on {target}, another origin than http://127.0.0.1:{port}" in message
    )
    assert f"trusted_origins=['{target}']" in message
    assert not caught.value.retryable
    assert "s3cret" not in message
    assert len(other.seen.authorization) == seen_before  # nothing at all was sent there
    assert peer.methods[posts_before:] == []
    assert stored(tmp_path / "runs.db") == ("failed", [])


async def test_an_origin_named_by_the_caller_gets_the_headers(peer: Peer, other: Remote) -> None:
    peer.cards["card-trusted"] = f"{other.url}/"
    seen_before = len(other.seen.authorization)
    remote = peer.agent(
        "card-trusted", headers={"Authorization": TOKEN}, trusted_origins=[other.url]
    )
    assert (await Swarm(remote).run("hello")).output == "HELLO"
    assert set(other.seen.authorization[seen_before:]) == {TOKEN}


async def test_without_headers_a_card_may_name_any_endpoint(peer: Peer, other: Remote) -> None:
    peer.cards["card-open"] = f"{other.url}/"
    assert (await Swarm(peer.agent("card-open")).run("hello")).output == "HELLO"
