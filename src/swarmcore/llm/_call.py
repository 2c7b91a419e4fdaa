"""``complete()``: the one model call the agent loop makes, with retries and fallbacks.

A call runs in three layers, each one coroutine:

1. ``complete`` checks every model's key, then tries the agent's model and
   each fallback model in turn, and charges the run's budget for the reply;
2. ``_with_retries`` attempts one model under the agent's retry policy,
   waiting out transient failures with jittered exponential backoff, one
   plain loop for every attempt;
3. ``_call_once`` makes one attempt: the budget's check, a permit from the
   model's limiter, and ``call_timeout`` around the backend's attempt.

The backend (``Backend``: LiteLLM, or the native OpenAI-protocol one, chosen by
``backends.backend_for``) makes the attempt itself and classifies its failures.

What the run carries (its budget, events, step runner, limits and backend
choice) comes down as an argument: the run's :class:`~swarmcore.scope.RunScope`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from swarmcore import events
from swarmcore._policies import RetryPolicy
from swarmcore.errors import ModelError
from swarmcore.llm import _limits as limits
from swarmcore.llm._errors import empty_answer, timed_out
from swarmcore.llm._prechecks import check_key, check_model_name
from swarmcore.llm._pricing import is_priced
from swarmcore.llm._types import CallSpec, LLMReply, LLMRequest, ToolCall
from swarmcore.llm.backends import backend_for
from swarmcore.scope import RunScope

logger = logging.getLogger("swarmcore.llm")


async def complete(request: LLMRequest, scope: RunScope | None = None) -> LLMReply:
    """Call the model, retrying transient failures, then trying each fallback model.

    Each model gets the request's retry policy in full; a failure that
    retrying cannot fix ends the call at once, whatever fallbacks remain.

    Args:
        request: The call and the conversation.
        scope: The run's scope, nested in the model call's span: its budget,
            events, step runner, limits and backend choice. None: a call of no
            run (no budget, nobody listening, the process's limits and backend).

    Raises:
        ModelError: The provider refused the request, or transient failures
            outlasted the retry policy on every model.
        BudgetExceeded: The run's budget is spent (or, under a cost budget,
            the model is unpriced).
    """
    call = request.call
    models = (call.model, *call.fallback_models)
    for model in models:  # a missing key fails before anything is spent
        check_key(call, model)
        check_model_name(call, model)
    scope = scope or RunScope()
    if request.stream and request.on_text is None and scope.bus is not None:
        request = replace(
            request,
            on_text=_deltas(scope, events.TextDelta, call.agent_name),
            on_reasoning=_deltas(scope, events.ReasoningDelta, call.agent_name),
            on_tool_call=_tool_call_deltas(scope, call.agent_name),
        )
    # One durable step (a checkpoint, under an engine that records steps); the budget
    # is charged outside it, so a replayed reply is charged again in the rebuilt meter.
    reply = await scope.step("model", lambda: _answer(request, models, scope))
    if scope.meter is not None:
        scope.meter.charge(reply.usage.total_tokens, reply.cost, model=reply.model)
    return reply


async def _answer(request: LLMRequest, models: tuple[str, ...], scope: RunScope) -> LLMReply:
    """The reply of the first model that answers, every attempt and wait included."""
    start = time.perf_counter()
    started_at = time.time()
    made = 0
    for model, fallback in zip(models, (*models[1:], None), strict=True):
        tries = _Tries()
        try:
            reply = await _with_retries(request, model, tries, scope)
        except ModelError as exc:
            made += tries.made
            if not exc.retryable or fallback is None:
                raise
            _report_fallback(scope, request.call, model, fallback, tries.made, exc)
            continue
        # The whole call, every attempt and wait included, is what the agent's record shows.
        return reply.timed(time.perf_counter() - start, made + tries.made, started_at)
    raise AssertionError("unreachable: the last model either answers or raises")


def _deltas(
    scope: RunScope, kind: type[events.TextDelta | events.ReasoningDelta], agent_name: str
) -> Callable[[str], None]:
    """Where a streamed reply's text (or reasoning summary) goes: the run's ``kind`` events."""

    def publish(text: str) -> None:
        scope.emit(kind, agent_name=agent_name, text=text)

    return publish


def _tool_call_deltas(scope: RunScope, agent_name: str) -> Callable[[int, ToolCall], None]:
    """Where a streamed tool call's arguments go: the run's ``ToolCallDelta`` events."""

    def publish(index: int, piece: ToolCall) -> None:
        scope.emit(
            events.ToolCallDelta,
            agent_name=agent_name,
            index=index,
            call_id=piece.id,
            name=piece.name,
            arguments=piece.arguments,
        )

    return publish


@dataclass
class _Tries:
    """Attempts made at one model, readable after it has failed for good."""

    made: int = 0


async def _with_retries(
    request: LLMRequest, model: str, tries: _Tries, scope: RunScope
) -> LLMReply:
    """Attempt ``model`` until it answers, fails for good, or the retry policy is spent.

    One loop for every attempt: attempt ``n`` fails with a ModelError worth
    retrying, and while retries remain (``n <= max_retries``) retry ``n`` is
    reported (``RetryScheduled``, a warning) and waited out, honouring the
    error's Retry-After. A plain loop rather than tenacity: setting tenacity up
    cost ~40 us a call (+1 % on benchmarks/run.py's W3 CPU/call row), and most
    calls never retry.
    """
    policy = request.call.retry
    attempt = 1
    while True:
        tries.made = attempt
        try:
            return await _call_once(request, model, attempt, scope)
        except ModelError as exc:
            if attempt > policy.max_retries or not _worth_retrying(exc, policy):
                raise
            delay = policy.delay(attempt, exc.retry_after)
            _report_retry(scope, request.call, model, exc, attempt, delay)
        await asyncio.sleep(delay)  # outside the except: the wait holds no failure's traceback
        attempt += 1


def _worth_retrying(error: ModelError, policy: RetryPolicy) -> bool:
    # A provider that asks for a longer wait than max_retry_after ends the retries at once.
    too_long = (error.retry_after or 0) > policy.max_retry_after
    return error.retryable and not too_long


async def _call_once(request: LLMRequest, model: str, attempt: int, scope: RunScope) -> LLMReply:
    """One attempt, within the run's budget and the model's limits."""
    if scope.meter is not None:
        scope.meter.check(request.call.agent_name, model, is_priced)
    limiter = (scope.limiter or limits.limiter_for)(model)
    if limiter is None:
        return await _within_deadline(request, model, attempt, scope)
    permit = await limiter.acquire(_estimate_tokens(request))
    used: int | None = None  # None: the estimate stands
    try:
        # Under an engine that shares limits across processes, their permit too.
        timeout = request.call.call_timeout
        async with limits.shared_permit(model, limiter.limit, timeout, scope.shared_limits):
            reply = await _within_deadline(request, model, attempt, scope)
        used = reply.usage.total_tokens or None  # the limiter is told what the call used
        return reply
    finally:
        permit.release(used)


async def _within_deadline(
    request: LLMRequest, model: str, attempt: int, scope: RunScope
) -> LLMReply:
    """The backend's attempt, bounded by ``call_timeout`` as a whole; an empty answer raises.

    LiteLLM's own ``timeout=`` is not enough: custom providers ignore it, and
    over HTTP it bounds each read, so a server that trickles its reply would
    outlast it.
    """
    call = request.call
    deadline = asyncio.timeout(call.call_timeout)
    try:
        async with deadline:
            reply = await (scope.backend or backend_for)(call, model).attempt(
                request, model, attempt
            )
    except (TimeoutError, ModelError):
        # A backend that turned our cancellation into an error of its own timed out all the same.
        if deadline.expired():
            raise timed_out(call, model, attempt) from None
        raise
    if reply.tool_calls or (reply.text or "").strip():
        return reply
    # An empty answer is never taken for one; its tokens were spent all the same.
    if scope.meter is not None:
        scope.meter.charge(reply.usage.total_tokens, reply.cost, model=model)
    raise empty_answer(call, model, attempt, reply.finish_reason)


def _estimate_tokens(request: LLMRequest) -> int:
    """A cheap upper-ish estimate for the tokens-per-minute limiter: ~4 characters a token."""
    chars = sum(len(str(m.get("content") or "")) for m in request.messages)
    chars += sum(len(str(t)) for t in request.call.tools)
    settings = request.call.settings
    completion = settings.get("max_tokens") or settings.get("max_completion_tokens")
    return chars // 4 + (int(completion) if isinstance(completion, int) else 0)


def _report_retry(
    scope: RunScope, call: CallSpec, model: str, error: ModelError, retry: int, delay: float
) -> None:
    logger.warning(
        "agent %s: %s failed (%s); retry %d of %d in %.1fs",
        call.agent_name,
        model,
        error,
        retry,
        call.retry.max_retries,
        delay,
        extra={"agent_name": call.agent_name},
    )
    scope.emit(
        events.RetryScheduled,
        agent_name=call.agent_name,
        scope="model_call",
        attempt=retry,
        delay_seconds=delay,
        error=str(error),
        model=model,
    )


def _report_fallback(
    scope: RunScope, call: CallSpec, model: str, fallback: str, attempts: int, error: ModelError
) -> None:
    logger.warning(
        "agent %s: %s failed %d times (%s); falling back to %s",
        call.agent_name,
        model,
        attempts,
        error,
        fallback,
        extra={"agent_name": call.agent_name},
    )
    scope.emit(
        events.ModelFallback,
        agent_name=call.agent_name,
        from_model=model,
        to_model=fallback,
        error=str(error),
    )
