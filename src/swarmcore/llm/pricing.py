"""What a model costs and can do, from LiteLLM's bundled model data.

OpenAI models are looked up in that data read as a file (``price_data``), so
the native backend's runs never import LiteLLM; other models through LiteLLM.

Cost is optional data: a model LiteLLM cannot price costs ``None`` (with a
debug log line), never a guess and never an error.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Mapping
from typing import Any

from swarmcore.llm import price_data
from swarmcore.llm.choice import is_openai_model
from swarmcore.llm.loader import load_litellm

__all__ = ["cost", "is_priced", "prompt_cost", "supports"]

logger = logging.getLogger("swarmcore.llm")


@functools.cache
def _model_info(model: str) -> Mapping[str, Any]:
    """LiteLLM's data on ``model``, empty when it has none.

    Cached: the data is bundled, so it does not change while the process runs.
    """
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


def is_priced(model: str) -> bool:
    """Whether LiteLLM's price map knows ``model``."""
    return _model_info(model).get("input_cost_per_token") is not None


def prompt_cost(model: str, prompt_tokens: int) -> float | None:
    """USD for ``prompt_tokens`` sent to ``model``, from LiteLLM's price map; None if unpriced."""
    if not is_priced(model):
        return None
    if is_openai_model(model) and "litellm" not in sys.modules:
        return price_data.prompt_cost(model, prompt_tokens)
    try:
        usd, _ = load_litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=0
        )
        return float(usd)
    except Exception as exc:  # an odd price entry: report unpriced rather than guess
        logger.debug("no prompt price for %s: %s", model, exc)
        return None


def cost(model: str, response: Any) -> float | None:
    """USD for one LiteLLM response from ``model``; None when the model is unpriced."""
    # LiteLLM has usually priced the reply already: take its figure rather than price it twice.
    hidden: Mapping[str, object] = getattr(response, "_hidden_params", None) or {}
    known = hidden.get("response_cost")
    if isinstance(known, int | float) and not isinstance(known, bool):
        return float(known)
    if not is_priced(model):
        return None
    try:
        return float(load_litellm().completion_cost(completion_response=response, model=model))
    except Exception as exc:  # unpriced models raise assorted errors; cost is optional data
        logger.debug("no price for %s: %s", model, exc)
        return None
