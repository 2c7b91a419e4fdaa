"""Models' prices, and OpenAI models' capabilities, read from LiteLLM's bundled price map as data.

The native OpenAI backend must price a call without importing LiteLLM (an
import costs seconds and a hundred megabytes), yet price it exactly as LiteLLM
would. So this module finds ``model_prices_and_context_window_backup.json``
inside the installed ``litellm`` package without importing it, parses it on
first need, and keeps only the fields used here (rates, ``supports_*``, token
limits, mode). OpenAI's entries (some 200 small dicts out of a 3 MB file) are
loaded first; every other provider's only when a price is asked of a model
OpenAI's do not name, e.g. ``anthropic/claude-opus-4-6`` reached through an
OpenAI-protocol gateway. The arithmetic in ``cost`` mirrors LiteLLM's
``generic_cost_per_token`` for a chat completion: cached prompt tokens at
``cache_read_input_token_cost``, reasoning tokens at
``output_cost_per_reasoning_token`` (else the output rate), the
``*_above_<n>k_tokens`` long-context rates and the ``_flex``/``_priority``
service-tier rates. ``tests/unit/test_price_data.py`` checks it against
LiteLLM's own figures for every OpenAI chat model in the map.

A gateway's routing prefix is not part of the priced name: LiteLLM's
``get_model_info`` gives ``openai/anthropic/claude-opus-4-6`` (a gateway's
model, spoken to in OpenAI's protocol) a made-up entry priced at $0, while the
map prices ``claude-opus-4-6``; here it is priced as ``anthropic/claude-opus-4-6``.

A model the map does not price costs ``None``: never a guess, never an error.
``lookup`` finds any provider's entry (prices and capabilities: what
``pricing`` answers from); ``supports``, ``model_info`` and
``is_openai_model`` are OpenAI's entries only, for the native backend's own
choices (which names are OpenAI's, which models take ``max_completion_tokens``).

The file's name is LiteLLM's, not an API: a LiteLLM release that moves it
fails ``tests/unit/test_price_data.py`` by name, and the pin (``<1.107``)
keeps a release from moving it unnoticed.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, cast

_PRICE_FILE: Final = "model_prices_and_context_window_backup.json"
_PROVIDERS: Final = frozenset({"openai", "text-completion-openai"})
# Prefixes that say how a model is reached (an OpenAI-protocol endpoint, a LiteLLM
# Proxy), not which model it is: ``openai/anthropic/claude-opus-4-6`` is Anthropic's.
GATEWAY_PREFIXES: Final = ("openai/", "litellm_proxy/")
_LIMIT_FIELDS: Final = frozenset(
    {"litellm_provider", "mode", "max_tokens", "max_input_tokens", "max_output_tokens"}
)
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})

# LiteLLM's service tiers and the suffix of the rate keys each is billed at
# (``fast`` bills at the priority rates); any other tier bills the standard rates.
_TIER_KEY_SUFFIX: Final = MappingProxyType(
    {
        "flex": "flex",
        "balanced": "balanced",
        "priority": "priority",
        "fast": "priority",
        "ultrafast": "ultrafast",
    }
)
# Longest first, so "_ultrafast" is found before "_fast" (LiteLLM's order).
_TIER_SUFFIXES: Final = ("_ultrafast", "_priority", "_balanced", "_flex", "_fast", "_auto")
_NON_STANDARD_SUFFIXES: Final = (*_TIER_SUFFIXES, "_batches")
_THRESHOLD_PREFIXES: Final = tuple(
    f"{rate}_above_"
    for rate in (
        "input_cost_per_token",
        "output_cost_per_token",
        "cache_read_input_token_cost",
        "cache_creation_input_token_cost",
    )
)
_DATED_SUFFIX: Final = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_FINE_TUNE_SUFFIX: Final = re.compile(r"(:[^:]*){3}$")


def _price_file() -> Path | None:
    """The bundled price map's path, found without importing litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / _PRICE_FILE
        if path.is_file():
            return path
    return None


