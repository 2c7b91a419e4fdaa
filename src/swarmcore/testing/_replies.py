"""What test models answer with, and what they saw: shared by the models and the HTTP server.

Both answer in the chat-completions protocol, built here: a completion's
body, a stream's chunks, an error's object, and the token counts of a reply
that gives none (``count_tokens``: four characters a token, rounded up).
"""

from __future__ import annotations

import itertools
import json
import math
import time
import typing
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from swarmcore._text_tools import text_tool_marker

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call for a test model to make.

    Args:
        name: The tool to call.
        arguments: The arguments, as a mapping (sent as JSON) or as raw text
            (sent as it is, e.g. to test malformed JSON).
        id: The ``tool_call_id``; generated when omitted.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict[str, Any])
    id: str = field(default_factory=lambda: f"call_{next(_ids)}")

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON text the model sends."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply for a test model to give: text, tool calls, or both.

    Args:
        text: The answer text.
        tool_calls: Tool calls to make (the agent runs them and calls again).
        prompt_tokens: Reported prompt tokens; counted from the request when None
            (the JSON text of its messages and tool specs, by ``count_tokens``).
        completion_tokens: Reported completion tokens; counted from the reply when None
            (its text and tool-call arguments, by ``count_tokens``).
        cached_tokens: Reported cached prompt tokens (part of ``prompt_tokens``), sent
            as ``usage.prompt_tokens_details.cached_tokens`` (left out when 0).
        reasoning_tokens: Reported reasoning tokens (part of ``completion_tokens``), sent
            as ``usage.completion_tokens_details.reasoning_tokens`` (left out when 0).
        delay: Seconds to wait before answering (to test parallelism and timeouts).
        model: The model name the reply reports (``MockOpenAIServer``); the
            request's by default, as a real endpoint may name a dated version.
        headers: Extra response headers, e.g. a LiteLLM Proxy's
            ``x-litellm-response-cost`` (read as a gateway's cost, in process too).
        encrypted_reasoning: ``MockOpenAIServer``'s Responses API only: a reasoning item
            with this ``encrypted_content`` comes first in the reply's output, as a
            reasoning model's does with ``store: false``; chat completions have none.
        reasoning_summary: ``MockOpenAIServer``'s Responses API only: the reasoning
            item's summary, streamed as ``response.reasoning_summary_text.delta`` events.
        incomplete: ``MockOpenAIServer``'s Responses API only: the response ends
            ``incomplete`` for this reason (``"max_output_tokens"``), its text cut there.
    """

    text: str | None = None
    tool_calls: Sequence[Call] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    delay: float = 0.0
    model: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    encrypted_reasoning: str | None = None
    reasoning_summary: str | None = None
    incomplete: str | None = None

    @classmethod
    def tool(cls, name: str, /, **arguments: Any) -> Reply:
        """A reply that makes one tool call: ``Reply.tool("search", query="x")``."""
        return cls(tool_calls=(Call(name, arguments),))

    def as_message(self) -> dict[str, Any]:
        """The reply as an OpenAI assistant message."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json},
                }
                for c in self.tool_calls
            ]
        return message

    @property
    def finish_reason(self) -> str:
        """``tool_calls`` when the reply calls tools, else ``stop``."""
        return "tool_calls" if self.tool_calls else "stop"

    def for_request(self, request: RecordedRequest) -> Reply:
        """The reply as sent to ``request``: tool calls as text for a model without native tools.

        When the request offers no native tools but its system prompt teaches
        swarmcore's text tool protocol, the calls are written as that
        protocol's block, with the marker read from the prompt, as a real
        model would. Raw-text arguments stay as they are (a JSON string).
        """
        if not self.tool_calls or request.tools:
            return self
        marker = text_tool_marker(request.system)
        if marker is None:  # no tools offered at all: the calls stay native (answered as unknown)
            return self
        calls = [
            {
                "name": c.name,
                "arguments": c.arguments if isinstance(c.arguments, str) else dict(c.arguments),
            }
            for c in self.tool_calls
        ]
        block = f"```tool_calls {marker}\n{json.dumps({'tool_calls': calls})}\n```"
        text = f"{self.text}\n\n{block}" if self.text else block
        return replace(self, text=text, tool_calls=())


@dataclass(frozen=True, slots=True)
class Fail:
    """A provider failure for a test model to produce.

    Args:
        status_code: The HTTP status: 429 rate limit, 401 bad key, 500 server error...
        message: The provider's error message.
        headers: Extra response headers, e.g. ``Retry-After`` (in process too).
        delay: Seconds to wait before failing.
        echo_credential: ``MockOpenAIServer`` only: replace ``{credential}`` in the
            message with the key the request carried (its ``Authorization`` bearer
            token, or its ``api-key`` / ``x-api-key`` header), as a provider that
            echoes a rejected key does. For tests of key redaction.
        error: ``MockOpenAIServer`` only: the whole ``error`` object of the body, for a
            gateway's own error shapes; built from ``message`` when None.
    """

    status_code: int
    message: str = "simulated failure"
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    delay: float = 0.0
    echo_credential: bool = False
    error: Mapping[str, Any] | None = None


