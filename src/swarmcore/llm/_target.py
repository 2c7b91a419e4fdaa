"""Where a model call goes: the provider, the model's name there, and the endpoint.

What a trace says about a call before it is made (OpenTelemetry's
``gen_ai.provider.name``, ``gen_ai.request.model`` and ``server.address``),
worked out from the agent's settings as the backend that makes the call would:

* the native backend speaks OpenAI's protocol to ``endpoints.base_url`` and
  sends the model without LiteLLM's ``openai/`` prefix;
* LiteLLM routes by ``custom_llm_provider`` or the model's ``provider/``
  prefix (a bare name it knows as OpenAI's goes to OpenAI) to the agent's
  ``api_base``, else to the provider's default endpoint, which an environment
  variable may move. Endpoints that depend on a region or an account (Vertex
  AI, Bedrock, Azure) are not guessed.

Names are LiteLLM's (``gemini``, ``vertex_ai``, ``xai``...); ``tracing`` maps
them to the conventions' values. Nothing here imports LiteLLM.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from swarmcore.llm import _endpoints as endpoints
from swarmcore.llm._types import CallSpec
from swarmcore.llm.choice import is_native, is_openai_model

# LiteLLM's default endpoint per provider, and the variables that move it (its own order).
_DEFAULT_ENDPOINTS: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "anthropic": ("https://api.anthropic.com", ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL")),
    "gemini": ("https://generativelanguage.googleapis.com", ("GEMINI_API_BASE",)),
    "mistral": ("https://api.mistral.ai/v1", ("MISTRAL_API_BASE",)),
    "xai": ("https://api.x.ai/v1", ("XAI_API_BASE",)),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_BASE",)),
    "deepseek": ("https://api.deepseek.com/beta", ("DEEPSEEK_API_BASE",)),
    "perplexity": ("https://api.perplexity.ai", ("PERPLEXITY_API_BASE",)),
}


@dataclass(frozen=True, slots=True)
class Target:
    """Where one model call goes."""

    provider: str | None
    """The provider, as LiteLLM names it (``openai``, ``anthropic``, ``gemini``...);
    None when the model's name does not say."""
    model: str
    """The model's name at the provider: without the routing prefix."""
    endpoint: str | None = None
    """The base URL the call goes to; None when it depends on more than the settings."""


def target(call: CallSpec, model: str) -> Target:
    """Where this agent's call to ``model`` goes, as the backend that serves it sends it."""
    if is_native(call, model):
        return Target("openai", model.removeprefix("openai/"), endpoints.base_url(call))
    found = model_target(model, call.settings.get("custom_llm_provider"))
    if found.provider == "openai":  # LiteLLM reads the same settings and variables
        return Target(found.provider, found.model, endpoints.base_url(call))
    return Target(found.provider, found.model, _explicit_base(call) or _default(found.provider))


def model_target(model: str, custom_provider: object = None) -> Target:
    """The provider and name of ``model`` from the string alone (no endpoint).

    Args:
        model: A LiteLLM model string: ``provider/name``, or a bare name.
        custom_provider: LiteLLM's ``custom_llm_provider`` setting, which wins.
    """
    if isinstance(custom_provider, str) and custom_provider:
        return Target(custom_provider, model.removeprefix(f"{custom_provider}/"))
    provider, slash, name = model.partition("/")
    if slash and provider and name:
        return Target(provider, name)
    return Target("openai" if is_openai_model(model) else None, model)


def _explicit_base(call: CallSpec) -> str | None:
    for value in (call.api_base, call.settings.get("api_base"), call.settings.get("base_url")):
        if isinstance(value, str) and value:
            return value
    return None


def _default(provider: str | None) -> str | None:
    known = _DEFAULT_ENDPOINTS.get(provider or "")
    if known is None:
        return None
    url, variables = known
    for name in variables:
        moved = os.environ.get(name)
        if moved:
            return moved
    return url