def _kept_field(key: str, value: object) -> bool:
    if isinstance(value, dict | list):  # tier tables, endpoint lists: unused here
        return False
    return key in _LIMIT_FIELDS or key.startswith("supports_") or "cost" in key


def kept_fields(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a price-map entry read here: rates, ``supports_*``, token limits, mode.

    An entry of LiteLLM's own table (``litellm.model_cost``) reduced by this is
    equal to the bundled map's entry under the same name, unless someone
    changed it (``litellm.register_model``): ``pricing`` tells a registration by that.
    """
    return {k: v for k, v in entry.items() if _kept_field(k, v)}


def _trim(obj: dict[str, Any], *, openai: bool) -> dict[str, Any] | None:
    """``json`` object hook: keep OpenAI's entries (or every other provider's) as parsed.

    Dropping the rest inside the parser, not after it, keeps the parse's peak
    memory near the file's size rather than the whole map's in objects.
    """
    provider = obj.get("litellm_provider")
    if provider is None:
        return obj  # the top-level map, or a nested table of a kept entry
    if (provider in _PROVIDERS) != openai:
        return None
    kept = kept_fields(obj)
    aliases: object = obj.get("aliases")
    if isinstance(aliases, list):
        kept["aliases"] = [a for a in cast("list[object]", aliases) if isinstance(a, str)]
    return kept


@functools.cache
def _table() -> Mapping[str, Mapping[str, Any]]:
    """OpenAI's entries of the price map, loaded once on first need; empty without litellm."""
    return _load(openai=True)[0]


@functools.cache
def _other_table() -> Mapping[str, Mapping[str, Any]]:
    """Every other provider's entries, loaded once, on the first price asked of one."""
    return _load(openai=False)[0]


def _may_list(name: str) -> bool:
    """Whether another provider's entry may be named ``name`` (or its part after a slash).

    Known from the names the OpenAI parse dropped, so a model nobody lists (a
    local ``openai/llama3.1``) never costs the second parse (~0.1 s, 3 MB).
    """
    dropped = _load(openai=True)[1]
    bare = name.partition("/")[2]
    return any(n.lower() in dropped for n in (name, bare) if n)


@functools.cache
def _load(*, openai: bool) -> tuple[Mapping[str, Mapping[str, Any]], frozenset[str]]:
    """The map's entries kept by ``_trim``, and the (lower-cased) names of those dropped."""
    path = _price_file()
    if path is None:
        return _EMPTY, frozenset()
    try:
        raw: Any = json.loads(
            path.read_bytes(), object_hook=functools.partial(_trim, openai=openai)
        )
    except (OSError, ValueError):
        return _EMPTY, frozenset()
    if not isinstance(raw, dict):
        return _EMPTY, frozenset()
    table: dict[str, Mapping[str, Any]] = {}
    dropped: set[str] = set()
    for name, entry in cast("dict[str, object]", raw).items():
        if entry is None:
            dropped.add(name.lower())
            continue
        fields = cast("dict[str, Any]", entry) if isinstance(entry, dict) else {}
        if isinstance(fields.get("litellm_provider"), str):  # not the map's non-model blocks
            aliases: list[str] = fields.pop("aliases", [])
            table[name] = MappingProxyType(fields)  # a later real entry overwrites an alias
            for alias in aliases:
                table.setdefault(alias, table[name])  # an alias never shadows a real entry
    return MappingProxyType(table), frozenset(dropped)


def _candidates(model: str) -> list[str]:
    """Names to look ``model`` up under, in LiteLLM's order."""
    names = [model]
    if model.startswith("openai/"):
        names.append(model.removeprefix("openai/"))
    for name in list(names):
        if "ft:" in name:  # ft:gpt-4o-mini-2024-07-18:org:suffix:id -> ft:gpt-4o-mini-2024-07-18
            names.append(_FINE_TUNE_SUFFIX.sub("", name))
        else:  # a dated snapshot the map does not list prices as its model
            names.append(_DATED_SUFFIX.sub("", name))
    return names


