"""One pricing rule on both backends, over real HTTP: the same model and settings, the same cost.

Each row names a model as an agent would, the backend it is forced onto, and
what the gateway (``MockOpenAIServer`` answering as a LiteLLM Proxy) sends;
the cost and the budget's outcome must be the same whichever backend makes
the call. The expected prices come from LiteLLM's own ``cost_per_token`` for
the model the gateway serves, not from the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from swarmcore import Agent, BudgetExceeded, Swarm, SwarmResult
from swarmcore.events import RunFinished
from swarmcore.llm import load_litellm
from swarmcore.llm._types import BackendName
from swarmcore.testing import LiteLLMProxy, MockOpenAIServer, Reply

BACKENDS: list[BackendName] = ["native", "litellm"]
PROMPT, COMPLETION = 1_000, 100
GATEWAY_COST = 0.00055  # what a LiteLLM Proxy reported for one mock claude-opus-4-6 call


def listed_price(model: str) -> float:
    """LiteLLM's price of one PROMPT/COMPLETION call to ``model``, by its own function."""
    prompt, completion = load_litellm().cost_per_token(
        model=model, prompt_tokens=PROMPT, completion_tokens=COMPLETION
    )
    return float(prompt + completion)


def plain() -> Reply:
    return Reply(text="done", prompt_tokens=PROMPT, completion_tokens=COMPLETION)


def with_cost(cost: float) -> Reply:
    return LiteLLMProxy.reply("done", cost=cost, prompt_tokens=PROMPT, completion_tokens=COMPLETION)


@dataclass(frozen=True)
class Row:
    model: str
    reply: Reply
    cost: float | None
    """Expected; ``listed`` rows compute it from LiteLLM's listing of ``listed``."""
    listed: str | None = None
    backends: tuple[BackendName, ...] = ("native", "litellm")

    def expected(self) -> float | None:
        return listed_price(self.listed) if self.listed else self.cost


ROWS = {
    # Another provider's model behind an OpenAI-protocol gateway: priced as that model.
    "routed-from-price-map": Row(
        "openai/anthropic/claude-opus-4-6", plain(), None, listed="anthropic/claude-opus-4-6"
    ),
    "litellm-proxy-prefix": Row(
        "litellm_proxy/anthropic/claude-opus-4-6",
        plain(),
        None,
        listed="anthropic/claude-opus-4-6",
    ),
    # The case: backend="native" with the provider's own name (LiteLLM would
    # speak Anthropic's protocol to it, so that row is the native backend's alone).
    "provider-name-native": Row(
        "anthropic/claude-opus-4-6",
        plain(),
        None,
        listed="anthropic/claude-opus-4-6",
        backends=("native",),
    ),
    "openai-model": Row("openai/gpt-4o-mini", plain(), None, listed="openai/gpt-4o-mini"),
    # The gateway's reported cost wins over the price map, and prices what it lacks.
    "gateway-cost-routed": Row(
        "openai/anthropic/claude-opus-4-6", with_cost(GATEWAY_COST), GATEWAY_COST
    ),
    "gateway-cost-openai": Row("openai/gpt-4o-mini", with_cost(0.00123), 0.00123),
    "gateway-cost-unlisted": Row("openai/team-model", with_cost(0.0002), 0.0002),
    "unpriced": Row("openai/team-model", plain(), None),
}
CASES = [
    pytest.param(row, backend, id=f"{name}-{backend}")
    for name, row in ROWS.items()
    for backend in BACKENDS
    if backend in row.backends
]


def agent(server: MockOpenAIServer, name: str, model: str, backend: BackendName) -> Agent:
    return Agent(
        name,
        f"{name} works.",
        model=model,
        api_base=server.url,
        api_key="sk-test-local",
        backend=backend,
        retry=0,
    )


async def streamed(swarm: Swarm) -> SwarmResult:
    async for event in swarm.stream("go", text=True):
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("the run never finished")


@pytest.mark.parametrize(("row", "backend"), CASES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_same_call_costs_the_same_on_either_backend(
    row: Row, backend: BackendName, stream: bool
) -> None:
    with MockOpenAIServer([row.reply]) as server:
        swarm = Swarm(agent(server, "a", row.model, backend))
        result = await (streamed(swarm) if stream else swarm.run("go"))
    routed = row.model.startswith(("openai/", "litellm_proxy/"))
    sent = row.model.split("/", 1)[1] if routed else row.model
    assert server.requests[0].model == sent  # the name the gateway serves the model by
    expected = row.expected()
    if expected is None:
        assert result.cost is None
    else:
        assert result.cost == pytest.approx(expected, rel=1e-9)
        assert result.cost > 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("model", "reply", "allow_unpriced"),
    [
        ("openai/anthropic/claude-opus-4-6", plain(), False),
        ("openai/anthropic/claude-opus-4-6", with_cost(GATEWAY_COST), False),
        # An unlisted model runs only with allow_unpriced; the gateway's figure still counts.
        ("openai/team-model", with_cost(GATEWAY_COST), True),
    ],
    ids=["price-map", "gateway-cost", "unlisted-gateway-cost"],
)
async def test_a_cost_budget_stops_after_the_first_agent_on_either_backend(
    backend: BackendName, model: str, reply: Reply, allow_unpriced: bool
) -> None:
    with MockOpenAIServer(responder=lambda request: reply) as server:
        flow = (
            agent(server, "a", model, backend)
            >> agent(server, "b", model, backend)
            >> agent(server, "c", model, backend)
        )
        swarm = Swarm(flow, max_cost=0.0001, allow_unpriced=allow_unpriced)
        with pytest.raises(BudgetExceeded, match=r"of max_cost=\$0\.0001 spent") as caught:
            await swarm.run("go")
    assert caught.value.agent_name == "b"
    assert caught.value.spent_cost > 0.0001
    assert len(server.requests) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_unlisted_model_is_refused_under_a_cost_budget_on_either_backend(
    backend: BackendName,
) -> None:
    with MockOpenAIServer([with_cost(GATEWAY_COST)]) as server:
        swarm = Swarm(agent(server, "a", "openai/team-model", backend), max_cost=1.0)
        with pytest.raises(BudgetExceeded, match="has no price for openai/team-model"):
            await swarm.run("go")
    assert server.requests == []
