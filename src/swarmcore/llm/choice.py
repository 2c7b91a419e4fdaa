"""Which backend serves a model: the native OpenAI protocol, or LiteLLM for everything else.

The choice, made per model string and setting (``backends`` acts on it), the
first of these that is set:

* ``Agent(backend=...)``, then the Swarm's ``AgentDefaults(backend=...)``:
  ``"native"`` or ``"litellm"`` forces that backend for the agent's calls;
* ``$SWARMCORE_MODEL_BACKEND``, the process default for a deployment (a worker
  or a program you do not edit), read at each call;
* ``"auto"``, the default: OpenAI models, named ``openai/...`` (with OpenAI's
  endpoint or any OpenAI-compatible ``api_base``: vLLM, llama.cpp, Ollama, LM
  Studio...) or bare (``gpt-4o-mini``), use the native backend, and every
  other provider uses LiteLLM.

Older spellings keep working and warn (``DeprecationWarning``) naming these:
the name ``"openai"`` for ``"native"``, ``model_settings={"backend": ...}``
for ``Agent(backend=...)``, and ``set_model_backend()`` (a process default,
between the Swarm's defaults and the environment) for ``AgentDefaults(backend=...)``.

Under ``"auto"`` or a process default, an agent whose settings only LiteLLM
understands (its callbacks, ``mock_response``, ``custom_llm_provider``...)
stays on LiteLLM, and so does every call while a LiteLLM callback is
registered globally: what LiteLLM logged before keeps being logged. The first
time a callback moves a model off the native backend, a
:class:`BackendSwitchWarning` says so, once per process.

Whether LiteLLM is listening (:func:`litellm_listener`) is defined here alone:
the LiteLLM backend asks it too, to log a call only when something reads the log.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, get_args

from swarmcore._deprecation import warn_deprecated
from swarmcore.errors import UserError
from swarmcore.llm._types import ApiName, BackendName, CallSpec

__all__ = [
    "CHAT_ONLY_SETTINGS",
    "LITELLM_LISTENERS",
    "PER_CALL_LISTENERS",
    "ApiName",
    "BackendName",
    "BackendSwitchWarning",
    "api_named",
    "backend_named",
    "check_api_settings",
    "is_native",
    "is_openai_model",
    "litellm_listener",
    "model_backend",
    "set_model_backend",
]

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
    ``backend="litellm"`` on the agent or in the Swarm's ``AgentDefaults`` (or
    ``SWARMCORE_MODEL_BACKEND=litellm`` for the process) keeps its models on
    LiteLLM, where the callback hears them; ``backend="native"`` keeps them native.
    """


_default: BackendName | None = None
_switch_told = False


def set_model_backend(name: BackendName | None) -> None:
    """Deprecated: choose the backend with ``AgentDefaults(backend=...)`` or ``Agent(backend=...)``.

    Still sets a process default, below the Swarm's defaults and above
    ``$SWARMCORE_MODEL_BACKEND`` (None clears it); a deployment that must
    choose for a program it does not edit sets that variable instead.

    Raises:
        UserError: ``name`` is not one of ``auto``, ``native``, ``litellm``.
    """
    global _default
    warn_deprecated(
        "set_model_backend() is deprecated; choose the backend in code with "
        "Swarm(flow, defaults=AgentDefaults(backend=...)) or Agent(..., backend=...), "
        "or for a whole deployment with $SWARMCORE_MODEL_BACKEND."
    )
    _default = None if name is None else backend_named(name, "set_model_backend()")


def model_backend() -> BackendName:
    """The process default: ``set_model_backend``'s, else ``$SWARMCORE_MODEL_BACKEND``, else auto.

    Read at each call.
    """
    if _default is not None:
        return _default
    return backend_named(os.environ.get(ENV_VAR) or "auto", f"${ENV_VAR}")


