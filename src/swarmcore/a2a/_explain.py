"""What a failed request to a remote A2A agent means, said so that the caller can act on it.

RemoteAgent turns every exception of one attempt (the SDK's, httpx's, a
parser's, or a refusal of its own transports) into :class:`Explained`: the
words for its error, and whether the same request may succeed if sent again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeVar

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.utils.errors import A2AError

from swarmcore.a2a._answer import short
from swarmcore.a2a._http import ForeignOrigin, Oversized, Undecodable
from swarmcore.a2a._lenient import NotAnAnswer
from swarmcore.llm._redaction import redact

_TRANSIENT = frozenset({408, 429, 502, 503, 504})
"""Statuses that say the request did not get through (busy, or a gateway in the way): retried.
Any other 5xx is an error inside the agent, which the same request would meet again."""
_E = TypeVar("_E", bound=BaseException)


class Explained(NamedTuple):
    """What happened (to follow "Remote agent 'x' at URL ..."), and whether to retry."""

    what: str
    retryable: bool = False


def explain(exc: Exception, *, byte_limit: int, secrets: Sequence[str] = ()) -> Explained:
    """What ``exc``, raised by one attempt, says about the remote, and what to do.

    Args:
        exc: The exception.
        byte_limit: The most bytes a response may hold, decoded (for the words).
        secrets: Credentials the remote may quote back (ours), redacted from what it
            said before that is shortened.
    """
    known = _refusal(exc, byte_limit)
    if known is not None:
        return known
    status = _status_of(exc)
    if status in (401, 403):
        return Explained(
            f"refused the request (HTTP {status}): pass its credentials as headers=, "
            'e.g. headers={"Authorization": "Bearer <token>"}'
        )
    if status in _TRANSIENT:
        return Explained(f"answered HTTP {status}; it may be overloaded or down", True)
    if status is not None and status >= 500:
        said = _body_of(exc, secrets)
        return Explained(
            f"answered HTTP {status}{f': {said}' if said else ''}. That is an error inside "
            "the agent, so it is not retried (the same request would meet it again): "
            "its own logs say more"
        )
    known = _connection(exc)
    if known is not None:
        return known
    text = short(redact(str(exc), *secrets))  # redacted whole, then cut
    if status is not None:
        return Explained(f"answered HTTP {status}: {text}")
    if isinstance(exc, AgentCardResolutionError):
        return Explained(f"has no usable agent card: {text}")
    if isinstance(exc, A2AError) and not isinstance(exc, A2AClientError):
        return Explained(f"answered with an error: {text or type(exc).__name__}")
    return Explained(
        f"sent a malformed response ({type(exc).__name__}: {text}); "
        "is it an A2A agent (1.0 or 0.3)?"
    )


def _refusal(exc: Exception, byte_limit: int) -> Explained | None:
    """What RemoteAgent's own transports refused (``_http``, ``_lenient``), if that is it."""
    if _found(exc, Oversized):
        return Explained(
            f"sent a response of more than {byte_limit:,} bytes once decoded; "
            "raise max_output_chars= if answers this large are expected"
        )
    if foreign := _found(exc, ForeignOrigin):
        return Explained(
            f"has an agent card naming its endpoint on {foreign.target}, another origin "
            f"than {foreign.home}; headers= (credentials) go only to {foreign.home}, so "
            f"nothing was sent. If {foreign.target} is the agent's, pass "
            f"trusted_origins=[{foreign.target!r}]"
        )
    if undecodable := _found(exc, Undecodable):
        return Explained(f"sent {undecodable.what}")
    if not_answer := _found(exc, NotAnAnswer):
        return Explained(not_answer.what, not_answer.retryable)
    return None


def _connection(exc: Exception) -> Explained | None:
    """A request that timed out or a connection that failed, if that is it."""
    cause = exc.__cause__
    if isinstance(exc, A2AClientTimeoutError) or isinstance(cause, httpx.TimeoutException):
        return Explained("timed out on a request; it may be overloaded", True)
    if isinstance(cause, httpx.ConnectError | httpx.UnsupportedProtocol | httpx.ProxyError):
        return Explained(
            f"could not be reached ({type(cause).__name__}: {cause or 'connection failed'}); "
            "check the URL and that the agent is running",
            True,
        )
    if isinstance(cause, httpx.TransportError):  # reached, then the connection broke
        return Explained(
            f"broke off the connection mid-reply ({type(cause).__name__}: "
            f"{cause or 'connection lost'})",
            True,
        )
    return None


def _found(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` or its cause, whichever is a ``kind`` (the SDK wraps some errors of ours)."""
    for candidate in (exc, exc.__cause__):
        if isinstance(candidate, kind):
            return candidate
    return None


def _body_of(exc: BaseException, secrets: Sequence[str]) -> str:
    """What an HTTP error response said, shortened; "" when it said nothing readable."""
    cause = exc.__cause__
    if not isinstance(cause, httpx.HTTPStatusError):
        return ""
    try:
        return short(redact(cause.response.text, *secrets), 300)
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        return ""


def _status_of(exc: BaseException) -> int | None:
    if isinstance(exc, AgentCardResolutionError) and exc.status_code is not None:
        return exc.status_code
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        return cause.response.status_code
    return None
