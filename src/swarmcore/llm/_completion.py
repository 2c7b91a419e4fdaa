"""An OpenAI chat completion read as what the model answered: a JSON body, or its stream's chunks.

The native backend (``openai_backend``) reads the bytes; what they say is read
here, and every field a reply is built from is checked as it is read. A body
that is a list, text that is a number, a tool call whose function is a
string, a stream that ends before its ``finish_reason``, a negative token
count: each raises ``MalformedReply`` naming the field, which
``errors.classify`` makes a retryable ``ModelError``, worded as the LiteLLM
backend's. A server that answered 200 with an ``error`` object instead of a
completion raises the ``EndpointError`` an error event in a stream does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from swarmcore.llm._types import EndpointError, MalformedReply, ToolCall, usage_of
from swarmcore.results import TokenUsage


@dataclass(frozen=True, slots=True)
class Completion:
    """What one chat completion says, every field checked."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: TokenUsage
    has_usage: bool
    """Whether the reply reported its usage (else ``usage`` is all zeros)."""
    finish_reason: str | None
    model: str | None
    """The model the reply names, if it names one."""
    service_tier: str | None
    reasoning: tuple[Mapping[str, Any], ...] = ()
    """The Responses API's reasoning items (chat completions have none)."""


def parsed(raw: bytes | str, what: str) -> Any:
    """``raw`` JSON as Python values.

    Raises:
        MalformedReply: ``raw`` is not UTF-8, not JSON, or JSON nested too deeply to read.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise MalformedReply(f"{what} is not UTF-8 text ({not_utf8(exc)})") from None
    try:
        return json.loads(text)
    except RecursionError:  # "[[[[..." thousands deep
        raise MalformedReply(f"{what} is JSON nested too deeply to read") from None
    except ValueError as exc:
        raise MalformedReply(f"{what} is not JSON ({exc})") from None


def not_utf8(exc: UnicodeDecodeError) -> str:
    """Where a decoding failed, in a few words."""
    return f"byte 0x{exc.object[exc.start]:02x} at {exc.start}"


def completion(data: object) -> Completion:
    """A whole chat completion (``POST /chat/completions`` without streaming), parsed.

    Raises:
        MalformedReply: It is not a chat completion, or a field has the wrong type.
        EndpointError: It is an ``error`` object, sent with a 200.
    """
    body = json_object(data, "the reply")
    _raise_error(body, "Error in the reply")
    choices = json_list(body.get("choices"), "its choices")
    if not choices:
        raise MalformedReply("the reply has no choices: not a chat completion")
    choice = json_object(choices[0], "choices[0]")
    message = json_object(choice.get("message"), "choices[0].message")
    calls = json_list(message.get("tool_calls"), "choices[0].message.tool_calls")
    tool_calls: list[ToolCall] = []
    for index, call in enumerate(calls):
        where = f"choices[0].message.tool_calls[{index}]"
        fields = json_object(call, where)
        if fields.get("function") is None:  # not a function call: nothing we could run
            continue
        function = json_object(fields["function"], f"{where}.function")
        tool_calls.append(
            ToolCall(
                id=call_id(fields.get("id"), where),
                name=json_text(function.get("name"), f"{where}.function.name") or "",
                arguments=json_text(function.get("arguments"), f"{where}.function.arguments") or "",
            )
        )
    usage = body.get("usage")
    return Completion(
        text=json_text(message.get("content"), "choices[0].message.content"),
        tool_calls=tuple(tool_calls),
        usage=usage_of(json_object(usage, "usage")) if usage is not None else TokenUsage(),
        has_usage=usage is not None,
        finish_reason=json_text(choice.get("finish_reason"), "choices[0].finish_reason"),
        model=name_of(body.get("model")),
        service_tier=name_of(body.get("service_tier")),
    )


class StreamedCompletion:
    """A streamed chat completion, its chunks added as they arrive, then read whole.

    A stream is complete once a chunk gave its ``finish_reason``: one that ends
    without one was cut short, or was never a stream of chat-completion chunks
    (an HTML page, an empty body, another protocol's events).
    """

    def __init__(self, on_tool_call: Callable[[int, ToolCall], None] | None = None) -> None:
        """Read a stream, handing each piece of a tool call's arguments to ``on_tool_call``."""
        self._on_tool_call = on_tool_call
        self._texts: list[str] = []
        self._calls: dict[int, list[str]] = {}  # index: [id, name, arguments]
        self._finish: str | None = None
        self._usage: Mapping[str, Any] | None = None
        self._tier: str | None = None
        self._model: str | None = None
        self._chunks = 0
        self._with_choices = 0

    def add(self, chunk: object) -> str | None:
        """Add the next chunk; returns its text, to publish as it arrives.

        Raises:
            MalformedReply: The chunk is not a chat-completion chunk.
        """
        self._chunks += 1
        where = f"stream chunk {self._chunks}"
        fields = json_object(chunk, where)
        if fields.get("usage") is not None:
            self._usage = json_object(fields["usage"], f"{where}'s usage")
        self._tier = name_of(fields.get("service_tier")) or self._tier
        self._model = name_of(fields.get("model")) or self._model
        choices = json_list(fields.get("choices"), f"{where}'s choices")
        if not choices:  # the usage chunk has none
            return None
        self._with_choices += 1
        choice = json_object(choices[0], f"{where}'s choices[0]")
        given = choice.get("delta")
        delta = json_object(given, f"{where}'s delta") if given is not None else _EMPTY
        text = json_text(delta.get("content"), f"{where}'s delta.content")
        if text:
            self._texts.append(text)
        parts = json_list(delta.get("tool_calls"), f"{where}'s delta.tool_calls")
        for number, part in enumerate(parts):
            self._add_call(json_object(part, f"{where}'s delta.tool_calls[{number}]"), where)
        finish = json_text(choice.get("finish_reason"), f"{where}'s finish_reason")
        self._finish = finish or self._finish
        return text or None

    def _add_call(self, part: Mapping[str, Any], where: str) -> None:
        index = part.get("index", 0)
        if isinstance(index, bool) or not isinstance(index, int):
            raise MalformedReply(f"{where} has a tool call whose index is {_shown(index)}")
        slot = self._calls.setdefault(index, ["", "", ""])
        if part.get("id") is not None:
            slot[0] = call_id(part["id"], f"{where}'s tool call {index}")
        function = part.get("function")
        if function is not None:
            fields = json_object(function, f"{where}'s tool call {index} function")
            slot[1] += json_text(fields.get("name"), f"{where}'s tool call {index} name") or ""
            piece = json_text(fields.get("arguments"), f"{where}'s tool call {index} arguments")
            slot[2] += piece or ""
            if piece and self._on_tool_call is not None:
                self._on_tool_call(index, ToolCall(id=slot[0], name=slot[1], arguments=piece))

    def whole(self, content_type: str | None) -> Completion:
        """The completion the chunks make.

        Args:
            content_type: The reply's ``Content-Type``, to say what came instead of a stream.

        Raises:
            MalformedReply: The stream ended before a chunk gave its ``finish_reason``.
        """
        if self._finish is None:
            raise MalformedReply(self._unfinished(content_type))
        return Completion(
            text="".join(self._texts) if self._texts else None,
            tool_calls=tuple(
                ToolCall(id=i, name=n, arguments=a) for i, n, a in self._calls.values()
            ),
            usage=usage_of(self._usage) if self._usage is not None else TokenUsage(),
            has_usage=self._usage is not None,
            finish_reason=self._finish,
            model=self._model,
            service_tier=self._tier,
        )

    def _unfinished(self, content_type: str | None) -> str:
        if not self._chunks:
            return (
                "the reply to a streaming request carries no server-sent events "
                f"(Content-Type {content_type or 'none'!r}): not a stream"
            )
        chunks = _counted(self._chunks, "chunk")
        if not self._with_choices:
            return f"the stream's {chunks} carry no choices: not a chat-completion stream"
        return f"the stream ended after {chunks} without a finish_reason: it was cut short"


def raise_error_event(chunk: object, payload: str, *, is_error_event: bool) -> None:
    """Raise the provider's error a stream event carries instead of a chunk, if it carries one.

    Raises:
        EndpointError: The event is an ``error`` (an ``error`` field, or ``event: error``).
    """
    fields = _mapping(chunk)
    if "error" in fields or (fields and is_error_event):
        error, message = error_parts(fields)
        raise EndpointError(
            f"Error in the stream - {payload}", message=message or payload, body=error
        )


def _raise_error(body: Mapping[str, Any], prefix: str) -> None:
    if "error" in body and "choices" not in body:
        error, message = error_parts(body)
        text = json.dumps(body, default=str)[:1000]
        raise EndpointError(f"{prefix} - {text}", message=message or text, body=error)


def error_parts(data: object) -> tuple[object, str | None]:
    """An error body's ``error`` object (else the body) and its message, as the SDK reads them."""
    fields = _mapping(data)
    error: object = fields.get("error", data) if fields else data
    message: object = _mapping(error).get("message")
    return error, message if isinstance(message, str) and message else None


# --- each field, checked (the Responses API reader, `responses`, uses these too) -------

_EMPTY: Mapping[str, Any] = {}


def _mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        items: Mapping[object, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): v for k, v in items.items()}
    return {}