def backend_named(name: object, where: str) -> BackendName:
    """``name`` as a backend name; ``"openai"``, its old name, warns and means ``"native"``.

    Raises:
        UserError: ``name`` is not a backend's name; ``where`` says where it was given.
    """
    names: tuple[BackendName, ...] = get_args(BackendName)
    for known in names:
        if name == known:
            return known
    if name == "openai":
        warn_deprecated(
            f"{where}: the backend name 'openai' is deprecated; it is now 'native' "
            "(the native OpenAI-protocol backend)."
        )
        return "native"
    raise UserError(f"{where}: unknown model backend {name!r}; use one of {', '.join(names)}.")


def api_named(name: object, where: str, backend: BackendName | None = None) -> ApiName:
    """``name`` as the OpenAI API an agent's native calls speak.

    Args:
        name: ``"chat_completions"`` or ``"responses"``.
        where: Where it was given, for the error (``"Agent 'a': api"``).
        backend: The backend chosen beside it, if any: LiteLLM's speaks chat
            completions only.

    Raises:
        UserError: ``name`` is no API's name, or ``"responses"`` beside ``backend="litellm"``.
    """
    names: tuple[ApiName, ...] = get_args(ApiName)
    for known in names:
        if name == known:
            if known == "responses" and backend == "litellm":
                raise UserError(
                    f"{where}='responses' is spoken by the native backend only, and "
                    "backend='litellm' was chosen beside it; use backend='native' (or leave "
                    "it unset) for the Responses API, or drop api= for chat completions."
                )
            return known
    raise UserError(f"{where}: unknown OpenAI API {name!r}; use one of {', '.join(names)}.")


CHAT_ONLY_SETTINGS = frozenset(
    {
        "seed",
        "stop",
        "n",
        "logprobs",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "response_format",
        "modalities",
        "audio",
        "prediction",
        "web_search_options",
        "functions",
        "function_call",
    }
)
"""Model settings chat completions take and OpenAI's Responses API refuses (a 400).

An agent that holds one keeps chat completions where the API is swarmcore's
default choice; one that chooses ``api="responses"`` is told at construction.
"""


def check_api_settings(
    api: ApiName | None, models: Iterable[str], settings: Mapping[str, Any], where: str
) -> None:
    """Refuse the Responses API beside settings it refuses, for an agent it applies to.

    Args:
        api: The API chosen for the agent (its own, or the Swarm's default).
        models: The agent's model and fallback models: the API applies to OpenAI
            models only (another provider's, or an in-process test model, ignores it).
        settings: The agent's ``model_settings``.
        where: Who chose it, for the error (``"Agent 'a'"``).

    Raises:
        UserError: ``api`` is ``"responses"``, an OpenAI model would speak it, and
            ``settings`` hold one of ``CHAT_ONLY_SETTINGS``.
    """
    if api != "responses":
        return
    refused = sorted(CHAT_ONLY_SETTINGS.intersection(settings))
    if not refused or not any(is_openai_model(m) for m in models):
        return
    shown = ", ".join(repr(name) for name in refused)
    raise UserError(
        f"{where}: api='responses' and model_settings {shown} disagree: OpenAI's Responses "
        "API refuses that setting (only chat completions take it), so every call would "
        "fail with a 400; drop it from model_settings, or choose api='chat_completions'."
    )


def is_native(call: CallSpec, model: str) -> bool:
    """Whether ``model``'s calls for this agent go through the native OpenAI backend."""
    if call.backend == "native":  # chosen for the agent in code: nothing overrides it
        return True
    default = call.backend or model_backend()
    if default == "litellm" or not _LITELLM_ONLY.isdisjoint(call.settings):
        return False
    if not (default == "native" or is_openai_model(model)):
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
    from swarmcore.llm import (
        _price_data as price_data,  # bare names: LiteLLM's own price map says whose
    )

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
    chosen = "the process default (native)" if default == "native" else "the default (auto)"
    warnings.warn(
        BackendSwitchWarning(
            f"A LiteLLM callback is registered ({listener}), so {model!r}, and every model "
            f"{chosen} gives the native OpenAI backend, goes through LiteLLM instead, where "
            'the callback hears it. Choose explicitly to silence this: backend="litellm" '
            "on the agent or in the Swarm's AgentDefaults (or SWARMCORE_MODEL_BACKEND=litellm "
            'for the process) keeps LiteLLM; backend="native" keeps it native.'
        ),
        stacklevel=2,
    )
