"""JSON-RPC results on the wire, rewritten in passing: a JSON body or a server-sent event stream.

The client (:mod:`swarmcore.a2a._lenient`) uses it to read other agents'
answers liberally, the server (:mod:`swarmcore.a2a._server`) to send numbers
as what they are. A result that needs no change passes byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

Fix = Callable[[dict[str, Any]], bool]
"""Changes a JSON-RPC result in place; whether it changed anything."""


def fixed_message(payload: bytes, fix: Fix, fix_error: Fix | None = None) -> bytes:
    """A JSON-RPC message's bytes with ``fix`` applied to its result (``fix_error`` to its error).

    ``payload`` itself when it needs no change, or is not a JSON-RPC message at
    all (its reader says what is wrong with it).
    """
    try:
        message = json.loads(payload)
    except ValueError:
        return payload
    if not isinstance(message, dict):
        return payload
    message = cast("dict[str, Any]", message)
    result, error = message.get("result"), message.get("error")
    if isinstance(result, dict):
        changed = fix(cast("dict[str, Any]", result))
    elif isinstance(error, dict) and fix_error is not None:
        changed = fix_error(cast("dict[str, Any]", error))
    else:
        changed = False
    if not changed:
        return payload
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


class Events:
    """Splits a server-sent event stream, fed chunk by chunk, into whole events."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events ``chunk`` completes, each ending in a blank line (lines end in LF)."""
        pending = self._pending
        start = max(0, len(pending) - 1)  # a line's or an event's end may straddle two chunks
        pending += chunk
        pending[start:] = pending[start:].replace(b"\r\n", b"\n")
        events: list[bytes] = []
        end = pending.find(b"\n\n", max(0, start - 1))
        while end >= 0:
            events.append(bytes(pending[: end + 2]))
            del pending[: end + 2]
            end = pending.find(b"\n\n")
        return events

    def rest(self) -> bytes:
        """What is left at the stream's end: an event without its blank line, if any."""
        rest = bytes(self._pending)
        self._pending.clear()
        return rest


async def each_event(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The events of a server-sent event stream, each whole."""
    events = Events()
    async for chunk in chunks:
        for event in events.feed(chunk):
            yield event
    rest = events.rest()
    if rest:
        yield rest


def fixed_event(event: bytes, fix: Fix, fix_error: Fix | None = None) -> bytes:
    """One server-sent event with ``fix`` applied to the result its data carries."""
    lines = event.split(b"\n")
    data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
    if not data:
        return event
    payload = b"\n".join(data)
    fixed = fixed_message(payload, fix, fix_error)
    if fixed is payload:
        return event
    kept = [line for line in lines if line and not line.startswith(b"data:")]
    return b"\n".join([*kept, b"data: " + fixed]) + b"\n\n"
