"""A reply's bytes as the native backend reads them: bounded, decoded in steps, split into lines.

A server that answers may still be hostile: a gzip body that inflates a
thousandfold, a ``Content-Length`` of 2 GiB, a line of 50 MB, a stream that
never ends. What the backend reads is bounded here, whatever the server sends:

* the reply, decoded, holds at most ``max_reply_bytes`` (32 MiB unless the
  agent's ``model_settings`` or ``$SWARMCORE_MAX_REPLY_BYTES`` say otherwise),
  and a ``Content-Length`` beyond it is refused before a byte of the body is
  read;
* gzip and deflate are decoded here, not by aiohttp (which inflates a whole
  network read in one call, a gigabyte for a megabyte), in steps of at most
  ``STEP`` bytes of output, each followed by a turn of the event loop: a
  sibling agent keeps running, and ``call_timeout`` can cancel between steps;
* lines are split in one pass over each byte (a long line is gathered, never
  re-split), and none is handed on once the call's deadline has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Protocol

from swarmcore._deprecation import warn_deprecated
from swarmcore.errors import UserError

if TYPE_CHECKING:
    import aiohttp

MAX_REPLY_BYTES = 32 * 2**20
"""The default bound on one reply's decoded size, in bytes (32 MiB)."""

NO_BOUND = 2**62
"""The bound of ``max_reply_bytes=None``: none but the memory."""

ENV_VAR = "SWARMCORE_MAX_REPLY_BYTES"
SETTING = "max_reply_bytes"

ACCEPT_ENCODING = "gzip, deflate"
"""The encodings asked for: those decoded here."""

STEP = 256 * 1024
"""The most bytes one decoding step produces before the event loop gets a turn."""


class Refused(Exception):
    """The server answered, but not with a reply we read; the text says what it did.

    ``retryable``: whether another attempt could fare better (a server that
    is restarting behind a proxy, say), rather than repeat the same refusal.
    """

    def __init__(self, text: str, *, retryable: bool, url: str | None = None) -> None:
        super().__init__(text)
        self.retryable = retryable
        self.url = url

    def at(self, url: str) -> Refused:
        """This refusal, naming the URL the request went to."""
        return Refused(str(self), retryable=self.retryable, url=url)


def max_reply_bytes(settings: Mapping[str, object]) -> int:
    """The reply size bound: ``settings["max_reply_bytes"]``, else the environment's, else 32 MiB.

    ``settings["max_reply_bytes"] = None`` means no bound but the memory
    (``math.inf``, its older spelling, warns).

    Raises:
        UserError: A bound that is not a positive whole number of bytes.
    """
    where = f"model_settings[{SETTING!r}]"
    if SETTING in settings:
        value = settings[SETTING]
        if isinstance(value, float) and value == math.inf:
            warn_deprecated(
                f"{where}=math.inf is deprecated; pass model_settings={{{SETTING!r}: None}} "
                "for no bound (None means no limit everywhere)."
            )
            value = None
        if value is None:
            return NO_BOUND
    else:
        value, where = os.environ.get(ENV_VAR) or MAX_REPLY_BYTES, f"${ENV_VAR}"
    if isinstance(value, str):
        try:
            value = int(value.strip().replace("_", ""))
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(
            f"{where} must be a positive whole number of bytes (e.g. {MAX_REPLY_BYTES} "
            "for 32 MiB), or None for no bound."
        )
    return value


