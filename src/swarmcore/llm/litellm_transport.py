"""The LiteLLM backend's replies, bounded as the native backend's: size, Content-Length, bombs.

LiteLLM's OpenAI-SDK providers (``openai/`` and the others it reaches through
the ``openai`` SDK) send every async request through one ``httpx.AsyncClient``:
``litellm.aclient_session``, its documented hook, when set, else one of its own.
``install`` sets it to a client made as LiteLLM makes its own (its transport,
proxies and certificates) with two httpx event hooks (httpx's public API):

* on each request, ``Accept-Encoding`` asks for gzip and deflate only: those
  ``reading`` decodes;
* on each response, before a byte of its body is read, a ``Content-Length``
  over the limit is refused, and the body is handed on through
  ``reading.bounded``: decoded here in steps (httpx would inflate each network
  read whole), and refused once it holds more than the limit.

The limit is the attempt's (``limit`` sets it for the duration of the call):
a request made outside a swarmcore call (the user's own LiteLLM calls) is left
as LiteLLM would send it. Providers LiteLLM calls with its own HTTP handler
(Anthropic, Gemini, Bedrock...) do not go through this client and are not
bounded. A ``litellm.aclient_session`` the user set is left alone, unbounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from contextvars import ContextVar
from typing import Any

import httpx  # LiteLLM's dependency: this module is imported with LiteLLM only

from swarmcore.llm import reading

__all__ = ["install", "limit"]

_limit: ContextVar[int | None] = ContextVar("swarmcore_litellm_reply_limit", default=None)


async def install(lit: Any) -> None:
    """Make ``litellm.aclient_session`` the bounding client; close its connections with the loop.

    One client for every loop, as LiteLLM's transport opens a loop's
    connections on that loop (after a close, too). Each loop that used it
    closes its connections when it shuts down (``asyncio.run`` closes its async
    generators, and the closer is one): LiteLLM does not close a session it was
    given. A session the user set (not ours) is left alone.
    """
    global _shared
    current = lit.aclient_session
    if _shared is None:
        if current is not None:
            return
        _shared = _client()
    elif current is not _shared[0]:
        return
    lit.aclient_session = _shared[0]
    loop = asyncio.get_running_loop()
    if loop not in _closers:
        closer = _closers[loop] = _close_at_shutdown(_shared[1])
        await anext(closer)  # runs to its yield: the loop now knows it, and closes it


_shared: tuple[httpx.AsyncClient, httpx.AsyncBaseTransport | None] | None = None
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGenerator[None]] = (
    weakref.WeakKeyDictionary()
)


def _client() -> tuple[httpx.AsyncClient, httpx.AsyncBaseTransport | None]:
    """An async client made as LiteLLM makes its own for the OpenAI SDK, with our hooks."""
    from litellm.llms.custom_httpx.http_handler import (  # pyright: ignore[reportMissingTypeStubs]
        AsyncHTTPHandler,
        get_ssl_configuration,
        http2_enabled,
    )

    verify: Any = get_ssl_configuration()
    transport: Any = AsyncHTTPHandler.create_async_transport(
        ssl_context=verify if isinstance(verify, ssl.SSLContext) else None,
        ssl_verify=verify if isinstance(verify, bool) else None,
    )
    client = httpx.AsyncClient(
        verify=verify,
        transport=transport,
        mounts=AsyncHTTPHandler.create_httpx_proxy_mounts(transport, verify=verify, cert=None),
        follow_redirects=True,
        http2=http2_enabled(),
        event_hooks={"request": [_on_request], "response": [_on_response]},
    )
    return client, transport


_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGenerator[None]] = (
    weakref.WeakKeyDictionary()
)


async def _close_at_shutdown(transport: httpx.AsyncBaseTransport | None) -> AsyncGenerator[None]:
    """Closes the loop's connections (the transport's session) when the loop shuts down."""
    try:
        yield
    finally:
        _closers.pop(asyncio.get_running_loop(), None)
        if transport is not None:
            await transport.aclose()  # the next loop's first request opens a new session


@contextlib.contextmanager
def limit(max_bytes: int) -> Generator[None]:
    """Bound the replies read while inside to ``max_bytes``, decoded."""
    token = _limit.set(max_bytes)
    try:
        yield
    finally:
        _limit.reset(token)


async def _on_request(request: httpx.Request) -> None:
    if _limit.get() is not None:
        request.headers["Accept-Encoding"] = reading.ACCEPT_ENCODING


async def _on_response(response: httpx.Response) -> None:
    bound = _limit.get()
    raw = response.stream
    if bound is None or not isinstance(raw, httpx.AsyncByteStream):  # not a call of ours
        return
    url = str(response.request.url)
    declared = response.headers.get("Content-Length", "")
    size = int(declared) if declared.strip().isdigit() else None
    # Decoded here, not by httpx; and its decoded size is not the Content-Length.
    encoding = response.headers.pop("Content-Encoding", "")
    response.headers.pop("Content-Length", None)
    if size is not None and size > bound:  # refused before a byte of the body is read
        await response.aclose()
        raise reading.too_large(bound, f"announced {size:,} bytes").at(url)
    response.stream = _Bounded(reading.bounded(aiter(raw), size, encoding, bound), raw, url)


class _Bounded(httpx.AsyncByteStream):
    """A body as ``reading.bounded`` hands it on; a refusal names the URL."""

    def __init__(self, pieces: AsyncGenerator[bytes], raw: httpx.AsyncByteStream, url: str) -> None:
        self._pieces = pieces
        self._raw = raw
        self._url = url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._pieces:
                yield piece
        except reading.Refused as refused:
            raise refused.at(self._url) from None

    async def aclose(self) -> None:
        try:
            await self._pieces.aclose()
        finally:
            await self._raw.aclose()
