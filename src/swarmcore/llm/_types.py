"""The values that cross the model seam: what an agent asks for and what the model answered.

All swarmcore's own: no backend's type appears here, so the agent loop never
learns which backend served it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

from swarmcore._policies import RetryPolicy
from swarmcore.results import TokenUsage

BackendName = Literal["auto", "native", "litellm"]
"""Which backend serves a model: ``native`` (the OpenAI protocol, spoken by swarmcore),
``litellm``, or ``auto`` (native for OpenAI-protocol models, else LiteLLM)."""


ApiName = Literal["chat_completions", "responses"]
"""Which OpenAI API the native backend speaks for a model: ``chat_completions``
(``POST /chat/completions``, every OpenAI-protocol server's) or ``responses``
(``POST /responses``: reasoning carried between turns, reasoning models with tools)."""


class Message(TypedDict, total=False):
    """One chat message in OpenAI's format, as LiteLLM takes and returns it."""

    role: Required[Literal["system", "user", "assistant", "tool"]]
    content: str | None
    tool_calls: list[dict[str, Any]]
    """An assistant's native tool calls."""
    tool_call_id: str
    """Which call a ``tool`` message answers."""
    name: str
    reasoning: list[dict[str, Any]]
    """An assistant's reasoning items from the Responses API (opaque, encrypted), handed
    back with the next request of the same run; never sent on chat completions."""


"""A chat message in OpenAI format, the wire format every LiteLLM provider accepts."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: str

    def as_message_part(self) -> dict[str, Any]:
        """The call in OpenAI's assistant-message ``tool_calls`` format."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


# eq=False: a spec is one agent's, compared and hashed as itself; its mappings could not be hashed.
@dataclass(frozen=True, slots=True, eq=False)
class CallSpec:
    """What every model call of one agent sends besides the conversation.

    Built once per agent, from its settings and tools, and shared by all its calls.
    """

    agent_name: str
    model: str
    tools: Sequence[Mapping[str, Any]] = ()
    settings: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Provider settings passed through as they are (``temperature``, ``max_tokens``...)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    call_timeout: float | None = None
    """The longest one attempt may take, in seconds; None for no limit."""
    fallback_models: Sequence[str] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    response_format: Mapping[str, Any] | None = None
    """A native JSON-schema response format, for models that support one."""
    backend: BackendName | None = None
    """The backend chosen for the agent (its own, else the Swarm's defaults); None: the
    process default (``$SWARMCORE_MODEL_BACKEND``, else auto)."""
    api: ApiName | None = None
    """The OpenAI API the native backend speaks for the agent; None: chosen per model
    (``responses.chosen``: the Responses API for OpenAI reasoning models offered tools)."""


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One model call: the agent's call spec and the conversation so far."""

    call: CallSpec
    messages: Sequence[Message]
    stream: bool = False
    """Stream the reply, handing its text to ``on_text`` as it comes; the result is the same."""
    on_text: Callable[[str], None] | None = None
    """Where a streamed reply's text goes as it arrives (the run's ``TextDelta`` events)."""
    on_reasoning: Callable[[str], None] | None = None
    """Where a streamed reasoning summary goes as it arrives (``ReasoningDelta`` events)."""
    on_tool_call: Callable[[int, ToolCall], None] | None = None
    """Where a streamed tool call's arguments go as they arrive (``ToolCallDelta`` events):
    the call's index in the reply, and the call with the piece of its arguments that came."""

    def deliver(self, text: str) -> None:
        """Hand a piece of the streamed reply's text to ``on_text``, if set."""
        if self.on_text is not None:
            self.on_text(text)

    def deliver_reasoning(self, text: str) -> None:
        """Hand a piece of the streamed reasoning summary to ``on_reasoning``, if set."""
        if self.on_reasoning is not None:
            self.on_reasoning(text)

    def deliver_tool_call(self, index: int, piece: ToolCall) -> None:
        """Hand a piece of a streamed tool call to ``on_tool_call``, if set and not empty.

        Args:
            index: The call's place among the reply's tool calls.
            piece: The call's id and name, with the piece of its arguments that came.
        """
        if self.on_tool_call is not None and piece.arguments:
            self.on_tool_call(index, piece)


@dataclass(frozen=True, slots=True)
class LLMReply:
    """What the model answered."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: TokenUsage
    cost: float | None
    finish_reason: str | None
    duration_seconds: float
    model: str = ""
    """The model that answered: the request's, or a fallback."""
    attempts: int = 1
    """Attempts made across every model tried."""
    started_at: float | None = None
    """When the whole call started, in ``time.time()`` seconds."""
    response_model: str | None = None
    """The model the provider's reply names (its ``model`` field), when it names one."""
    reasoning: tuple[Mapping[str, Any], ...] = ()
    """The Responses API's reasoning items, as the model sent them, to hand back next turn."""
    api: ApiName | None = None
    """The OpenAI API the reply came through on the native backend (``chat_completions``
    or ``responses``); None on LiteLLM, which does not say."""

    def timed(
        self, duration_seconds: float, attempts: int, started_at: float | None = None
    ) -> LLMReply:
        """This reply with the whole call's duration, attempt count and start."""
        return LLMReply(
            self.text,
            self.tool_calls,
            self.usage,
            self.cost,
            self.finish_reason,
            duration_seconds,
            self.model,
            attempts,
            started_at,
            self.response_model,
            self.reasoning,
            self.api,
        )

    def as_message(self, *, with_calls: bool = True) -> Message:
        """The reply as an assistant message to append to the conversation.

        Args:
            with_calls: Keep its native tool calls (False for an answer, or for calls
                written as text); its reasoning items are kept either way, for the next turn.
        """
        message: Message = {"role": "assistant", "content": self.text}
        if with_calls and self.tool_calls:
            message["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        if self.reasoning:
            message["reasoning"] = [dict(item) for item in self.reasoning]
        return message


class EndpointError(Exception):
    """What an OpenAI-protocol endpoint answered instead of a reply (the native backend's).

    ``errors.classify`` reads it as it reads the ``openai`` SDK's status errors:
    ``str()`` is the SDK's ``"Error code: 429 - {...}"``, ``message`` the
    provider's own, ``body`` its ``error`` object.
    """

    def __init__(
        self,
        text: str,
        *,
        message: str,
        status_code: int | None = None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(text)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.headers = headers


class EndpointUnreachable(ConnectionError):
    """The native backend could not reach ``url``, or lost the connection mid-reply."""

    def __init__(self, text: str, *, url: str) -> None:
        super().__init__(text)
        self.url = url


class MalformedReply(Exception):
    """An endpoint answered, but not with a reply the protocol allows; the text says what.

    Bad JSON, a chunk that is not an object, text that is a number, a stream
    that ends before its ``finish_reason``, a negative token count...
    ``errors.classify`` makes it a retryable ``ModelError`` on either backend:
    another attempt (or a fallback model) may get a proper reply.
    """


MAX_TOKENS = 10**9
"""More tokens than any one reply uses: a count past it is not a count (``usage_of``)."""


def usage_of(usage: Any) -> TokenUsage:
    """An OpenAI-shaped ``usage`` as ours: an object (LiteLLM's, the SDK's) or its JSON.

    Cached and reasoning tokens sit in its details objects, each of which (and
    each count in them) may be missing or None, as may ``usage`` itself.

    Raises:
        MalformedReply: A count that is not a whole number from 0 to ``MAX_TOKENS``
            (a negative one would hand a run's token budget back).
    """
    prompt_details = _part(usage, "prompt_tokens_details")
    completion_details = _part(usage, "completion_tokens_details")
    return TokenUsage(
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        cached_tokens=_count(prompt_details, "cached_tokens", "prompt_tokens_details."),
        reasoning_tokens=_count(
            completion_details, "reasoning_tokens", "completion_tokens_details."
        ),
    )


def _count(owner: Any, name: str, within: str = "") -> int:
    """A token count: missing or None is 0; a whole number (``12.0`` too) up to ``MAX_TOKENS``."""
    value = _part(owner, name)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    if isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_TOKENS:
        return int(value)  # some servers write 12.0
    # Only a number is quoted: text could be a credential the server echoed.
    shown = repr(value) if isinstance(value, int | float) else f"a {type(value).__name__}"
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise MalformedReply(
        f"usage.{within}{name} is {shown}, not a token count (a whole number from 0 "
        f"to {MAX_TOKENS:,})"
    )


def _part(owner: Any, name: str) -> Any:
    if isinstance(owner, Mapping):
        fields: Mapping[str, Any] = owner  # pyright: ignore[reportUnknownVariableType]
        return fields.get(name)
    return getattr(owner, name, None)
