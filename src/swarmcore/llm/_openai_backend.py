"""The native backend: one attempt at an OpenAI-protocol endpoint, spoken over aiohttp.

OpenAI itself and every server that speaks its protocol (vLLM, llama.cpp,
Ollama, LM Studio, Groq, Together, OpenRouter...) are reached without LiteLLM:
less CPU per call, a third of the memory, and a first call that does not wait
seconds for LiteLLM's import. A response becomes an ``LLMReply``; a failure an
``EndpointError`` or ``EndpointUnreachable``, which ``errors.classify`` turns
into the same ``ModelError`` as LiteLLM's.

The protocol is one request (``POST {base}/chat/completions``, JSON in, JSON
or server-sent events out), so it is spoken here rather than through the
``openai`` SDK: importing the SDK 2.x (the one LiteLLM allows) takes 0.9 s on
our 2-core machine, most of it building its API types, and the first call
had to stay under a second (benchmarks/run.py, "first call"). The body is
sent as built and a reply read as JSON, as the SDK-based version of this
module did to save a third of its CPU per call.

Where a request goes, with which headers, on which connection pool is
``endpoints``'s, and what a reply says (every field checked) is
``completion``'s: this module is the exchange itself. An in-process test
model (``local``) gets the same body and its answer is read by the same code
as an HTTP server's; only the transport differs.

No retries here: ``complete`` owns the one retry policy and puts its own
deadline around each attempt.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from swarmcore.errors import ModelError
from swarmcore.llm import _completion as completion
from swarmcore.llm import _endpoints as endpoints
from swarmcore.llm import _local as local
from swarmcore.llm import _price_data as price_data
from swarmcore.llm import _pricing as pricing
from swarmcore.llm import _reading as reading
from swarmcore.llm import _responses as responses
from swarmcore.llm._errors import call_secrets, classify
from swarmcore.llm._prechecks import shown_url
from swarmcore.llm._redaction import redact
from swarmcore.llm._types import (
    CallSpec,
    EndpointError,
    EndpointUnreachable,
    LLMReply,
    LLMRequest,
)
from swarmcore.models import TokenUsage

if TYPE_CHECKING:
    import aiohttp

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
        reading.SETTING,
    }
)


class OpenAIBackend:
    """Calls OpenAI-protocol endpoints (``POST /chat/completions``) over aiohttp."""

    async def attempt(self, request: LLMRequest, model: str, attempt: int) -> LLMReply:
        """Make one attempt at ``model``, streaming the reply when the request asks.

        Raises:
            ModelError: The endpoint failed or refused; says whether a retry may help.
        """
        call = request.call
        start = time.perf_counter()
        try:
            reply = await _exchange(request, model)
        except reading.Refused as exc:
            error = _refused(exc, call, model, attempt)
        except Exception as exc:
            error = classify(exc, call, model, attempt)
            if error is None:
                raise
        else:
            return reply.timed(time.perf_counter() - start, 1)
        raise error  # outside the except block: the endpoint's exception is not chained


_REFUSAL_CHARS = 1000
"""The most characters of what a misbehaving server did that an error shows."""


def _refused(refused: reading.Refused, call: CallSpec, model: str, attempt: int) -> ModelError:
    """A server that answered but misbehaved (a redirect elsewhere, a bomb, a bad status line).

    Said as what it did, never as a connection that failed: the server was reached.
    """
    where = f" at {shown_url(refused.url)}" if refused.url else ""
    tries = f"attempt {attempt} of {call.retry.max_retries + 1}"
    secrets = call_secrets(call, model)
    # Redacted whole, then cut: what the server sent (a header, aiohttp's words) may quote the key.
    said = redact(str(refused), *secrets)
    said = said if len(said) <= _REFUSAL_CHARS else said[: _REFUSAL_CHARS - 1] + "…"
    return ModelError(
        redact(f"Agent {call.agent_name!r}: {model}{where} {said} ({tries}).", *secrets),
        agent_name=call.agent_name,
        model=model,
        retryable=refused.retryable,
    )


# --- the exchange ------------------------------------------------------------------------


def _body(request: LLMRequest, model: str) -> dict[str, Any]:
    """The body of one request for ``model``.

    A chat completion's, as LiteLLM would send it; or the Responses API's when the
    agent chose that API (``responses`` builds it).
    """
    call = request.call
    if responses.chosen(call, model):
        reasons = price_data.supports(model, "reasoning") is True
        return responses.body(request, native_name(model), _sent_settings, reasons=reasons)
    body = _sent_settings(call.settings)
    if "max_tokens" in body and price_data.supports(model, "reasoning"):
        # OpenAI's reasoning models refuse max_tokens; LiteLLM renames it too.
        body.setdefault("max_completion_tokens", body.pop("max_tokens"))
    body["model"] = native_name(model)
    body["messages"] = [_as_sent(m) for m in request.messages]
    if call.tools:
        body["tools"] = list(call.tools)
    if call.response_format is not None:
        body["response_format"] = call.response_format
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _sent_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's settings that go in a request body, ``extra_body`` merged in as the SDK does."""
    body = {name: value for name, value in settings.items() if name not in _CLIENT_SETTINGS}
    body.update(_mapping(body.pop("extra_body", None)))
    return body


