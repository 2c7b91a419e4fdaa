"""The httpx transports under RemoteAgent: credentials kept to their origins, bodies capped decoded.

:class:`CappedTransport` decodes a compressed body itself, in bounded pieces,
and caps the decoded bytes: httpx would inflate each network chunk whole, so a
few kilobytes of gzip could become gigabytes before any cap saw them.
:class:`OriginCheck` refuses to send the caller's headers to an origin they
were not meant for (an agent card may name any endpoint).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterable

import httpx

ACCEPT_ENCODING = "gzip, deflate"
"""What RemoteAgent accepts: the encodings :class:`CappedTransport` decodes itself."""
_PIECE = 65_536
"""The most bytes one decompression step produces: a bomb inflates in steps, never at once."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Oversized(Exception):
    """A response body went past its byte cap, counted decoded (raised from inside httpx's read)."""


class Undecodable(Exception):
    """A response body's encoding is one not asked for, or its bytes do not decode."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class ForeignOrigin(Exception):
    """A request carrying the caller's headers was about to go to another origin."""

    def __init__(self, home: str, target: str) -> None:
        super().__init__(f"{target} is not {home}")
        self.home = home
        self.target = target


def origin_of(url: str | httpx.URL) -> str:
    """``scheme://host:port`` of ``url``, the port always written (``https://a`` is ``:443``)."""
    url = httpx.URL(url)
    port = url.port or _DEFAULT_PORTS.get(url.scheme, 0)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}:{port}"


class _Inflater:
    """A gzip or deflate decoder that never produces more than ``_PIECE`` bytes per step."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        gzip = encoding in ("gzip", "x-gzip")
        self._raw_fallback = not gzip  # deflate is zlib-wrapped or raw: httpx tries both too
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)

    def pieces(self, data: bytes) -> Iterable[bytes]:
        """The decoded bytes of ``data`` (and of what earlier chunks left), piece by piece."""
        while not self._z.eof:
            try:
                out = self._z.decompress(data, _PIECE)
            except zlib.error as error:
                if self._raw_fallback:
                    self._raw_fallback = False
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise Undecodable(
                    f"a body that does not decode as {self._encoding} ({error})"
                ) from None
            self._raw_fallback = False
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < _PIECE:
                return  # all input consumed and no output held back


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, encoding: str | None) -> None:
        self._inner = inner
        self._limit = limit
        self._inflater = _Inflater(encoding) if encoding else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._inner:
            if self._inflater is None:
                read += len(chunk)
                if read > self._limit:
                    raise Oversized
                yield chunk
                continue
            for i, piece in enumerate(self._inflater.pieces(chunk)):
                if i:
                    await asyncio.sleep(0)  # a chunk inflating at length lets the loop run between
                read += len(piece)
                if read > self._limit:
                    raise Oversized
                yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


def _encoding_of(headers: httpx.Headers) -> str | None:
    """The one content coding to undo (None for none); Undecodable for any other."""
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return codings[0]
    raise Undecodable(
        f"a body encoded as {', '.join(codings)!r}, which was not asked for "
        f"(Accept-Encoding: {ACCEPT_ENCODING})"
    )


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, every response body decoded here and capped at ``limit`` decoded bytes.

    The response handed up carries no ``Content-Encoding`` (nothing is left for
    httpx to inflate) and no ``Content-Length`` (the decoded length is not known).
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        try:
            encoding = _encoding_of(response.headers)
        except Undecodable:
            await response.aclose()
            raise
        headers = response.headers
        if encoding is not None:
            dropped = ("content-encoding", "content-length")
            headers = httpx.Headers([(k, v) for k, v in headers.multi_items() if k not in dropped])
        return httpx.Response(
            status_code=response.status_code,
            headers=headers,
            stream=_CappedStream(response.stream, self._limit, encoding),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class OriginCheck(httpx.AsyncBaseTransport):
    """Refuses a request to an origin outside ``trusted`` while the caller's headers ride along.

    The client carries the caller's headers (a bearer token, say) on every
    request; an agent card may name an endpoint anywhere. Checked before a byte
    is sent, so the headers never reach an origin the caller did not name.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, home: str, trusted: Iterable[str]) -> None:
        self._inner = inner
        self._home = home
        self._trusted = frozenset(trusted)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = origin_of(request.url)
        if target not in self._trusted:
            raise ForeignOrigin(self._home, target)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
