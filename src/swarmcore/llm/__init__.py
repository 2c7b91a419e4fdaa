"""The model seam: the only module that imports litellm, and only on first use.

``complete(request) -> LLMReply`` is the one coroutine the rest of swarmcore
calls. Requests and replies are swarmcore-owned dataclasses; no litellm
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
* ``timeout=`` is ignored for custom providers, and over HTTP it bounds each
  read rather than the whole call, so every attempt has a deadline of ours
  (``_Deadlines``: one timer per event loop; LiteLLM's own ``Timeout``, when it
  fires first, is reported as the call timeout too);
* its response cache raises on a hit, so it is never enabled;
* any ``tools=`` call imports ``mcp``, so the dependency is ``litellm[mcp]``.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, cast

from swarmcore import events
from swarmcore.errors import ModelError
from swarmcore.llm import budget, limits
from swarmcore.models import TokenUsage
from swarmcore.policies import RetryPolicy

__all__ = [
    "CallSpec",
    "LLMReply",
    "LLMRequest",
    "Message",
    "ToolCall",
    "complete",
    "load_litellm",
    "register_provider",
    "supports",
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


@dataclass(frozen=True, slots=True, eq=False)
class CallSpec:
    """What every model call of one agent sends besides the conversation.

    Built once per agent, settings and tools, and shared by all their calls: with
    the request's fixed keyword arguments made here, a call only adds its messages.
    """

    agent_name: str
    model: str
    tools: Sequence[Mapping[str, Any]] = ()
    settings: Mapping[str, Any] = field(default_factory=dict[str, Any])
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    call_timeout: float | None = None
    fallback_models: Sequence[str] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    response_format: Mapping[str, Any] | None = None
    """A native JSON-schema response format, for models that support one."""
    kwargs: Mapping[str, Any] = field(init=False, repr=False)
    """The keyword arguments of every call to ``model``, but the messages (and tools)."""

    def __post_init__(self) -> None:
        kwargs: dict[str, Any] = {
            **self.settings,
            "model": self.model,
            # One retry policy (ours): switch off litellm's and the OpenAI SDK's.
            "num_retries": 0,
            "max_retries": 0,
        }
        if self.response_format is not None:
            kwargs["response_format"] = self.response_format
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if self.call_timeout is not None:
            kwargs["timeout"] = self.call_timeout
        object.__setattr__(self, "kwargs", kwargs)


# Not frozen: a frozen __init__ sets each field through object.__setattr__, on every call.
@dataclass(slots=True)
class LLMRequest:
    """One model call: the agent's call spec and the conversation so far."""

    call: CallSpec
    messages: Sequence[Message]
    stream: bool = False
    """Stream the reply, publishing ``TextDelta`` events; the result is the same."""


@dataclass(slots=True)  # not frozen, as LLMRequest
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

    def as_message(self) -> Message:
        """The reply as an assistant message to append to the conversation."""
        message: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        return message


async def complete(request: LLMRequest) -> LLMReply:
    """Call the model, retrying transient failures, then trying each fallback model.

    Each model gets the request's retry policy in full; a failure that
    retrying cannot fix ends the call at once, whatever fallbacks remain.

    Raises:
        ModelError: The provider refused the request, or transient failures
            outlasted the retry policy on every model.
    """
    lit = load_litellm()
    call = request.call
    _check_key(lit, call, call.model)
    for model in call.fallback_models:  # a missing key fails before anything is spent
        _check_key(lit, call, model)
    start = time.perf_counter()
    # Most calls succeed at once, so the first attempt holds nothing across its await
    # but the call (no loop iterator, no attempt counter): with thousands of calls in
    # flight, every object held is one more for the garbage collector to walk.
    failure: ModelError | None = None
    response: Any = None
    try:
        response = await _call_once(lit, request, call.model, 1)
    except ModelError as exc:
        failure = exc
    if failure is None:
        model, attempts = call.model, 1
    else:  # outside the except block: later errors do not chain to this one
        model, attempts, response = await _after_failure(lit, request, failure)
    reply = _to_reply(lit, model, response, time.perf_counter() - start, attempts)
    meter = budget.current_meter()
    if meter is not None:
        meter.charge(reply.usage.total_tokens, reply.cost)
    return reply


