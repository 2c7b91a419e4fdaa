"""A hostile OpenAI-compatible server against the LiteLLM backend: reply sizes and bombs.

The rows of ``test_native_transport``'s size and bomb tables, on LiteLLM
(``openai/`` through the openai SDK and httpx): the same limit holds, with the
same error, never retried. Checked by the error raised at the limit, never by
measuring memory.
"""

from __future__ import annotations

import json
import socket
import zlib
from typing import Any

import pytest

from swarmcore import Swarm, UserError
from swarmcore.events import TextDelta
from tests.hostile.test_native_transport import (
    GZIP,
    MIB,
    PROMPT,
    RAW,
    ZLIB,
    Respond,
    Seen,
    Server,
    agent,
    bomb,
    completion,
    deflated,
    failure,
    http,
    length_then_silence,
    raw_server,
    sized,
    sse,
)


@pytest.fixture(autouse=True)
def on_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWARMCORE_MODEL_BACKEND", "litellm")


def alternating_bomb(encoding: str, wbits: int) -> Respond:
    """A streamed bomb whose deltas alternate: LiteLLM stops a stream repeating one chunk."""
    deltas = [json.dumps({"choices": [{"index": 0, "delta": {"content": c * 1000}}]}) for c in "bd"]
    fill = "".join(f"data: {delta}\n\n" for delta in deltas).encode()
    body = deflated(64 * MIB, wbits=wbits, fill=fill)

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        conn.sendall(
            http(200, body, "Content-Type: text/event-stream", f"Content-Encoding: {encoding}")
        )

    return respond


BOMBS = [
    pytest.param("gzip", GZIP, False, id="litellm-gzip-json-bomb"),
    pytest.param("deflate", ZLIB, False, id="litellm-deflate-json-bomb"),
    pytest.param("deflate", RAW, False, id="litellm-raw-deflate-json-bomb"),
    pytest.param("gzip", GZIP, True, id="litellm-gzip-stream-bomb"),
    pytest.param("deflate", ZLIB, True, id="litellm-deflate-stream-bomb"),
]


@pytest.mark.parametrize(("encoding", "wbits", "stream"), BOMBS)
@pytest.mark.timeout(60)
async def test_a_compression_bomb_stops_at_the_reply_limit_on_litellm(
    encoding: str, wbits: int, stream: bool
) -> None:
    respond = alternating_bomb(encoding, wbits) if stream else bomb(encoding, wbits, stream=False)
    with raw_server(respond) as server:
        error = await failure(
            server.url, stream=stream, model_settings={"max_reply_bytes": 8 * MIB}, retry=2
        )
    text = str(error)
    assert "sent a reply over the 8,388,608-byte limit (it inflates past it)" in text
    assert "raise model_settings['max_reply_bytes'] or $SWARMCORE_MAX_REPLY_BYTES" in text
    assert f"at {server.url}/chat/completions" in text
    assert "(attempt 1 of 3)" in text  # refused once, not retried
    assert len(server.seen) == 1
    assert not error.retryable


@pytest.mark.parametrize(
    ("encoding", "wbits"),
    [("gzip", GZIP), ("deflate", ZLIB), ("deflate", RAW)],
    ids=["two-member-gzip-reply-read", "deflate-reply-read", "raw-deflate-reply-read"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["litellm-whole", "litellm-streamed"])
async def test_a_compressed_reply_under_the_limit_is_read_on_litellm(
    encoding: str, wbits: int, stream: bool
) -> None:
    text = "z" * 3 * MIB  # several decoding steps
    raw = sse(text[:MIB], text[MIB:]) if stream else completion(text)
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    body = packer.compress(raw) + packer.flush()
    if wbits == GZIP:  # two gzip members, as a server may concatenate them
        import gzip

        half = len(raw) // 2
        body = gzip.compress(raw[:half]) + gzip.compress(raw[half:])
    kind = "text/event-stream" if stream else "application/json"

    def respond(conn: socket.socket, seen: Seen, server: Server) -> None:
        # Only what is decoded, bounded, is asked for (httpx would add br and zstd).
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


SIZES = [
    pytest.param(length_then_silence(2 * 2**30), False, {}, {}, "announced 2,147,483,648 bytes",
                 id="litellm-2gib-content-length-refused-at-once"),
    pytest.param(sized(40 * MIB, stream=False), False, {}, {}, "sent over 33,554,432 bytes",
                 id="litellm-40mib-reply-over-the-default"),
    pytest.param(sized(40 * MIB, stream=True), True, {}, {}, "sent over 33,554,432 bytes",
                 id="litellm-40mib-stream-over-the-default"),
    pytest.param(sized(2 * MIB, stream=False), False, {"max_reply_bytes": MIB}, {},
                 "over the 1,048,576-byte limit", id="litellm-2mib-reply-over-the-agents-limit"),
    pytest.param(sized(2 * MIB, stream=True), True, {}, {"SWARMCORE_MAX_REPLY_BYTES": str(MIB)},
                 "over the 1,048,576-byte limit",
                 id="litellm-2mib-stream-over-the-environments-limit"),
]  # fmt: skip


@pytest.mark.parametrize(("respond", "stream", "settings", "env", "said"), SIZES)
@pytest.mark.timeout(60)
async def test_a_reply_over_the_limit_is_refused_on_litellm(
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
        error = await failure(
            server.url, stream=stream, model_settings=settings, call_timeout=300, retry=2
        )
    assert said in str(error)
    assert "if replies this large are expected, raise model_settings['max_reply_bytes']" in str(
        error
    )
    assert "did not answer within" not in str(error)
    assert "could not connect" not in str(error)
    assert len(server.seen) == 1  # not retried
    assert not error.retryable


async def test_a_reply_under_a_raised_limit_is_read_on_litellm() -> None:
    with raw_server(sized(2 * MIB, stream=False)) as server:
        result = await agent(server.url, model_settings={"max_reply_bytes": 4 * MIB}).run(PROMPT)
        assert result.output == "c" * 2 * MIB
    assert "max_reply_bytes" not in server.seen[0].body.decode()  # ours, never sent


@pytest.mark.parametrize("value", [0, "lots"], ids=["litellm-zero", "litellm-word"])
async def test_a_reply_limit_that_is_no_size_says_what_to_pass_on_litellm(value: object) -> None:
    said = "max_reply_bytes'] must be a positive whole number"
    with raw_server(sized(10, stream=False)) as server, pytest.raises(UserError, match=said):
        await agent(server.url, model_settings={"max_reply_bytes": value}).run(PROMPT)
