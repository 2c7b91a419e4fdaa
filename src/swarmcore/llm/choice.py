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
logged before keeps being logged. The first time a callback moves a model off
the native backend, a :class:`BackendSwitchWarning` says so, once per process.

Whether LiteLLM is listening (:func:`litellm_listener`) is defined here alone:
the LiteLLM backend asks it too, to log a call only when something reads the log.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Literal, get_args

from swarmcore.errors import UserError
from swarmcore.llm.types import CallSpec

__all__ = [
    "LITELLM_LISTENERS",
    "PER_CALL_LISTENERS",
    "BackendName",
    "BackendSwitchWarning",
    "is_native",
    "is_openai_model",
    "litellm_listener",
    "model_backend",
    "set_model_backend",
]

BackendName = Literal["auto", "openai", "litellm"]
"""``auto`` picks by model; ``openai`` is the native OpenAI-protocol backend."""

ENV_VAR = "SWARMCORE_MODEL_BACKEND"

# LiteLLM's callback registries on the module (its ``_async_*`` ones are where it
# moves coroutine callbacks it was given): a callback in any one reads every call's log.
LITELLM_LISTENERS = (
    "callbacks",
    "success_callback",
    "failure_callback",
    "input_callback",
    "service_callback",
    "_async_success_callback",
    "_async_failure_callback",
    "_async_input_callback",
)
# The ones ``acompletion`` also takes per call (an agent's ``model_settings``).
PER_CALL_LISTENERS = ("callbacks", "success_callback", "failure_callback")

# Settings only LiteLLM acts on: an agent that sets one keeps LiteLLM's path.
_LITELLM_ONLY = frozenset(
    {
        *PER_CALL_LISTENERS,
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


class BackendSwitchWarning(UserWarning):
    """A LiteLLM callback sent an OpenAI model through LiteLLM instead of the native backend.

    Said once per process. Choosing the backend explicitly silences it:
    ``set_model_backend("litellm")`` (or ``SWARMCORE_MODEL_BACKEND=litellm``) keeps
    every model on LiteLLM, where the callback hears it; an agent's
    ``model_settings={"backend": "openai"}`` keeps that agent native.
    """


_default: BackendName | None = None
_switch_told = False


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
    if default == "litellm" or not _LITELLM_ONLY.isdisjoint(call.settings):
        return False
    if not (default == "openai" or is_openai_model(model)):
        return False
    listener = litellm_listener(sys.modules.get("litellm"))
    if listener is not None:
        _tell_switch(model, listener, default)
        return False
    return True


@functools.cache
def is_openai_model(model: str) -> bool:
    """Whether ``model`` names an OpenAI-protocol model: ``openai/...`` or a bare OpenAI name."""
    if model.startswith("openai/"):
        return True
    if "/" in model:
        return False
    from swarmcore.llm import price_data  # bare names: LiteLLM's own price map says whose

    return price_data.is_openai_model(model)


def litellm_listener(lit: Any, settings: Mapping[str, Any] | None = None) -> str | None:
    """Where a LiteLLM callback is registered, e.g. ``"litellm.success_callback"``; None if nowhere.

    The one definition of "LiteLLM is listening": a callback in any of
    LiteLLM's registries on the module, or in a call's own settings.

    Args:
        lit: The ``litellm`` module, or None when it is not imported (then no
            callback can be registered on it).
        settings: A call's ``model_settings``, whose ``callbacks``,
            ``success_callback`` and ``failure_callback`` LiteLLM also reads.
    """
    found = [f"litellm.{n}" for n in LITELLM_LISTENERS if getattr(lit, n, None)]
    if settings is not None:
        found += [f"model_settings[{n!r}]" for n in PER_CALL_LISTENERS if settings.get(n)]
    return found[0] if found else None


def _tell_switch(model: str, listener: str, default: BackendName) -> None:
    """Warn, once per process, that ``listener`` moved ``model`` off the native backend."""
    global _switch_told
    if _switch_told:
        return
    _switch_told = True
    chosen = f'set_model_backend("{default}")' if default == "openai" else "the default (auto)"
    warnings.warn(
        BackendSwitchWarning(
            f"A LiteLLM callback is registered ({listener}), so {model!r}, and every model "
            f"{chosen} gives the native OpenAI backend, goes through LiteLLM instead, where "
            "the callback hears it. Choose explicitly to silence this: "
            'set_model_backend("litellm") (or SWARMCORE_MODEL_BACKEND=litellm) keeps LiteLLM; '
            'model_settings={"backend": "openai"} on an agent keeps that agent native.'
        ),
        stacklevel=2,
    )