@functools.lru_cache(maxsize=512)
def _entry(model: str) -> Mapping[str, Any]:
    table = _table()
    for name in _candidates(model):
        entry = table.get(name) or table.get(name.lower())
        if entry is not None:
            return entry
    return _EMPTY


def _routed(model: str) -> str:
    """``model`` without a gateway's routing prefix: the name the gateway serves."""
    for prefix in GATEWAY_PREFIXES:
        if model.startswith(prefix):
            return model.removeprefix(prefix)
    return model


@functools.lru_cache(maxsize=512)
def _priced_entry(model: str) -> Mapping[str, Any]:
    """The entry ``model`` is priced by: OpenAI's, else another provider's, as LiteLLM finds it.

    ``anthropic/claude-opus-4-6`` is the map's ``claude-opus-4-6`` (provider
    ``anthropic``), and so is ``openai/anthropic/claude-opus-4-6``: the model a
    gateway serves under that name.
    """
    entry = _entry(model)
    if entry:
        return entry
    name = _routed(model)
    if name != model:
        entry = _entry(name)  # litellm_proxy/gpt-4o-mini is OpenAI's gpt-4o-mini
        if entry:
            return entry
    if not _may_list(name):
        return _EMPTY
    table = _other_table()
    entry = table.get(name) or table.get(name.lower())
    if entry is not None:
        return entry
    provider, slash, bare = name.partition("/")
    entry = (table.get(bare) or table.get(bare.lower())) if slash else None
    if entry is not None and _provider_is(entry, provider):
        return entry
    return _EMPTY


def lookup(model: str) -> Mapping[str, Any]:
    """The price map's entry for any provider's model, found as LiteLLM's ``get_model_info`` does.

    The one model-information source (prices and capabilities) on both
    backends: ``pricing`` reads it, never LiteLLM's lookup, so an answer does
    not depend on whether LiteLLM was imported. A gateway's routed name is
    the model it routes to (``openai/anthropic/claude-opus-4-6`` is
    ``claude-opus-4-6``), where LiteLLM would make up an entry priced at $0.

    Args:
        model: ``"openai/gpt-4o-mini"``, ``"gpt-4o-mini"``, ``"anthropic/claude-opus-4-6"``...

    Returns:
        A read-only mapping of the entry's kept fields; empty when the map has none.
    """
    return _priced_entry(model)


@functools.lru_cache(maxsize=512)
def names(model: str) -> tuple[str, ...]:
    """The names ``model``'s entry may be filed under in LiteLLM's table, most specific first.

    ``anthropic/claude-opus-4-6`` may be ``claude-opus-4-6``; a gateway's
    ``openai/anthropic/claude-opus-4-6`` is ``anthropic/claude-opus-4-6`` too.
    """
    found = [model, *_candidates(model)]
    routed = _routed(model)
    found += [routed, routed.partition("/")[2]]
    return tuple(dict.fromkeys(n for n in found if n))


def bundled(name: str) -> Mapping[str, Any]:
    """The bundled map's entry filed under exactly ``name`` (no name resolution); empty if none."""
    entry = _table().get(name)
    if entry is None and _may_list(name):
        entry = _other_table().get(name)
    return _EMPTY if entry is None else entry


def _provider_is(entry: Mapping[str, Any], provider: str) -> bool:
    """Whether ``entry`` is ``provider``'s (``vertex_ai`` owns ``vertex_ai-language-models``)."""
    owner = str(entry.get("litellm_provider"))
    return owner == provider or owner.startswith(f"{provider}-")


