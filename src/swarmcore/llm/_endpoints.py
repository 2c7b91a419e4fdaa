"""Where the native backend's requests go, and on what connection.

An ``Endpoint`` is a base URL with the headers each request to it carries (the
key, OpenAI's organization and project), its proxy from the environment and
its certificates: built once per base URL, key, organization and project.

One aiohttp session (its connection pool) per event loop, shared by every
endpoint: a session's connections belong to its loop, so a new ``asyncio.run``
gets its own, and the old one is closed when its loop shuts down
(``asyncio.run`` closes the loop's async generators, and the session's closer
is one), and forgotten with it, so a loop that ends frees its session (a
``run_sync`` per web request must not keep every loop). aiohttp's pool, not
httpx's: httpx's walks every pooled connection on each request, so with 200
calls in flight it cost five times the CPU per call.

A request goes to its endpoint's origin and nowhere else: ``post`` follows a
redirect only within the origin (scheme, host, port), at most
``MAX_REDIRECTS`` times, and refuses one elsewhere (its key headers, the
organization's and the prompt would follow it). The body is decoded by
``reading``, not by aiohttp, to bound what it inflates to.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from swarmcore.errors import ModelError
from swarmcore.llm import _reading as reading
from swarmcore.llm._prechecks import shown_url
from swarmcore.llm._redaction import redact
from swarmcore.llm._types import CallSpec

if TYPE_CHECKING:
    import aiohttp
    import yarl

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# As the openai SDK's defaults: five seconds to connect, then ten minutes for each read
# (not for the whole reply: a long stream may take longer, a silent server may not).
CONNECT_SECONDS = 5.0
READ_SECONDS = 600.0

MAX_REDIRECTS = 3
"""Redirects followed within the endpoint's origin; one to another origin is never followed."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def base_url(call: CallSpec) -> str:
    """Where ``call`` goes: its ``api_base``, its settings', the environment's, or OpenAI's."""
    for value in (call.api_base, call.settings.get("api_base"), call.settings.get("base_url")):
        if isinstance(value, str) and value:
            return value
    return (
        os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or DEFAULT_BASE_URL
    )


def _api_key(call: CallSpec) -> str | None:
    key = call.api_key or call.settings.get("api_key") or os.environ.get("OPENAI_API_KEY")
    return str(key) if key else None


@dataclass
class Pool:
    """One event loop's HTTP session (its connection pool) and the endpoints it has called."""

    session: aiohttp.ClientSession
    endpoints: dict[tuple[str, str, str | None, str | None, str | None], Endpoint] = field(
        default_factory=dict[tuple[str, str, str | None, str | None, str | None], "Endpoint"]
    )
    closer: AsyncGenerator[None] | None = None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one endpoint's requests go, and the headers each carries (its key among them)."""

    url: yarl.URL
    headers: Mapping[str, str]
    ssl: ssl.SSLContext | bool
    proxy: str | None


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


async def pool() -> Pool:
    """The running loop's session, made on first use and closed when the loop shuts down."""
    loop = asyncio.get_running_loop()
    found = _pools.get(loop)
    if found is None:
        import aiohttp

        # A loop closed without shutting its async generators down (loop.close() alone)
        # never ran its closer: its entry goes now, or its session would keep it forever.
        for closed in [known for known in _pools if known.is_closed()]:
            del _pools[closed]

        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1000),  # the SDK's: 1,000 connections
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_SECONDS, sock_read=READ_SECONDS
            ),
            # Proxies are read once per endpoint (endpoint()); trust_env would also look
            # for a ~/.netrc in a thread on every request.
            trust_env=False,
            auto_decompress=False,  # reading decodes, bounded: aiohttp inflates without a limit
        )
        found = _pools[loop] = Pool(session)
        found.closer = _close_at_shutdown(found)
        await anext(found.closer)  # runs to its yield: the loop now knows it, and closes it
    return found


CHAT_PATH = "/chat/completions"
"""Where a chat-completions request goes, under the base URL."""


