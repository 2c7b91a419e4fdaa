"""The model seam: the only module that imports litellm, and only on first use.

``complete(request) -> LLMReply`` is the one coroutine the rest of swarmcore
calls. Requests and replies are swarmcore-owned frozen dataclasses; no litellm
type leaves this module. Errors are classified here, once: transient failures
(rate limits, timeouts, connection errors, 5xx) are retried with jittered
exponential backoff, and everything else becomes a ``ModelError`` that says
what to fix.

LiteLLM traps on the pinned release, each handled deliberately:

* the price map is fetched from GitHub at import unless
  ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, so it is set (``setdefault``) before
  the import: no network at first use;
* its own retries (``num_retries``) need tenacity, which it does not declare,
  and the OpenAI SDK under it retries again, so both are switched off and this
  module owns the one retry policy (with tenacity, declared);
* ``timeout=`` is ignored for custom providers, so every attempt runs inside
  ``asyncio.timeout``;
* its response cache raises on a hit, so it is never enabled;
* any ``tools=`` call imports ``mcp``, so the dependency is ``litellm[mcp]``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from swarmcore.errors import ModelError
from swarmcore.models import TokenUsage

__all__ = [
    "LLMReply",
    "LLMRequest",
    "Message",
    "ToolCall",
    "complete",
    "load_litellm",
    "register_provider",
]

logger = logging.getLogger("swarmcore.llm")

Message = dict[str, Any]
"""A chat message in OpenAI format, the wire format every LiteLLM provider accepts."""

_litellm: ModuleType | None = None
_providers: dict[str, Callable[[ModuleType], object]] = {}


def load_litellm() -> ModuleType:
    """Import and configure litellm once; the import takes seconds, so it happens on first use."""
    global _litellm
    if _litellm is None:
        # Read the bundled price map instead of fetching it from GitHub at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # Otherwise litellm prints provider-list banners to stdout on errors.
        litellm.suppress_debug_info = True
        _litellm = litellm
        for name, factory in _providers.items():
            _install_provider(litellm, name, factory)
    return _litellm


def register_provider(name: str, factory: Callable[[ModuleType], object]) -> None:
    """Register a LiteLLM custom provider, without importing litellm before it is needed.

    ``factory(litellm)`` builds the ``litellm.CustomLLM`` handler when litellm
    loads (at once if it already has). Models named ``"{name}/..."`` then go
    through LiteLLM's real call path to that handler; ``swarmcore.testing``
    registers its offline models this way.
    """
    _providers[name] = factory
    if _litellm is not None:
        _install_provider(_litellm, name, factory)


def _install_provider(lit: Any, name: str, factory: Callable[[ModuleType], object]) -> None:
    entries: list[dict[str, Any]] = [e for e in lit.custom_provider_map if e["provider"] != name]
    entries.append({"provider": name, "custom_handler": factory(lit)})
    lit.custom_provider_map = entries


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


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One model call: what to send and how hard to try."""

    agent_name: str
    model: str
    messages: Sequence[Message]
    tools: Sequence[Mapping[str, Any]] = ()
    settings: Mapping[str, Any] = field(default_factory=dict[str, Any])
    retries: int = 2
    call_timeout: float | None = None
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class LLMReply:
    """What the model answered."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: TokenUsage
    cost: float | None
    finish_reason: str | None
    duration_seconds: float

    def as_message(self) -> Message:
        """The reply as an assistant message to append to the conversation."""
        message: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        return message


# Backoff between retries of transient failures: 0.5 s, 1 s, 2 s ... capped, with jitter.
_BACKOFF_INITIAL = 0.5
_BACKOFF_MAX = 20.0


async def complete(request: LLMRequest) -> LLMReply:
    """Call the model once, retrying transient failures.

    Raises:
        ModelError: The provider refused the request, or transient failures
            outlasted ``request.retries``.
    """
    from tenacity import (
        AsyncRetrying,
        RetryCallState,
        retry_if_exception,
        stop_after_attempt,
        wait_exponential_jitter,
    )

    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        logger.warning(
            "agent %s: %s failed (%s); retry %d of %d",
            request.agent_name,
            request.model,
            exc,
            state.attempt_number,
            request.retries,
            extra={"agent_name": request.agent_name},
        )

    lit = load_litellm()
    _check_key(lit, request)
    start = time.perf_counter()
    retrying = AsyncRetrying(
        stop=stop_after_attempt(request.retries + 1),
        wait=wait_exponential_jitter(
            multiplier=_BACKOFF_INITIAL, max=_BACKOFF_MAX, jitter=_BACKOFF_INITIAL
        ),
        retry=retry_if_exception(lambda e: isinstance(e, ModelError) and e.retryable),
        before_sleep=log_retry,
        reraise=True,
    )
    response: Any = None
    async for attempt in retrying:
        with attempt:
            response = await _call_once(lit, request, attempt.retry_state.attempt_number)
    assert response is not None  # reraise=True: the loop either returns a response or raises
    return _to_reply(lit, request, response, time.perf_counter() - start)


async def _call_once(lit: ModuleType, request: LLMRequest, attempt: int) -> Any:
    kwargs: dict[str, Any] = {
        **request.settings,
        "model": request.model,
        "messages": list(request.messages),
        # One retry policy (ours): switch off litellm's and the OpenAI SDK's.
        "num_retries": 0,
        "max_retries": 0,
    }
    if request.tools:
        kwargs["tools"] = list(request.tools)
    if request.api_base is not None:
        kwargs["api_base"] = request.api_base
    if request.api_key is not None:
        kwargs["api_key"] = request.api_key
    if request.call_timeout is not None:
        kwargs["timeout"] = request.call_timeout
    try:
        # litellm ignores timeout= for custom providers; this bound holds for all.
        async with asyncio.timeout(request.call_timeout):
            return await lit.acompletion(**kwargs)
    except TimeoutError as exc:
        raise ModelError(
            f"Agent {request.agent_name!r}: {request.model} did not answer within "
            f"{request.call_timeout}s (attempt {attempt} of {request.retries + 1}); "
            "raise the agent's call_timeout or retries.",
            agent_name=request.agent_name,
            model=request.model,
            retryable=True,
        ) from exc
    except Exception as exc:
        error = _classify(lit, exc, request, attempt)
        if error is None:
            raise
        raise error from exc


def _to_reply(lit: ModuleType, request: LLMRequest, response: Any, duration: float) -> LLMReply:
    choice: Any = response.choices[0]
    message: Any = choice.message
    raw_calls: list[Any] = list(message.tool_calls or [])
    calls = tuple(
        ToolCall(id=c.id, name=c.function.name or "", arguments=c.function.arguments or "")
        for c in raw_calls
    )
    usage: Any = getattr(response, "usage", None)
    token_usage = TokenUsage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
    return LLMReply(
        text=message.content,
        tool_calls=calls,
        usage=token_usage,
        cost=_cost(lit, request, response),
        finish_reason=choice.finish_reason,
        duration_seconds=duration,
    )


def _cost(lit: ModuleType, request: LLMRequest, response: Any) -> float | None:
    """Price the call from LiteLLM's bundled price map; None when the model is unpriced."""
    try:
        return float(lit.completion_cost(completion_response=response, model=request.model))
    except Exception as exc:  # unpriced models raise assorted errors; cost is optional data
        logger.debug("no price for %s: %s", request.model, exc)
        return None