def _as_sent(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """``message`` as LiteLLM sends it: a tool-calling assistant's null ``content`` left out.

    OpenAI takes either; some OpenAI-protocol servers refuse a null, and both
    backends send the same request (tests/integration/test_conformance.py).
    Reasoning items a Responses reply left on it (a fallback across APIs) are left out too.
    """
    null_content = message.get("content", "") is None and bool(message.get("tool_calls"))
    if not null_content and "reasoning" not in message:
        return message
    return {
        k: v
        for k, v in message.items()
        if k != "reasoning" and not (null_content and k == "content")
    }


async def _exchange(request: LLMRequest, model: str) -> LLMReply:
    """Send one request and read its reply: whole, or streamed as server-sent events.

    An in-process model (``local``) is sent the same body and its answer read
    by the same code (``_read``); every other model's goes over HTTP.

    Raises:
        EndpointError: The endpoint answered with an error status (or an error event).
        EndpointUnreachable: No connection, or it was lost before the reply ended.
    """
    if local.is_local(model):
        # A setting that is no JSON (a LiteLLM callback object) reaches a test model as its repr.
        body = json.dumps(_body(request, model), default=repr)
        answer = await local.endpoint().post(model.removeprefix(local.PREFIX), body)
        return await _read(request, model, answer)
    return await _over_http(request, model)


async def _read(request: LLMRequest, model: str, response: local.Response) -> LLMReply:
    """An endpoint's answer as our reply: an error status raises, a stream is read as events.

    Raises:
        EndpointError: An error status (or an error event in the stream).
        MalformedReply: The answer is no chat completion.
    """
    if response.status >= 400:
        text = await response.head(_ERROR_BYTES)
        raise _status_error(response.status, text, response.headers)
    # A server that ignores "stream" answers JSON: read as the reply it is.
    if request.stream and response.content_type != "application/json":
        return await _streamed(_events(response.lines()), request, model, response.headers)
    return _to_reply(request, model, await response.body(), response.headers)


async def _over_http(request: LLMRequest, model: str) -> LLMReply:
    """One exchange with an HTTP endpoint, its reply read bounded (``reading``)."""
    import aiohttp

    call = request.call
    pool = await endpoints.pool()
    path = responses.PATH if responses.chosen(call, model) else endpoints.CHAT_PATH
    endpoint = endpoints.endpoint(pool, call, model, path)
    body = _body(request, model)
    query = _mapping(body.pop("extra_query", None))
    headers = {
        **_mapping(call.settings.get("headers")),
        **_mapping(call.settings.get("extra_headers")),
    }
    options: dict[str, Any] = {"ssl": endpoint.ssl, "proxy": endpoint.proxy}
    if query:
        options["params"] = {k: str(v) for k, v in query.items()}
    limit = reading.max_reply_bytes(call.settings)
    deadline = None
    if call.call_timeout is not None:  # complete() bounds the attempt too; this frees the socket
        options["timeout"] = aiohttp.ClientTimeout(
            total=call.call_timeout, sock_connect=endpoints.CONNECT_SECONDS
        )
        deadline = asyncio.get_running_loop().time() + call.call_timeout
    try:
        async with await endpoints.post(
            pool,
            endpoint,
            json.dumps(body),
            _merged(endpoint.headers, headers) if headers else endpoint.headers,
            **options,
        ) as response:
            return await _read(request, model, _HTTPResponse(response, limit, deadline))
    except reading.Refused as exc:
        raise exc.at(str(endpoint.url)) from None
    except aiohttp.ClientError as exc:
        if isinstance(exc, TimeoutError):  # aiohttp's read and connect timeouts are both
            raise
        if isinstance(exc, aiohttp.ClientConnectorError):  # nothing answered
            raise EndpointUnreachable(
                str(exc) or type(exc).__name__, url=str(endpoint.url)
            ) from exc
        raise reading.Refused(_misbehaved(exc), retryable=True, url=str(endpoint.url)) from None


class _HTTPResponse:
    """An aiohttp response as a ``local.Response``: its body read bounded by ``reading``."""

    def __init__(
        self, response: aiohttp.ClientResponse, limit: int, deadline: float | None
    ) -> None:
        self._response = response
        self._limit = limit
        self._deadline = deadline

    @property
    def status(self) -> int:
        return self._response.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def content_type(self) -> str:
        return self._response.content_type

    async def head(self, size: int) -> bytes:
        return await reading.head(self._response, size)

    async def body(self) -> bytes:
        return await reading.body(self._response, self._limit)

    def lines(self) -> AsyncIterator[str]:
        return reading.lines(reading.decoded(self._response, self._limit), self._deadline)


# An error status's body is read for its message: a few KB; past this it is cut.
_ERROR_BYTES = 64 * 1024


def _misbehaved(exc: aiohttp.ClientError) -> str:
    """What a server that was reached did wrong, as aiohttp found it."""
    import aiohttp

    detail = str(getattr(exc, "message", "") or exc or type(exc).__name__)  # cut in _refused
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "closed the connection before its reply was complete"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"cut its reply short ({detail})"
    if isinstance(exc, aiohttp.ClientResponseError):  # aiohttp's parser: not an HTTP reply
        return f"answered with a malformed HTTP response ({detail})"
    return f"broke the exchange off ({type(exc).__name__}: {detail})"


def _merged(ours: Mapping[str, str], theirs: Mapping[str, Any]) -> dict[str, str]:
    """Our headers with the agent's over them, names compared without case (HTTP's rule)."""
    given = {name.lower() for name in theirs}
    kept = {name: value for name, value in ours.items() if name.lower() not in given}
    return {**kept, **{name: str(value) for name, value in theirs.items()}}


def _status_error(status: int, raw: bytes, headers: Mapping[str, str]) -> EndpointError:
    """An error status's body as the SDK reads it: its ``error`` object, or its text."""
    text = raw.decode("utf-8", "replace")
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    error, message = completion.error_parts(data)
    return EndpointError(
        f"Error code: {status} - {data}",
        message=message or text.strip() or f"HTTP {status}",
        status_code=status,
        body=error,
        headers=dict(headers),
    )


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    """The JSON of each server-sent event in ``lines``, up to ``[DONE]``; an ``error`` event raises.

    Raises:
        EndpointError: The stream carried an error instead of a chunk.
        MalformedReply: An event's data is not JSON.
    """
    data: list[str] = []
    kind = ""
    async for line in lines:
        if line:
            field_name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field_name == "data":
                data.append(value)
            elif field_name == "event":
                kind = value
            continue  # a comment (": ping") or a field we do not use
        if not data:
            continue
        payload, data, event_kind, kind = "\n".join(data), [], kind, ""
        if payload == "[DONE]":
            return
        chunk = completion.parsed(payload, "a stream event's data")
        completion.raise_error_event(chunk, payload, is_error_event=event_kind == "error")
        yield chunk


def native_name(model: str) -> str:
    """The name the endpoint knows ``model`` by: without LiteLLM's ``openai/`` prefix.

    Or its ``litellm_proxy/`` one, LiteLLM's name for a LiteLLM Proxy's models, so the
    same model string reaches a proxy on either backend.
    """
    for prefix in price_data.GATEWAY_PREFIXES:
        if model.startswith(prefix):
            return model.removeprefix(prefix)
    return model


def _mapping(value: object) -> dict[str, Any]:
    if isinstance(value, Mapping):
        items: Mapping[object, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {str(k): v for k, v in items.items()}
    return {}


# --- the reply ---------------------------------------------------------------------------


async def _streamed(
    chunks: AsyncIterator[Any], request: LLMRequest, model: str, headers: Mapping[str, str]
) -> LLMReply:
    """Publish each text and tool-call delta, then build the whole reply from the chunks.

    Chat-completion chunks, or the Responses API's events when the agent chose that API.

    Raises:
        MalformedReply: A chunk is not a chat-completion chunk, or the stream ended
            before its ``finish_reason``.
    """
    on_responses = responses.chosen(request.call, model)
    stream = (
        responses.StreamedResponse(request.deliver_reasoning, request.deliver_tool_call)
        if on_responses
        else completion.StreamedCompletion(request.deliver_tool_call)
    )
    async for chunk in chunks:
        text = stream.add(chunk)
        if text:
            request.deliver(text)
    return _reply(model, stream.whole(headers.get("Content-Type")), headers, on_responses)


def _to_reply(request: LLMRequest, model: str, raw: bytes, headers: Mapping[str, str]) -> LLMReply:
    """A chat completion's JSON body as our reply.

    Also the answer to a streaming request from a server that ignored ``"stream"``:
    its text is then published as one delta, and each tool call's arguments as one.

    Raises:
        MalformedReply: The body is not a chat completion.
        EndpointError: The body is an ``error`` object.
    """
    on_responses = responses.chosen(request.call, model)
    read = responses.response if on_responses else completion.completion
    whole = read(completion.parsed(raw, "the reply's body"))
    if request.stream:
        if whole.text:
            request.deliver(whole.text)
        for index, call in enumerate(whole.tool_calls):
            request.deliver_tool_call(index, call)
    return _reply(model, whole, headers, on_responses)


def _reply(
    model: str, whole: completion.Completion, headers: Mapping[str, str], on_responses: bool
) -> LLMReply:
    return LLMReply(
        text=whole.text,
        tool_calls=whole.tool_calls,
        usage=whole.usage,
        cost=_cost(model, whole.usage, whole.service_tier, headers, has_usage=whole.has_usage),
        finish_reason=whole.finish_reason,
        duration_seconds=0.0,
        model=model,
        response_model=whole.model,
        reasoning=whole.reasoning,
        api="responses" if on_responses else "chat_completions",
    )


def _cost(
    model: str,
    usage: TokenUsage,
    tier: object,
    headers: Mapping[str, str],
    *,
    has_usage: bool,
) -> float | None:
    """The reply's cost by ``pricing``'s rule: the gateway's figure, else its usage priced.

    Without usage in the reply (``has_usage`` False) only a gateway's figure counts, and
    so for an in-process test model, which no price list knows.
    """
    if not has_usage or local.is_local(model):
        return pricing.gateway_cost(headers)
    return pricing.usage_cost(
        model,
        usage,
        service_tier=tier if isinstance(tier, str) else None,  # flex and priority cost otherwise
        headers=headers,
    )