def endpoint(pool: Pool, call: CallSpec, model: str, path: str = CHAT_PATH) -> Endpoint:
    """The call's endpoint: URL and headers, built once per base URL, path, key and organization.

    Args:
        pool: The event loop's connection pool, which keeps the endpoints built.
        call: The agent's call: its base URL, key and settings.
        model: The model called, for the error a base URL that is no URL raises.
        path: The API's route under the base URL (the Responses API's is ``/responses``).
    """
    url, key = base_url(call), _api_key(call)
    organization = _text(call.settings.get("organization")) or os.environ.get("OPENAI_ORG_ID")
    project = _text(call.settings.get("project")) or os.environ.get("OPENAI_PROJECT_ID")
    ident = (url, path, key, organization, project)
    found = pool.endpoints.get(ident)
    if found is None:
        import yarl

        from swarmcore import __version__

        headers = {
            "Accept": "application/json",
            "Accept-Encoding": reading.ACCEPT_ENCODING,
            "Content-Type": "application/json",
            "User-Agent": f"swarmcore/{__version__}",
        }
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if organization:
            headers["OpenAI-Organization"] = organization
        if project:
            headers["OpenAI-Project"] = project
        target = yarl.URL(url.rstrip("/") + path)
        if target.scheme not in ("http", "https") or not target.host:
            raise ModelError(
                f"Agent {call.agent_name!r}: {model}'s endpoint {redact(url)!r} is not a URL; "
                "check the agent's api_base (e.g. 'http://127.0.0.1:8000/v1').",
                agent_name=call.agent_name,
                model=model,
            )
        if target.user is not None and key:  # the key is the protocol's credential
            target = target.with_user(None)
        found = pool.endpoints[ident] = Endpoint(
            url=target,
            headers=headers,
            ssl=_ssl_context() if target.scheme == "https" else True,
            proxy=_proxy(target),
        )
    return found


def _proxy(url: yarl.URL) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``...), if any."""
    import urllib.request

    if not url.host or urllib.request.proxy_bypass(url.host):
        return None
    return urllib.request.getproxies().get(url.scheme)


_ssl: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    """Certificates as the SDK's httpx finds them: certifi's, unless SSL_CERT_FILE/DIR is set."""
    global _ssl
    if _ssl is None:
        if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
            _ssl = ssl.create_default_context()  # OpenSSL reads those variables itself
        else:
            import certifi

            _ssl = ssl.create_default_context(cafile=certifi.where())
    return _ssl


async def _close_at_shutdown(pool: Pool) -> AsyncGenerator[None]:
    """Closes the session when the loop shuts its async generators down (``asyncio.run`` does).

    And forgets the loop's entry: its session refers to the loop, so a weak key
    alone would never let the loop go.
    """
    try:
        yield
    finally:
        _pools.pop(asyncio.get_running_loop(), None)
        pool.endpoints.clear()
        await pool.session.close()


async def post(
    pool: Pool, endpoint: Endpoint, data: str, headers: Mapping[str, str], **options: Any
) -> aiohttp.ClientResponse:
    """POST ``data`` to the endpoint; a redirect is followed only within its origin.

    The response is the caller's to release (``async with response:``).

    Raises:
        reading.Refused: A redirect to another origin (named with ours), or more
            than ``MAX_REDIRECTS`` of them.
        aiohttp.ClientError: The request failed.
    """
    import yarl

    url = endpoint.url
    for _ in range(MAX_REDIRECTS + 1):
        response = await pool.session.post(
            url, data=data, headers=headers, allow_redirects=False, **options
        )
        if response.status not in _REDIRECTS:
            return response
        location = response.headers.get("Location")
        response.release()
        if not location:
            raise reading.Refused(
                f"answered {response.status} (a redirect) without saying where to",
                retryable=True,
            )
        target = url.join(yarl.URL(location, encoded=True))
        if (target.scheme, target.host, target.port) != (url.scheme, url.host, url.port):
            raise reading.Refused(
                f"redirected the request from {shown_url(str(url))} to "
                f"{shown_url(str(target))}, another origin, where its key and prompt would "
                "follow: refused. If that is the endpoint, set it as the agent's api_base",
                retryable=False,
            )
        # Resent as it was, POST and body, for any redirect: a chat completion has no GET.
        url = target
    raise reading.Refused(
        f"redirected the request more than {MAX_REDIRECTS} times (last to {shown_url(str(url))}); "
        "is the api_base right?",
        retryable=False,
    )


def preload() -> None:
    """Import what a call uses (aiohttp), ahead of the first call."""
    import aiohttp

    del aiohttp


def _text(value: object) -> str | None:
    return str(value) if value else None