def json_object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise MalformedReply(f"{what} is {_shown(value)}, not a JSON object")
    fields: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] -- JSON's
    return fields


def json_list(value: object, what: str) -> list[Any]:
    """A JSON array; missing (None) is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedReply(f"{what} is {_shown(value)}, not a JSON array")
    items: list[Any] = value  # pyright: ignore[reportUnknownVariableType] -- JSON's
    return items


def json_text(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MalformedReply(f"{what} is {_shown(value)}, not text")


def call_id(value: object, where: str) -> str:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # some servers number their calls
    if value is None or value == "":
        raise MalformedReply(f"{where} has no id")
    raise MalformedReply(f"{where} has {_shown(value)} for its id, not text")


def name_of(value: object) -> str | None:
    """A name the reply gives itself (its model, its tier), if it is one: it is not checked."""
    return value if isinstance(value, str) and value else None


def _shown(value: object) -> str:
    """What a value is, in words: ``a number (5)``, ``text of 12 characters``.

    Only a number is quoted: text (and what a list or an object holds) could be
    a credential a server echoed, and a message is redacted as a whole, never a
    cut piece of one.
    """
    if value is None:
        return "missing"
    if isinstance(value, bool):
        return f"a boolean ({value!r})"
    if isinstance(value, int | float):
        shown = repr(value)
        return f"a number ({shown if len(shown) <= 40 else shown[:37] + '...'})"
    if isinstance(value, str):
        return f"text of {_counted(len(value), 'character')}"
    if isinstance(value, list):
        items: list[object] = value  # pyright: ignore[reportUnknownVariableType] -- JSON's
        return f"a list of {_counted(len(items), 'item')}"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _counted(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
