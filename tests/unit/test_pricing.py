"""One pricing rule: every model the price map lists is priced, whoever serves it.

The references are LiteLLM's own ``cost_per_token`` and its bundled price map
read here as JSON, not the code under test.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swarmcore import BudgetExceeded
from swarmcore.llm import _budget as budget
from swarmcore.llm import _price_data as price_data
from swarmcore.llm import _pricing as pricing
from swarmcore.llm import is_priced, load_litellm, prompt_cost
from swarmcore.results import TokenUsage


def _raw_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    assert spec is not None
    assert spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    return json.loads((folder / "model_prices_and_context_window_backup.json").read_text())


RAW = _raw_map()
OPENAI = {"openai", "text-completion-openai"}
# Every other provider's chat model with a plain token price, named as LiteLLM names it.
# (Models with time-of-day prices are left out: LiteLLM bills them by the clock.)
OTHERS = sorted(
    name
    if name.startswith(f"{entry['litellm_provider']}/")
    else f"{entry['litellm_provider']}/{name}"
    for name, entry in RAW.items()
    if isinstance(entry, dict)
    and entry.get("litellm_provider") not in OPENAI
    and entry.get("mode") == "chat"
    and "input_cost_per_token" in entry
    and "off_peak_pricing" not in entry
)


def _litellm_price(model: str, prompt: int = 1000, completion: int = 100) -> float | None:
    try:
        usd = load_litellm().cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion
        )
    except Exception:
        return None  # a name LiteLLM's own lookup cannot resolve
    return float(usd[0] + usd[1])


def test_other_providers_models_are_priced_as_litellm_prices_them() -> None:
    compared = 0
    for model in OTHERS:
        expected = _litellm_price(model)
        if expected is None:
            continue
        compared += 1
        assert price_data.cost(model, 1000, 100) == pytest.approx(expected, rel=1e-9, abs=1e-15), (
            model
        )
    assert compared > 1000  # anthropic, gemini, mistral, bedrock...: not a vacuous loop
    assert price_data.is_priced("anthropic/claude-opus-4-6")
    assert price_data.prompt_cost("anthropic/claude-opus-4-6", 1000) == pytest.approx(
        _litellm_price("anthropic/claude-opus-4-6", 1000, 0)
    )


@pytest.mark.parametrize(
    "routed",
    [
        "openai/anthropic/claude-opus-4-6",
        "litellm_proxy/anthropic/claude-opus-4-6",
        "openai/claude-opus-4-6",
    ],
)
def test_a_gateway_prefix_prices_the_model_the_gateway_serves(routed: str) -> None:
    # LiteLLM's own lookup makes up a $0 entry for a gateway's name, or knows none:
    # the budget would count nothing.
    assert not _litellm_price(routed)
    expected = _litellm_price("anthropic/claude-opus-4-6")
    assert expected
    assert price_data.cost(routed, 1000, 100) == pytest.approx(expected)
    assert is_priced(routed)
    assert prompt_cost(routed, 1000) == pytest.approx(
        _litellm_price(routed.split("/")[-1], 1000, 0)
    )
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=100)
    assert pricing.usage_cost(routed, usage) == pytest.approx(expected)


def test_names_no_price_lists_stay_unpriced() -> None:
    for name in ("openai/team-model", "litellm_proxy/team-model", "openai/foo/bar", "team-model"):
        assert price_data.cost(name, 1000, 100) is None
        assert not price_data.is_priced(name)
        assert pricing.usage_cost(name, TokenUsage(prompt_tokens=1000)) is None
    # Capabilities stay OpenAI's: another provider's model is not an OpenAI one.
    assert not price_data.is_openai_model("claude-opus-4-6")
    assert price_data.model_info("anthropic/claude-opus-4-6") == {}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-litellm-response-cost": "0.00055"}, 0.00055),
        ({"X-LiteLLM-Response-Cost": "1.35e-05"}, 1.35e-05),
        ({"x-litellm-response-cost": "0"}, 0.0),
        ({"llm_provider-x-litellm-response-cost": 0.25}, 0.25),  # as LiteLLM keeps it
        ({"x-litellm-response-cost": "nan"}, None),
        ({"x-litellm-response-cost": "-1"}, None),
        ({"x-litellm-response-cost": "free"}, None),
        ({"x-litellm-response-cost-original": "0.5"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_a_gateways_reported_cost_is_read_when_it_is_a_price(
    headers: dict[str, Any] | None, expected: float | None
) -> None:
    assert pricing.gateway_cost(headers) == expected


def test_a_gateways_cost_wins_over_the_price_map() -> None:
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=100)
    headers = {"x-litellm-response-cost": "0.125"}
    assert pricing.usage_cost("openai/gpt-4o-mini", usage, headers=headers) == 0.125
    assert pricing.usage_cost("openai/team-model", usage, headers=headers) == 0.125
    bad = {"x-litellm-response-cost": "n/a"}
    assert pricing.usage_cost("openai/gpt-4o-mini", usage, headers=bad) == pytest.approx(
        _litellm_price("openai/gpt-4o-mini")
    )


def test_a_price_registered_with_litellm_prices_the_native_path_too() -> None:
    model = "openai/swarmcore-registered-pricing-test"  # asked of nobody before it is registered
    load_litellm().register_model(
        {
            model: {
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 2e-6,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=100)
    assert is_priced(model)
    assert pricing.usage_cost(model, usage) == pytest.approx(1000 * 1e-6 + 100 * 2e-6)


def test_an_unpriced_reply_under_a_cost_budget_fails_closed() -> None:
    meter = budget.Meter(max_cost=1.0)
    meter.check("a", "openai/gpt-4o-mini", is_priced)
    meter.charge(30, None, model="openai/gpt-4o-mini")  # a reply without usage: cost unknown
    with pytest.raises(BudgetExceeded, match="came back without a price") as caught:
        meter.check("b", "openai/gpt-4o-mini", is_priced)
    assert "allow_unpriced=True" in str(caught.value)
    assert caught.value.agent_name == "b"


def test_allow_unpriced_and_a_token_budget_let_unpriced_replies_pass() -> None:
    lenient = budget.Meter(max_cost=1.0, allow_unpriced=True)
    lenient.charge(30, None, model="openai/team-model")
    lenient.check("b", "openai/team-model", is_priced)
    tokens_only = budget.Meter(max_tokens=1000)
    tokens_only.charge(30, None, model="openai/team-model")
    tokens_only.check("b", "openai/team-model", is_priced)
    # Not a model call's reply (a remote agent's result, say): counted as before.
    other = budget.Meter(max_cost=1.0)
    other.charge(30, None)
    other.check("b", "openai/gpt-4o-mini", is_priced)


def test_a_fresh_process_prices_without_importing_litellm() -> None:
    code = (
        "import sys\n"
        "from swarmcore.llm import _pricing as pricing\n"
        "from swarmcore.results import TokenUsage\n"
        "assert pricing.is_priced('openai/anthropic/claude-opus-4-6')\n"
        "usd = pricing.usage_cost('anthropic/claude-opus-4-6', TokenUsage(prompt_tokens=1000))\n"
        "assert usd is not None and usd > 0, usd\n"
        "assert pricing.usage_cost('llama3.1', TokenUsage(prompt_tokens=10)) is None\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
        "print(usd)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(_litellm_price("anthropic/claude-opus-4-6", 1000, 0))
