"""The native backend: one attempt at an OpenAI-protocol endpoint through the ``openai`` SDK.

OpenAI itself and every server that speaks its protocol (vLLM, llama.cpp,
Ollama, LM Studio, Groq, Together, OpenRouter...) are reached without LiteLLM:
less CPU per call, a third of the memory, and a first call that does not wait
seconds for LiteLLM's import. No SDK type leaves this module: a response
becomes an ``LLMReply``, an exception a ``ModelError`` (classified by
``errors.classify``, as LiteLLM's are, since LiteLLM's exceptions are the
SDK's subclasses).

Clients are cached per event loop, one per endpoint, key and organization, and
all the clients of a loop share one HTTP connection pool. The pool is bound to
its loop (its connections are), so a new ``asyncio.run`` gets its own, and
the old one is closed when its loop shuts down (``asyncio.run`` closes the
loop's async generators, and the pool's closer is one).

The pool is aiohttp's, through the SDK's ``DefaultAioHttpClient``: httpx's own
pool walks every pooled connection on each request, so with 200 calls in
flight it cost five times the CPU per call (benchmarks/peers.py, 50 concurrent
diamonds: 11-12 ms against 2.3 ms per call); LiteLLM uses aiohttp for the
same reason.

The SDK's own retries are off (``max_retries=0``): ``complete`` owns the one
retry policy, and puts its own deadline around each attempt.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from swarmcore import events
from swarmcore.errors import ModelError
from swarmcore.llm import price_data
from swarmcore.llm.errors import classify
from swarmcore.llm.types import CallSpec, LLMReply, LLMRequest, ToolCall, usage_of
from swarmcore.models import TokenUsage

__all__ = ["OpenAIBackend", "base_url", "preload"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Settings that configure the client or the call, not the request body.
_CLIENT_SETTINGS = frozenset(
    {
        "backend",
        "extra_headers",
        "api_key",
        "api_base",
        "base_url",
        "organization",
        "project",
        "timeout",
        "headers",
        "num_retries",
        "max_retries",
        "stream",
        "stream_options",
    }
)


class OpenAIBackend:
    """Calls OpenAI-protocol endpoints through ``openai.AsyncOpenAI``."""

    async def attempt(self, request: LLMRequest, model: str, attempt: int) -> LLMReply:
        """Make one attempt at ``model``, streaming the reply when the request asks.

        Raises:
            ModelError: The endpoint failed or refused; says whether a retry may help.
        """
        call = request.call
        start = time.perf_counter()
        try:
            response = await _post(await _client(call), request, model)
            if request.stream:
                reply = await _streamed(response, request, model)
            else:
                reply = _to_reply(call.agent_name, model, response)
        except Exception as exc:
            error = classify(exc, call, model, attempt)
            if error is None:
                raise
        else:
            return reply.timed(time.perf_counter() - start, 1)
        raise error  # outside the except block: the SDK's exception is neither chained nor kept


def base_url(call: CallSpec) -> str:
    """Where ``call`` goes: its ``api_base``, its settings', the environment's, or OpenAI's."""
    for value in (call.api_base, call.settings.get("api_base"), call.settings.get("base_url")):
        if isinstance(value, str) and value:
            return value
    return (
        os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or DEFAULT_BASE_URL
    )


def _api_key(call: CallSpec) -> str | None:
    key = call.api_key or call.settings.get("api_key") or os.environ.get("OPENAI_API_KEY")
    return str(key) if key else None


# --- clients, one pool per event loop ----------------------------------------------------


@dataclass
class _Pool:
    """One event loop's HTTP connection pool and the OpenAI clients that share it."""

    http: Any
    clients: dict[tuple[str, str | None, str | None, str | None], Any] = field(
        default_factory=dict[tuple[str, str | None, str | None, str | None], Any]
    )
    closer: AsyncGenerator[None] | None = None


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = weakref.WeakKeyDictionary()


