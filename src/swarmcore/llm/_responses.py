"""OpenAI's Responses API, spoken by the native backend: a request built, a response read.

The agent loop keeps its conversation as chat messages; here they become a
Responses request (``POST {base}/responses``): the system prompt its
``instructions``, the rest ``input`` items (messages, ``function_call`` and
``function_call_output``), the tools as function tools, the settings renamed
where the API names them otherwise (``max_tokens`` is ``max_output_tokens``,
``reasoning_effort`` is ``reasoning.effort``, a JSON-schema response format is
``text.format``). Nothing is stored server-side unless the agent asks
(``store: false`` by default), so a reasoning model's reasoning comes back
encrypted (``include: ["reasoning.encrypted_content"]``); those items ride on
the assistant message (``Message.reasoning``) and go back, in place, with the
next request of the same run, so the model keeps its chain across tool calls.

A response is read into the same ``Completion`` a chat completion is, every
field checked as ``completion`` checks its own; an ``incomplete`` response cut
by ``max_output_tokens`` finishes ``length``, as a chat completion cut short does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from swarmcore.llm import _completion as completion
from swarmcore.llm import _local as local
from swarmcore.llm import _price_data as price_data
from swarmcore.llm._types import (
    CallSpec,
    EndpointError,
    LLMRequest,
    MalformedReply,
    Message,
    ToolCall,
    usage_of,
)
from swarmcore.llm.choice import CHAT_ONLY_SETTINGS, is_openai_model
from swarmcore.results import TokenUsage

PATH = "/responses"
"""Where a request goes, under the endpoint's base URL."""

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What ``include`` asks for so reasoning can be handed back without ``store``."""

# Chat-completions names of settings the Responses API names otherwise.
_RENAMED = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}


def chosen(call: CallSpec, model: str) -> bool:
    """Whether the native backend's attempts at ``model`` speak the Responses API.

    The agent's ``api`` when it chose one; else the Responses API for an OpenAI
    reasoning model offered tools (the price map's ``supports_reasoning``), which
    chat completions refuse together with a reasoning effort, and chat completions
    for every other model. Asked per model: a fallback model may speak the other API.
    An agent whose settings only chat completions take (``seed``, ``stop``...) keeps
    chat completions unless it chooses. An in-process test model (``swarmcore-test/...``:
    the offline, function and replay models, a dry run's) answers in chat completions
    whatever the agent chose, as it has no wire to speak either API on.
    """
    if local.is_local(model):  # answered in process, in chat completions' shape: no wire
        return False
    if call.api is not None:
        return call.api == "responses"
    if not call.tools or not CHAT_ONLY_SETTINGS.isdisjoint(call.settings):
        return False
    return price_data.supports(model, "reasoning") is True and is_openai_model(model)


def body(
    request: LLMRequest,
    name: str,
    settings: Callable[[Mapping[str, Any]], dict[str, Any]],
    *,
    reasons: bool,
) -> dict[str, Any]:
    """The body of one Responses request for the model the endpoint knows as ``name``.

    Args:
        request: The call and the conversation.
        name: The model's name at the endpoint.
        settings: The agent's settings that belong in a request body (the
            native backend's rule, shared with chat completions).
        reasons: Whether the model is known to reason (the price map's
            ``supports_reasoning``): only then is its reasoning asked for
            encrypted, as OpenAI refuses that ``include`` for any other model.
    """
    call = request.call
    sent = {_RENAMED.get(k, k): v for k, v in settings(call.settings).items()}
    effort = sent.pop("reasoning_effort", None)
    if effort is not None:  # chat completions' spelling of reasoning.effort
        sent["reasoning"] = {"effort": effort, **_mapping(sent.get("reasoning"))}
    if "tool_choice" in sent:
        sent["tool_choice"] = _tool_choice(sent["tool_choice"])
    sent.setdefault("store", False)
    if (
        sent["store"] is False and reasons
    ):  # nothing kept server-side: reasoning comes back encrypted
        include = [str(i) for i in _items(sent.get("include"))]
        if ENCRYPTED_REASONING not in include:
            include.append(ENCRYPTED_REASONING)
        sent["include"] = include
    sent["model"] = name
    instructions, items = input_items(request.messages)
    if instructions is not None:
        sent["instructions"] = instructions
    sent["input"] = items
    if call.tools:
        sent["tools"] = [_tool(t) for t in call.tools]
    if call.response_format is not None:
        sent["text"] = {**_mapping(sent.get("text")), "format": _format(call.response_format)}
    if request.stream:
        sent["stream"] = True
    return sent


def input_items(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """The conversation as ``instructions`` (its leading system messages) and ``input`` items.

    An assistant message becomes its reasoning items (handed back as they came),
    its text as an assistant message, then a ``function_call`` per tool call;
    a tool message the ``function_call_output`` of its call.
    """
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        content = message.get("content")
        if role == "system" and not items:
            instructions.append(_plain(content))
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id", ""),
                    "output": content if isinstance(content, str) else _parts(content, "input"),
                }
            )
        elif role == "assistant":
            items += _assistant_items(message)
        else:
            items.append({"type": "message", "role": role, "content": _content(content, "input")})
    return ("\n\n".join(instructions) if instructions else None), items


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = list(message.get("reasoning", ()))
    content = message.get("content")
    if content:
        items.append(
            {"type": "message", "role": "assistant", "content": _content(content, "output")}
        )
    for call in message.get("tool_calls", ()):
        function = _mapping(call.get("function"))
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id", ""),
                "name": function.get("name", ""),
                "arguments": function.get("arguments", ""),
            }
        )
    return items


def _content(content: object, side: str) -> object:
    """A message's content as the Responses API takes it: text as it is, parts converted."""
    return content if isinstance(content, str) or content is None else _parts(content, side)


def _parts(content: object, side: str) -> list[dict[str, Any]]:
    """Chat content parts as Responses ones; others pass as they are.

    ``text`` is ``input_text`` (``output_text`` for the assistant's), ``image_url`` is
    ``input_image``.
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": f"{side}_text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in _items(content):
        fields = _mapping(part)
        if fields.get("type") == "text":
            parts.append({"type": f"{side}_text", "text": fields.get("text", "")})
        elif fields.get("type") == "image_url":
            image: object = fields.get("image_url")
            given = _mapping(image)
            url = given.get("url") if given else image
            detail = given.get("detail") or "auto"
            parts.append({"type": "input_image", "image_url": url, "detail": detail})
        else:
            parts.append(fields)
    return parts


def _plain(content: object) -> str:
    """A system message's text: its text parts joined, when it has parts."""
    if isinstance(content, str):
        return content
    return "".join(str(_mapping(p).get("text", "")) for p in _items(content))


def _tool(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions tool spec as a Responses function tool.

    ``strict`` is sent as the spec says, False when it says nothing: the
    Responses API takes a missing ``strict`` as true, which refuses any schema
    not written for strict mode (every property required, no extra ones).
    """
    if spec.get("type") != "function" or "function" not in spec:
        return dict(spec)  # already a Responses tool (a built-in one, say)
    function = _mapping(spec["function"])
    tool: dict[str, Any] = {"type": "function", "name": function.get("name", "")}
    if function.get("description"):
        tool["description"] = function["description"]
    tool["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    tool["strict"] = bool(function.get("strict", False))
    return tool


def _tool_choice(choice: object) -> object:
    """A chat-completions ``tool_choice`` naming a function, in the Responses shape."""
    fields = _mapping(choice)
    function = _mapping(fields.get("function"))
    if fields.get("type") == "function" and "name" in function:
        return {"type": "function", "name": function["name"]}
    return choice


def _format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions ``response_format`` as the Responses API's ``text.format``."""
    if response_format.get("type") != "json_schema":
        return dict(response_format)  # json_object, text: the same in both APIs
    schema = _mapping(response_format.get("json_schema"))
    return {"type": "json_schema", **schema}


# --- the response ------------------------------------------------------------------------


def response(data: object) -> completion.Completion:
    """A whole Responses API response (``POST /responses`` without streaming), parsed.

    Raises:
        MalformedReply: It is no response, a field has the wrong type, or it is
            not finished (queued, in progress).
        EndpointError: It failed (``status: failed``), or is an ``error`` object.
    """
    fields = completion.json_object(data, "the reply")
    status = fields.get("status")
    if fields.get("error") is not None or status == "failed":
        error, message = completion.error_parts(fields)
        text = json.dumps(fields, default=str)[:1000]
        raise EndpointError(f"Error in the reply - {text}", message=message or text, body=error)
    if "output" not in fields:
        raise MalformedReply("the reply has no output: not a Responses API response")
    if status not in ("completed", "incomplete", None):
        shown = status if isinstance(status, str) and len(status) <= 20 else "unknown"
        raise MalformedReply(f"the response's status is {shown!r}: it is not finished")
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Mapping[str, Any]] = []
    for index, item in enumerate(completion.json_list(fields["output"], "its output")):
        where = f"output[{index}]"
        part = completion.json_object(item, where)
        kind = part.get("type")
        if kind == "message":
            texts += _texts(part, where)
        elif kind == "function_call":
            calls.append(_call(part, where))
        elif kind == "reasoning":
            reasoning.append(part)
    usage = fields.get("usage")
    return completion.Completion(
        text="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=_usage(completion.json_object(usage, "usage")) if usage is not None else TokenUsage(),
        has_usage=usage is not None,
        finish_reason=_finish(fields, calls),
        model=completion.name_of(fields.get("model")),
        service_tier=completion.name_of(fields.get("service_tier")),
        reasoning=tuple(reasoning),
    )


class StreamedResponse:
    """A streamed response, its semantic events added as they arrive, then read whole.

    Text deltas (``response.output_text.delta``) are published as they come, and
    so are a reasoning summary's (``response.reasoning_summary_text.delta``) and
    a function call's arguments' (``response.function_call_arguments.delta``, the
    call named when its item was added); the reply itself is the response the last event carries
    (``response.completed``, or ``response.incomplete``), read as a whole one
    is. A stream that ends without one was cut short; ``response.failed``
    raises its error.
    """

    def __init__(
        self,
        on_reasoning: Callable[[str], None] | None = None,
        on_tool_call: Callable[[int, ToolCall], None] | None = None,
    ) -> None:
        """Read a stream, handing on reasoning-summary and tool-call argument deltas as they come.

        Args:
            on_reasoning: Where each piece of a reasoning summary goes.
            on_tool_call: Where each piece of a function call's arguments goes, with the
                call's index among the response's calls (its output index counts other items).
        """
        self._final: Mapping[str, Any] | None = None
        self._events = 0
        self._on_reasoning = on_reasoning
        self._on_tool_call = on_tool_call
        self._calls: dict[int, tuple[int, ToolCall]] = {}  # output index: (call index, call)

    def add(self, event: object) -> str | None:
        """Add the next event; returns its text delta, to publish as it arrives.

        Raises:
            MalformedReply: The event is not a Responses API event.
            EndpointError: The response failed (``response.failed``).
        """
        self._events += 1
        where = f"stream event {self._events}"
        fields = completion.json_object(event, where)
        kind = fields.get("type")
        if kind == "response.output_text.delta":
            return completion.json_text(fields.get("delta"), f"{where}'s delta") or None
        if kind == "response.reasoning_summary_text.delta" and self._on_reasoning is not None:
            summary = completion.json_text(fields.get("delta"), f"{where}'s delta")
            if summary:
                self._on_reasoning(summary)
            return None
        if kind in ("response.output_item.added", "response.function_call_arguments.delta"):
            self._follow_call(kind, fields, where)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._final = completion.json_object(fields.get("response"), f"{where}'s response")
            if kind == "response.failed":
                response(self._final)  # raises the provider's error it carries
        return None

    def _follow_call(self, kind: str, fields: Mapping[str, Any], where: str) -> None:
        """Name a function call when its item is added; hand on each piece of its arguments.

        Leniently: what the stream gets wrong here, the final response is checked for.
        """
        at = fields.get("output_index")
        if self._on_tool_call is None or not isinstance(at, int):
            return
        if kind == "response.output_item.added":
            item = _mapping(fields.get("item"))
            if item.get("type") == "function_call":
                call_id = completion.name_of(item.get("call_id")) or ""
                name = completion.name_of(item.get("name")) or ""
                self._calls[at] = (len(self._calls), ToolCall(id=call_id, name=name, arguments=""))
        elif (known := self._calls.get(at)) is not None:
            piece = completion.json_text(fields.get("delta"), f"{where}'s delta")
            if piece:
                index, call = known
                self._on_tool_call(index, ToolCall(id=call.id, name=call.name, arguments=piece))

    def whole(self, content_type: str | None) -> completion.Completion:
        """The response the stream ended with.

        Args:
            content_type: The reply's ``Content-Type``, to say what came instead of a stream.

        Raises:
            MalformedReply: The stream ended before its response was done.
        """
        if self._final is None:
            if not self._events:
                raise MalformedReply(
                    "the reply to a streaming request carries no server-sent events "
                    f"(Content-Type {content_type or 'none'!r}): not a stream"
                )
            raise MalformedReply(
                f"the stream ended after {self._events} events without response.completed: "
                "it was cut short"
            )
        return response(self._final)


def _texts(message: Mapping[str, Any], where: str) -> list[str]:
    """An output message's text: its ``output_text`` parts, and a refusal's words."""
    texts: list[str] = []
    for number, item in enumerate(completion.json_list(message.get("content"), f"{where}.content")):
        at = f"{where}.content[{number}]"
        part = completion.json_object(item, at)
        if part.get("type") == "output_text":
            texts.append(completion.json_text(part.get("text"), f"{at}.text") or "")
        elif part.get("type") == "refusal":
            texts.append(completion.json_text(part.get("refusal"), f"{at}.refusal") or "")
    return texts


def _call(item: Mapping[str, Any], where: str) -> ToolCall:
    return ToolCall(
        id=completion.call_id(item.get("call_id"), where),
        name=completion.json_text(item.get("name"), f"{where}.name") or "",
        arguments=completion.json_text(item.get("arguments"), f"{where}.arguments") or "",
    )


def _usage(usage: Mapping[str, Any]) -> TokenUsage:
    """The Responses usage (``input_tokens``, ``output_tokens`` and their details) as ours.

    Read by chat completions' reader, every count checked; a bad one is named as
    this API names it.

    Raises:
        MalformedReply: A count that is no token count.
    """
    try:
        return usage_of(
            {
                "prompt_tokens": usage.get("input_tokens"),
                "completion_tokens": usage.get("output_tokens"),
                "prompt_tokens_details": usage.get("input_tokens_details"),
                "completion_tokens_details": usage.get("output_tokens_details"),
            }
        )
    except MalformedReply as exc:
        said = str(exc)
        for chat, ours in _USAGE_NAMES:
            if said.startswith(chat):
                said = ours + said.removeprefix(chat)
                break
        raise MalformedReply(said) from None


# Chat completions' usage names (as ``usage_of`` says them) and this API's.
_USAGE_NAMES = (
    ("usage.prompt_tokens_details.", "usage.input_tokens_details."),
    ("usage.completion_tokens_details.", "usage.output_tokens_details."),
    ("usage.prompt_tokens ", "usage.input_tokens "),
    ("usage.completion_tokens ", "usage.output_tokens "),
)


def _finish(fields: Mapping[str, Any], calls: Sequence[ToolCall]) -> str:
    """Chat completions' ``finish_reason`` for the response: ``length`` when cut short."""
    if fields.get("status") == "incomplete":
        reason = _mapping(fields.get("incomplete_details")).get("reason")
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if calls else "stop"


def _mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        items: Mapping[object, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): v for k, v in items.items()}
    return {}


def _items(value: object) -> Iterable[object]:
    if isinstance(value, list | tuple):
        return cast("Iterable[object]", value)
    return ()