async def body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, decoded, of at most ``limit`` bytes.

    Raises:
        Refused: The body (its ``Content-Length``, its bytes, or decoded) is over
            ``limit``, or in an encoding we did not ask for.
    """
    whole = bytearray()
    async for piece in decoded(response, limit):
        whole += piece
    return bytes(whole)  # twice the reply for a moment, then once


async def head(response: aiohttp.ClientResponse, size: int) -> bytes:
    """The first ``size`` bytes of the body, decoded (an error's text): the rest is left unread.

    Raises:
        Refused: The body is in an encoding we did not ask for, or does not decode.
    """
    kept = bytearray()
    async with contextlib.aclosing(decoded(response, size, cut=True)) as pieces:
        async for piece in pieces:
            kept += piece
    return bytes(kept[:size])


async def decoded(
    response: aiohttp.ClientResponse, limit: int, *, cut: bool = False
) -> AsyncGenerator[bytes]:
    """The body's bytes as they arrive, decoded, with at most ``limit`` of them in all.

    With ``cut``, the body ends quietly past ``limit`` (after at most ``STEP`` more).

    Raises:
        Refused: As :func:`body`.
    """
    declared = response.content_length
    if declared is not None and declared > limit and not cut:
        raise Refused(_too_large(limit, f"announced {declared:,} bytes"), retryable=False)
    decoder = _decoder(response.headers.get("Content-Encoding", ""))
    received = produced = 0
    async for raw in response.content.iter_any():
        received += len(raw)
        if received > limit:
            if cut:
                if decoder is None:
                    yield raw
                return
            raise Refused(_too_large(limit, f"sent over {limit:,} bytes"), retryable=False)
        if decoder is None:
            yield raw
            continue
        data = raw
        while True:  # in steps: a bomb inflates no further than the limit, a step at a time
            piece = decoder.step(data)
            data = b""
            produced += len(piece)
            if produced > limit:
                if cut:
                    yield piece
                    return
                raise Refused(_too_large(limit, "inflates past it"), retryable=False)
            if piece:
                yield piece
            if len(piece) < STEP and not decoder.pending():
                break
            await asyncio.sleep(0)  # a turn for the loop: siblings run, a deadline lands


def _too_large(limit: int, what: str) -> str:
    return (
        f"sent a reply over the {limit:,}-byte limit (it {what}); if replies this large "
        f"are expected, raise model_settings[{SETTING!r}] or ${ENV_VAR}"
    )


class _Step(Protocol):
    def step(self, data: bytes) -> bytes: ...
    def pending(self) -> bool: ...


class _Inflater:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), ``STEP`` bytes at a time."""

    def __init__(self, wbits: int, raw_fallback: bool) -> None:
        self._wbits = wbits
        self._raw_fallback = raw_fallback  # deflate: a zlib header, else raw deflate
        self._zlib = zlib.decompressobj(wbits)
        self._started = False

    def step(self, data: bytes) -> bytes:
        """Up to ``STEP`` bytes of output, ``data`` first added to what is still to inflate."""
        z = self._zlib
        if z.eof and (z.unused_data or data):  # a second gzip member follows the first
            data, self._zlib = z.unused_data + data, zlib.decompressobj(self._wbits)
            z = self._zlib
        data = z.unconsumed_tail + data if z.unconsumed_tail else data
        try:
            out = z.decompress(data, STEP)
        except zlib.error as exc:
            if self._raw_fallback and not self._started:
                self._raw_fallback, self._wbits = False, -zlib.MAX_WBITS
                self._zlib = zlib.decompressobj(self._wbits)
                return self.step(data)
            raise Refused(
                f"sent a body its Content-Encoding cannot decode ({exc})", retryable=True
            ) from None
        self._started = self._started or bool(data)
        return out

    def pending(self) -> bool:
        """Whether input is left to inflate without more arriving (another member, say)."""
        z = self._zlib
        return bool(z.unconsumed_tail or (z.eof and z.unused_data))


def _decoder(encoding: str) -> _Step | None:
    """The decoder for a ``Content-Encoding`` header; None for none.

    Raises:
        Refused: An encoding we did not ask for (brotli, zstd, several at once...).
    """
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return None
    if name in ("gzip", "x-gzip"):
        return _Inflater(16 + zlib.MAX_WBITS, raw_fallback=False)
    if name == "deflate":
        return _Inflater(zlib.MAX_WBITS, raw_fallback=True)
    raise Refused(
        f"sent a body in Content-Encoding {encoding.strip()!r}, which it was not asked "
        f"for (Accept-Encoding: {ACCEPT_ENCODING}); is a proxy rewriting the replies?",
        retryable=False,
    )


async def lines(pieces: AsyncIterator[bytes], deadline: float | None) -> AsyncIterator[str]:
    """The lines of ``pieces`` (each ended by LF or CR LF), then ``""`` for the end.

    Each byte is looked at once: a line's start is kept until its end arrives,
    never searched again. After ``deadline`` (the loop's clock) no line is
    handed on: the call has timed out, whatever the server still sends.

    Raises:
        TimeoutError: ``deadline`` passed.
    """
    loop = asyncio.get_running_loop()
    started = bytearray()  # the start of a line whose end has not arrived
    async for piece in pieces:
        if deadline is not None and loop.time() >= deadline:
            raise TimeoutError
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            if deadline is not None and loop.time() >= deadline:
                raise TimeoutError
            if started:
                started += piece[start:end]
                line = bytes(started)
                started.clear()
            else:
                line = piece[start:end]
            yield _text(line)
            start = end + 1
        started += piece[start:]
    if started:
        yield _text(bytes(started))
    yield ""  # the stream's end ends its last event


def _text(line: bytes) -> str:
    return line.removesuffix(b"\r").decode("utf-8")