async def _client(call: CallSpec) -> Any:
    """The loop's client for the call's endpoint and key, made on first use."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        import openai

        pool = _pools[loop] = _Pool(openai.DefaultAioHttpClient())
        pool.closer = _close_at_shutdown(pool)
        await anext(pool.closer)  # runs to its yield: the loop now knows it, and closes it
    url, key = base_url(call), _api_key(call)
    organization = _text(call.settings.get("organization"))
    project = _text(call.settings.get("project"))
    ident = (url, key, organization, project)
    client = pool.clients.get(ident)
    if client is None:
        import openai

        client = pool.clients[ident] = openai.AsyncOpenAI(
            api_key=key,
            base_url=url,
            organization=organization,
            project=project,
            max_retries=0,  # one retry policy: complete()'s
            http_client=pool.http,
        )
    return client


async def _close_at_shutdown(pool: _Pool) -> AsyncGenerator[None]:
    """Closes the pool when the loop shuts its async generators down (``asyncio.run`` does)."""
    try:
        yield
    finally:
        pool.clients.clear()
        await pool.http.aclose()


def preload() -> None:
    """Import the SDK and what a call uses of it, ahead of the first call."""
    from openai.types.chat import ChatCompletionChunk

    del ChatCompletionChunk


def _text(value: object) -> str | None:
    return str(value) if value else None


# --- the request -------------------------------------------------------------------------


def _request(request: LLMRequest, model: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The body of one chat-completions request for ``model``, and the SDK's request options.

    The body is sent as it is built here (the SDK's ``post``, as its README
    shows for any endpoint): ``chat.completions.create`` would walk every
    message and tool schema through its parameter transform, which costs a
    fifth of the CPU of a call with tools and does nothing to a chat body.
    """
    call = request.call
    body: dict[str, Any] = {}
    for name, value in call.settings.items():
        if name not in _CLIENT_SETTINGS:
            body[name] = value
    body.update(_mapping(body.pop("extra_body", None)))  # sent as the SDK would merge it
    if "max_tokens" in body and price_data.supports(model, "reasoning"):
        # OpenAI's reasoning models refuse max_tokens; LiteLLM renames it too.
        body.setdefault("max_completion_tokens", body.pop("max_tokens"))
    body["model"] = native_name(model)
    body["messages"] = list(request.messages)
    if call.tools:
        body["tools"] = list(call.tools)
    if call.response_format is not None:
        body["response_format"] = call.response_format
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    options: dict[str, Any] = {"security": {"bearer_auth": True}}  # the API key's header
    headers = {
        **_mapping(call.settings.get("headers")),
        **_mapping(call.settings.get("extra_headers")),
    }
    if headers:
        options["headers"] = headers
    query = _mapping(body.pop("extra_query", None))
    if query:
        options["params"] = query
    if call.call_timeout is not None:
        options["timeout"] = call.call_timeout
    return body, options


async def _post(client: Any, request: LLMRequest, model: str) -> Any:
    """The endpoint's response: the HTTP response, or an ``AsyncStream`` of chunks."""
    import httpx
    from openai import AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    body, options = _request(request, model)
    return await client.post(
        "/chat/completions",
        body=body,
        # A whole reply is read as JSON by _to_reply; a stream as the SDK's chunks.
        cast_to=ChatCompletion if request.stream else httpx.Response,
        options=options,
        stream=request.stream,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )


def native_name(model: str) -> str:
    """The name the endpoint knows ``model`` by: without LiteLLM's ``openai/`` prefix."""
    return model.removeprefix("openai/")


def _mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        items: Mapping[object, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): v for k, v in items.items()}
    return {}


# --- the reply ---------------------------------------------------------------------------


async def _streamed(stream: Any, request: LLMRequest, model: str) -> LLMReply:
    """Publish each text delta, then build the whole reply (usage included) from the chunks."""
    agent_name = request.call.agent_name
    texts: list[str] = []
    calls: dict[int, list[str]] = {}  # index: [id, name, arguments]
    finish: str | None = None
    usage: Any = None
    tier: object = None
    async with stream:
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            tier = getattr(chunk, "service_tier", None) or tier
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            delta = choice.delta
            if delta.content:
                texts.append(delta.content)
                events.emit(events.TextDelta, agent_name=agent_name, text=delta.content)
            for part in delta.tool_calls or ():
                slot = calls.setdefault(part.index, ["", "", ""])
                slot[0] = part.id or slot[0]
                if part.function is not None:
                    slot[1] += part.function.name or ""
                    slot[2] += part.function.arguments or ""
            finish = choice.finish_reason or finish
    used = usage_of(usage)
    return LLMReply(
        text="".join(texts) if texts else None,
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in calls.values()),
        usage=used,
        cost=_cost(model, used, tier) if usage is not None else None,
        finish_reason=finish,
        duration_seconds=0.0,
        model=model,
    )


def _to_reply(agent_name: str, model: str, response: Any) -> LLMReply:
    """A chat completion's JSON body as our reply.

    Read as JSON, not as the SDK's ``ChatCompletion``: building that model costs
    a sixth of a call's CPU, and the reply is read once, here.
    """
    try:
        data: Any = response.json()
        choice: Any = data["choices"][0]
        message: Any = choice["message"]
        calls: list[Any] = message.get("tool_calls") or []
        tool_calls = tuple(_tool_call(c) for c in calls if c.get("function") is not None)
    except (ValueError, LookupError, TypeError, AttributeError) as exc:
        raise ModelError(
            f"Agent {agent_name!r}: {model} answered with a body that is not a chat completion "
            f"({type(exc).__name__}: {str(exc)[:200]}); is the endpoint OpenAI-compatible?",
            agent_name=agent_name,
            model=model,
            retryable=True,  # a proxy's error page, say: another attempt may get through
        ) from None
    usage = data.get("usage")
    used = usage_of(usage)
    return LLMReply(
        text=message.get("content"),
        tool_calls=tool_calls,
        usage=used,
        cost=_cost(model, used, data.get("service_tier")) if usage is not None else None,
        finish_reason=choice.get("finish_reason"),
        duration_seconds=0.0,
        model=model,
    )


def _tool_call(call: Any) -> ToolCall:
    function: Any = call["function"]
    name: Any = function.get("name") or ""
    arguments: Any = function.get("arguments") or ""
    return ToolCall(id=str(call["id"]), name=str(name), arguments=str(arguments))


def _cost(model: str, usage: TokenUsage, tier: object) -> float | None:
    return price_data.cost(
        model,
        usage.prompt_tokens,
        usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        service_tier=tier if isinstance(tier, str) else None,  # flex and priority cost otherwise
    )
