"""What a model call costs and what a model can do: one pricing rule for both backends.

A reply's cost, on either backend, is:

1. what the gateway that served it reported (LiteLLM Proxy's
   ``x-litellm-response-cost`` header), when it did: the gateway knows its
   own prices (discounts, margins, a model it renamed);
2. else the price of its token usage from LiteLLM's model data: the backend's
   own figure where LiteLLM has a real entry for the model (the LiteLLM
   backend's ``completion_cost``; prices registered with
   ``litellm.register_model``), else the bundled price map read as a file
   (``price_data``), which also prices another provider's model behind a
   gateway's prefix (``openai/anthropic/claude-opus-4-6``) that LiteLLM
   itself prices at a made-up $0;
3. else ``None``: unpriced, never a guess.

``is_priced`` answers by the same rule (the header aside, unknown before a
call), so a cost budget that lets a call start can count it.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
from collections.abc import Mapping
from typing import Any, Final

from swarmcore.llm import local, price_data
from swarmcore.llm.choice import is_openai_model
from swarmcore.llm.loader import load_litellm
from swarmcore.results import TokenUsage

__all__ = [
    "COST_HEADER",
    "cost",
    "gateway_cost",
    "is_priced",
    "prompt_cost",
    "supports",
    "usage_cost",
]

logger = logging.getLogger("swarmcore.llm")

COST_HEADER: Final = "x-litellm-response-cost"
"""The response header a LiteLLM Proxy reports a call's cost in, in USD."""
# Where LiteLLM keeps a provider's response headers: ``llm_provider-`` plus the name.
_LITELLM_COST_HEADER: Final = f"llm_provider-{COST_HEADER}"


@functools.cache
def _model_info(model: str) -> Mapping[str, Any]:
    """LiteLLM's data on ``model``, empty when it has none.

    Cached: the data is bundled, so it does not change while the process runs.
    """
    if local.is_local(model):  # an in-process test model: what it declares, never LiteLLM
        return local.model_info(model)
    if is_openai_model(model) and "litellm" not in sys.modules:
        # The same bundled data, read without LiteLLM: the native path never imports it.
        # Once LiteLLM is loaded, its lookup also sees prices a user registered with it.
        return price_data.model_info(model)
    try:
        info: Any = load_litellm().get_model_info(model)
    except Exception:  # unknown models raise assorted errors
        return {}
    return dict(info)


def supports(model: str, capability: str) -> bool | None:
    """What LiteLLM's model data says of ``supports_<capability>`` for ``model``.

    None when LiteLLM does not know the model or leaves the capability unset,
    so callers can tell "no" apart from "unknown".
    """
    value = _model_info(model).get(f"supports_{capability}")
    return value if isinstance(value, bool) else None


def _reached_openai_style(model: str) -> bool:
    """Whether ``model`` is spoken to in OpenAI's protocol (its name needs no LiteLLM)."""
    return is_openai_model(model) or model.startswith(price_data.GATEWAY_PREFIXES)


def _litellm_prices(model: str) -> bool:
    """Whether LiteLLM has a real price entry for ``model`` (registered ones included).

    Asked of LiteLLM only when it is loaded, or when the model is another
    provider's (LiteLLM serves it anyway). An entry LiteLLM makes up for a
    name its map lacks (``openai/anthropic/...`` at $0) is not a price.
    """
    if _reached_openai_style(model) and "litellm" not in sys.modules:
        return False
    info = _model_info(model)
    if info.get("input_cost_per_token") is None:
        return False
    key = info.get("key")
    return key is None or key in load_litellm().model_cost


def is_priced(model: str) -> bool:
    """Whether ``model``'s calls can be priced: by the price map, or by LiteLLM's own entry."""
    return price_data.is_priced(model) or _litellm_prices(model)


def prompt_cost(model: str, prompt_tokens: int) -> float | None:
    """USD for ``prompt_tokens`` sent to ``model``, from LiteLLM's price map; None if unpriced."""
    if price_data.is_priced(model):
        return price_data.prompt_cost(model, prompt_tokens)
    if not _litellm_prices(model):
        return None
    try:
        usd, _ = load_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=0
        )
        return float(usd)
    except Exception as exc:  # an odd price entry: report unpriced rather than guess
        logger.debug("no prompt price for %s: %s", model, exc)
        return None


def gateway_cost(headers: Mapping[str, str] | None) -> float | None:
    """The cost a gateway reported in ``headers`` (``x-litellm-response-cost``), if any.

    Names are compared without case. A value that is not a finite, non-negative
    number is ignored (the call is then priced from the price map).
    """
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() in (COST_HEADER, _LITELLM_COST_HEADER):
            return _usd(value)
    return None


def _usd(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        usd = float(value)
    except ValueError:
        return None
    return usd if math.isfinite(usd) and usd >= 0 else None


def usage_cost(
    model: str,
    usage: TokenUsage,
    *,
    service_tier: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> float | None:
    """USD for one reply that used ``usage``: the gateway's figure, else the price map's.

    The native backend's pricing; ``cost`` is the LiteLLM backend's, by the same rule.

    Args:
        model: The model as the agent names it (``openai/anthropic/claude-opus-4-6``).
        usage: The reply's token usage.
        service_tier: The reply's ``service_tier`` (flex and priority cost otherwise).
        headers: The reply's HTTP headers, for a gateway's reported cost.

    Returns:
        The cost in USD, or None when the model is unpriced.
    """
    reported = gateway_cost(headers)
    if reported is not None:
        return reported
    usd = price_data.cost(
        model,
        usage.prompt_tokens,
        usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        service_tier=service_tier,
    )
    # A price registered with LiteLLM, which the bundled map lacks; never worth importing
    # LiteLLM for (seconds) on the native path: registering one imported it already.
    if usd is not None or "litellm" not in sys.modules or not _litellm_prices(model):
        return usd
    try:
        prompt, completion = load_litellm().cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        return float(prompt + completion)
    except Exception as exc:  # an odd price entry: report unpriced rather than guess
        logger.debug("no price for %s: %s", model, exc)
        return None


def cost(model: str, response: Any, usage: TokenUsage) -> float | None:
    """USD for one LiteLLM response from ``model``; None when the model is unpriced.

    Args:
        model: The model as the agent names it.
        response: LiteLLM's ``ModelResponse``.
        usage: Its token usage, as ours.
    """
    hidden: Mapping[str, object] = getattr(response, "_hidden_params", None) or {}
    headers: object = hidden.get("additional_headers")
    if isinstance(headers, Mapping):
        reported = gateway_cost(headers)  # pyright: ignore[reportUnknownArgumentType]
        if reported is not None:
            return reported
    if not _litellm_prices(model):
        # LiteLLM has no real entry (or a made-up $0 one): the price map's figure.
        return usage_cost(model, usage)
    # LiteLLM has usually priced the reply already: take its figure rather than price it twice.
    known = hidden.get("response_cost")
    if isinstance(known, int | float) and not isinstance(known, bool):
        return float(known)
    try:
        return float(load_litellm().completion_cost(completion_response=response, model=model))
    except Exception as exc:  # unpriced models raise assorted errors; cost is optional data
        logger.debug("no price for %s: %s", model, exc)
        return None
