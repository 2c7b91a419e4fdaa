"""Streaming, prices, cost budgets and trace values over real HTTP (MockOpenAIServer), on both
backends."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from swarmcore import Agent, BudgetExceeded, Swarm
from swarmcore.events import RunFinished, TextDelta
from swarmcore.llm import load_litellm
from swarmcore.testing import MockOpenAIServer, RecordedRequest, Reply
from swarmcore.tracing import OpenTelemetryTracer

# Once per model backend: the native OpenAI one and LiteLLM must behave the same.
pytestmark = pytest.mark.usefixtures("each_backend")


PRICED = "openai/gpt-4o-mini"


def priced(server: MockOpenAIServer, name: str, instructions: str | None = None) -> Agent:
    return Agent(
        name,
        instructions or f"{name} works.",
        model=PRICED,
        api_base=server.url,
        api_key="sk-test-local",
        retry=0,
    )


def price(prompt: int, completion: int) -> float:
    cost = load_litellm().cost_per_token(
        model=PRICED, prompt_tokens=prompt, completion_tokens=completion
    )
    return float(cost[0] + cost[1])


async def test_text_streams_as_deltas_without_changing_results() -> None:
    text = "Tea is a drink made from leaves.\n<summary>Tea explained.</summary>"
    reply = Reply(text=text, prompt_tokens=40, completion_tokens=12)
    with MockOpenAIServer([reply, reply]) as server:
        swarm = Swarm(priced(server, "writer"))
        plain = await swarm.run("tea")
        deltas: list[str] = []
        streamed = None
        async for event in swarm.stream("tea", text=True):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
            if isinstance(event, RunFinished):
                streamed = event.result
    assert streamed is not None
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert server.raw_bodies[1]["stream"] is True
    assert "stream" not in server.raw_bodies[0]
    assert streamed.output == plain.output == "Tea is a drink made from leaves."
    assert streamed["writer"].summary == "Tea explained."
    assert streamed.token_usage == plain.token_usage
    assert streamed.token_usage.prompt_tokens == 40
    assert streamed.cost == pytest.approx(plain.cost)


async def test_cost_per_agent_is_right_when_agents_share_a_model() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.system.startswith("big"):
            return Reply(text="big", prompt_tokens=100_000, completion_tokens=1_000)
        return Reply(text="small", prompt_tokens=1_000, completion_tokens=10)

    with MockOpenAIServer(responder=answer) as server:
        result = await Swarm(priced(server, "big") | priced(server, "small")).run("go")
    assert result["big"].cost == pytest.approx(price(100_000, 1_000))
    assert result["small"].cost == pytest.approx(price(1_000, 10))
    assert result.cost == pytest.approx(price(100_000, 1_000) + price(1_000, 10))
    assert "$0.0156" in result.usage_table()


async def test_cost_budget_refuses_calls_once_spent() -> None:
    each = Reply(text="ok", prompt_tokens=1_000_000, completion_tokens=0)  # $0.15 a call
    with MockOpenAIServer(responder=lambda r: each) as server:
        flow = priced(server, "a") >> priced(server, "b") >> priced(server, "c")
        with pytest.raises(BudgetExceeded, match=r"of max_cost=\$0\.2 spent") as caught:
            await Swarm(flow, max_cost=0.2).run("go")
    error = caught.value
    assert error.agent_name == "c"
    assert error.spent_cost == pytest.approx(2 * price(1_000_000, 0))
    assert error.partial is not None
    assert list(error.partial.context) == ["a", "b"]
    assert error.partial.cost == pytest.approx(error.spent_cost)
    assert len(server.requests) == 2


async def test_chat_spans_name_the_server_and_the_model_that_answered() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # A real endpoint answers with the dated version it ran, not the name asked for.
    reply = Reply(text="Tea.\n<summary>Tea.</summary>", model="gpt-4o-mini-2024-07-18")
    with MockOpenAIServer([reply, reply]) as server:
        port = urlsplit(server.url).port
        swarm = Swarm(priced(server, "writer"), hooks=[OpenTelemetryTracer(provider)])
        await swarm.run("tea")
        async for _ in swarm.stream("tea", text=True):  # the streamed reply names it too
            pass
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert [s.name for s in chats] == ["chat gpt-4o-mini"] * 2
    for chat in chats:
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert chat.attributes["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
        assert chat.attributes["server.address"] == "127.0.0.1"
        assert chat.attributes["server.port"] == port