async def _after_failure(
    lit: ModuleType, request: LLMRequest, first: ModelError
) -> tuple[str, int, Any]:
    """Retries of the first model, then each fallback model: (model, attempts, response)."""
    models = (request.call.model, *request.call.fallback_models)
    attempts = 0
    response: Any = None
    for index, model in enumerate(models):
        counter = _Attempts(made=1)
        try:
            if index == 0:
                if not first.retryable or request.call.retry.max_retries == 0:
                    raise first
                response = await _retry_after_failure(lit, request, model, counter, first)
            else:
                failed: ModelError | None = None
                try:
                    response = await _call_once(lit, request, model, 1)
                except ModelError as exc:
                    if not exc.retryable or request.call.retry.max_retries == 0:
                        raise
                    failed = exc
                if failed is not None:  # outside the except block, as in complete()
                    response = await _retry_after_failure(lit, request, model, counter, failed)
        except ModelError as exc:
            attempts += counter.made
            if not exc.retryable or index == len(models) - 1:
                raise
            logger.warning(
                "agent %s: %s failed %d times (%s); falling back to %s",
                request.call.agent_name,
                model,
                counter.made,
                exc,
                models[index + 1],
                extra={"agent_name": request.call.agent_name},
            )
            events.emit(
                events.ModelFallback,
                agent_name=request.call.agent_name,
                from_model=model,
                to_model=models[index + 1],
                error=str(exc),
            )
            continue
        return model, attempts + counter.made, response
    raise AssertionError("unreachable: the last model either answers or raises")


@dataclass(slots=True)
class _Attempts:
    made: int = 0


async def _retry_after_failure(
    lit: ModuleType, request: LLMRequest, model: str, counter: _Attempts, first: ModelError
) -> Any:
    from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

    policy = request.call.retry
    replay: list[ModelError] = [first]

    def failure(state: RetryCallState) -> ModelError | None:
        exc = state.outcome.exception() if state.outcome else None
        return exc if isinstance(exc, ModelError) else None

    def stop(state: RetryCallState) -> bool:
        exc = failure(state)
        too_long = exc is not None and (exc.retry_after or 0) > policy.max_retry_after
        return state.attempt_number > policy.max_retries or too_long

    def wait(state: RetryCallState) -> float:
        exc = failure(state)
        return policy.delay(state.attempt_number, exc.retry_after if exc else None)

    def log_retry(state: RetryCallState) -> None:
        logger.warning(
            "agent %s: %s failed (%s); retry %d of %d in %.1fs",
            request.call.agent_name,
            model,
            failure(state),
            state.attempt_number,
            policy.max_retries,
            state.upcoming_sleep,
            extra={"agent_name": request.call.agent_name},
        )
        events.emit(
            events.RetryScheduled,
            agent_name=request.call.agent_name,
            scope="model_call",
            attempt=state.attempt_number,
            delay_seconds=state.upcoming_sleep,
            error=str(failure(state)),
            model=model,
        )

    retrying = AsyncRetrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception(lambda e: isinstance(e, ModelError) and e.retryable),
        before_sleep=log_retry,
        reraise=True,
    )
    response: Any = None
    async for attempt in retrying:
        with attempt:
            if replay:  # tenacity's attempt 1 is the failure that brought us here
                raise replay.pop()
            counter.made += 1
            response = await _call_once(lit, request, model, counter.made)
    assert response is not None  # reraise=True: the loop either returns a response or raises
    return response


def _kwargs(request: LLMRequest, model: str) -> dict[str, Any]:
    call = request.call
    # Fresh lists: what LiteLLM is handed is never what a later call sends.
    kwargs = {**call.kwargs, "messages": list(request.messages)}
    if model != call.model:  # a fallback
        kwargs["model"] = model
    if call.tools:
        kwargs["tools"] = list(call.tools)
    if request.stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs


