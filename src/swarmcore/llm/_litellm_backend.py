"""The LiteLLM backend: one attempt at a model call through ``litellm.acompletion``.

It reaches every provider LiteLLM knows, and the offline test models too
(LiteLLM custom providers). No LiteLLM type leaves this module: a response
becomes an ``LLMReply``, an exception a ``ModelError``.

LiteLLM traps on the pinned release, each handled deliberately:

* the price map is fetched from GitHub at import unless
  ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, so ``load_litellm`` sets it
  (``setdefault``) before the import: no network at first use;
* its own retries (``num_retries``) and the OpenAI SDK's under it would retry
  on top of ours, so both are switched off and ``complete`` owns the one
  retry policy;
* ``timeout=`` is ignored for custom providers, and over HTTP it bounds each
  read rather than the whole call, so ``complete`` puts its own deadline
  around each attempt (LiteLLM's ``Timeout``, when it fires first, is reported
  as the call timeout too);
* ``acompletion`` builds the provider's coroutine in a worker thread
  (``run_in_executor``) and awaits it after; a call cancelled during that hop
  (a quorum group cancelling its slower members, say) drops the coroutine,
  which prints "coroutine ... was never awaited" in the user's process. So a
  cancellation waits for the hop to end (it is CPU work, milliseconds) and
  then cancels the call, which closes the coroutine;
* its stream reader ends every stream with a ``finish_reason`` of its own
  ("stop"), even one cut short, an HTML page or an empty body, and a body it
  cannot read surfaces as a 500 or a connection error; so the provider's own
  finish reason is read from the reader (``_check_finished``), and
  ``malformed`` finds the decoding error under the 500;
* its response cache raises on a hit, so it is never enabled;
* any ``tools=`` call imports ``mcp``, so the dependency is ``litellm[mcp]``;
* every call queues its success (or failure) log for LiteLLM's background
  logging worker, and the log holds the call's messages and response until the
  worker gets to it. Under load the worker falls far behind (three bursts of
  1,000 concurrent runs left ~24,000 logs and ~450 MB waiting), and while no
  LiteLLM callback or budget reads the logs they are pure waste; so a call made
  while LiteLLM has no listener is flagged as one of LiteLLM's own internal
  calls, which it does not log. Registering a LiteLLM callback (on ``litellm``
  or in ``model_settings``) brings its logging back.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

from swarmcore.llm import _price_data as price_data
from swarmcore.llm._errors import classify
from swarmcore.llm._loader import load_litellm
from swarmcore.llm._pricing import cost
from swarmcore.llm._target import model_target
from swarmcore.llm._types import (
    LLMReply,
    LLMRequest,
    MalformedReply,
    Message,
    ToolCall,
    usage_of,
)
from swarmcore.llm.choice import litellm_listener


class LiteLLMBackend:
    """Calls models through ``litellm.acompletion``: any provider LiteLLM supports."""

    async def attempt(self, request: LLMRequest, model: str, attempt: int) -> LLMReply:
        """Make one attempt at ``model``, streaming the reply when the request asks.

        Raises:
            ModelError: The provider failed or refused; says whether a retry may help.
        """
        lit = load_litellm()
        unlogged = _unlogged_flag(lit, request.call.settings)
        token = unlogged.set(True) if unlogged is not None else None
        start = time.perf_counter()
        try:
            response = await _acompletion(lit, _kwargs(request, model))
            if request.stream:
                response = await _collect_stream(lit, request, response)
            return _to_reply(model, response, time.perf_counter() - start)
        except Exception as exc:
            error = classify(exc, request.call, model, attempt)
            if error is None:
                raise
        finally:
            if unlogged is not None and token is not None:
                unlogged.reset(token)
        # Raised outside the except block, so neither chained nor held as __context__: the
        # provider's own exception can echo the key. The message keeps its type and
        # (redacted) text.
        raise error


async def _acompletion(lit: Any, kwargs: dict[str, Any]) -> Any:
    """``litellm.acompletion``, cancelled only once it is past its worker-thread hop."""
    call = asyncio.ensure_future(lit.acompletion(**kwargs))
    try:
        await asyncio.wait({call})  # not shield(): its callback would hold the reply a while
    except asyncio.CancelledError:
        try:
            while not call.done() and _in_executor_hop(call):
                await asyncio.wait({call}, timeout=_HOP_POLL_SECONDS)
        finally:
            call.cancel()
            await asyncio.wait({call})  # its cleanup (closing the connection) ends before ours
            if not call.cancelled():  # it ended first: its error is not ours to raise
                call.exception()
        raise
    return call.result()


_HOP_POLL_SECONDS = 0.002


def _in_executor_hop(call: asyncio.Task[Any]) -> bool:
    """Whether ``call`` waits on ``acompletion``'s worker thread.

    That is: the innermost coroutine of its await chain is LiteLLM's
    ``acompletion`` itself, awaiting a future. On a LiteLLM release shaped
    otherwise this says False, and the call is cancelled at once, as any other
    await is.
    """
    coro: Any = call.get_coro()
    while inspect.iscoroutine(coro.cr_await):
        coro = coro.cr_await
    frame = coro.cr_frame
    return (
        frame is not None
        and coro.cr_await is not None
        and coro.cr_code.co_name == "acompletion"
        and frame.f_globals.get("__name__") == "litellm.main"
    )


def _unlogged_flag(lit: Any, settings: Mapping[str, Any]) -> ContextVar[bool] | None:
    """LiteLLM's "internal call, do not log" flag, when nothing would read this call's log.

    None (log as usual) while any LiteLLM callback is registered, globally or in
    the call's settings, or ``litellm.max_budget`` is set (LiteLLM counts spend
    in its logging), or when this LiteLLM release has no such flag.
    """
    if getattr(lit, "max_budget", None) or litellm_listener(lit, settings) is not None:
        return None
    return _internal_call_flag()


@functools.cache
def _internal_call_flag() -> ContextVar[bool] | None:
    try:
        from litellm._internal_context import is_internal_call
    except ImportError:  # another LiteLLM release: log as LiteLLM does
        return None
    return is_internal_call


def _kwargs(request: LLMRequest, model: str) -> dict[str, Any]:
    """``acompletion``'s keyword arguments for one attempt at ``model``."""
    call = request.call
    kwargs: dict[str, Any] = {
        **without_backend(call.settings),
        "model": model,
        # Fresh lists: what LiteLLM is handed is never what a later call sends.
        "messages": _cache_marked(request.messages)
        if _caches_marked_prefixes(model, call.settings)
        else [_without_reasoning(m) for m in request.messages],
        # One retry policy (ours): switch off litellm's and the OpenAI SDK's.
        "num_retries": 0,
        "max_retries": 0,
    }
    optional = {
        "tools": list(call.tools) if call.tools else None,
        "response_format": call.response_format,
        "api_base": call.api_base,
        "api_key": call.api_key,
        "timeout": call.call_timeout,
    }
    kwargs.update({name: value for name, value in optional.items() if value is not None})
    if request.stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs


