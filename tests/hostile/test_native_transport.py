"""A hostile OpenAI-compatible server against the native backend's HTTP: redirects, sizes, bombs.

Each row is what a server sent (as raw bytes on a socket: a real server could
send them) and what the agent's run must end with: a reply read as before, or
an error that says what the server did. The key, the organization and the
prompt never reach another origin; no reply makes a run hold more than about
twice ``max_reply_bytes`` (checked by the error raised at the limit, never by
measuring memory); ``call_timeout`` ends an endless stream (checked by the
timeout's error and by no delta published after it, never by a stopwatch).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import itertools
import json
import socket
import socketserver
import threading
import time
import weakref
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from swarmcore import Agent, ModelError, Swarm, UserError
from swarmcore.events import Event, ModelCallFinished, TextDelta
from swarmcore.llm import _reading as reading

KEY = "sk-hostile-transport-0123456789abcdef"
AZURE_KEY = "azure-key-0123456789abcdef0123"
ORG = "org-secret-organization-42"
PROMPT = "the confidential prompt 7f3a"
MIB = 2**20


@dataclass
class Seen:
    """One request a server received."""

    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """A raw server's base URL and the requests it received."""

    url: str
    port: int
    seen: list[Seen] = field(default_factory=list[Seen])


Respond = Callable[[socket.socket, Seen, "Server"], None]