async def _call_once(lit: ModuleType, request: LLMRequest, model: str, attempt: int) -> Any:
    meter = budget.current_meter()
    if meter is not None:
        # A partial, not a lambda: a lambda would make ``lit`` a cell this frame holds.
        meter.check(request.call.agent_name, model, functools.partial(_is_priced, lit))
    limiter = limits.limiter_for(model)
    permit = await limiter.acquire(_estimate_tokens(request)) if limiter is not None else None
    used: int | None = None
    # The bound on this attempt. LiteLLM's timeout= is not enough on its own: custom
    # providers ignore it, and over HTTP it bounds each read (aiohttp's sock_read), not
    # the call, so a server that trickles its reply would outlast it.
    deadlines: _Deadlines | None = None
    task: asyncio.Task[Any] | None = None
    timeout = request.call.call_timeout
    if timeout is not None:
        deadlines, task = _Deadlines.start(timeout)
    try:
        # Built in the call: no dict of ours held while the call is in flight.
        response = await lit.acompletion(**_kwargs(request, model))
        if request.stream:
            response = await _collect_stream(lit, request, response)
        if permit is not None:  # the limiter is told what the call really used
            usage: Any = getattr(response, "usage", None)
            used = int(getattr(usage, "total_tokens", 0) or 0) or None
        return response
    except BaseException as exc:
        if deadlines is not None and task is not None and deadlines.expired(task):
            raise _timed_out(request.call, model, attempt) from None
        if not isinstance(exc, Exception):
            raise  # a cancellation that is not our deadline's, KeyboardInterrupt, SystemExit
        timed_out = isinstance(exc, TimeoutError) or (
            isinstance(exc, lit.Timeout) and request.call.call_timeout is not None
        )
        error = _timed_out(request.call, model, attempt) if timed_out else None
        error = error or _classify(lit, exc, request.call, model, attempt)
        if error is None:
            raise
        # Not chained: the provider's own exception can echo the API key, and a chained
        # cause is printed in every traceback. The message keeps its type and (redacted) text.
        raise error from None
    finally:
        if deadlines is not None and task is not None:
            deadlines.remove(task)
        if permit is not None:
            permit.release(used)


class _Deadlines:
    """Every model call's ``call_timeout`` on one event loop, kept by a single timer.

    ``asyncio.timeout()`` per call costs a Timeout object, a TimerHandle pushed
    into the loop's heap (compared by a Python ``__lt__``) and its cancellation:
    ~300 Python bytecodes an agent run, a tenth of all it ran. Here a call
    costs a dict entry. The one timer stands at or before the earliest deadline,
    so each deadline fires on time; it then cancels the call's task, as
    ``asyncio.timeout`` does, and ``expired`` turns that into a timeout.
    """

    __slots__ = ("_at", "_due", "_expired", "_loop", "_timer")

    _local = threading.local()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: dict[asyncio.Task[Any], tuple[float, int]] = {}
        self._expired: dict[asyncio.Task[Any], int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf

    @classmethod
    def start(cls, seconds: float) -> tuple[_Deadlines, asyncio.Task[Any]]:
        """Start the current task's deadline, ``seconds`` from now, on the running loop.

        Returns the loop's deadlines (one loop per thread at a time) and the task.
        """
        loop = asyncio.get_running_loop()
        deadlines: _Deadlines | None = getattr(cls._local, "deadlines", None)
        if deadlines is None or deadlines._loop is not loop:
            deadlines = cls._local.deadlines = cls(loop)
        task = asyncio.current_task(loop)
        if task is None:  # not inside a task: nothing to cancel
            raise RuntimeError("a model call must run inside an asyncio task")
        when = loop.time() + seconds
        # What cancelled the task before: a cancellation that is not ours stays one.
        deadlines._due[task] = (when, task.cancelling())
        if when < deadlines._at:  # an earlier deadline than the timer's: bring the timer forward
            if deadlines._timer is not None:
                deadlines._timer.cancel()
            deadlines._at = when
            deadlines._timer = loop.call_at(when, deadlines._fire)
        return deadlines, task

    def remove(self, task: asyncio.Task[Any]) -> None:
        """The call ended: forget its deadline; undo a cancellation it made but never reported."""
        self._due.pop(task, None)
        if self._expired and task in self._expired:
            self._expired.pop(task)
            task.uncancel()

    def expired(self, task: asyncio.Task[Any]) -> bool:
        """Whether the task's deadline cancelled it, with no other cancellation pending."""
        if not self._expired or task not in self._expired:
            return False
        cancelling = self._expired.pop(task)
        return task.uncancel() <= cancelling

    def _fire(self) -> None:
        self._timer = None
        # asyncio runs a timer up to its clock resolution early; the slack covers it.
        now = self._loop.time() + _DEADLINE_SLACK
        due = self._due
        for task in [t for t, (when, _) in due.items() if when <= now]:
            self._expired[task] = due.pop(task)[1]
            task.cancel()
        self._at = min((when for when, _ in due.values()), default=math.inf)
        if self._at < math.inf:  # call_timeout=inf: no deadline to wait for
            self._timer = self._loop.call_at(self._at, self._fire)


_DEADLINE_SLACK = 1e-3


def _timed_out(call: CallSpec, model: str, attempt: int) -> ModelError:
    return ModelError(
        f"Agent {call.agent_name!r}: {model} did not answer within "
        f"{call.call_timeout}s (attempt {attempt} of {call.retry.max_retries + 1}); "
        "raise the agent's call_timeout or retry.",
        agent_name=call.agent_name,
        model=model,
        retryable=True,
    )


async def _collect_stream(lit: ModuleType, request: LLMRequest, stream: Any) -> Any:
    """Publish each text delta, then rebuild the whole response (usage included) from the chunks."""
    chunks: list[Any] = []
    async for chunk in stream:
        chunks.append(chunk)
        choices: Any = getattr(chunk, "choices", None) or []
        text = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
        if text:
            events.emit(events.TextDelta, agent_name=request.call.agent_name, text=text)
    return lit.stream_chunk_builder(chunks, messages=list(request.messages))


def prompt_cost(model: str, prompt_tokens: int) -> float | None:
    """USD for ``prompt_tokens`` sent to ``model``, from LiteLLM's price map; None if unpriced."""
    lit = load_litellm()
    if not _is_priced(lit, model):
        return None
    try:
        cost, _ = lit.cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=0)
        return float(cost)
    except Exception as exc:  # an odd price entry: report unpriced rather than guess
        logger.debug("no prompt price for %s: %s", model, exc)
        return None