Step = Reply | Fail
"""One scripted answer."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request a test model received, as the provider would see it."""

    model: str
    """The model name (without the provider prefix)."""
    messages: list[dict[str, Any]]
    """The messages, in OpenAI format."""
    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The tool specs, in OpenAI format."""
    params: dict[str, Any] = field(default_factory=dict[str, Any])
    """Every other parameter sent (temperature, stream...)."""

    @property
    def system(self) -> str:
        """The system prompt ("" when none)."""
        for m in self.messages:
            if m.get("role") == "system":
                return _text(m.get("content"))
        return ""

    @property
    def user(self) -> str:
        """The last user message ("" when none)."""
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return _text(m.get("content"))
        return ""

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered."""
        return [t["function"]["name"] for t in self.tools]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """Tool-result messages since the last user message, in order."""
        results: list[dict[str, Any]] = []
        for m in reversed(self.messages):
            if m.get("role") == "user":
                break
            if m.get("role") == "tool":
                results.append(m)
        return list(reversed(results))

    @property
    def called_tools(self) -> list[str]:
        """Names of the tools the model has called since the last user message."""
        names: list[str] = []
        for m in self.messages:
            if m.get("role") == "user":
                names = []
            names += [call["function"]["name"] for call in tool_calls_of(m)]
        return names

    @property
    def prompt_chars(self) -> int:
        """Characters of the prompt: messages plus tool specs, as sent."""
        return len(json.dumps(self.messages)) + len(json.dumps(self.tools))


