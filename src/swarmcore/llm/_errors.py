"""Provider failures as ``ModelError``s that say what to do, and API keys kept out of them.

Errors are classified here, once. Rate limits, timeouts (a server's 408 too),
connection errors (a refused one too: a server may be restarting, and fallback
models are tried only after a retryable failure) and 5xx are retryable; a
rejected key, a denied permission, an unknown model, a bad request, an overlong
prompt and a content-policy refusal are not. Each becomes a ``ModelError`` with
the agent, the model, the status and a next step, worded the same on both
backends: a status is named by the ``openai`` SDK's class for it, LiteLLM's
own prefixes are taken off the provider's text, and a LiteLLM Proxy's answers
(its context-window error, "Invalid model name", "No connected db.") are read
for what they mean. A reply that is no chat completion (bad JSON, a list, a
number for text, a stream cut before its end, a negative token count) is
retryable too, the same on either backend (``malformed`` recognises one), and
so is an ``error`` a server sends with a 200 in place of its reply (its body,
or an event of its stream): its ``code`` is read as its status when it is one
(``"503"``), as LiteLLM reads it; otherwise the server failed while it answered.
Both backends are held to this by one table (``tests/integration/test_conformance.py``).

The provider's text in a ``ModelError`` is redacted (``redaction``) with every
credential the call could have sent: its ``api_key``, its secret settings and
headers, the key LiteLLM found for the provider, and the credential-named
environment variables. The provider's own exception is never chained to it.
"""

from __future__ import annotations

import ast
import difflib
import email.utils
import logging
import re
import sys
import time
from collections.abc import Mapping
from typing import Any, cast

from swarmcore.errors import ModelError
from swarmcore.llm import _local as local
from swarmcore.llm import _price_data as price_data
from swarmcore.llm import _responses as responses
from swarmcore.llm._loader import load_litellm
from swarmcore.llm._malformed import malformed_reply
from swarmcore.llm._prechecks import (
    configured_base,
    key_hint,
    name_hint,
    shown_url,
    similar_model,
)
from swarmcore.llm._redaction import env_secrets, redact, secret_values
from swarmcore.llm._types import CallSpec, EndpointError, EndpointUnreachable
from swarmcore.llm.choice import is_native

logger = logging.getLogger("swarmcore.llm")

_CONTENT_POLICY_MARKERS = ("content_policy", "content policy", "safety system", "content filter")


def call_secrets(call: CallSpec, model: str) -> list[str]:
    """Every credential a call to ``model`` could have sent, to redact from its errors.

    The call's ``api_key`` and secret settings (``model_settings={"api_key": ...}``,
    headers), the key LiteLLM resolves for the provider (``get_llm_provider``),
    and every credential-named environment variable (a superset of those
    LiteLLM reads, e.g. ``GEMINI_API_KEY``, ``AZURE_API_KEY``).
    """
    found = secret_values(api_key=call.api_key, settings=call.settings)
    if local.is_local(model) or is_native(
        call, model
    ):  # the native backend reads no key but these and the environment's
        return found + env_secrets()
    try:
        resolved: Any = load_litellm().get_llm_provider(model, api_base=call.api_base)[2]
    except Exception as exc:  # an unknown provider resolves no key
        logger.debug("get_llm_provider(%s) failed: %s", model, exc)
        resolved = None
    if isinstance(resolved, str):
        found += secret_values(api_key=resolved)
    return found + env_secrets()


def timed_out(call: CallSpec, model: str, attempt: int) -> ModelError:
    """The retryable error of an attempt that outlasted the agent's ``call_timeout``."""
    within = f"{call.call_timeout}s" if call.call_timeout is not None else "the HTTP timeout"
    return ModelError(
        f"Agent {call.agent_name!r}: {model} did not answer within {within} "
        f"(attempt {attempt} of {call.retry.max_retries + 1}); "
        "raise the agent's call_timeout or retry.",
        agent_name=call.agent_name,
        model=model,
        retryable=True,
    )


