"""Which backend serves a model: the native OpenAI protocol, or LiteLLM for everything else.

The choice, made per model string and setting (``backends`` acts on it):

* ``model_settings={"backend": "litellm"}`` (or ``"openai"``) on an agent
  forces one backend for that agent's calls;
* otherwise ``set_model_backend("litellm")`` (or the environment variable
  ``SWARMCORE_MODEL_BACKEND=litellm``) sends every model through LiteLLM;
* otherwise (``"auto"``, the default) OpenAI models, named ``openai/...``
  (with OpenAI's endpoint or any OpenAI-compatible ``api_base``: vLLM,
  llama.cpp, Ollama, LM Studio...) or bare (``gpt-4o-mini``), use the native
  backend, and every other provider uses LiteLLM.

An agent whose settings only LiteLLM understands (its callbacks,
``mock_response``, ``custom_llm_provider``...) stays on LiteLLM, and so does
every call while a LiteLLM callback is registered globally: what LiteLLM
logged before keeps being logged.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Literal, get_args

from swarmcore.errors import UserError
from swarmcore.llm.types import CallSpec

__all__ = ["BackendName", "is_native", "is_openai_model", "model_backend", "set_model_backend"]

BackendName = Literal["auto", "openai", "litellm"]
"""``auto`` picks by model; ``openai`` is the native OpenAI-protocol backend."""

ENV_VAR = "SWARMCORE_MODEL_BACKEND"

# Settings only LiteLLM acts on: an agent that sets one keeps LiteLLM's path.
_LITELLM_ONLY = frozenset(
    {
        "callbacks",
        "success_callback",
        "failure_callback",
        "mock_response",
        "mock_tool_calls",
        "custom_llm_provider",
        "drop_params",
        "input_cost_per_token",
        "output_cost_per_token",
        "litellm_metadata",
        "litellm_logging_obj",
        "caching",
        "cache",
    }
)
# LiteLLM's registries of callbacks: while one is set, calls go where it listens.
_LITELLM_LISTENERS = ("callbacks", "success_callback", "failure_callback", "input_callback")


_default: BackendName | None = None


def set_model_backend(name: BackendName | None) -> None:
    """Choose the backend for every model no agent chooses itself.

    ``"litellm"`` sends every call through LiteLLM, as before native backends
    existed; ``"auto"`` (the default) gives OpenAI models the native backend;
    ``"openai"`` sends every model to an OpenAI-protocol endpoint (a gateway
    that serves them all); None goes back to ``$SWARMCORE_MODEL_BACKEND``, else
    auto. An agent's ``model_settings={"backend": ...}`` still wins.

    Raises:
        UserError: ``name`` is not one of ``auto``, ``openai``, ``litellm``.
    """
    global _default
    _default = None if name is None else _checked(name, "set_model_backend()")


def model_backend() -> BackendName:
    """The global choice: ``set_model_backend``'s, else ``$SWARMCORE_MODEL_BACKEND``, else auto."""
    if _default is not None:
        return _default
    return _checked(os.environ.get(ENV_VAR) or "auto", f"${ENV_VAR}")


def _checked(name: object, where: str) -> BackendName:
    names: tuple[BackendName, ...] = get_args(BackendName)
    for known in names:
        if name == known:
            return known
    raise UserError(f"{where}: unknown model backend {name!r}; use one of {', '.join(names)}.")


def is_native(call: CallSpec, model: str) -> bool:
    """Whether ``model``'s calls for this agent go through the native OpenAI backend."""
    forced = call.settings.get("backend")
    if forced is not None:
        return _checked(forced, f"Agent {call.agent_name!r}: model_settings['backend']") == "openai"
    default = model_backend()
    if default == "litellm" or _litellm_listens() or not _LITELLM_ONLY.isdisjoint(call.settings):
        return False
    return default == "openai" or is_openai_model(model)


@functools.cache
def is_openai_model(model: str) -> bool:
    """Whether ``model`` names an OpenAI-protocol model: ``openai/...`` or a bare OpenAI name."""
    if model.startswith("openai/"):
        return True
    if "/" in model:
        return False
    from swarmcore.llm import price_data  # bare names: LiteLLM's own price map says whose

    return price_data.is_openai_model(model)


def _litellm_listens() -> bool:
    """Whether LiteLLM is loaded with a callback registered (it never is unless loaded)."""
    lit: Any = sys.modules.get("litellm")
    return lit is not None and any(getattr(lit, n, None) for n in _LITELLM_LISTENERS)