def _caches_marked_prefixes(model: str, settings: Mapping[str, Any]) -> bool:
    """Whether ``model``'s provider caches only the prompt prefixes a request marks: Anthropic.

    (OpenAI, Gemini and DeepSeek cache any long enough prefix unasked.)
    """
    provider = model_target(model, settings.get("custom_llm_provider")).provider
    if provider is None:  # a bare name: the price map knows whose it is
        provider = price_data.lookup(model).get("litellm_provider")
    return provider == "anthropic"


def _without_reasoning(message: Message) -> Message:
    """``message`` without the Responses API's reasoning items (a fallback across APIs)."""
    if "reasoning" not in message:
        return message
    return cast(Message, {k: v for k, v in message.items() if k != "reasoning"})


def _cache_marked(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """``messages`` with the system prompt marked as a cacheable prefix (``cache_control``).

    The system prompt is the part of a request that stays the same across an
    agent's turns, retries and reruns (swarmcore lays it out so); the tool
    schemas before it are cached with it. LiteLLM turns the text block into
    Anthropic's ``system`` block with the mark.
    """
    marked: list[dict[str, Any]] = [dict(_without_reasoning(m)) for m in messages]
    for message in marked:
        content = message.get("content")
        if message.get("role") == "system" and isinstance(content, str) and content:
            mark = {"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}
            message["content"] = [mark]
            break
    return marked


def without_backend(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without ``backend`` and ``max_reply_bytes``: swarmcore's, not the provider's."""
    return {k: v for k, v in settings.items() if k not in _OURS}


_OURS = frozenset({"backend", "max_reply_bytes"})  # the latter bounds the native backend's reads


async def _collect_stream(lit: Any, request: LLMRequest, stream: Any) -> Any:
    """Publish each text and tool-call delta, then rebuild the whole response from the chunks.

    Raises:
        MalformedReply: The stream ended before the provider gave a ``finish_reason``.
    """
    chunks: list[Any] = []
    texts = 0
    calls: dict[int, ToolCall] = {}  # each call's id and name, from its first piece
    async for chunk in stream:
        chunks.append(chunk)
        choices: Any = getattr(chunk, "choices", None) or []
        delta: Any = getattr(choices[0], "delta", None) if choices else None
        text = getattr(delta, "content", None)
        if text:
            texts += 1
            request.deliver(text)
        for part in getattr(delta, "tool_calls", None) or ():
            _deliver_call_piece(request, part, calls)
    _check_finished(stream, texts)
    whole: Any = lit.stream_chunk_builder(chunks, messages=list(request.messages))
    choices: Any = getattr(whole, "choices", None) or []
    if not texts and choices and choices[0].message.content == "":
        # The builder makes "" of a stream that sent no text (tool calls only); the native
        # backend reads it as no text, and sends the calls back without a content.
        choices[0].message.content = None
    return whole


def _deliver_call_piece(request: LLMRequest, part: Any, calls: dict[int, ToolCall]) -> None:
    """Hand on a streamed tool call's piece of arguments, named as ``stream_chunk_builder`` will.

    A piece's id or name, when it has one, replaces the call's, as LiteLLM's builder does.
    """
    index: int = getattr(part, "index", None) or 0
    function: Any = getattr(part, "function", None)
    known = calls.get(index) or ToolCall(id="", name="", arguments="")
    call = ToolCall(
        id=getattr(part, "id", None) or known.id,
        name=getattr(function, "name", None) or known.name,
        arguments=getattr(function, "arguments", None) or "",
    )
    calls[index] = call
    request.deliver_tool_call(index, call)


def _check_finished(stream: Any, texts: int) -> None:
    """Raise unless the provider ended the stream with a ``finish_reason``.

    LiteLLM ends every stream with one of its own ("stop"), even one cut short,
    or an HTML page or a JSON body that carried no chunk at all; what the
    provider sent it keeps aside (``received_finish_reason``, or
    ``intermittent_finish_reason``). A LiteLLM release without them is trusted.
    """
    kept = [
        getattr(stream, n, _NO) for n in ("received_finish_reason", "intermittent_finish_reason")
    ]
    if _NO in kept or any(kept):
        return
    if texts:
        raise MalformedReply(
            f"the stream ended after {texts} text chunk{'s' if texts > 1 else ''} without a "
            "finish_reason: it was cut short"
        )
    raise MalformedReply(
        "the reply to a streaming request carried no chat-completion chunk and no "
        "finish_reason: not a stream (an HTML page, an empty body, or JSON?), or cut short"
    )


_NO = object()


def _to_reply(model: str, response: Any, duration: float) -> LLMReply:
    """A LiteLLM ``ModelResponse`` as our reply.

    Raises:
        MalformedReply: It has no choices, or text that is not text.
    """
    choices: Any = response.choices
    if not choices:
        raise MalformedReply("the reply has no choices: not a chat completion")
    choice: Any = choices[0]
    message: Any = choice.message
    if message.content is not None and not isinstance(message.content, str):
        raise MalformedReply(f"choices[0].message.content is {type(message.content).__name__}")
    usage = usage_of(getattr(response, "usage", None))
    return LLMReply(
        text=message.content,
        tool_calls=tuple(
            ToolCall(id=c.id, name=c.function.name or "", arguments=c.function.arguments or "")
            for c in message.tool_calls or ()
        ),
        usage=usage,
        cost=cost(model, response, usage),
        finish_reason=choice.finish_reason,
        duration_seconds=duration,
        model=model,
        response_model=_response_model(response),
    )


def _response_model(response: Any) -> str | None:
    """The model the provider's reply named (kept aside: a stream's ``model`` is the asked one)."""
    hidden: Any = getattr(response, "_hidden_params", None) or {}
    named: Any = hidden.get("provider_response_model") or response.model
    return named if isinstance(named, str) and named else None