@contextmanager
def raw_server(respond: Respond) -> Iterator[Server]:
    """A server on 127.0.0.1 whose every request ``respond`` answers by writing raw bytes."""
    server_box: list[Server] = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            size = int(headers.get("content-length") or 0)
            while len(rest) < size:
                got = conn.recv(65536)
                if not got:
                    break
                rest += got
            seen = Seen(lines[0].split(" ")[1], headers, rest)
            server_box[0].seen.append(seen)
            with contextlib.suppress(OSError):  # the client hung up: the test checks why
                respond(conn, seen, server_box[0])

    class Threaded(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    httpd = Threaded(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    server_box.append(Server(f"http://127.0.0.1:{port}/v1", port))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server_box[0]
    finally:
        httpd.shutdown()
        httpd.server_close()


def http(status: int, body: bytes = b"", *headers: str, length: bool = True) -> bytes:
    """A whole HTTP/1.1 response that closes its connection."""
    lines = [f"HTTP/1.1 {status} X", "Connection: close", *headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def completion(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"choices": [choice], "usage": usage}).encode()


def sse(*texts: str) -> bytes:
    """A whole stream: a delta per text, a finish, usage, ``[DONE]``."""
    out = b""
    for text in texts:
        chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        out += f"data: {json.dumps(chunk)}\n\n".encode()
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    out += f"data: {json.dumps(finish)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode()
    return out


def agent(base: str, name: str = "a", **kwargs: Any) -> Agent:
    settings = {
        "extra_headers": {"api-key": AZURE_KEY, "x-api-key": AZURE_KEY},
        "organization": ORG,
        **kwargs.pop("model_settings", {}),
    }
    return Agent(
        name,
        "x",
        model="openai/gpt-4o-mini",
        api_base=base,
        api_key=KEY,
        retry=kwargs.pop("retry", 0),
        model_settings=settings,
        **kwargs,
    )


async def failure(base: str, *, stream: bool = False, **kwargs: Any) -> ModelError:
    """The ModelError an agent's run at ``base`` ends with."""
    one = agent(base, **kwargs)
    with pytest.raises(ModelError) as caught:
        await (drain(Swarm(one)) if stream else one.run(PROMPT))
    return caught.value


async def drain(swarm: Swarm) -> None:
    async for _ in swarm.stream(PROMPT, text=True):
        pass


def assert_no_secret(text: str) -> None:
    for secret in (KEY, AZURE_KEY, ORG):
        assert secret not in text


# --- point 2: redirects never carry the request to another origin ------------------------

CROSS_ORIGIN = [
    pytest.param(302, "http://127.0.0.1:{other}/v1/chat/completions", id="302-to-another-port"),
    pytest.param(307, "http://127.0.0.1:{other}/v1/chat/completions", id="307-to-another-port"),
    pytest.param(308, "http://127.0.0.1:{other}/steal", id="308-to-another-port"),
    pytest.param(301, "http://localhost:{other}/v1/chat/completions", id="301-to-another-host"),
    pytest.param(
        303, "//127.0.0.1:{other}/v1/chat/completions", id="303-scheme-relative-elsewhere"
    ),
    pytest.param(307, "https://127.0.0.1:{port}/v1/chat/completions", id="307-to-https-same-host"),
]


@pytest.mark.parametrize(("status", "location"), CROSS_ORIGIN)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_redirect_to_another_origin_is_refused_and_names_both_urls(
    status: int, location: str, stream: bool
) -> None:
    def other_respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        conn.sendall(
            http(200, completion("the other origin's answer"), "Content-Type: application/json")
        )

    with raw_server(other_respond) as other:

        def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
            target = location.format(other=other.port, port=server.port)
            conn.sendall(http(status, b"", f"Location: {target}"))

        with raw_server(respond) as first:
            error = await failure(first.url, stream=stream)
    text = str(error)
    shown = location.format(other=other.port, port=first.port).split("?")[0]
    shown = shown if "://" in shown else "http:" + shown
    assert f"redirected the request from {first.url}/chat/completions to {shown}" in text
    assert "another origin" in text
    assert "could not connect" not in text
    assert not error.retryable
    assert other.seen == []  # neither key, organization nor prompt went there
    assert len(first.seen) == 1
    assert_no_secret(text)


@pytest.mark.parametrize(
    "status", [301, 302, 303, 307, 308], ids=lambda s: f"{s}-same-origin-followed"
)
async def test_a_redirect_within_the_origin_is_followed_with_the_whole_request(
    status: int,
) -> None:
    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        if seen.path == "/v1/chat/completions":
            conn.sendall(http(status, b"", "Location: /v2/chat/completions"))
        else:
            conn.sendall(
                http(200, completion("moved and answered"), "Content-Type: application/json")
            )

    with raw_server(respond) as server:
        result = await agent(server.url).run(PROMPT)
    assert result.output == "moved and answered"
    assert [s.path for s in server.seen] == ["/v1/chat/completions", "/v2/chat/completions"]
    resent = server.seen[1]
    assert PROMPT in resent.body.decode()  # POSTed again, body and all
    assert resent.headers["authorization"] == f"Bearer {KEY}"


# --- point 18a: a server that was reached and misbehaved is not "could not connect" ------

MISBEHAVING = [
    pytest.param(
        lambda c, s, srv: c.sendall(http(307, b"", "Location: /v1/chat/completions")),
        "redirected the request more than 3 times",
        id="redirect-loop",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(http(302, b"")),
        "answered 302 (a redirect) without saying where to",
        id="redirect-without-location",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(b"HTTP/1.1 two hundred OK\r\n\r\n"),
        "answered with a malformed HTTP response",
        id="bad-status-line",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"),
        "answered with a malformed HTTP response",
        id="not-http-at-all",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(http(200, completion("x"), "X-Huge: " + "h" * 100_000)),
        "answered with a malformed HTTP response",
        id="huge-header",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(http(200, b"{}", *(f"X-H{i}: v" for i in range(1000)))),
        "answered with a malformed HTTP response",
        id="thousand-headers",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{"cho'),
        "cut its reply short",
        id="body-cut-short",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(
            http(200, b"\x1f\x8b\x08\x00garbage-not-gzip", "Content-Encoding: gzip")
        ),
        "sent a body its Content-Encoding cannot decode",
        id="gzip-that-is-not",
    ),
    pytest.param(
        lambda c, s, srv: c.sendall(http(200, b"\x00\x01", "Content-Encoding: br")),
        "sent a body in Content-Encoding 'br', which it was not asked for",
        id="encoding-not-asked-for",
    ),
]


@pytest.mark.parametrize(("respond", "said"), MISBEHAVING)
async def test_a_misbehaving_server_is_said_to_have_answered_not_to_be_unreachable(
    respond: Respond, said: str
) -> None:
    with raw_server(respond) as server:
        error = await failure(server.url)
    text = str(error)
    assert said in text
    assert f"at {server.url}/chat/completions" in text
    assert "could not connect" not in text
    assert_no_secret(text)


# --- points 7 and 8: what a reply may inflate to, and its size --------------------------


def deflated(size: int, *, wbits: int, prefix: bytes = b"", fill: bytes = b"a") -> bytes:
    """``prefix`` and then ``fill`` up to ``size`` bytes, compressed (a bomb, when large)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    out = [packer.compress(prefix)]
    block = fill * (MIB // len(fill))
    for _ in range(size // MIB):
        out.append(packer.compress(block))
    out.append(packer.flush())
    return b"".join(out)


GZIP, ZLIB, RAW = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS, -zlib.MAX_WBITS
JSON_HEAD = b'{"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "'


def bomb(encoding: str, wbits: int, *, stream: bool) -> Respond:
    """64 MiB of reply (a valid one, if it were read whole) as 64 KiB or so of compressed bytes."""
    if stream:
        delta = json.dumps({"choices": [{"index": 0, "delta": {"content": "b" * 1000}}]})
        body = deflated(64 * MIB, wbits=wbits, fill=f"data: {delta}\n\n".encode())
    else:
        body = deflated(64 * MIB, wbits=wbits, prefix=JSON_HEAD)
    kind = "text/event-stream" if stream else "application/json"

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        conn.sendall(http(200, body, f"Content-Type: {kind}", f"Content-Encoding: {encoding}"))

    return respond


BOMBS = [
    pytest.param("gzip", GZIP, False, id="gzip-json-bomb"),
    pytest.param("deflate", ZLIB, False, id="deflate-json-bomb"),
    pytest.param("deflate", RAW, False, id="raw-deflate-json-bomb"),
    pytest.param("gzip", GZIP, True, id="gzip-stream-bomb"),
    pytest.param("deflate", ZLIB, True, id="deflate-stream-bomb"),
]


@pytest.mark.parametrize(("encoding", "wbits", "stream"), BOMBS)
async def test_a_compression_bomb_stops_at_the_reply_limit(
    encoding: str, wbits: int, stream: bool
) -> None:
    with raw_server(bomb(encoding, wbits, stream=stream)) as server:
        error = await failure(
            server.url, stream=stream, model_settings={"max_reply_bytes": 8 * MIB}
        )
    text = str(error)
    assert "sent a reply over the 8,388,608-byte limit (it inflates past it)" in text
    assert "raise model_settings['max_reply_bytes'] or $SWARMCORE_MAX_REPLY_BYTES" in text
    assert not error.retryable


@pytest.mark.parametrize(
    ("encoding", "wbits"),
    [("gzip", GZIP), ("deflate", ZLIB), ("deflate", RAW)],
    ids=["two-member-gzip-reply-read", "deflate-reply-read", "raw-deflate-reply-read"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_compressed_reply_under_the_limit_is_read(
    encoding: str, wbits: int, stream: bool
) -> None:
    text = "z" * 3 * MIB  # several decoding steps
    raw = sse(text[:MIB], text[MIB:]) if stream else completion(text)
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    body = packer.compress(raw) + packer.flush()
    if wbits == GZIP:  # two gzip members, as a server may concatenate them
        half = len(raw) // 2
        body = gzip.compress(raw[:half]) + gzip.compress(raw[half:])
    kind = "text/event-stream" if stream else "application/json"

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        assert seen.headers["accept-encoding"] == "gzip, deflate"
        conn.sendall(http(200, body, f"Content-Encoding: {encoding}", f"Content-Type: {kind}"))

    with raw_server(respond) as server:
        one = agent(server.url)
        if stream:
            deltas: list[str] = []
            async for event in Swarm(one).stream(PROMPT, text=True):
                if isinstance(event, TextDelta):
                    deltas.append(event.text)
            assert "".join(deltas) == text
        else:
            assert (await one.run(PROMPT)).output == text


def length_then_silence(length: int) -> Respond:
    """Headers announcing ``length`` bytes, a few of them, then nothing until the client leaves."""

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n{{".encode())
        conn.recv(1)  # returns when the client hangs up

    return respond


def sized(size: int, *, stream: bool) -> Respond:
    """A valid reply of about ``size`` bytes, sent chunked (no Content-Length to refuse early)."""

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        # Built when sent: at collection, every worker would build every size.
        raw = sse("c" * size) if stream else completion("c" * size)
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n")
        for start in range(0, len(raw), MIB):
            piece = raw[start : start + MIB]
            conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    return respond


SIZES = [
    pytest.param(length_then_silence(2 * 2**30), False, {}, {}, "announced 2,147,483,648 bytes",
                 id="2gib-content-length-refused-at-once"),
    pytest.param(sized(40 * MIB, stream=False), False, {}, {}, "sent over 33,554,432 bytes",
                 id="40mib-reply-over-the-default"),
    pytest.param(sized(40 * MIB, stream=True), True, {}, {}, "sent over 33,554,432 bytes",
                 id="40mib-stream-over-the-default"),
    pytest.param(sized(2 * MIB, stream=False), False, {"max_reply_bytes": MIB}, {},
                 "over the 1,048,576-byte limit", id="2mib-reply-over-the-agents-limit"),
    pytest.param(sized(2 * MIB, stream=True), True, {}, {"SWARMCORE_MAX_REPLY_BYTES": str(MIB)},
                 "over the 1,048,576-byte limit", id="2mib-stream-over-the-environments-limit"),
]  # fmt: skip


@pytest.mark.parametrize(("respond", "stream", "settings", "env", "said"), SIZES)
@pytest.mark.timeout(60)
async def test_a_reply_over_the_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch,
    respond: Respond,
    stream: bool,
    settings: dict[str, Any],
    env: dict[str, str],
    said: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # call_timeout far beyond the test's: a refusal that waited for the body would time out.
    with raw_server(respond) as server:
        error = await failure(server.url, stream=stream, model_settings=settings, call_timeout=300)
    assert said in str(error)
    assert "did not answer within" not in str(error)
    assert not error.retryable


@pytest.mark.parametrize(
    ("settings", "env"),
    [
        ({"max_reply_bytes": 4 * MIB}, {}),
        ({}, {"SWARMCORE_MAX_REPLY_BYTES": str(4 * MIB)}),
        ({"max_reply_bytes": None}, {"SWARMCORE_MAX_REPLY_BYTES": "1"}),
    ],
    ids=["agents-limit-above-the-reply", "environments-limit-above", "agents-none-over-env"],
)
async def test_a_reply_under_a_raised_limit_is_read(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any], env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with raw_server(sized(2 * MIB, stream=False)) as server:
        result = await agent(server.url, model_settings=settings).run(PROMPT)
        assert result.output == "c" * 2 * MIB
    assert "max_reply_bytes" not in server.seen[0].body.decode()  # ours, never sent


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, "lots", True], ids=["zero", "negative", "fraction", "word", "bool"]
)
async def test_a_reply_limit_that_is_no_size_says_what_to_pass(value: object) -> None:
    said = "max_reply_bytes'] must be a positive whole number"
    with raw_server(sized(10, stream=False)) as server, pytest.raises(UserError, match=said):
        await agent(server.url, model_settings={"max_reply_bytes": value}).run(PROMPT)


# --- points 7 and 18c: call_timeout ends an endless stream, on time ----------------------


def endless(*, gzip: bool) -> Respond:
    """Deltas as fast as the socket takes them, never ending (gzip: bursts of 16 MiB)."""
    delta = json.dumps({"choices": [{"index": 0, "delta": {"content": "tick "}}]})
    line = f"data: {delta}\n\n".encode()

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        head += "Content-Encoding: gzip\r\n" if gzip else ""
        conn.sendall(head.encode() + b"\r\n")
        packer = zlib.compressobj(9, zlib.DEFLATED, GZIP)
        burst = line * (64 * 1024 // len(line))
        packed = packer.compress(burst * 256) + packer.flush(zlib.Z_SYNC_FLUSH)
        while True:  # until the client hangs up (sendall then raises)
            conn.sendall(packed if gzip else burst)

    return respond


@pytest.mark.parametrize("gzip", [False, True], ids=["endless-stream", "endless-gzip-stream"])
@pytest.mark.timeout(60)
async def test_an_endless_stream_ends_at_call_timeout(gzip: bool) -> None:
    with raw_server(endless(gzip=gzip)) as server:
        unbounded = {"max_reply_bytes": None}
        error = await failure(server.url, stream=True, call_timeout=1.5, model_settings=unbounded)
    assert "did not answer within 1.5s" in str(error)
    assert error.retryable


@pytest.mark.parametrize("gzip", [False, True], ids=["queued-deltas", "queued-gzip-deltas"])
@pytest.mark.timeout(60)
async def test_no_delta_is_published_once_call_timeout_has_passed(gzip: bool) -> None:
    """Deltas already received are not delivered past the deadline: the timeout comes first.

    The first delta's hook holds the loop past ``call_timeout`` (a slow consumer, a
    busy process); the deltas queued behind it must not follow it out. The deadline
    is 1.5 s, not less: on a loaded 2-core machine the first delta took over 0.5 s
    to arrive, and the test saw none.
    """
    seen: list[Event] = []

    def slow_consumer(event: Event) -> None:
        if isinstance(event, TextDelta) and not any(isinstance(e, TextDelta) for e in seen):
            time.sleep(1.8)  # past the 1.5s deadline: not a measurement, a way to pass it
        seen.append(event)

    with raw_server(endless(gzip=gzip)) as server:
        one = agent(server.url, call_timeout=1.5, model_settings={"max_reply_bytes": None})
        with pytest.raises(ModelError) as caught:
            async for _ in Swarm(one, hooks=[slow_consumer]).stream(PROMPT, text=True):
                pass
    assert "did not answer within 1.5s" in str(caught.value)
    deltas = [e for e in seen if isinstance(e, TextDelta)]
    assert len(deltas) == 1  # the one whose hook outlasted the deadline; none after it
    finished = [e for e in seen if isinstance(e, ModelCallFinished)]
    assert finished
    assert finished[0].error


async def test_a_sibling_agent_runs_to_its_end_while_a_bomb_is_inflated() -> None:
    """An endless gzip stream inflating a thousandfold never keeps a parallel agent waiting."""
    packer = zlib.compressobj(9, zlib.DEFLATED, GZIP)
    packed = packer.compress(b": keep-alive\n" * (16 * MIB // 13)) + packer.flush(zlib.Z_SYNC_FLUSH)
    inflating = threading.Event()  # the hostile server has sent its first burst

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        if b"hostile" in seen.body:
            head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip"
            conn.sendall(f"{head}\r\n\r\n".encode() + packed)
            inflating.set()
            while True:  # until the client hangs up
                conn.sendall(packed)
        inflating.wait(30)  # the siblings are answered only once the bomb is going off
        conn.sendall(http(200, completion("sibling done"), "Content-Type: application/json"))

    finished: list[str] = []
    with raw_server(respond) as server:
        unbounded = {"max_reply_bytes": None}
        hostile = agent(server.url, "hostile", call_timeout=60, model_settings=unbounded)
        flow = hostile.clone(instructions="hostile")
        for i in range(3):
            flow = flow | agent(server.url, f"sibling{i}")
        async for event in Swarm(flow).stream(PROMPT, text=True):
            if isinstance(event, ModelCallFinished):
                finished.append(event.agent_name)
            if len(finished) == 3:
                break  # leaving the stream cancels the hostile call
    assert sorted(finished) == ["sibling0", "sibling1", "sibling2"]


# --- point 9: lines split in one pass, wherever the chunks break ------------------------


async def pieces_of(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    bounds = [0, *cuts, len(data)]
    for start, end in itertools.pairwise(bounds):
        yield data[start:end]


async def split(data: bytes, cuts: list[int]) -> list[str]:
    return [line async for line in reading.lines(pieces_of(data, cuts), None)]


STREAMS = [
    pytest.param(b"data: one\n\ndata: two\n\n", id="lf"),
    pytest.param(b"data: one\r\n\r\ndata: two\r\n\r\n", id="crlf"),
    pytest.param(
        b": ping\r\nevent: x\ndata: \xc3\xa9t\xc3\xa9\r\n\r\ndata: [DONE]", id="mixed-utf8"
    ),
]


@pytest.mark.parametrize("data", STREAMS)
async def test_lines_are_the_same_wherever_the_chunks_break(data: bytes) -> None:
    whole = [line.removesuffix("\r") for line in data.decode().split("\n")]
    expected = [*whole, ""] if whole[-1] else whole
    for first in range(len(data) + 1):
        assert await split(data, [first]) == expected, first
        for second in range(first, len(data) + 1):
            assert await split(data, [first, second]) == expected, (first, second)
    assert await split(data, list(range(1, len(data)))) == expected  # a byte at a time


async def test_a_20mb_line_in_small_chunks_arrives_whole() -> None:
    line = b"data: " + b"x" * (20 * MIB)
    data = line + b"\r\n\r\n"
    cuts = list(range(4096, len(data), 4096))
    got = await split(data, cuts)
    assert got == [line.decode(), "", ""]


async def test_a_20mb_streamed_line_reaches_the_agent() -> None:
    text = "y" * (20 * MIB)

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        raw = sse(text)
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        for start in range(0, len(raw), 8192):
            conn.sendall(raw[start : start + 8192])

    with raw_server(respond) as server:
        deltas: list[str] = []
        async for event in Swarm(agent(server.url)).stream(PROMPT, text=True):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
    assert deltas == [text]


# --- point 12: run_sync frees its loop and its HTTP session ----------------------------


def test_run_sync_keeps_no_loop_it_ran_nor_its_session() -> None:
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        conn.sendall(http(200, completion("ok"), "Content-Type: application/json"))

    def note_loop(event: Event) -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))

    with raw_server(respond) as server:
        one = agent(server.url)
        for _ in range(5):
            assert Swarm(one, hooks=[note_loop]).run_sync(PROMPT)["a"].output == "ok"
    gc.collect()
    assert len(set(loops)) == 5  # one loop per call (a weakref per object)
    assert [ref for ref in loops if ref() is not None] == []


def test_max_reply_bytes_none_is_no_bound_and_inf_warns_naming_none() -> None:
    assert reading.max_reply_bytes({"max_reply_bytes": None}) == reading.NO_BOUND
    with pytest.deprecated_call(match=r"\{'max_reply_bytes': None\} for no bound"):
        assert reading.max_reply_bytes({"max_reply_bytes": float("inf")}) == reading.NO_BOUND
    assert reading.max_reply_bytes({}) == reading.MAX_REPLY_BYTES
