"""price_data prices OpenAI chat completions exactly as LiteLLM does, without importing it.

The parity tests run over every chat-mode OpenAI entry in LiteLLM's bundled
price map, read straight from the JSON file here (not through the module under
test), and compare with LiteLLM's own ``completion_cost`` / ``cost_per_token`` /
``get_model_info``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmcore.llm import _price_data as price_data
from swarmcore.llm._loader import load_litellm


def _raw_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    assert spec is not None
    assert spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    return json.loads((folder / "model_prices_and_context_window_backup.json").read_text())


RAW = _raw_map()
CHAT_MODELS = sorted(
    name
    for name, entry in RAW.items()
    if isinstance(entry, dict)
    and entry.get("litellm_provider") == "openai"
    and entry.get("mode") == "chat"
)
PRICED = [m for m in CHAT_MODELS if "input_cost_per_token" in RAW[m]]
UNPRICED = [m for m in CHAT_MODELS if "input_cost_per_token" not in RAW[m]]

# (prompt, completion, cached, reasoning): plain, cached, reasoning, both, a prompt
# above the 272k long-context threshold, nothing, and cached/reasoning over their totals.
USAGES = [
    (1000, 500, 0, 0),
    (1000, 500, 400, 0),
    (1000, 500, 0, 300),
    (1000, 500, 400, 300),
    (300_000, 2000, 100_000, 1500),
    (0, 0, 0, 0),
    (10, 5, 20, 10),
]
# Served tiers: standard, priced tiers, and "fast" (LiteLLM bills it at the priority rates).
TIERS = [None, "default", "flex", "priority", "fast", "ultrafast"]


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


def _litellm_cost(
    lit: Any, model: str, usage: tuple[int, int, int, int], tier: str | None = None
) -> float:
    from litellm.types.utils import (
        CompletionTokensDetailsWrapper,
        PromptTokensDetailsWrapper,
        Usage,
    )

    prompt, completion, cached, reasoning = usage
    response = lit.ModelResponse(
        model=model,
        usage=Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            prompt_tokens_details=PromptTokensDetailsWrapper(cached_tokens=cached),
            completion_tokens_details=CompletionTokensDetailsWrapper(reasoning_tokens=reasoning),
        ),
        **({"service_tier": tier} if tier else {}),
    )
    return float(lit.completion_cost(completion_response=response, model=model))


def _litellm_name(lit: Any, model: str) -> str:
    """The name LiteLLM can price ``model`` under.

    LiteLLM infers the provider of a bare name from a list that misses some
    fine-tuned bases (bare ``ft:o4-mini-...`` raises "LLM Provider NOT provided"),
    so those are checked against LiteLLM's figure for ``openai/<name>``.
    """
    try:
        lit.get_llm_provider(model)
    except Exception:
        assert model.startswith("ft:"), f"LiteLLM cannot route bare {model!r}"
        return f"openai/{model}"
    return model


@pytest.mark.parametrize("model", PRICED)
def test_cost_matches_litellm_for_every_priced_openai_chat_model(litellm: Any, model: str) -> None:
    bare_name = _litellm_name(litellm, model)
    for usage in USAGES:
        for tier in TIERS:
            expected = _litellm_cost(litellm, bare_name, usage, tier)
            assert price_data.cost(model, *usage, service_tier=tier) == pytest.approx(
                expected, rel=1e-9, abs=1e-15
            ), (model, usage, tier)
            prefixed = _litellm_cost(litellm, f"openai/{model}", usage, tier)
            assert price_data.cost(f"openai/{model}", *usage, service_tier=tier) == pytest.approx(
                prefixed, rel=1e-9, abs=1e-15
            ), (model, usage, tier)


@pytest.mark.parametrize("model", PRICED)
def test_prompt_cost_matches_litellm(litellm: Any, model: str) -> None:
    name = _litellm_name(litellm, model)
    for tokens in (0, 1, 1234, 300_000):
        expected, _ = litellm.cost_per_token(model=name, prompt_tokens=tokens, completion_tokens=0)
        assert price_data.prompt_cost(model, tokens) == pytest.approx(expected, rel=1e-9, abs=1e-15)
        assert price_data.is_priced(model)


@pytest.mark.parametrize("model", CHAT_MODELS)
def test_supports_and_model_info_match_litellm(litellm: Any, model: str) -> None:
    info = litellm.get_model_info(model)
    for capability in ("function_calling", "response_schema", "parallel_function_calling"):
        expected = info.get(f"supports_{capability}")
        assert price_data.supports(model, capability) == expected
        assert price_data.supports(f"openai/{model}", capability) == expected
    ours = price_data.model_info(model)
    for key, value in info.items():
        if value is None or isinstance(value, dict | list):
            continue
        if not (key.startswith("supports_") or "cost" in key or key.startswith("max_")):
            continue
        if key in ("input_cost_per_token", "output_cost_per_token") and key not in RAW[model]:
            assert value == 0  # LiteLLM fills an absent rate with 0; price_data leaves it absent
            continue
        assert ours[key] == value, key


@pytest.mark.parametrize("model", UNPRICED)
def test_chat_entries_without_token_rates_are_unpriced_where_litellm_says_zero(
    litellm: Any, model: str
) -> None:
    # openai/container bills per code-interpreter session and has no token rate:
    # LiteLLM defaults its token rates to 0 and prices a reply at 0.0; price_data
    # calls that unpriced (None), which pricing's callers already treat as "unknown".
    assert _litellm_cost(litellm, model, (1000, 500, 0, 0)) == 0.0
    assert price_data.cost(model, 1000, 500) is None
    assert price_data.prompt_cost(model, 1000) is None
    assert not price_data.is_priced(model)
    assert price_data.model_info(model)["litellm_provider"] == "openai"


def test_the_parity_cases_exercise_tiers_long_context_and_reasoning() -> None:
    # Guard against vacuous parity: the map's OpenAI models do use each pricing rule.
    flex = [
        m
        for m in PRICED
        if price_data.cost(m, 1000, 500, service_tier="flex") != price_data.cost(m, 1000, 500)
    ]
    long = [
        m
        for m in PRICED
        if price_data.prompt_cost(m, 300_000) != 300_000 * (price_data.prompt_cost(m, 1) or 0)
    ]
    cached = [
        m
        for m in PRICED
        if price_data.cost(m, 1000, 0, cached_tokens=1000) != price_data.cost(m, 1000, 0)
    ]
    assert flex
    assert long
    assert cached
    assert "gpt-4o-mini" in PRICED


def test_openai_prefix_names_the_same_entry() -> None:
    assert price_data.model_info("openai/gpt-4o-mini") == price_data.model_info("gpt-4o-mini")
    assert (
        price_data.model_info("gpt-4o-mini")["input_cost_per_token"]
        == RAW["gpt-4o-mini"]["input_cost_per_token"]
    )
    # Entries whose key carries the prefix are found under the full string too.
    assert price_data.model_info("openai/container")["mode"] == "chat"
    assert price_data.cost("openai/gpt-4o-mini", 1000, 10) == price_data.cost(
        "gpt-4o-mini", 1000, 10
    )


def test_snapshot_case_and_fine_tune_names_resolve_as_in_litellm(litellm: Any) -> None:
    usage = (1000, 500, 400, 300)
    for name in (
        "openai/gpt-4o-mini-2099-01-01",
        "openai/GPT-4o-mini",
        "ft:gpt-4o-mini-2024-07-18:my-org::abc123",
        "openai/ft:gpt-4o-mini-2024-07-18:my-org:suffix:abc123",
    ):
        assert price_data.cost(name, *usage) == pytest.approx(
            _litellm_cost(litellm, name, usage), rel=1e-9
        )


def test_unknown_models_are_unpriced_and_unknown() -> None:
    for name in (
        "gpt-9",
        "openai/gpt-9",
        "anthropic/claude-3-5-sonnet",
        "claude-3-5-sonnet-20240620",
        "",
    ):
        assert price_data.cost(name, 1000, 500, 100, 50) is None
        assert price_data.prompt_cost(name, 1000) is None
        assert not price_data.is_priced(name)
        assert price_data.model_info(name) == {}
        assert price_data.supports(name, "function_calling") is None
        assert not price_data.is_openai_model(name)


def test_is_openai_model_and_known_models() -> None:
    known = price_data.known_models()
    assert known == {m for m in CHAT_MODELS if "/" not in m}
    assert all(price_data.is_openai_model(m) for m in known)
    assert price_data.is_openai_model("gpt-4o-mini")
    assert price_data.is_openai_model("ft:gpt-4o-mini-2024-07-18:my-org::abc123")
    # Prefixed names, other providers' models and OpenAI models outside chat completions are not.
    responses_only = next(
        m
        for m, e in RAW.items()
        if isinstance(e, dict)
        and e.get("litellm_provider") == "openai"
        and e.get("mode") == "responses"
    )
    for name in (
        "openai/gpt-4o-mini",
        "azure/gpt-4o",
        "claude-3-5-sonnet-20240620",
        "gpt-3.5-turbo-instruct",
        responses_only,
        "text-embedding-3-small",
    ):
        assert not price_data.is_openai_model(name), name


def test_a_fresh_process_prices_without_importing_litellm() -> None:
    code = (
        "import sys\n"
        "from swarmcore.llm import _price_data as price_data\n"
        "usd = price_data.cost('openai/gpt-4o-mini', 1000, 500, cached_tokens=200)\n"
        "assert usd is not None and usd > 0, usd\n"
        "assert price_data.supports('gpt-4o-mini', 'function_calling') is True\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
        "print(usd)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) > 0
