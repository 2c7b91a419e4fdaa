"""LiteLLM Proxy's answers as ``MockOpenAIServer`` steps: its error bodies, headers and cost header.

Copied from what LiteLLM Proxy 1.106.2 (``litellm --config``, mock models, no
database) sends, so a test against ``MockOpenAIServer`` sees what a real
gateway sends: an ``error`` object with ``message``, ``type``, ``param`` and a
string ``code``, LiteLLM's own exception names inside the message, and
``x-litellm-*`` headers.
"""

from __future__ import annotations

import uuid
from typing import Any

from swarmcore.testing._replies import Fail, Reply

_AVAILABLE_MODELS_HINT = "Call `/v1/models` to view available models for your key."


def _router_headers() -> dict[str, str]:
    """The headers the proxy sends with a failed model call."""
    return {
        "x-litellm-call-id": str(uuid.uuid4()),
        "x-litellm-response-cost": "0",
        "x-litellm-key-spend": "0.0",
    }


def _error(message: str, kind: str, status: int, **extra: Any) -> dict[str, Any]:
    return {"message": message, "type": kind, "param": None, "code": str(status), **extra}


class LiteLLMProxy:
    """What a LiteLLM Proxy answers, as steps for ``MockOpenAIServer``.

    ```python
    with MockOpenAIServer([LiteLLMProxy.reply("hi", cost=0.00055)]) as server:
        ...  # the reply carries x-litellm-response-cost: 0.00055
    ```
    """

    __test__ = False

    @staticmethod
    def reply(text: str | None = None, *, cost: float | None = None, **fields: Any) -> Reply:
        """A reply with the proxy's headers; ``cost`` goes in ``x-litellm-response-cost``.

        Args:
            text: The answer text.
            cost: The cost the proxy reports, in USD; no header when None (as in
                the proxy's streamed replies).
            **fields: Further ``Reply`` fields (``prompt_tokens``, ``tool_calls``...).
        """
        headers = {"x-litellm-call-id": str(uuid.uuid4()), "x-litellm-version": "1.106.2"}
        if cost is not None:
            headers["x-litellm-response-cost"] = repr(float(cost))
            headers["x-litellm-response-cost-original"] = repr(float(cost))
        return Reply(text=text, headers=headers, **fields)

    @staticmethod
    def context_window_exceeded(model_group: str = "gpt-4o-mini") -> Fail:
        """The 400 for a prompt longer than the model's context window (a mock model's text)."""
        message = (
            "litellm.ContextWindowExceededError: litellm.BadRequestError: this is a mock "
            f"context window exceeded error\nmodel={model_group}. context_window_fallbacks=None. "
            "fallbacks=None.\n\nSet 'context_window_fallback' - "
            "https://docs.litellm.ai/docs/routing#fallbacks\n\nLiteLLM: model group "
            f"'{model_group}' failed with the error above. No fallback was attempted."
        )
        headers = {**_router_headers(), "x-litellm-timeout": "6000.0"}
        return Fail(
            400,
            message,
            headers=headers,
            error=_error(message, "invalid_request_error", 400),
        )

    @staticmethod
    def invalid_model(model: str, route: str = "/chat/completions") -> Fail:
        """The 400 for a model name the proxy does not serve."""
        message = f"{route}: Invalid model name passed in model={model}. {_AVAILABLE_MODELS_HINT}"
        return Fail(
            400,
            message,
            headers=_router_headers(),
            error=_error(
                message,
                "invalid_request_error",
                400,
                provider_specific_fields={"error": message},
            ),
        )

    @staticmethod
    def no_connected_db() -> Fail:
        """The 400 for a key that is not the master key, from a proxy without a database."""
        message = "No connected db."
        return Fail(400, message, error=_error(message, "no_db_connection", 400))

    @staticmethod
    def rate_limited(model_group: str = "gpt-4o-mini") -> Fail:
        """The 429 of a rate-limited model (a mock model's text)."""
        message = (
            "litellm.RateLimitError: this is a mock rate limit error\n\nLiteLLM: model group "
            f"'{model_group}' failed with the error above. No fallback was attempted."
        )
        headers = {**_router_headers(), "x-litellm-timeout": "6000.0"}
        return Fail(429, message, headers=headers, error=_error(message, "throttling_error", 429))