_capabilities: dict[tuple[str, str], bool | None] = {}


def supports(model: str, capability: str) -> bool | None:
    """What LiteLLM's model data says of ``supports_<capability>`` for ``model``.

    None when LiteLLM does not know the model or leaves the capability unset,
    so callers can tell "no" apart from "unknown". Cached: the data is local.
    """
    key = (model, capability)
    if key not in _capabilities:
        lit = load_litellm()
        try:
            info: Any = lit.get_model_info(model)
            value = info.get(f"supports_{capability}")
        except Exception:  # unknown models raise assorted errors
            value = None
        _capabilities[key] = value if isinstance(value, bool) else None
    return _capabilities[key]


_priced: dict[str, bool] = {}


def _is_priced(lit: ModuleType, model: str) -> bool:
    """Whether LiteLLM's price map knows ``model`` (cached; the map is local and fixed)."""
    known = _priced.get(model)
    if known is None:
        try:
            info: Any = lit.get_model_info(model)
            known = info.get("input_cost_per_token") is not None
        except Exception:  # unknown models raise assorted errors
            known = False
        _priced[model] = known
    return known


def _estimate_tokens(request: LLMRequest) -> int:
    """A cheap upper-ish estimate for the tokens-per-minute limiter: ~4 characters a token."""
    chars = sum(len(str(m.get("content") or "")) for m in request.messages)
    chars += sum(len(str(t)) for t in request.call.tools)
    settings = request.call.settings
    completion = settings.get("max_tokens") or settings.get("max_completion_tokens")
    return chars // 4 + (int(completion) if isinstance(completion, int) else 0)


def _to_reply(
    lit: ModuleType, model: str, response: Any, duration: float, attempts: int
) -> LLMReply:
    choice: Any = response.choices[0]
    message: Any = choice.message
    raw_calls: list[Any] | None = message.tool_calls
    calls = (
        tuple(
            ToolCall(id=c.id, name=c.function.name or "", arguments=c.function.arguments or "")
            for c in raw_calls
        )
        if raw_calls
        else ()  # a comprehension is a function call of its own in 3.11, even over nothing
    )
    extra, private = _pydantic_dicts(response)
    usage: Any = extra["usage"] if "usage" in extra else getattr(response, "usage", None)
    token_usage = TokenUsage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
    return LLMReply(
        text=message.content,
        tool_calls=calls,
        usage=token_usage,
        cost=_cost(lit, model, response, private),
        finish_reason=choice.finish_reason,
        duration_seconds=duration,
        model=model,
        attempts=attempts,
    )