# --- error classification ------------------------------------------------------------

_KEY_PATTERN = re.compile(r"\b(sk|pk|key|gsk|xai)-[A-Za-z0-9_\-*]{6,}")


def redact(text: str, secret: str | None = None) -> str:
    """Remove API keys from text that may be shown to a user or logged."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub(lambda m: f"{m.group(1)}-***", text)


def _classify(
    lit: ModuleType, exc: Exception, request: LLMRequest, attempt: int
) -> ModelError | None:
    """Turn a litellm exception into a ModelError that says what to do; None if not litellm's."""
    status: int | None = getattr(exc, "status_code", None)
    detail = redact(_first_line(str(exc)), request.api_key)
    who = f"Agent {request.agent_name!r}: {request.model}"

    def error(text: str, *, retryable: bool = False) -> ModelError:
        return ModelError(
            text,
            agent_name=request.agent_name,
            model=request.model,
            status_code=status,
            retryable=retryable,
        )

    if isinstance(exc, lit.ContextWindowExceededError):
        return error(
            f"{who} rejected the prompt as longer than its context window ({status}). "
            "Shorten the task or instructions, use context_mode='pull', or pick a model "
            "with a larger window."
        )
    if isinstance(exc, lit.ContentPolicyViolationError):
        return error(f"{who} refused the request under its content policy ({status}): {detail}")
    if isinstance(exc, lit.AuthenticationError):
        return error(f"{who} rejected the API key ({status}). {_key_hint(lit, request)}")
    if isinstance(exc, lit.PermissionDeniedError):
        return error(
            f"{who} denied permission ({status}): {detail}. Check that the key may use this model."
        )
    if isinstance(exc, lit.NotFoundError):
        return error(
            f"{who} was not found ({status}): {detail}. Check the model name "
            "(LiteLLM format 'provider/model', e.g. 'openai/gpt-4o-mini')."
        )
    if isinstance(exc, lit.RateLimitError | lit.Timeout | lit.APIConnectionError) or (
        status is not None and status >= 500
    ):
        return error(
            f"{who} failed on attempt {attempt} of {request.retries + 1} "
            f"({type(exc).__name__}, status {status}): {detail}. This is transient: retry "
            "later, raise the agent's retries, or run fewer agents at once.",
            retryable=True,
        )
    if isinstance(exc, lit.BadRequestError | lit.UnprocessableEntityError):
        if "LLM Provider NOT provided" in str(exc):
            return error(
                f"{who}: LiteLLM does not know this provider. Model strings look like "
                "'openai/gpt-4o-mini' or 'anthropic/claude-sonnet-4-5'."
            )
        return error(
            f"{who} rejected the request ({status}): {detail}. Check the agent's model "
            "settings and tools."
        )
    if isinstance(exc, lit.APIError) or type(exc).__module__.startswith(("litellm", "openai")):
        return error(f"{who} failed ({type(exc).__name__}, status {status}): {detail}")
    return None