def classify(exc: Exception, call: CallSpec, model: str, attempt: int) -> ModelError | None:
    """Turn a provider exception into a ModelError that says what to do; None if not a provider's.

    LiteLLM raises the ``openai`` SDK's exceptions (its own are their
    subclasses) and the native backend raises ``EndpointError``s that read the
    same (a status, the provider's message, its headers), so one classification
    serves both, by class where LiteLLM gives one and by status always. A
    timeout is reported as the call's timeout, whoever noticed it first: the
    HTTP client's own bounds each read and may fire before our deadline.
    Neither library is imported here: an exception of theirs means it is loaded.
    """
    malformed = malformed_reply(exc)  # LiteLLM calls it a 500 or a connection error
    if malformed is not None:
        return _malformed_reply(call, model, attempt, malformed)
    unreachable = _connection_failure(exc)  # LiteLLM calls it a 500; nothing answered
    if unreachable is not None:
        return _could_not_connect(call, model, attempt, *unreachable)
    if isinstance(exc, TimeoutError) or (
        _is_openai(exc, "APITimeoutError")
        and call.call_timeout is not None
        and not _answered_timeout(exc)
    ):
        return timed_out(call, model, attempt)
    if _reply_error(exc) is not None and _status(exc) is None:
        return _sent_in_reply(exc, call, model, attempt)
    return _classify_provider_error(exc, call, model, attempt)


def _sent_in_reply(exc: Exception, call: CallSpec, model: str, attempt: int) -> ModelError:
    """An error a server sent with a 200 and no status: it failed while it answered.

    Retryable, as a stream cut short is: another attempt may be served.
    """
    detail = _unstopped(_first_line(redact(_provider_text(exc), *call_secrets(call, model))))
    return ModelError(
        f"Agent {call.agent_name!r}: {model} sent an error in place of its reply (attempt "
        f"{attempt} of {call.retry.max_retries + 1}): {detail}. This may be transient: "
        "retries and fallback_models apply.",
        agent_name=call.agent_name,
        model=model,
        retryable=True,
    )


def _answered_timeout(exc: Exception) -> bool:
    """Whether LiteLLM's ``Timeout`` stands for a 408 or 504 the server answered.

    LiteLLM raises its ``Timeout`` both for a read that outlasted its timeout
    and for those statuses ("Timeout Error: OpenAIException - ..."); the
    native backend sees the status. A status is classified by status, so both
    backends report it alike.
    """
    if not _is_litellm(exc, "Timeout"):
        return False
    text = str(exc)
    return text.startswith("litellm.Timeout: Timeout Error:") or _sdk_error(text) is not None


# The openai SDK's text for an error status, which LiteLLM quotes inside its own:
# "Error code: 504 - {'error': {'message': ...}}" (the body as a Python literal).
_SDK_ERROR = re.compile(r"Error code: (\d{3}) - (.*)\Z", re.DOTALL)


