"""OpenTelemetryTracer: events of offline runs become a correct tree of GenAI spans."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import warnings
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from swarmcore import (
    Agent,
    AgentDefaults,
    AgentError,
    RetryPolicy,
    Swarm,
    UserError,
    function_tool,
    loop,
    route,
)
from swarmcore._semconv import PROVIDER_NAMES
from swarmcore.a2a import RemoteAgent
from swarmcore.events import (
    AgentStarted,
    ModelCallFinished,
    ModelCallStarted,
    ModelFallback,
    ReasoningDelta,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallDelta,
)
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from swarmcore.testing import offline_model as shared_offline_model
from swarmcore.tracing import OpenTelemetryTracer
from tests.a2a.servers import a2a_server

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}"


def diamond(model: str) -> tuple[Agent, Agent, Agent, Agent]:
    a = Agent("a", "a researches.", model=model, tools=[function_tool(lookup)])
    b, c, d = (Agent(n, f"{n} works.", model=model) for n in "bcd")
    return a, b, c, d


def by_name(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"{name}: {[s.name for s in spans]}"
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def attr(span: ReadableSpan, key: str) -> object:
    assert span.attributes is not None
    return span.attributes.get(key)


def tokens(spans: Sequence[ReadableSpan], key: str) -> int:
    counts = [attr(s, f"gen_ai.usage.{key}_tokens") for s in spans]
    assert all(isinstance(n, int) for n in counts), counts
    return sum(n for n in counts if isinstance(n, int))


def times(span: ReadableSpan) -> tuple[int, int]:
    assert span.start_time is not None
    assert span.end_time is not None
    return span.start_time, span.end_time


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def chat_name(model: str) -> str:
    """A chat span's name: the model's name at its provider (``swarmcore-test/x``: ``chat x``)."""
    return f"chat {model.partition('/')[2]}"


def of_agent(spans: Sequence[ReadableSpan], prefix: str, agent: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix) and attr(s, "gen_ai.agent.name") == agent]


async def test_diamond_flow_gives_a_correct_span_tree(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = shared_offline_model()
    a, b, c, d = diamond(model)
    swarm = Swarm(a >> (b | c) >> d, context_mode="pull", hooks=[OpenTelemetryTracer(provider)])
    result = await swarm.run("study tracing")
    spans = exporter.get_finished_spans()

    run = by_name(spans, "invoke_workflow a >> (b | c) >> d")
    steps = {n: by_name(spans, f"step {n}") for n in ("a", "b | c", "d")}
    agents = {n: by_name(spans, f"invoke_agent {n}") for n in "abcd"}
    assert parent_of(run) is None
    assert {trace_id(s) for s in spans} == {trace_id(run)}
    assert all(parent_of(s) == span_id(run) for s in steps.values())
    assert parent_of(agents["a"]) == span_id(steps["a"])
    assert parent_of(agents["b"]) == span_id(steps["b | c"])
    assert parent_of(agents["c"]) == span_id(steps["b | c"])
    assert parent_of(agents["d"]) == span_id(steps["d"])

    for name, agent_span in agents.items():
        chats = of_agent(spans, "chat ", name)
        tools = of_agent(spans, "execute_tool ", name)
        agent_result = result[name]
        assert len(chats) == len(agent_result.llm_calls) >= 2  # a tool turn, then an answer
        assert len(tools) == len(agent_result.tool_calls) >= 1
        assert all(parent_of(s) == span_id(agent_span) for s in [*chats, *tools])
        assert tokens(chats, "input") == (agent_result.token_usage.prompt_tokens)
        assert tokens(chats, "output") == (agent_result.token_usage.completion_tokens)
    assert [s.name for s in of_agent(spans, "execute_tool ", "a")] == ["execute_tool lookup"]
    assert {s.name for s in of_agent(spans, "execute_tool ", "d")} >= {
        "execute_tool list_context",
        "execute_tool get_context",
    }

    # GenAI attributes
    assert run.attributes == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "a >> (b | c) >> d",
        "swarmcore.run_id": result.run_id,
        "swarmcore.context_mode": "pull",
        "swarmcore.agents": ("a", "b", "c", "d"),
        "swarmcore.usage.input_tokens": result.token_usage.prompt_tokens,
        "swarmcore.usage.output_tokens": result.token_usage.completion_tokens,
    }
    assert attr(steps["b | c"], "swarmcore.step.parallel") is True
    assert attr(steps["b | c"], "swarmcore.step.policy") == "all"
    assert attr(steps["a"], "swarmcore.step.parallel") is False
    assert attr(agents["b"], "gen_ai.operation.name") == "invoke_agent"
    assert attr(agents["b"], "gen_ai.agent.name") == "b"
    provider_name, _, name = model.partition("/")  # "swarmcore-test/offline": LiteLLM's route
    assert attr(agents["b"], "gen_ai.request.model") == name
    assert attr(agents["b"], "swarmcore.attempt") == 1
    assert agents["b"].kind.name == "INTERNAL"
    chat = of_agent(spans, "chat ", "a")[0]
    assert chat.name == f"chat {name}"
    assert chat.kind.name == "CLIENT"
    assert attr(chat, "gen_ai.operation.name") == "chat"
    assert attr(chat, "gen_ai.provider.name") == provider_name  # no well-known value: LiteLLM's
    assert attr(chat, "gen_ai.request.model") == name
    assert attr(chat, "gen_ai.response.model") == name  # what LiteLLM's response names
    assert attr(chat, "gen_ai.response.finish_reasons") == ("tool_calls",)
    assert attr(chat, "swarmcore.turn") == 1
    assert attr(chat, "swarmcore.attempts") == 1
    tool = of_agent(spans, "execute_tool ", "a")[0]
    assert attr(tool, "gen_ai.operation.name") == "execute_tool"
    assert attr(tool, "gen_ai.tool.name") == "lookup"
    assert attr(tool, "gen_ai.tool.call.id") == result["a"].tool_calls[0].call_id
    assert "gen_ai.tool.call.arguments" not in (tool.attributes or {})
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert tokens(chats, "input") == (result.token_usage.prompt_tokens)

    # timing: the run span covers every other span; no span failed
    for span in spans:
        start, end = times(span)
        assert end >= start
        assert span.status.status_code is StatusCode.UNSET
    assert times(run)[0] == min(times(s)[0] for s in spans)
    assert times(run)[1] == max(times(s)[1] for s in spans)


async def test_parallel_branches_are_parented_whatever_the_interleaving(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # b's branch is slow, so c's and d's spans open and close while b's are open.
    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        return Reply(text=f"{who} done", delay=0.05 if who == "b" else 0.0)

    model = FunctionModel(answer)  # kept alive: test models are registered weakly
    a, b, c, d, e = (Agent(n, f"{n} works.", model=model.model) for n in "abcde")
    await Swarm(a >> ((b >> c) | d) >> e, hooks=[OpenTelemetryTracer(provider)]).run("go")
    spans = exporter.get_finished_spans()
    group = by_name(spans, "step (b >> c) | d")
    step_b, step_c = by_name(spans, "step b"), by_name(spans, "step c")
    assert parent_of(step_b) == parent_of(step_c) == span_id(group)
    assert parent_of(by_name(spans, "invoke_agent b")) == span_id(step_b)
    assert parent_of(by_name(spans, "invoke_agent c")) == span_id(step_c)
    assert parent_of(by_name(spans, "invoke_agent d")) == span_id(group)
    for name in "abcde":
        (chat,) = of_agent(spans, "chat ", name)
        assert parent_of(chat) == span_id(by_name(spans, f"invoke_agent {name}"))


async def test_tool_arguments_are_recorded_only_with_capture_content(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def run_with(capture: bool) -> tuple[Swarm, ScriptedModel]:
        model = ScriptedModel([Reply.tool("lookup", topic="otel"), Reply(text="done")])
        agent = Agent("a", "a x", model=model.model, tools=[function_tool(lookup)])
        tracer = OpenTelemetryTracer(provider, capture_content=capture)
        return Swarm(agent, hooks=[tracer]), model

    swarm, _model = run_with(False)
    await swarm.run("go")
    tool = by_name(exporter.get_finished_spans(), "execute_tool lookup")
    assert "gen_ai.tool.call.arguments" not in (tool.attributes or {})
    exporter.clear()
    swarm, _model = run_with(True)
    await swarm.run("go")
    tool = by_name(exporter.get_finished_spans(), "execute_tool lookup")
    assert json.loads(str(attr(tool, "gen_ai.tool.call.arguments"))) == {"topic": "otel"}
    assert attr(tool, "swarmcore.tool.result_chars") == len("facts about otel")


async def test_cached_and_reasoning_tokens_are_span_attributes_when_reported(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=Reply.tool("lookup", topic="otel").tool_calls,
                prompt_tokens=80,
                completion_tokens=30,
                cached_tokens=64,
                reasoning_tokens=25,
            ),
            Reply(text="done", prompt_tokens=90, completion_tokens=2),
        ]
    )
    agent = Agent("a", "a x", model=model.model, tools=[function_tool(lookup)])
    result = await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go")
    spans = exporter.get_finished_spans()
    first, second = of_agent(spans, "chat ", "a")
    assert attr(first, "gen_ai.usage.input_tokens") == 80
    assert attr(first, "gen_ai.usage.cache_read.input_tokens") == 64
    assert attr(first, "gen_ai.usage.reasoning.output_tokens") == 25
    assert attr(second, "gen_ai.usage.input_tokens") == 90
    assert "gen_ai.usage.cache_read.input_tokens" not in (second.attributes or {})
    assert "gen_ai.usage.reasoning.output_tokens" not in (second.attributes or {})
    run = by_name(spans, "invoke_workflow a")
    assert attr(run, "swarmcore.usage.input_tokens") == 170
    assert attr(run, "swarmcore.usage.cache_read.input_tokens") == 64
    assert attr(run, "swarmcore.usage.reasoning.output_tokens") == 25
    assert (result.token_usage.cached_tokens, result.token_usage.reasoning_tokens) == (64, 25)


async def test_a_failing_tool_sets_error_status_on_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def broken(topic: str) -> str:
        """Always fails."""
        raise RuntimeError(f"no {topic}")

    model = ScriptedModel([Reply.tool("broken", topic="x"), Reply(text="done anyway")])
    agent = Agent("a", "a x", model=model.model, tools=[function_tool(broken)])
    await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go")
    spans = exporter.get_finished_spans()
    tool = by_name(spans, "execute_tool broken")
    assert tool.status.status_code is StatusCode.ERROR
    assert "no x" in (tool.status.description or "")
    assert by_name(spans, "invoke_agent a").status.status_code is StatusCode.UNSET


async def test_a_failing_agent_gives_error_status_and_the_exception(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([Fail(401, "bad key")])
    agent = Agent("a", "a x", model=model.model)
    with pytest.raises(AgentError) as raised:
        await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go")
    spans = exporter.get_finished_spans()
    assert len(spans) == 4  # run, step, agent, chat: all ended
    for name in ("invoke_workflow a", "step a", "invoke_agent a", chat_name(model.model)):
        span = by_name(spans, name)
        assert span.status.status_code is StatusCode.ERROR, name
        assert span.status.description == str(raised.value), name
        assert attr(span, "error.type") == "swarmcore.errors.ModelError"
        (exception,) = [e for e in span.events if e.name == "exception"]
        assert exception.attributes is not None
        assert exception.attributes["exception.type"] == "swarmcore.errors.ModelError"


async def test_model_retries_are_span_events_on_the_chat_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([Fail(503), Reply(text="ok")])
    agent = Agent("a", "a x", model=model.model, retry=FAST)
    await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go")
    chat = by_name(exporter.get_finished_spans(), chat_name(model.model))
    (retry,) = chat.events
    assert retry.name == "swarmcore.retry"
    assert retry.attributes is not None
    assert retry.attributes["swarmcore.retry.scope"] == "model_call"
    assert retry.attributes["swarmcore.retry.attempt"] == 1
    assert retry.attributes["gen_ai.request.model"] == model.model
    assert "503" in str(retry.attributes["swarmcore.retry.error"])
    assert attr(chat, "swarmcore.attempts") == 2
    assert chat.status.status_code is StatusCode.UNSET


async def test_step_retries_are_events_on_the_step_and_each_attempt_a_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([Fail(503), Reply(text="ok")])
    agent = Agent("a", "a x", model=model.model, retry=0)
    tracer = OpenTelemetryTracer(provider)
    # retry=0: no model-call retries; the defaults' FAST policy times the step retry.
    swarm = Swarm(agent, step_retries=1, defaults=AgentDefaults(retry=FAST), hooks=[tracer])
    await swarm.run("go")
    spans = exporter.get_finished_spans()
    step = by_name(spans, "step a")
    attempts = [s for s in spans if s.name == "invoke_agent a"]
    assert [attr(s, "swarmcore.attempt") for s in attempts] == [1, 2]
    assert [s.status.status_code for s in attempts] == [StatusCode.ERROR, StatusCode.UNSET]
    assert all(parent_of(s) == span_id(step) for s in attempts)
    assert [e.name for e in step.events] == ["swarmcore.retry"]
    assert step.events[0].attributes is not None
    assert step.events[0].attributes["swarmcore.retry.scope"] == "agent"


async def test_an_auto_mode_run_span_carries_its_context_budget(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = shared_offline_model()
    a, _, _, d = diamond(model)
    hooks = [OpenTelemetryTracer(provider)]
    await Swarm(a >> d, context_mode="auto", context_budget=700, hooks=hooks).run("go")
    run = by_name(exporter.get_finished_spans(), "invoke_workflow a >> d")
    assert attr(run, "swarmcore.context_mode") == "auto"
    assert attr(run, "swarmcore.context_budget") == 700


async def test_the_run_span_nests_under_the_callers_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([Reply(text="ok")])
    agent = Agent("a", "a x", model=model.model)
    swarm = Swarm(agent, hooks=[OpenTelemetryTracer(provider)])
    with provider.get_tracer("app").start_as_current_span("handle request") as outer:
        await swarm.run("go")
    spans = exporter.get_finished_spans()
    run = by_name(spans, "invoke_workflow a")
    assert parent_of(run) == outer.get_span_context().span_id
    assert run.context is not None
    assert run.context.trace_id == outer.get_span_context().trace_id


async def test_a_cancelled_run_ends_every_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    called = asyncio.Event()

    async def hang(request: RecordedRequest) -> Reply:
        called.set()
        await asyncio.sleep(30)
        return Reply(text="never")

    model = FunctionModel(hang)
    agent = Agent("a", "a x", model=model.model)
    task = asyncio.ensure_future(Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go"))
    await asyncio.wait_for(called.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == sorted(
        ["invoke_workflow a", "step a", "invoke_agent a", chat_name(model.model)]
    )
    assert by_name(spans, "invoke_workflow a").status.status_code is StatusCode.ERROR
    assert attr(by_name(spans, "invoke_agent a"), "swarmcore.cancelled") is True


def test_spans_left_open_are_ended_with_the_run(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = OpenTelemetryTracer(provider, capture_content=True)
    model = "openai/gpt-4o"
    tracer(
        RunStarted(
            run_id="r",
            span_id=1,
            parent_id=None,
            task="t",
            flow="a",
            agents=("a",),
            context_mode="pull",
            timestamp=100.0,
        )
    )
    tracer(
        AgentStarted(
            run_id="r", span_id=2, parent_id=1, agent_name="a", model=model, timestamp=100.5
        )
    )
    tracer(
        ModelCallStarted(
            run_id="r",
            span_id=3,
            parent_id=2,
            agent_name="a",
            model=model,
            turn=1,
            messages=2,
            tools=0,
            timestamp=101.0,
        )
    )
    tracer(
        TextDelta(run_id="r", span_id=4, parent_id=3, agent_name="a", text="Hel", timestamp=101.5)
    )
    tracer(
        ReasoningDelta(
            run_id="r", span_id=4, parent_id=3, agent_name="a", text="Sum.", timestamp=101.55
        )
    )
    tracer(
        ToolCallDelta(
            run_id="r",
            span_id=4,
            parent_id=3,
            agent_name="a",
            index=1,
            call_id="c2",
            name="search",
            arguments='{"q": ',
            timestamp=101.58,
        )
    )
    tracer(
        ModelFallback(
            run_id="r",
            span_id=5,
            parent_id=3,
            agent_name="a",
            from_model=model,
            to_model="anthropic/claude",
            error="down",
            timestamp=101.6,
        )
    )
    tracer(
        RunFinished(run_id="r", span_id=1, parent_id=None, duration_seconds=2.0, timestamp=102.0)
    )
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["chat gpt-4o", "invoke_agent a", "invoke_workflow a"]
    chat, agent, run = spans
    assert (run.start_time, run.end_time) == (100_000_000_000, 102_000_000_000)
    assert (chat.start_time, chat.end_time) == (101_000_000_000, 102_000_000_000)
    assert attr(chat, "gen_ai.provider.name") == "openai"
    assert attr(chat, "swarmcore.cancelled") is True
    assert attr(agent, "swarmcore.cancelled") is True
    assert [e.name for e in chat.events] == [
        "swarmcore.text_delta",
        "swarmcore.reasoning_delta",
        "swarmcore.tool_call_delta",
        "swarmcore.fallback",
    ]
    assert chat.events[0].attributes == {"gen_ai.agent.name": "a", "swarmcore.text": "Hel"}
    assert chat.events[1].attributes == {"gen_ai.agent.name": "a", "swarmcore.text": "Sum."}
    assert chat.events[2].attributes == {
        "gen_ai.agent.name": "a",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "c2",
        "swarmcore.tool_call.index": 1,
        "gen_ai.tool.call.arguments": '{"q": ',
    }
    assert chat.events[3].timestamp == 101_600_000_000
    assert tracer._runs == {}  # pyright: ignore[reportPrivateUsage]


def test_streamed_pieces_are_left_out_without_capture_content(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = OpenTelemetryTracer(provider)
    tracer(
        RunStarted(
            run_id="r",
            span_id=1,
            parent_id=None,
            task="t",
            flow="a",
            agents=("a",),
            context_mode="push",
        )
    )
    tracer(TextDelta(run_id="r", span_id=2, parent_id=1, agent_name="a", text="secret"))
    tracer(ReasoningDelta(run_id="r", span_id=2, parent_id=1, agent_name="a", text="secret"))
    tracer(
        ToolCallDelta(
            run_id="r",
            span_id=2,
            parent_id=1,
            agent_name="a",
            index=0,
            call_id="c1",
            name="search",
            arguments='{"q": "secret"}',
        )
    )
    tracer(RunFinished(run_id="r", span_id=1, parent_id=None, duration_seconds=0.1))
    (run,) = exporter.get_finished_spans()
    assert run.events == ()


def test_the_hook_never_raises(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    tracer = OpenTelemetryTracer(provider)
    # Events of a run it never saw start, and a finish it never saw open: ignored.
    tracer(
        ModelCallFinished(
            run_id="x",
            span_id=9,
            parent_id=8,
            agent_name="a",
            model="m",
            turn=1,
            duration_seconds=0.1,
        )
    )
    tracer(RunFinished(run_id="x", span_id=7, parent_id=None, duration_seconds=0.1))
    # A broken tracer underneath is logged, not raised.
    tracer._tracer = None  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    tracer(
        RunStarted(
            run_id="y",
            span_id=1,
            parent_id=None,
            task="t",
            flow="a",
            agents=("a",),
            context_mode="pull",
        )
    )
    assert exporter.get_finished_spans() == ()


async def test_a_broken_tracer_never_breaks_the_run(provider: TracerProvider) -> None:
    tracer = OpenTelemetryTracer(provider)
    tracer._tracer = None  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    model = ScriptedModel([Reply(text="ok")])
    result = await Swarm(Agent("a", "a x", model=model.model), hooks=[tracer]).run("go")
    assert result.output == "ok"


def test_without_opentelemetry_import_works_and_construction_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # makes `import opentelemetry` fail
    monkeypatch.delitem(sys.modules, "swarmcore.tracing")
    tracing = importlib.import_module("swarmcore.tracing")
    with pytest.raises(UserError) as raised:
        tracing.OpenTelemetryTracer()
    assert "pip install 'swarmcore[otel]'" in str(raised.value)
    assert "uv add 'swarmcore[otel]'" in str(raised.value)


async def test_routes_and_loops_are_span_events_on_their_step(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = shared_offline_model()
    a, s, w = (Agent(n, f"{n} works.", model=model) for n in ("a", "s", "w"))
    other = Agent("o", "o works.", model=model)
    flow = (
        a >> route({"quick": s, "deep": other}, by=lambda ctx: "quick") >> loop(w, max_iterations=2)
    )
    await Swarm(flow, hooks=[OpenTelemetryTracer(provider)]).run("trace control flow")
    spans = exporter.get_finished_spans()
    route_step = by_name(spans, "step route{quick: s, deep: o}")
    (chosen,) = [e for e in route_step.events if e.name == "swarmcore.route"]
    assert chosen.attributes is not None
    assert dict(chosen.attributes) == {
        "swarmcore.route.name": "route",
        "swarmcore.route.branch": "quick",
        "swarmcore.route.by": "predicate",
        "swarmcore.route.reason": "",
    }
    loop_step = by_name(spans, "step loop{w}")
    names = [e.name for e in loop_step.events]
    assert names == ["swarmcore.loop.iteration"] * 2 + ["swarmcore.loop.finished"]
    finished = loop_step.events[-1].attributes
    assert finished is not None
    assert finished["swarmcore.loop.iterations"] == 2
    assert finished["swarmcore.loop.reason"] == "max_iterations"
    assert [s.name for s in spans if s.name.startswith("invoke_agent w")] == [
        "invoke_agent w#1",
        "invoke_agent w#2",
    ]


def well_known_providers() -> set[str]:
    """``gen_ai.provider.name``'s well-known values, from OpenTelemetry's own package."""
    with warnings.catch_warnings():  # 0.66b2 marks the GenAI enums deprecated (moved repos)
        warnings.simplefilter("ignore", DeprecationWarning)
        from opentelemetry.semconv._incubating.attributes import (  # pyright: ignore[reportMissingTypeStubs]
            gen_ai_attributes as names,
        )

        values = names.GenAiProviderNameValues  # pyright: ignore[reportDeprecated]
        return {v.value for v in values}


def test_every_provider_name_swarmcore_maps_to_is_a_well_known_value() -> None:
    known = well_known_providers()
    assert set(PROVIDER_NAMES.values()) <= known, set(PROVIDER_NAMES.values()) - known
    # The providers the conventions name, each reached from LiteLLM's name for it.
    assert {"openai", "anthropic", "gcp.gemini", "gcp.vertex_ai", "mistral_ai", "x_ai"} <= set(
        PROVIDER_NAMES.values()
    )
    assert {"azure.ai.openai", "aws.bedrock", "cohere", "groq", "deepseek"} <= set(
        PROVIDER_NAMES.values()
    )


# model, its agent's api_base, then gen_ai.provider.name, gen_ai.request.model, server.address
CALLS = [
    (
        "gemini/gemini-2.0-flash",
        None,
        "gcp.gemini",
        "gemini-2.0-flash",
        "generativelanguage.googleapis.com",
    ),
    ("vertex_ai/gemini-2.0-flash", None, "gcp.vertex_ai", "gemini-2.0-flash", None),
    ("mistral/mistral-large-latest", None, "mistral_ai", "mistral-large-latest", "api.mistral.ai"),
    ("xai/grok-2", None, "x_ai", "grok-2", "api.x.ai"),
    (
        "azure/my-deploy",
        "https://acme.openai.azure.com",
        "azure.ai.openai",
        "my-deploy",
        "acme.openai.azure.com",
    ),
    (
        "bedrock/anthropic.claude-3-sonnet-20240229-v1:0",
        None,
        "aws.bedrock",
        "anthropic.claude-3-sonnet-20240229-v1:0",
        None,
    ),
    ("anthropic/claude-opus-4-6", None, "anthropic", "claude-opus-4-6", "api.anthropic.com"),
    ("gpt-4o-mini", None, "openai", "gpt-4o-mini", "api.openai.com"),
]


@pytest.mark.parametrize(("model", "api_base", "provider_name", "name", "address"), CALLS)
async def test_model_calls_carry_the_conventions_provider_model_and_server(
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    api_base: str | None,
    provider_name: str,
    name: str,
    address: str | None,
) -> None:
    for variable in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "GEMINI_API_BASE", "MISTRAL_API_BASE"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("XAI_API_BASE", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    # LiteLLM's own path to each provider, answered by its mock_response: no network.
    settings = {"mock_response": "done"}
    agent = Agent(
        "a", "a works.", model=model, api_key="sk-x", api_base=api_base, model_settings=settings
    )
    await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("go")
    spans = exporter.get_finished_spans()

    chat = by_name(spans, f"chat {name}")
    assert attr(chat, "gen_ai.provider.name") == provider_name
    assert provider_name in well_known_providers()
    assert attr(chat, "gen_ai.request.model") == name
    assert attr(chat, "gen_ai.response.model") == name  # what LiteLLM's mock response names
    assert attr(chat, "server.address") == address
    assert attr(chat, "server.port") == (443 if address else None)
    agent_span = by_name(spans, "invoke_agent a")
    assert agent_span.kind.name == "INTERNAL"
    assert attr(agent_span, "gen_ai.provider.name") == provider_name
    assert attr(agent_span, "gen_ai.request.model") == name
    assert attr(agent_span, "gen_ai.response.model") is None  # the chat spans say who answered


async def test_a_remote_agent_is_a_client_span_to_its_server(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with a2a_server() as remote:
        agent = RemoteAgent(remote.url, name="r")
        await Swarm(agent, hooks=[OpenTelemetryTracer(provider)]).run("shout")
    span = by_name(exporter.get_finished_spans(), "invoke_agent r")
    assert span.kind.name == "CLIENT"
    port = int(remote.url.rsplit(":", 1)[1])
    assert (attr(span, "server.address"), attr(span, "server.port")) == ("127.0.0.1", port)
    assert attr(span, "gen_ai.agent.name") == "r"
    # "a2a:http://..." is neither a provider nor a model
    assert attr(span, "gen_ai.provider.name") is None
    assert attr(span, "gen_ai.request.model") is None


async def test_the_latest_conventions_opt_in_merges_the_run_span_into_invoke_agent(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = (Agent(n, f"{n} works.", model=shared_offline_model()) for n in "ab")
    before = OpenTelemetryTracer(provider)  # the variable is read when a tracer is made
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    latest = OpenTelemetryTracer(provider)

    await Swarm(a >> b, hooks=[latest]).run("go")
    run = by_name(exporter.get_finished_spans(), "invoke_agent a >> b")
    assert attr(run, "gen_ai.operation.name") == "invoke_agent"
    assert attr(run, "gen_ai.agent.name") == "a >> b"
    assert attr(run, "gen_ai.workflow.name") is None
    assert parent_of(run) is None
    steps = [s for s in exporter.get_finished_spans() if s.name.startswith("step ")]
    assert [parent_of(s) for s in steps] == [span_id(run)] * 2  # the tree below is unchanged

    exporter.clear()
    await Swarm(a >> b, hooks=[before]).run("go")
    run = by_name(exporter.get_finished_spans(), "invoke_workflow a >> b")
    assert attr(run, "gen_ai.operation.name") == "invoke_workflow"
    assert attr(run, "gen_ai.workflow.name") == "a >> b"