def usage_details(reply: Reply) -> dict[str, dict[str, int]]:
    """A reply's cached and reasoning tokens as OpenAI's usage details, each only when non-zero.

    Left out when zero, as many OpenAI-compatible servers leave them out, so
    most tests also cover a usage without details.
    """
    details: dict[str, dict[str, int]] = {}
    if reply.cached_tokens:
        details["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    if reply.reasoning_tokens:
        details["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return details


def tool_calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_calls`` of an assistant message (empty for any other message)."""
    calls: list[dict[str, Any]] = message.get("tool_calls") or []
    return calls


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        parts = typing.cast(list[dict[str, Any]], content)
        return "".join(str(p.get("text", "")) for p in parts)
    return ""


# --- the protocol's answers ----------------------------------------------------------

CHARS_PER_TOKEN = 4
"""Test models count a token per four characters: no tokenizer, the same count everywhere."""


def count_tokens(text: str) -> int:
    """Tokens in ``text`` by the test models' rule: four characters a token, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def usage(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    """The reply's ``usage`` object: its own counts, else ``count_tokens``'s."""
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = count_tokens(json.dumps(request.messages) + json.dumps(request.tools))
    completion = reply.completion_tokens
    if completion is None:
        completion = count_tokens(
            (reply.text or "") + "".join(c.arguments_json for c in reply.tool_calls)
        )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        **usage_details(reply),
    }


def completion_body(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    """The chat completion a test model answers ``request`` with."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or request.model,
        "choices": [
            {"index": 0, "message": reply.as_message(), "finish_reason": reply.finish_reason}
        ],
        "usage": usage(request, reply),
    }


def stream_chunks(
    request: RecordedRequest, reply: Reply, pieces: Iterable[str], *, include_usage: bool
) -> Iterator[dict[str, Any]]:
    """The chunks of the reply streamed: ``pieces`` of its text, its tool calls, its usage.

    A tool call comes as a model streams one: its id and name, then its arguments in pieces.
    """
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": reply.model or request.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {**base, "choices": [], "usage": usage(request, reply)}


def _pieces(text: str) -> list[str]:
    """``text`` in the pieces a stream sends it in: eight characters each, as a model's tokens."""
    return [text[start : start + 8] for start in range(0, len(text), 8)]


def responses_body(
    request: RecordedRequest, reply: Reply, sent: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Responses API response a test server answers ``request`` with (``POST /responses``).

    Its output: the reply's reasoning item (when it has one), its text as an
    assistant message, then a ``function_call`` item per tool call; its usage
    in the Responses shape (``input_tokens``, ``output_tokens`` and their details);
    and every field the Open Responses specification requires of a response, the
    request's settings said back as a server says them (``sent``: the request's
    body), else their defaults.
    """
    output: list[dict[str, Any]] = []
    if reply.encrypted_reasoning is not None or reply.reasoning_summary is not None:
        summary = reply.reasoning_summary
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{uuid.uuid4().hex[:12]}",
                "summary": [{"type": "summary_text", "text": summary}] if summary else [],
                "encrypted_content": reply.encrypted_reasoning,
            }
        )
    if reply.text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:12]}",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments_json,
            "status": "completed",
        }
        for call in reply.tool_calls
    ]
    counts = usage(request, reply)
    now = int(time.time())
    return {
        "id": f"resp_{uuid.uuid4().hex[:12]}",
        "object": "response",
        "created_at": now,
        "completed_at": None if reply.incomplete else now,
        "status": "incomplete" if reply.incomplete else "completed",
        "incomplete_details": {"reason": reply.incomplete} if reply.incomplete else None,
        "error": None,
        "model": reply.model or request.model,
        "output": output,
        "usage": {
            "input_tokens": counts["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": counts["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": counts["total_tokens"],
        },
        **_said_back(sent or {}),
    }


# What a response says of its request (the Open Responses specification requires each),
# with the value it has when the request leaves it out.
_SAID_BACK: Mapping[str, Any] = {
    "previous_response_id": None,
    "instructions": None,
    "tools": [],
    "tool_choice": "auto",
    "truncation": "disabled",
    "parallel_tool_calls": True,
    "text": {"format": {"type": "text"}},
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "temperature": 1.0,
    "reasoning": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "store": True,
    "background": False,
    "service_tier": "default",
    "metadata": {},
    "safety_identifier": None,
    "prompt_cache_key": None,
}


def _said_back(sent: Mapping[str, Any]) -> dict[str, Any]:
    """The request's settings as its response says them back: as sent, else their defaults."""
    return {name: sent.get(name, default) for name, default in _SAID_BACK.items()}


def responses_events(
    request: RecordedRequest,
    reply: Reply,
    pieces: Iterable[str],
    sent: Mapping[str, Any] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Responses API's stream of the reply: each semantic event's name and data.

    Each output item is added, its text (in ``pieces``) or arguments (in eights)
    sent as deltas, and done; the stream ends with ``response.completed`` (or
    ``response.incomplete``) carrying the whole response (``responses_body``'s,
    for the request's body ``sent``), usage included.
    """
    whole = responses_body(request, reply, sent)
    numbers = itertools.count()

    def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(numbers), **data}

    started: dict[str, Any] = {
        **whole,
        "status": "in_progress",
        "completed_at": None,
        "output": [],
        "usage": None,
    }
    yield event("response.created", response=started)
    for index, item in enumerate(whole["output"]):
        at: dict[str, Any] = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            yield event(
                "response.output_item.added", output_index=index, item={**item, "content": []}
            )
            for piece in pieces:
                yield event("response.output_text.delta", **at, content_index=0, delta=piece)
            yield event("response.output_text.done", **at, content_index=0, text=reply.text)
        elif item["type"] == "function_call":
            yield event(
                "response.output_item.added", output_index=index, item={**item, "arguments": ""}
            )
            arguments = item["arguments"]
            for piece in _pieces(arguments):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=arguments)
        else:
            yield event("response.output_item.added", output_index=index, item=item)
            for number, part in enumerate(item.get("summary", [])):
                text = part["text"]
                for piece in _pieces(text):
                    yield event(
                        "response.reasoning_summary_text.delta",
                        **at,
                        summary_index=number,
                        delta=piece,
                    )
                yield event(
                    "response.reasoning_summary_text.done", **at, summary_index=number, text=text
                )
        yield event("response.output_item.done", output_index=index, item=item)
    finished = "response.incomplete" if reply.incomplete else "response.completed"
    yield event(finished, response=whole)


def chat_messages_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Responses request's ``instructions`` and ``input`` as chat messages.

    So a script's steps and a test's checks read a Responses request as they read
    a chat-completions one (``RecordedRequest.system``, ``tool_results``...):
    reasoning items are left out (the request's raw body keeps them).
    """
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input")
    if isinstance(given, str):
        return [*messages, {"role": "user", "content": given}]
    items = typing.cast(list[dict[str, Any]], given or [])
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            last = messages[-1] if messages else None
            if last is not None and last.get("role") == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
            )
    return messages


def chat_tools_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Responses request's function tools in the chat-completions shape."""
    tools = typing.cast(list[dict[str, Any]], body.get("tools") or [])
    return [
        {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
        for tool in tools
        if tool.get("type") == "function"
    ]


def error_object(step: Fail, message: str | None = None) -> Mapping[str, Any]:
    """A failure's ``error`` object: its own (a gateway's shape), else OpenAI's, from its text."""
    if step.error is not None:
        return step.error
    text = step.message if message is None else message
    return {"message": text, "type": "error", "code": str(step.status_code)}