_keys_found: set[str] = set()


def _check_key(lit: ModuleType, request: LLMRequest) -> None:
    """Fail before the call when the provider's key is missing (LiteLLM calls it a 500)."""
    if request.api_key is not None or request.model in _keys_found:
        return
    missing = [k for k in _missing_keys(lit, request.model) if "KEY" in k or "TOKEN" in k]
    if missing:
        raise ModelError(
            f"Agent {request.agent_name!r}: {request.model} needs an API key and none was "
            f"found: set {' or '.join(missing)}, or pass api_key= to the Agent.",
            agent_name=request.agent_name,
            model=request.model,
        )
    _keys_found.add(request.model)  # only a positive answer is cached: a key may be set later


def _missing_keys(lit: ModuleType, model: str) -> list[str]:
    try:
        return list(lit.validate_environment(model).get("missing_keys", []))
    except Exception as exc:  # an unknown provider has no key to suggest
        logger.debug("validate_environment(%s) failed: %s", model, exc)
        return []


def _key_hint(lit: ModuleType, request: LLMRequest) -> str:
    """Which environment variable to check, from LiteLLM's own knowledge of the provider."""
    names = (
        [k for k in _missing_keys(lit, request.model) if "KEY" in k]
        if request.api_key is None
        else []
    )
    if names:
        return f"No key was found: set {' or '.join(names)}."
    return "Check the key passed as api_key= or set in the provider's environment variable."


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
