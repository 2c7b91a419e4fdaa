"""What a model call costs and what a model can do: one source, one pricing rule, both backends.

What is known of a model (its prices, its ``supports_*`` capabilities) comes
from one source: LiteLLM's bundled price map, read as data (``price_data``),
with any entry the user changed in LiteLLM's own table
(``litellm.register_model``) in its place. No answer depends on whether
LiteLLM was imported before the question: LiteLLM's table is the bundled map
as loaded, so it is read only for what differs from it, and only once
LiteLLM is loaded (a registration loaded it). Why LiteLLM's map and not a
price library such as ``genai-prices``: docs/models.md ("Where prices come from").

A reply's cost, on either backend, is:

1. what the gateway that served it reported (LiteLLM Proxy's
   ``x-litellm-response-cost`` header), when it did: the gateway knows its
   own prices (discounts, margins, a model it renamed);
2. else the price of its token usage from that model data: on the LiteLLM
   backend LiteLLM's own figure where it has a real entry for the model
   (``completion_cost``, which knows every provider's billing quirks), else
   the price map's arithmetic (``price_data.price``, checked against
   LiteLLM's for every OpenAI chat model), which also prices another
   provider's model behind a gateway's prefix
   (``openai/anthropic/claude-opus-4-6``) that LiteLLM itself prices at a
   made-up $0;
3. else ``None``: unpriced, never a guess.

``is_priced`` answers by the same rule (the header aside, unknown before a
call), so a cost budget that lets a call start can count it.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, cast

from swarmcore.llm import _local as local
from swarmcore.llm import _price_data as price_data
from swarmcore.llm._loader import load_litellm
from swarmcore.results import TokenUsage

logger = logging.getLogger("swarmcore.llm")

COST_HEADER: Final = "x-litellm-response-cost"
"""The response header a LiteLLM Proxy reports a call's cost in, in USD."""
# Where LiteLLM keeps a provider's response headers: ``llm_provider-`` plus the name.
_LITELLM_COST_HEADER: Final = f"llm_provider-{COST_HEADER}"


def _model_info(model: str) -> Mapping[str, Any]:
    """What is known of ``model``: the price map's entry, or LiteLLM's where it was changed.

    The answer never depends on whether LiteLLM was imported: the bundled map
    is read as data (``price_data.lookup``), and LiteLLM's own table is read
    only for entries someone changed in it (``litellm.register_model``), which
    needs LiteLLM imported anyway. Not cached here: a registration counts from
    the next call on (``price_data`` caches the map itself). An in-process test
    model (``swarmcore-test/...``) answers for itself.
    """
    if local.is_local(model):  # an in-process test model: what it declares, never LiteLLM
        return local.model_info(model)
    registered = _registered(model)
    return price_data.lookup(model) if registered is None else registered


def _registered(model: str) -> Mapping[str, Any] | None:
    """LiteLLM's entry for ``model`` where it differs from the bundled map's: a registration.

    LiteLLM's table is the bundled map as loaded (every entry equal once
    reduced to the fields read here), so an entry that differs, or one the
    map lacks, was put there: a price or capability the user registered.
    """
    if "litellm" not in sys.modules:
        return None  # nothing can be registered with a LiteLLM not yet imported
    table: Any = load_litellm().model_cost
    if not isinstance(table, Mapping):
        return None
    costs = cast("Mapping[str, object]", table)
    for name in price_data.names(model):
        entry = costs.get(name)
        if not isinstance(entry, Mapping):
            continue
        fields = price_data.kept_fields(cast("Mapping[str, Any]", entry))
        if fields != dict(price_data.bundled(name)):
            return MappingProxyType(fields)
    return None


def supports(model: str, capability: str) -> bool | None:
    """What the model data says of ``supports_<capability>`` for ``model``.

    None when the data does not know the model or leaves the capability unset,
    so callers can tell "no" apart from "unknown". The same answer whatever
    was imported before, on either backend.
    """
    value = _model_info(model).get(f"supports_{capability}")
    return value if isinstance(value, bool) else None


def _litellm_prices(model: str) -> bool:
    """Whether LiteLLM itself has a real price entry for ``model`` (registered ones included).

    Asked only on the LiteLLM backend (LiteLLM is loaded), to take its own
    figure for a reply it priced. An entry LiteLLM makes up for a name its
    map lacks (``openai/anthropic/...`` at $0) is not a price.
    """
    lit = load_litellm()
    try:
        info: Any = lit.get_model_info(model)
    except Exception:  # unknown models raise assorted errors
        return False
    if info.get("input_cost_per_token") is None:
        return False
    key = info.get("key")
    return key is None or key in lit.model_cost


def is_priced(model: str) -> bool:
    """Whether ``model``'s calls can be priced: by the price map, or by a price registered."""
    return price_data.has_price(_model_info(model))


def prompt_cost(model: str, prompt_tokens: int) -> float | None:
    """USD for ``prompt_tokens`` sent to ``model``, from the price map; None if unpriced."""
    return price_data.prompt_price(_model_info(model), prompt_tokens)


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
    return price_data.price(
        _model_info(model),
        usage.prompt_tokens,
        usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        service_tier=service_tier,
    )


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
