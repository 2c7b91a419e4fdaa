"""What was wrong with a reply that is not a chat completion, from either backend's exception.

The native backend says so itself (``MalformedReply``, from ``completion``).
LiteLLM reports the same replies as a 500 ``InternalServerError``, an
``APIConnectionError`` or a ``MidStreamFallbackError``, with the decoding error
further down the chain: bad JSON, bytes that are not UTF-8, JSON nested too
deeply, a field its pydantic models reject, a list where an object belongs.
Both are found here, so ``errors.classify`` words them alike: a reply was
received, and it was malformed; not "could not connect", not "status 500".
"""

from __future__ import annotations

import json
import sys

from swarmcore.llm._types import EndpointError, MalformedReply

# What LiteLLM says of a body it could not read as a chat completion.
_LITELLM_SAYS = ("Empty or invalid response from LLM endpoint", "Invalid response object")


def malformed_reply(exc: BaseException) -> str | None:
    """What was wrong with the reply, when ``exc`` stems from a malformed one; else None.

    Never when the chain holds a transport failure or an HTTP status error of
    the SDK's: a server that did not answer, or answered with an error, is
    classified as such.
    """
    chain = _chain(exc)
    transport = _transport()
    for link in chain:
        if isinstance(link, MalformedReply):
            return str(link)
        # LiteLLM's own classes subclass the SDK's status errors whatever happened.
        if isinstance(link, transport) and not type(link).__module__.startswith("litellm"):
            return None
    for link in chain:
        found = _decoding(link)
        if found is not None:
            return found
    if len(chain) > 1 and type(exc).__module__.startswith("litellm"):
        return _litellm_said(str(exc), chain[-1])
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _transport() -> tuple[type, ...]:
    """The classes of a failed exchange (or an error status), of the libraries imported."""
    found: list[type] = [ConnectionError, TimeoutError, EndpointError]
    for module, name in (
        ("httpx", "TransportError"),
        ("aiohttp", "ClientError"),
        ("openai", "APIStatusError"),
    ):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type):
            found.append(kind)
    return tuple(found)


def _decoding(link: BaseException) -> str | None:
    """What a decoding error says about the reply, if ``link`` is one."""
    import pydantic

    match link:
        case UnicodeDecodeError():
            return f"it is not UTF-8 text (byte 0x{link.object[link.start]:02x} at {link.start})"
        case json.JSONDecodeError():
            return f"it is not JSON ({link})"
        case RecursionError() if "decoding" in str(link):
            return "it is JSON nested too deeply to read"
        case pydantic.ValidationError():
            first = link.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            return f"{link.title}.{where}: {first['msg']}"
        case _:
            return None


def _litellm_said(text: str, cause: BaseException) -> str | None:
    """LiteLLM's own words for a body it could not read, or the error reading it raised."""
    if any(marker in text for marker in _LITELLM_SAYS):
        received = text.partition("Received: ")[2].partition(". Check the")[0]
        return "LiteLLM could not read it as a chat completion" + (
            f"; it received {_line(received)}" if received else ""
        )
    if isinstance(cause, AttributeError | TypeError | LookupError):
        return f"not a chat completion ({type(cause).__name__}: {_line(str(cause))})"
    return None


def _line(text: str) -> str:
    """The first line, whole: ``errors`` shortens it once it is redacted."""
    return text.strip().splitlines()[0] if text.strip() else ""
