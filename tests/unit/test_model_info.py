"""One model-information source: the same answers whether or not LiteLLM was imported first.

Prices and capabilities come from LiteLLM's bundled map read as data
(``price_data``); LiteLLM's own table counts only where an entry was
registered. So two fresh processes, one that imported ``litellm`` before
asking and one that never does, must answer every question alike, and the
second must not import LiteLLM to answer.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from swarmcore import llm
from swarmcore.llm import _pricing as pricing
from swarmcore.llm import load_litellm
from swarmcore.results import TokenUsage

# The models the docs and tests name, every kind of name: OpenAI's (bare, prefixed, dated,
# fine-tuned), other providers', a gateway's routed names, and names no map lists.
MODELS = [
    "gpt-4o-mini",
    "openai/gpt-4o-mini",
    "openai/gpt-4o",
    "openai/o3-mini",
    "openai/gpt-5",
    "openai/gpt-4o-mini-2099-01-01",
    "openai/ft:gpt-4o-mini-2024-07-18:my-org:suffix:abc123",
    "anthropic/claude-opus-4-6",
    "anthropic/claude-sonnet-4-5",
    "gemini/gemini-2.5-flash",
    "mistral/mistral-small-latest",
    "deepseek/deepseek-chat",
    "azure/gpt-4o",
    "ollama/llama3",
    "groq/llama-3.1-8b-instant",
    "openai/anthropic/claude-opus-4-6",
    "litellm_proxy/anthropic/claude-opus-4-6",
    "litellm_proxy/gpt-4o-mini",
    "openai/team-model",
    "openai/llama3.1",
    "swarmcore-test/offline",
]
CAPABILITIES = ["function_calling", "response_schema", "reasoning", "vision"]

ASK = """
import json, sys
{first}
from swarmcore import llm
from swarmcore.llm import _pricing as pricing
from swarmcore.llm.choice import is_openai_model
from swarmcore.results import TokenUsage

usage = TokenUsage(prompt_tokens=1200, completion_tokens=300, cached_tokens=1000,
                   reasoning_tokens=200)
answers = {{}}
for model in {models!r}:
    answers[model] = {{
        "supports": [llm.supports(model, c) for c in {capabilities!r}],
        "priced": llm.is_priced(model),
        "prompt_cost": llm.prompt_cost(model, 1000),
        "usage_cost": pricing.usage_cost(model, usage),
        "flex_cost": pricing.usage_cost(model, usage, service_tier="flex"),
        "openai": is_openai_model(model),
    }}
print(json.dumps({{"answers": answers, "litellm": "litellm" in sys.modules}}))
"""


def ask(first: str) -> dict[str, object]:
    code = ASK.format(first=first, models=MODELS, capabilities=CAPABILITIES)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_answers_do_not_depend_on_whether_litellm_was_imported_first() -> None:
    after_litellm = ask("import litellm")
    without = ask("")
    assert after_litellm["litellm"] is True
    assert without["litellm"] is False  # no question imported it
    assert after_litellm["answers"] == without["answers"]
    # The questions have answers, not all None: the data was read.
    answers = without["answers"]
    assert isinstance(answers, dict)
    assert answers["openai/gpt-4o-mini"]["priced"] is True
    assert answers["anthropic/claude-opus-4-6"]["supports"][0] is True
    assert answers["openai/team-model"]["priced"] is False


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4o-mini",
        "anthropic/claude-opus-4-6",
        "gemini/gemini-2.5-flash",
        "mistral/mistral-small-latest",
        "deepseek/deepseek-chat",
        "azure/gpt-4o",
        "litellm_proxy/gpt-4o-mini",
    ],
)
def test_capabilities_are_litellms_for_the_models_it_knows(model: str) -> None:
    info = load_litellm().get_model_info(model)
    for capability in CAPABILITIES:
        assert llm.supports(model, capability) == info.get(f"supports_{capability}"), capability


def test_a_gateways_routed_name_has_the_capabilities_of_the_model_it_routes_to() -> None:
    routed = "openai/anthropic/claude-opus-4-6"
    for capability in CAPABILITIES:
        assert llm.supports(routed, capability) == llm.supports(
            "anthropic/claude-opus-4-6", capability
        )


def test_a_registration_replaces_the_maps_entry_on_either_backend() -> None:
    model = "openai/gpt-4o-mini-swarmcore-override-test"  # asked of nobody before
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=100)
    assert not llm.is_priced(model)
    load_litellm().register_model(
        {
            model: {
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 2e-6,
                "supports_response_schema": False,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    assert llm.is_priced(model)
    assert llm.supports(model, "response_schema") is False
    assert pricing.usage_cost(model, usage) == pytest.approx(1000 * 1e-6 + 100 * 2e-6)
    assert llm.prompt_cost(model, 1000) == pytest.approx(1e-3)
