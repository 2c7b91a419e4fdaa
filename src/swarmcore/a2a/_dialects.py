"""The SDK server's JSON-RPC answers, put as the clients that read them expect.

An ASGI middleware between the a2a-sdk's routes and the wire: whole-number
token counts go out as integers, FastA2A 2.x's client gets its results wrapped
as it reads them, and a version error names the header that was missing.
"""

from __future__ import annotations

import json
from typing import Any, cast

from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as Message_

from swarmcore.a2a._wire import Events, fixed_event, fixed_message


class Answers:
    """ASGI middleware: the SDK's JSON-RPC answers, put as their clients read them.

    * **Token counts as integers.** Metadata is a protobuf Struct, which holds
      every number as a double: the SDK would send ``"prompt_tokens": 7.0``,
      which clients read as a float.
    * **FastA2A's dialect.** FastA2A 2.x's client calls 0.3's methods
      (``message/send``, ``message/stream``) with 0.3's fields, but reads
      results wrapped as 1.0 wraps them (``{"task": ...}``,
      ``{"statusUpdate": ...}``); it is told by its message, which has no
      ``kind`` (0.3 requires one), and its answers are wrapped so.
    * **What to fix.** A 1.0 request without the ``A2A-Version`` header is
      taken for 0.3 and refused (-32009): the error names the header.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body, replay = await _read_request(receive)
        fix = _fasta2a_answer if _in_fasta2a_dialect(body) else _integer_usage
        versioned = any(k.lower() == b"a2a-version" for k, _ in scope.get("headers", []))
        fix_error = None if versioned else _name_the_header
        stream: Events | None = None
        held: Message_ | None = None  # a JSON answer's start, sent with its length once whole
        answer = bytearray()

        async def sending(message: Message_) -> None:
            nonlocal stream, held
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                if b"text/event-stream" in kind:
                    stream = Events()
                elif b"application/json" in kind:
                    held = message
                    return
            elif message["type"] == "http.response.body" and stream is not None:
                fixed = [fixed_event(e, fix, fix_error) for e in stream.feed(message["body"])]
                if not message.get("more_body", False):
                    fixed.append(stream.rest())
                message = {**message, "body": b"".join(fixed)}
            elif message["type"] == "http.response.body" and held is not None:
                answer.extend(message.get("body", b""))
                if message.get("more_body", False):
                    return
                whole = fixed_message(bytes(answer), fix, fix_error)
                headers = [(k, v) for k, v in held.get("headers", []) if k != b"content-length"]
                headers.append((b"content-length", str(len(whole)).encode()))
                await send({**held, "headers": headers})
                message = {**message, "body": whole}
            await send(message)

        await self._app(scope, replay, sending)


async def _read_request(receive: Receive) -> tuple[bytes, Receive]:
    """A request's whole body, and a ``receive`` that hands it on again to the app."""
    first = await receive()
    body = bytearray(first.get("body", b""))
    while first["type"] == "http.request" and first.get("more_body", False):
        more = await receive()
        body.extend(more.get("body", b""))
        first = {**more, "body": b""}
    replayed = False

    async def replay() -> Message_:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {**first, "body": bytes(body), "more_body": False}

    return bytes(body), replay


def _in_fasta2a_dialect(request: bytes) -> bool:
    """Whether a JSON-RPC request is FastA2A 2.x's: a 0.3 message without its ``kind``."""
    try:
        call = json.loads(request)
    except ValueError:
        return False
    if not isinstance(call, dict):
        return False
    call = cast("dict[str, Any]", call)
    params = call.get("params")
    message = cast("dict[str, Any]", params).get("message") if isinstance(params, dict) else None
    return (
        call.get("method") in ("message/send", "message/stream")
        and isinstance(message, dict)
        and "kind" not in message
    )


def _name_the_header(error: dict[str, Any]) -> bool:
    """A version error (-32009) that names the header a 1.0 request lacks."""
    if error.get("code") != -32009:
        return False
    said = str(error.get("message") or "A2A version not supported.")
    error["message"] = (
        f"{said} A request without the header 'A2A-Version' is taken for A2A 0.3: send "
        "'A2A-Version: 1.0' with a 1.0 method (SendMessage...), or call 0.3's (message/send...)."
    )
    return True


_WRAPPED = {
    "task": "task",
    "message": "message",
    "status-update": "statusUpdate",
    "artifact-update": "artifactUpdate",
}
"""A 0.3 result's kind, and the key A2A 1.0 (and FastA2A) wraps it in."""


def _fasta2a_answer(result: dict[str, Any]) -> bool:
    """A 0.3 result wrapped as FastA2A's client reads it (see :class:`Answers`)."""
    _integer_usage(result)
    key = _WRAPPED.get(str(result.get("kind")))
    if key is None:
        return False
    inner = dict(result)
    result.clear()
    result[key] = inner
    return True


def _integer_usage(result: dict[str, Any], depth: int = 0) -> bool:
    """Make the whole-number token counts of usage metadata in ``result`` ints; if any changed.

    Usage sits in the metadata of a task or status update, itself maybe inside the
    result (A2A 1.0 wraps them: ``{"task": {...}}``).
    """
    changed = False
    metadata = result.get("metadata")
    usage = cast("dict[str, Any]", metadata).get("usage") if isinstance(metadata, dict) else None
    if isinstance(usage, dict):
        numbers = cast("dict[str, Any]", usage)
        for key, value in numbers.items():
            if key.endswith("tokens") and isinstance(value, float) and value.is_integer():
                numbers[key] = int(value)
                changed = True
    if depth < 2:
        for value in result.values():
            if isinstance(value, dict):
                changed |= _integer_usage(cast("dict[str, Any]", value), depth + 1)
    return changed