def model_info(model: str) -> Mapping[str, Any]:
    """The price map's entry for an OpenAI model, or an empty mapping when it has none.

    Args:
        model: ``"openai/gpt-4o-mini"`` or the bare ``"gpt-4o-mini"``; a dated
            snapshot or fine-tuned name falls back to its base model, as in LiteLLM.

    Returns:
        A read-only mapping of the entry's rates (``input_cost_per_token``,
        ``cache_read_input_token_cost``, ...), ``supports_*`` flags, token
        limits, ``mode`` and ``litellm_provider``, as LiteLLM's
        ``get_model_info`` reports them.
    """
    return _entry(model)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _rate(info: Mapping[str, Any], key: str, default: float | None) -> float | None:
    """``info[key]``, else the key's standard (untiered) rate, else ``default``: LiteLLM's rule."""
    value = info.get(key)
    if value is not None:
        number = _number(value)
        return default if number is None else number
    suffix = next((s for s in _TIER_SUFFIXES if s in key), None)
    if suffix is not None:
        number = _number(info.get(key.replace(suffix, "")))
        if number is not None:
            return number
    return default


def _tier_suffix(service_tier: str | None) -> str:
    known = _TIER_KEY_SUFFIX.get(service_tier.lower()) if service_tier else None
    return f"_{known}" if known else ""


def _threshold(key: str) -> float:
    size = key.rsplit("_above_", 1)[1].split("_tokens")[0]
    return float(size.replace("k", "")) * (1000 if "k" in size else 1)


def _crossed_thresholds(info: Mapping[str, Any], prompt_tokens: int, suffix: str) -> list[str]:
    """The ``_above_<n>_tokens`` sizes ``prompt_tokens`` exceeds, smallest first."""
    crossed: list[tuple[float, str]] = []
    for key, value in info.items():
        if value is None or not key.startswith(_THRESHOLD_PREFIXES) or "_tokens" not in key:
            continue
        if key.endswith(_NON_STANDARD_SUFFIXES) and not (suffix and key.endswith(suffix)):
            continue
        try:
            size = _threshold(key)
        except ValueError:
            continue
        if prompt_tokens > size:
            crossed.append((size, key.rsplit("_above_", 1)[1].split("_tokens")[0]))
    return [name for _, name in sorted(crossed)]


def _base_rates(
    info: Mapping[str, Any], prompt_tokens: int, suffix: str
) -> tuple[float, float, float]:
    """Input, output and cache-read rates for a ``prompt_tokens`` prompt, as LiteLLM picks them."""
    prompt = _rate(info, f"input_cost_per_token{suffix}", 0.0) or 0.0
    output = _rate(info, f"output_cost_per_token{suffix}", 0.0) or 0.0
    cache_read = _rate(info, f"cache_read_input_token_cost{suffix}", None)
    for size in _crossed_thresholds(info, prompt_tokens, suffix):
        above = f"_above_{size}_tokens{suffix}"
        prompt = _rate(info, f"input_cost_per_token{above}", prompt) or 0.0
        output = _rate(info, f"output_cost_per_token{above}", output) or 0.0
        cache_read = _rate(info, f"cache_read_input_token_cost{above}", cache_read)
    return prompt, output, prompt if cache_read is None else cache_read


def _reasoning_rate(info: Mapping[str, Any], suffix: str, output: float) -> float:
    tiered = _number(info.get(f"output_cost_per_reasoning_token{suffix}"))
    if tiered is not None:
        return tiered
    if suffix and info.get(f"output_cost_per_token{suffix}") is not None:
        return output
    standard = _number(info.get("output_cost_per_reasoning_token"))
    return output if standard is None else standard


def is_priced(model: str) -> bool:
    """Whether the price map gives ``model`` a per-token input rate, whoever's model it is.

    ``openai/gpt-4o-mini``, ``anthropic/claude-opus-4-6`` and a gateway's
    ``openai/anthropic/claude-opus-4-6`` are priced; ``openai/my-local-model`` is not.
    """
    return has_price(_priced_entry(model))


def cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    *,
    service_tier: str | None = None,
) -> float | None:
    """USD for one chat completion, as LiteLLM prices it (exactly, for OpenAI's models).

    Args:
        model: ``"openai/gpt-4o-mini"`` or ``"gpt-4o-mini"``; another provider's model
            (``"anthropic/claude-opus-4-6"``), also behind a gateway's prefix
            (``"openai/anthropic/claude-opus-4-6"``).
        prompt_tokens: The prompt's tokens, cached ones included (OpenAI's ``prompt_tokens``).
        completion_tokens: The reply's tokens, reasoning included (OpenAI's ``completion_tokens``).
        cached_tokens: ``prompt_tokens_details.cached_tokens``: billed at the cache-read rate.
        reasoning_tokens: ``completion_tokens_details.reasoning_tokens``: billed at the
            reasoning rate where the model has one, else at the output rate.
        service_tier: The reply's ``service_tier``: ``"flex"`` and ``"priority"`` bill at
            those rates where the model has them; ``None``, ``"default"`` and
            ``"auto"`` at the standard rates.

    Returns:
        The cost in USD, or None when the price map does not price ``model``.
    """
    return price(
        _priced_entry(model),
        prompt_tokens,
        completion_tokens,
        cached_tokens,
        reasoning_tokens,
        service_tier=service_tier,
    )


def has_price(info: Mapping[str, Any]) -> bool:
    """Whether an entry gives a per-token input rate: whether its model can be priced."""
    return _number(info.get("input_cost_per_token")) is not None


def price(
    info: Mapping[str, Any],
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    *,
    service_tier: str | None = None,
) -> float | None:
    """``cost``'s arithmetic on an entry given (``lookup``'s, or one registered with LiteLLM).

    Returns:
        The cost in USD, or None when the entry has no input rate.
    """
    if not has_price(info):
        return None
    suffix = _tier_suffix(service_tier)
    prompt_rate, output_rate, cache_read_rate = _base_rates(info, prompt_tokens, suffix)
    cached = max(cached_tokens, 0)
    usd = max(prompt_tokens - cached, 0) * prompt_rate + cached * cache_read_rate
    reasoning = max(reasoning_tokens, 0)
    if reasoning == 0:
        return usd + completion_tokens * output_rate
    usd += max(completion_tokens - reasoning, 0) * output_rate
    return usd + reasoning * _reasoning_rate(info, suffix, output_rate)


def prompt_cost(model: str, prompt_tokens: int) -> float | None:
    """USD for ``prompt_tokens`` sent to ``model``; None when the price map does not price it."""
    return prompt_price(_priced_entry(model), prompt_tokens)


def prompt_price(info: Mapping[str, Any], prompt_tokens: int) -> float | None:
    """``prompt_cost``'s arithmetic on an entry given; None when it has no input rate."""
    if not has_price(info):
        return None
    return _base_rates(info, prompt_tokens, "")[0] * prompt_tokens


def supports(model: str, capability: str) -> bool | None:
    """The price map's ``supports_<capability>`` for ``model``.

    None when the map does not know the model or leaves the capability unset,
    so callers can tell "no" apart from "unknown".
    """
    value = _entry(model).get(f"supports_{capability}")
    return value if isinstance(value, bool) else None


@functools.cache
def known_models() -> frozenset[str]:
    """Bare names of the OpenAI chat models the price map knows, for "did you mean" hints."""
    return frozenset(
        name
        for name, entry in _table().items()
        if "/" not in name and entry.get("litellm_provider") == "openai" and _is_chat(entry)
    )


def _is_chat(entry: Mapping[str, Any]) -> bool:
    return entry.get("mode") == "chat"


def is_openai_model(model: str) -> bool:
    """Whether a bare name like ``"gpt-4o-mini"`` is an OpenAI chat-completions model.

    True when the price map files it under provider ``"openai"`` in chat mode,
    so it can be routed to the native OpenAI backend. Models OpenAI serves only
    through its Responses API (mode ``"responses"``) and legacy completion
    models are not: LiteLLM bridges those. Names with a provider prefix
    (``"azure/gpt-4o"``) are never bare OpenAI names.
    """
    if "/" in model:
        return False
    entry = _entry(model)
    return entry.get("litellm_provider") == "openai" and _is_chat(entry)
