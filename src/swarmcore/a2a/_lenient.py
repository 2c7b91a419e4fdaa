"""Reading other agents' answers liberally: a malformed optional field never sinks an answer.

The a2a-sdk parses a whole JSON-RPC result at once, so one field it cannot
read (FastA2A writes status timestamps without a UTC offset, which protobuf's
Timestamp refuses) fails the whole answer. :class:`LenientTransport` sits
under the SDK's httpx client and, for the results swarmcore reads (a sent
message's, a stream's events, a task got or cancelled), drops each optional
field the SDK would refuse before the SDK sees the result, and says what it
dropped in a debug log. A field the protocol requires is never dropped: an
answer without it is refused as before. A result that parses is passed on
byte for byte.

A2A 1.0 results are checked field by field against the SDK's own protobuf
types (every optional field, at any depth). A2A 0.3 results go through the
SDK's 0.3 models first and are converted to 1.0 afterwards; what that
conversion parses strictly, the status timestamps, is checked the same way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import httpx
from a2a.types import SendMessageResponse, StreamResponse, Task, TaskStatus
from google.api import field_behavior_pb2  # pyright: ignore[reportMissingTypeStubs]
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from google.protobuf.message_factory import GetMessageClass

from swarmcore.a2a._wire import Fix, each_event, fixed_event, fixed_message
from swarmcore.llm._redaction import redact

logger = logging.getLogger("swarmcore.a2a")

_V10: dict[str, type[ProtoMessage]] = {
    "SendMessage": SendMessageResponse,
    "SendStreamingMessage": StreamResponse,
    "SubscribeToTask": StreamResponse,
    "GetTask": Task,
    "CancelTask": Task,
}
"""A2A 1.0 JSON-RPC methods whose results are repaired, and the type of each result."""
_V03 = frozenset(
    {"message/send", "message/stream", "tasks/resubscribe", "tasks/get", "tasks/cancel"}
)
"""A2A 0.3's names for the same methods."""
_STREAMING = frozenset(
    {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
)
"""The methods answered by an event stream (or, from some servers, by one JSON reply)."""


class NotAnAnswer(Exception):
    """A reply to an A2A request that is no JSON at all: an empty body, an HTML page..."""

    def __init__(self, what: str, *, retryable: bool) -> None:
        super().__init__(what)
        self.what = what
        self.retryable = retryable


def _required(field: FieldDescriptor) -> bool:
    """Whether the protocol marks ``field`` REQUIRED (google.api.field_behavior)."""
    options: Any = field.GetOptions()
    extension: Any = field_behavior_pb2.field_behavior  # pyright: ignore[reportUnknownMemberType]
    required: Any = field_behavior_pb2.REQUIRED  # pyright: ignore[reportUnknownMemberType]
    return required in options.Extensions[extension]


def repair_v10(value: dict[str, Any], kind: type[ProtoMessage]) -> list[str]:
    """Drop, in place, each optional field of ``value`` that ``kind`` cannot parse.

    Args:
        value: A decoded ProtoJSON object.
        kind: The protobuf type it should parse as.

    Returns:
        What was dropped: each field's path and why, for a log.
    """
    try:
        json_format.ParseDict(value, kind(), ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError):
        dropped: list[str] = []
        _repair(value, kind.DESCRIPTOR, kind.DESCRIPTOR.name, dropped)
        return dropped
    return []


def _repair(value: dict[str, Any], descriptor: Any, path: str, dropped: list[str]) -> None:
    descriptor = cast("Descriptor", descriptor)  # protobuf's C and Python descriptors alike
    fields = {**descriptor.fields_by_name, **{f.json_name: f for f in descriptor.fields}}
    probe = GetMessageClass(descriptor)
    for key in list(value):
        field = fields.get(key)
        if field is None:  # unknown: the SDK ignores it
            continue
        _repair_inside(value[key], field, f"{path}.{key}", dropped)
        try:
            json_format.ParseDict({key: value[key]}, probe(), ignore_unknown_fields=True)
        except (json_format.ParseError, TypeError, ValueError) as error:
            if _required(field):
                continue  # the SDK refuses the answer, and says why
            dropped.append(f"{path}.{key} = {_shown(value[key])} ({error})")
            del value[key]


def _repair_inside(value: Any, field: FieldDescriptor, path: str, dropped: list[str]) -> None:
    """Repair the messages a field holds (its value, its list's items, its map's values)."""
    target = field.message_type
    if target is None or target.full_name.startswith("google.protobuf."):
        return  # a scalar, or a well-known type: checked whole
    if target.GetOptions().map_entry:
        entry = target.fields_by_name["value"]
        if isinstance(value, dict) and entry.message_type is not None:
            for key, item in cast("dict[str, Any]", value).items():
                _repair_inside(item, entry, f"{path}[{key!r}]", dropped)
        return
    items = cast("list[Any]", value) if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if isinstance(item, dict):
            where = f"{path}[{i}]" if isinstance(value, list) else path
            _repair(cast("dict[str, Any]", item), target, where, dropped)


def repair_v03(value: dict[str, Any]) -> list[str]:
    """Drop, in place, the status timestamp of a 0.3 task or status update that 1.0 refuses.

    Returns:
        What was dropped, for a log.
    """
    status = value.get("status")
    if not isinstance(status, dict) or "timestamp" not in status:
        return []
    status = cast("dict[str, Any]", status)
    stamp = status["timestamp"]
    try:
        json_format.ParseDict({"timestamp": stamp}, TaskStatus())
    except (json_format.ParseError, TypeError, ValueError) as error:
        del status["timestamp"]
        return [f"status.timestamp = {_shown(stamp)} ({error})"]
    return []


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _repairer(method: str, url: str, secrets: Sequence[str]) -> Fix:
    """What repairs the results of ``method``, logging what it drops."""
    kind = _V10.get(method)

    def repair(result: dict[str, Any]) -> bool:
        dropped = repair_v10(result, kind) if kind is not None else repair_v03(result)
        for what in dropped:
            # Redacted whole, then cut: a field may quote the credentials we sent.
            shown = redact(what, *secrets)
            shown = shown if len(shown) <= 200 else shown[:199] + "…"
            logger.debug("A2A agent at %s: ignored a malformed field of its answer: %s", url, shown)
        return bool(dropped)

    return repair


class _RepairedEvents(httpx.AsyncByteStream):
    """A server-sent event stream, each event's result repaired as it passes."""

    def __init__(self, inner: httpx.AsyncByteStream, repair: Fix) -> None:
        self._inner = inner
        self._repair = repair

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for event in each_event(aiter(self._inner)):
            yield fixed_event(event, self._repair)

    async def aclose(self) -> None:
        await self._inner.aclose()


class LenientTransport(httpx.AsyncBaseTransport):
    """An httpx transport that repairs the A2A results it carries (see the module docstring).

    A reply that is not JSON at all (an empty body, a login page) is refused
    here, saying what it was, before the SDK fails on it as a bare decode error.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport, secrets: Sequence[str] = ()) -> None:
        self._inner = inner
        self._secrets = tuple(secrets)
        """Credentials redacted from what is logged (ours, which a remote may quote)."""
        self.streamed = False
        """Whether a streaming request was answered by an event stream (not one JSON reply)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        method = _method_of(request)
        response = await self._inner.handle_async_request(request)
        encoded = response.headers.get("content-encoding", "identity").lower() != "identity"
        if method is None or response.status_code >= 400 or encoded:
            return response  # (CappedTransport below decodes bodies: an encoded one is not ours)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        repair = _repairer(method, str(request.url), self._secrets)
        headers = response.headers
        content_type = headers.get("content-type", "")
        if "text/event-stream" in content_type:
            self.streamed = self.streamed or method in _STREAMING
            stream: httpx.AsyncByteStream = _RepairedEvents(response.stream, repair)
        else:
            try:
                body = b"".join([chunk async for chunk in response.stream])
            finally:
                await response.stream.aclose()
            _check_json(body, content_type, self._secrets)
            fixed = fixed_message(body, repair)
            stream = httpx.ByteStream(fixed)
            headers = httpx.Headers(
                [(k, v) for k, v in headers.multi_items() if k.lower() != "content-length"]
            )
            headers["content-length"] = str(len(fixed))
        return httpx.Response(
            status_code=response.status_code,
            headers=headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _check_json(body: bytes, content_type: str, secrets: Sequence[str]) -> None:
    """Raise NotAnAnswer unless ``body`` is JSON: say what it is instead, and how it begins."""
    kind = content_type.split(";")[0].strip() or "no content type"
    if not body.strip():
        # A reply cut off before its first byte, or a gateway's empty 200: the next try may do.
        raise NotAnAnswer(f"sent an empty reply ({kind})", retryable=True)
    try:
        json.loads(body)
    except ValueError:
        # Redacted, then cut: a credential (ours, echoed) across the cut would keep its start.
        head = redact(body[:4096].decode("utf-8", "replace"), *secrets)
        begins = " ".join(head.split())[:120]
        raise NotAnAnswer(
            f"sent a malformed response, not JSON ({kind}, beginning {begins!r}), where an "
            "A2A reply was expected; is the URL the agent's A2A endpoint?",
            retryable=False,
        ) from None


def _method_of(request: httpx.Request) -> str | None:
    """The JSON-RPC method a request calls, when its result is one this module repairs."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, httpx.RequestNotRead):
        return None
    method = cast("dict[str, Any]", body).get("method") if isinstance(body, dict) else None
    if isinstance(method, str) and (method in _V10 or method in _V03):
        return method
    return None