def _pydantic_dicts(response: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A LiteLLM response's extra fields (``usage``) and private ones (``_hidden_params``).

    Read from the dicts pydantic keeps them in: ``BaseModel.__getattr__`` finds
    each ~2 us slower. Empty for a response that is not a pydantic model.
    """
    extra = getattr(response, "__pydantic_extra__", None)
    private = getattr(response, "__pydantic_private__", None)
    return (
        cast("dict[str, Any]", extra) if isinstance(extra, dict) else {},
        cast("dict[str, Any]", private) if isinstance(private, dict) else {},
    )


def _cost(lit: ModuleType, model: str, response: Any, private: dict[str, Any]) -> float | None:
    """Price the call from LiteLLM's bundled price map; None when the model is unpriced."""
    # LiteLLM has already priced a non-streamed reply; pricing again costs ~130 us a call.
    hidden: dict[str, object] = (
        private["_hidden_params"]
        if "_hidden_params" in private
        else getattr(response, "_hidden_params", None)
    ) or {}
    known = hidden.get("response_cost")
    if isinstance(known, int | float) and not isinstance(known, bool):
        return float(known)
    if not _is_priced(lit, model):
        return None
    try:
        return float(lit.completion_cost(completion_response=response, model=model))
    except Exception as exc:  # unpriced models raise assorted errors; cost is optional data
        logger.debug("no price for %s: %s", model, exc)
        return None


# --- error classification ------------------------------------------------------------

_KEY_PATTERN = re.compile(r"\b(sk|pk|key|gsk|xai)-[A-Za-z0-9_\-*]{6,}")


def redact(text: str, secret: str | None = None) -> str:
    """Remove API keys from text that may be shown to a user or logged."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub(lambda m: f"{m.group(1)}-***", text)


def _classify(
    lit: ModuleType, exc: Exception, call: CallSpec, model: str, attempt: int
) -> ModelError | None:
    """Turn a litellm exception into a ModelError that says what to do; None if not litellm's."""
    status: int | None = getattr(exc, "status_code", None)
    detail = redact(_first_line(str(exc)), call.api_key)
    who = f"Agent {call.agent_name!r}: {model}"
    retry_after = _retry_after(exc)

    def error(text: str, *, retryable: bool = False) -> ModelError:
        return ModelError(
            text,
            agent_name=call.agent_name,
            model=model,
            status_code=status,
            retryable=retryable,
            retry_after=retry_after if retryable else None,
        )

    if isinstance(exc, lit.ContextWindowExceededError):
        return error(
            f"{who} rejected the prompt as longer than its context window ({status}). "
            "Shorten the task or instructions, use context_mode='pull', or pick a model "
            "with a larger window."
        )
    if isinstance(exc, lit.ContentPolicyViolationError) or (
        # Some providers send a plain 400; LiteLLM maps it only when the error code says so.
        isinstance(exc, lit.BadRequestError) and _mentions(detail, _CONTENT_POLICY_MARKERS)
    ):
        return error(f"{who} refused the request under its content policy ({status}): {detail}")
    if isinstance(exc, lit.AuthenticationError):
        return error(f"{who} rejected the API key ({status}). {_key_hint(lit, call, model)}")
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
        limit = call.retry.max_retry_after
        wait = ""
        if retry_after is not None:
            wait = f" The provider asked to wait {retry_after:g}s"
            wait += f", longer than max_retry_after={limit:g}s." if retry_after > limit else "."
        return error(
            f"{who} failed on attempt {attempt} of {call.retry.max_retries + 1} "
            f"({type(exc).__name__}, status {status}): {detail}.{wait} This is transient: "
            "retry later, raise the agent's retry, add fallback_models, or limit the "
            "model's requests with swarmcore.limit_model().",
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


_CONTENT_POLICY_MARKERS = ("content_policy", "content policy", "safety system", "content filter")


def _mentions(text: str, markers: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(m in lowered for m in markers)


def _retry_after(exc: Exception) -> float | None:
    """Seconds from the provider's ``Retry-After`` (or ``retry-after-ms``) header, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        headers = {str(k).lower(): v for k, v in headers.items()}
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(float(millis) / 1000, 0.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:  # an HTTP date
            when = email.utils.parsedate_to_datetime(str(value))
            return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, AttributeError):
        return None


_keys_found: set[str] = set()


def _check_key(lit: ModuleType, call: CallSpec, model: str) -> None:
    """Fail before the call when the provider's key is missing (LiteLLM calls it a 500)."""
    if call.api_key is not None or model in _keys_found:
        return
    missing = [k for k in _missing_keys(lit, model) if "KEY" in k or "TOKEN" in k]
    if missing:
        raise ModelError(
            f"Agent {call.agent_name!r}: {model} needs an API key and none was "
            f"found: set {' or '.join(missing)}, or pass api_key= to the Agent.",
            agent_name=call.agent_name,
            model=model,
        )
    _keys_found.add(model)  # only a positive answer is cached: a key may be set later


def _missing_keys(lit: ModuleType, model: str) -> list[str]:
    try:
        return list(lit.validate_environment(model).get("missing_keys", []))
    except Exception as exc:  # an unknown provider has no key to suggest
        logger.debug("validate_environment(%s) failed: %s", model, exc)
        return []


def _key_hint(lit: ModuleType, call: CallSpec, model: str) -> str:
    """Which environment variable to check, from LiteLLM's own knowledge of the provider."""
    names = [k for k in _missing_keys(lit, model) if "KEY" in k] if call.api_key is None else []
    if names:
        return f"No key was found: set {' or '.join(names)}."
    return "Check the key passed as api_key= or set in the provider's environment variable."


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