def _sdk_error(text: str) -> tuple[int, str | None] | None:
    """The status and the provider's message the SDK's text quotes, when ``text`` quotes one.

    LiteLLM names any error whose message says "Request timed out" its
    ``Timeout``, with status 408, whatever the status was (a 504, a 413): the
    status the server sent is the one the SDK's text names.
    """
    found = _SDK_ERROR.search(text)
    if found is None:
        return None
    try:
        body: object = ast.literal_eval(found[2].strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        body = None
    error = cast("dict[str, object]", body).get("error") if isinstance(body, dict) else None
    message = cast("dict[str, object]", error).get("message") if isinstance(error, dict) else None
    return int(found[1]), message if isinstance(message, str) else None


def _status(exc: Exception) -> int | None:
    """The HTTP status the server answered with, as the error reports it.

    LiteLLM's own status is replaced by the one the SDK's text quotes, where
    its text quotes one (see ``_sdk_error``). An error sent in place of a
    reply (``_reply_error``) came with a 200: its ``code`` is its status when
    the code is one (``"503"``), as LiteLLM reads a whole reply's.
    """
    if type(exc).__module__.startswith("litellm"):
        quoted = _sdk_error(str(exc))
        if quoted is not None:
            return quoted[0]
    sent = _reply_error(exc)
    if sent is not None:
        return _http_status(sent.get("code"))
    return _http_status(getattr(exc, "status_code", None))


def _http_status(value: object) -> int | None:
    """``value`` as an HTTP error status (400 to 599, a number or its digits); else None."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
        return value
    return None


def _reply_error(exc: Exception) -> Mapping[str, object] | None:
    """The ``error`` object a server sent with a 200, in place of its reply; None if not one.

    A whole reply's body, or an event of its stream, that is an ``error``:
    the native backend's ``EndpointError`` without a status; LiteLLM's error
    whose status is the error's ``code`` as sent (``"server_error"``, None),
    or its ``MidStreamFallbackError`` over the SDK's error for the event.
    """
    if isinstance(exc, EndpointError):
        return _fields(exc.body) if exc.status_code is None else None
    if _is_litellm(exc, "MidStreamFallbackError"):
        cause = exc.__cause__ or exc.__context__
        return _fields(getattr(cause, "body", None)) if cause is not None else {}
    if type(exc).__module__.startswith("litellm"):
        status: object = getattr(exc, "status_code", None)
        if not isinstance(status, int) or isinstance(status, bool):
            return {"code": status}
    return None


def _fields(value: object) -> Mapping[str, object]:
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def _classify_provider_error(
    exc: Exception, call: CallSpec, model: str, attempt: int
) -> ModelError | None:
    status = _status(exc)
    # Redacted whole, then shortened: a key cut in two at the limit would be missed.
    detail = _unstopped(_first_line(redact(_provider_text(exc), *call_secrets(call, model))))
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

    # By class, and by status too: LiteLLM reports some statuses (a 403) as a plain APIError.
    bad_request = _is_openai(exc, "BadRequestError") or status == 400
    if _is_litellm(exc, "ContextWindowExceededError") or (
        bad_request and _is_context_window(str(exc))
    ):
        return error(
            f"{who} rejected the prompt as longer than its context window ({status}). "
            "Shorten the task or instructions, use context_mode='pull', or pick a model "
            "with a larger window."
        )
    if _is_litellm(exc, "ContentPolicyViolationError") or (
        # Some providers send a plain 400; LiteLLM maps it only when the error code says so.
        bad_request and _mentions(str(exc), _CONTENT_POLICY_MARKERS)
    ):
        return error(f"{who} refused the request under its content policy ({status}): {detail}")
    if _is_openai(exc, "AuthenticationError") or status == 401:
        return error(f"{who} rejected the API key ({status}). {key_hint(call, model)}")
    gateway = _gateway_refusal(exc, call, model, status, detail) if bad_request else None
    if gateway is not None:
        return error(f"{who}{gateway}")
    if _is_openai(exc, "PermissionDeniedError") or status == 403:
        return error(
            f"{who} denied permission ({status}): {detail}. Check that the key may use this model."
        )
    if _is_openai(exc, "NotFoundError") or status == 404:
        return error(
            f"{who} was not found ({status}): {detail}. Check the model name "
            f"(LiteLLM format 'provider/model', e.g. 'openai/gpt-4o-mini').{name_hint(model)}"
        )
    if _is_openai(exc, "RateLimitError", "APIConnectionError") or (
        status is not None and (status in (408, 429) or status >= 500)
    ):
        wait = _wait_note(retry_after, call.retry.max_retry_after)
        return error(
            f"{who} failed on attempt {attempt} of {call.retry.max_retries + 1} "
            f"({_kind(exc, status)}, status {status}): {detail}.{wait} This is transient: "
            "retry later, raise the agent's retry, add fallback_models, or limit the "
            "model's requests with swarmcore.limit_model().",
            retryable=True,
        )
    if bad_request or _is_openai(exc, "UnprocessableEntityError") or status == 422:
        if "LLM Provider NOT provided" in str(exc):
            return error(
                f"{who}: LiteLLM does not know this provider. Model strings look like "
                "'openai/gpt-4o-mini' or 'anthropic/claude-sonnet-4-5'."
            )
        return error(
            f"{who} rejected the request ({status}): {detail}. Check the agent's model "
            "settings and tools."
        )
    if isinstance(exc, EndpointError) or _is_openai(exc, "OpenAIError"):
        return error(f"{who} failed ({_kind(exc, status)}, status {status}): {detail}")
    return None


def _unstopped(detail: str) -> str:
    """``detail`` without its closing full stop, as the message adds its own."""
    return detail[:-1] if detail.endswith(".") and not detail.endswith("...") else detail


def _wait_note(retry_after: float | None, limit: float) -> str:
    """What the provider's ``Retry-After`` asked for, if it asked."""
    if retry_after is None:
        return ""
    if retry_after > limit:
        return (
            f" The provider asked to wait {retry_after:g}s, longer than max_retry_after={limit:g}s."
        )
    return f" The provider asked to wait {retry_after:g}s."


# The openai SDK's names for a status: both backends' errors are shown by them.
_STATUS_KINDS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def _kind(exc: Exception, status: int | None) -> str:
    """The SDK's name for the error's status, on either backend; else the error's class name.

    LiteLLM names some statuses its own way (``BadGatewayError`` for a 502,
    ``Timeout`` for a 504, ``APIError`` for a 403), which the native backend
    cannot know: the status decides, so both say the same.
    """
    if status is None or (_is_openai(exc, "APIConnectionError") and not _answered_timeout(exc)):
        return type(exc).__name__
    if status >= 500:
        return "InternalServerError"
    return _STATUS_KINDS.get(status, "APIError")


def _is_openai(exc: BaseException, *names: str) -> bool:
    """Whether ``exc`` is one of the ``openai`` SDK's exceptions ``names`` (never imports it)."""
    return isinstance(exc, _loaded(*(("openai", n) for n in names)))


def _is_litellm(exc: Exception, name: str) -> bool:
    """Whether ``exc`` is LiteLLM's exception ``name`` (never imports LiteLLM to find out)."""
    return isinstance(exc, _loaded(("litellm", name), ("litellm.exceptions", name)))


# What providers say of an overlong prompt (LiteLLM's list, which it maps to its own error).
_CONTEXT_WINDOW_MARKERS = (
    "context_length_exceeded",
    "exceed context limit",
    "this model's maximum context length is",
    "model's maximum context limit",
    "is longer than the model's context length",
    "is longer than the model's maximum context length",
    "input tokens exceed the configured limit",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    # LiteLLM's exception name, which a LiteLLM Proxy puts in its 400's message.
    "contextwindowexceedederror",
)


def _is_context_window(text: str) -> bool:
    lowered = text.lower()
    if "string_above_max_length" in lowered:  # a field too long (OpenAI's user=), not the prompt
        return False
    return _mentions(lowered, _CONTEXT_WINDOW_MARKERS)


def _provider_text(exc: Exception) -> str:
    """What the provider said: the SDK's error body's message, else the exception's text.

    LiteLLM's exceptions carry the message in their text; the SDK's put the
    whole body there ("Error code: 429 - {...}"), so its ``message`` is read.
    """
    if isinstance(exc, EndpointError):
        return exc.message
    if _is_litellm(exc, "MidStreamFallbackError"):  # the SDK's error for the event, under it
        cause = exc.__cause__ or exc.__context__
        message = _fields(getattr(cause, "body", None)).get("message")
        if isinstance(message, str) and message:
            return message
    body: Any = getattr(exc, "body", None)
    module = type(exc).__module__
    if module.startswith("openai") and isinstance(body, dict):
        fields: dict[str, object] = body  # pyright: ignore[reportUnknownVariableType]
        message = fields.get("message")
        if isinstance(message, str) and message:
            return message
    if module.startswith("litellm"):
        quoted = _sdk_error(str(exc))
        if quoted is not None and quoted[1]:
            return quoted[1]
        return _LITELLM_PREFIXES.sub("", str(exc), count=1)
    return str(exc)


# LiteLLM's own prefixes on a provider's message ("litellm.RateLimitError: RateLimitError:
# OpenAIException - <the provider's text>"), which the native backend never shows.
_LITELLM_PREFIXES = re.compile(
    r"^(?:litellm\.\w+: )+"
    r"(?:(?:\w+(?:Error|Exception)|Timeout Error): )?"
    r"(?:\w+(?:Error|Exception) - )?"
)


def _mentions(text: str, markers: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(m in lowered for m in markers)


def _retry_after(exc: Exception) -> float | None:
    """Seconds from the provider's ``Retry-After`` (or ``retry-after-ms``) header, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers and isinstance(exc, EndpointError):
        headers = exc.headers
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


# --- a gateway's own answers ------------------------------------------------------------


def _gateway_refusal(
    exc: Exception, call: CallSpec, model: str, status: int | None, detail: str
) -> str | None:
    """What a gateway's 400 means, when it is one LiteLLM Proxy sends for something else.

    Its "No connected db." answers a key other than its master key (it keeps no
    database of virtual keys): a wrong key. Its "Invalid model name" is an
    unknown model. None for any other 400.
    """
    text = str(exc)
    if _mentions(text, ("no connected db", "no_db_connection")):
        return (
            f" rejected the API key ({status}: 'No connected db.', which a LiteLLM Proxy "
            "without a database answers to any key but its master key). "
            f"{key_hint(call, model)}"
        )
    if _mentions(text, ("invalid model name passed in",)):
        return (
            f": model not found on this endpoint ({status}): {detail}. "
            f"{_not_served(call, model, _provider_text(exc))}"
        )
    return None


def _not_served(call: CallSpec, model: str, text: str) -> str:
    """What to do about a name a gateway does not serve.

    Where its models are listed, and the closest name: from the models its
    answer lists, else from the ones LiteLLM knows.
    """
    base = configured_base(call, model)
    listing = f"GET {shown_url(base[0]).rstrip('/')}/models" if base else "its /v1/models"
    hint = f"Check the name against the models the endpoint serves ({listing})."
    prefix = next((p for p in price_data.GATEWAY_PREFIXES if model.startswith(p)), "")
    listed = _listed_models(text)
    close = difflib.get_close_matches(model.removeprefix(prefix), listed, n=1, cutoff=0.6)
    similar = prefix + close[0] if close else similar_model(model)
    return f"{hint} Did you mean {similar!r}?" if similar else hint


_MODEL_LIST = re.compile(r"models?\s*[=:]\s*\[([^\]]*)\]", re.IGNORECASE)


def _listed_models(text: str) -> list[str]:
    """The model names an error lists (LiteLLM's ``models=['a', 'b']``), if it lists any."""
    names: list[str] = []
    for listing in _MODEL_LIST.findall(text):
        names += re.findall(r"['\"]([^'\"]+)['\"]", listing)
    return names


# --- an endpoint that cannot be reached --------------------------------------------------


def _connection_failure(exc: BaseException) -> tuple[str | None, str] | None:
    """The URL a connection failed to reach, and why, when ``exc`` stems from one.

    LiteLLM reports a refused connection as a 500 ``InternalServerError``; the
    connection error is further down the chain (``__cause__``/``__context__``).
    A timeout is not a connection failure here, unless the socket's own error
    is in the chain (some transports report a refused connection as a
    timeout). The native backend's ``EndpointUnreachable`` carries its URL.
    """
    timeouts = _loaded(("openai", "APITimeoutError"), ("httpx", "TimeoutException"))
    failures = _loaded(("openai", "APIConnectionError"), ("httpx", "ConnectError"))
    requests = _loaded(("openai", "APIConnectionError"), ("httpx", "RequestError"))
    url: str | None = None
    found = refused = timed = False
    reason = ""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (*timeouts, TimeoutError)):
            timed = True
        elif isinstance(current, (*failures, ConnectionError)):
            found = True
            refused = refused or isinstance(current, ConnectionError)
            if isinstance(current, ConnectionRefusedError):
                reason = "connection refused"
            reason = reason or str(current)  # cut once redacted (_could_not_connect)
        if url is None and isinstance(current, EndpointUnreachable):
            url = current.url
        elif url is None and isinstance(current, requests):
            try:
                failed: Any = current
                url = str(failed.request.url)
            except RuntimeError:  # httpx: no request attached
                url = None
        current = current.__cause__ or current.__context__
    if timed and not refused:
        return None
    return (url, reason) if found else None


def _loaded(*names: tuple[str, str]) -> tuple[type, ...]:
    """The classes ``(module, name)`` of those modules already imported: none imports one."""
    found: list[type] = []
    for module, name in names:
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type):
            found.append(kind)
    return tuple(found)


def _could_not_connect(
    call: CallSpec, model: str, attempt: int, url: str | None, reason: str
) -> ModelError:
    base = configured_base(call, model)
    where = url or (base[0] if base else None)
    target = shown_url(where) if where else f"{model}'s endpoint"
    if base is not None:
        fix = f"Is the server running, and is the URL right (set by {base[1]})?"
    else:
        fix = "Check the network, or set the agent's api_base= for a server of your own."
    secrets = call_secrets(call, model)
    # Redacted whole, then shortened: a key in a failed URL's query would be cut in two.
    reason = _first_line(redact(reason, *secrets), 120)
    text = (
        f"Agent {call.agent_name!r}: {model} could not connect to {target} ({reason}; "
        f"attempt {attempt} of {call.retry.max_retries + 1}). {fix}"
    )
    return ModelError(
        redact(text, *secrets),
        agent_name=call.agent_name,
        model=model,
        retryable=True,
    )


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --- a reply that is not one --------------------------------------------------------------


_PROTOCOLS = {
    "chat": "the OpenAI chat-completions protocol",
    "responses": "OpenAI's Responses API",
}


def _malformed_reply(call: CallSpec, model: str, attempt: int, what: str) -> ModelError:
    # Redacted whole, then shortened: a server may echo the key in what it sent.
    detail = _first_line(redact(what, *call_secrets(call, model)), 240)
    return ModelError(
        f"Agent {call.agent_name!r}: {model} answered with a malformed reply ({detail}; "
        f"attempt {attempt} of {call.retry.max_retries + 1}). This may be transient: "
        "retries and fallback_models apply; if it persists, check that the endpoint "
        f"speaks {_PROTOCOLS['responses' if responses.chosen(call, model) else 'chat']}.",
        agent_name=call.agent_name,
        model=model,
        retryable=True,
    )


def empty_answer(call: CallSpec, model: str, attempt: int, finish_reason: str | None) -> ModelError:
    """The error of a reply with neither text nor tool calls: never taken as an answer.

    Retryable, unless the model stopped at its token limit or its content filter,
    which another attempt would meet again.
    """
    who = f"Agent {call.agent_name!r}: {model} answered with neither text nor tool calls"
    tries = f"attempt {attempt} of {call.retry.max_retries + 1}"
    if finish_reason == "length":
        fix = "it stopped at its token limit first: raise max_tokens (or max_completion_tokens)."
    elif finish_reason == "content_filter":
        fix = "its content filter stopped it: rephrase the task or instructions."
    else:
        return ModelError(
            f"{who} (finish_reason {finish_reason!r}; {tries}). This may be transient: "
            "retries and fallback_models apply.",
            agent_name=call.agent_name,
            model=model,
            retryable=True,
        )
    return ModelError(
        f"{who} ({tries}): {fix}", agent_name=call.agent_name, model=model, retryable=False
    )
