"""The event stream, hooks, streaming, budgets, dry runs, the usage table and logging."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys

import pytest

from swarmcore import Agent, BudgetExceeded, ModelError, RetryPolicy, Swarm, UserError, chain
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ModelFallback,
    RetryScheduled,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from swarmcore.results import TokenUsage, sum_usage
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.helpers import QUICK_EXIT, agents, echo_model

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.01, jitter=0)


def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: What to look up.
    """
    return f"{term} facts"


def tool_then_text(request: RecordedRequest) -> Reply:
    who = request.system.split()[0]
    if request.tool_names and "lookup" in request.tool_names and not request.tool_results:
        return Reply.tool("lookup", term=who)
    return Reply(text=f"{who} output", prompt_tokens=10, completion_tokens=5)


async def collect(swarm: Swarm, task: str = "go") -> list[Event]:
    return [event async for event in swarm.stream(task)]


async def test_events_form_a_tree_that_labels_parallel_branches() -> None:
    model = FunctionModel(tool_then_text)
    a, b, c, d = (Agent(n, f"{n} works.", model=model.model, tools=[lookup]) for n in "abcd")
    seen = await collect(Swarm(a >> (b | c) >> d))
    by_span = {e.span_id: e for e in seen if type(e).__name__.endswith("Started")}
    run, last = seen[0], seen[-1]
    assert isinstance(run, RunStarted)
    assert run.flow == "a >> (b | c) >> d"
    assert isinstance(last, RunFinished)
    assert last.result is not None
    assert last.result.output == "d output"
    assert {e.run_id for e in seen} == {run.run_id} == {last.result.run_id}
    steps = [e for e in seen if isinstance(e, StepStarted)]
    assert [(s.step, s.parallel, s.parent_id) for s in steps] == [
        ("a", False, run.span_id),
        ("b | c", True, run.span_id),
        ("d", False, run.span_id),
    ]
    group = steps[1]
    started = {e.agent_name: e for e in seen if isinstance(e, AgentStarted)}
    assert started["b"].parent_id == started["c"].parent_id == group.span_id
    for event in seen:
        if isinstance(event, (ModelCallStarted, ToolCallStarted)):
            owner = by_span[event.parent_id or 0]
            assert isinstance(owner, AgentStarted)
            assert owner.agent_name == event.agent_name
    finished = [e for e in seen if isinstance(e, ModelCallFinished)]
    assert len(finished) == 8
    assert sum(e.usage.total_tokens for e in finished if e.usage) == (
        last.result.token_usage.total_tokens
    )
    tools = [e for e in seen if isinstance(e, ToolCallFinished)]
    assert sorted(e.agent_name for e in tools) == ["a", "b", "c", "d"]
    assert all(e.error is None and e.result_chars > 0 for e in tools)


async def test_add_hook_warns_naming_hooks_and_on_and_still_subscribes() -> None:
    model = echo_model()
    swarm = Swarm(agents(model.model, "a")[0])
    finished: list[str] = []
    with pytest.deprecated_call(match=r"add_hook\(\) is deprecated; pass Swarm\(\.\.\., hooks="):
        swarm.add_hook(lambda e: finished.append(e.agent_name), AgentFinished)
    with pytest.deprecated_call(match=r"swarm\.on\(\*types\)\(fn\)"):
        swarm.add_hook(lambda e: None)
    await swarm.run("go")
    assert finished == ["a"]


async def test_hooks_sync_async_filtered_and_failing_hooks_never_break_a_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    everything: list[str] = []
    finished: list[str] = []
    awaited: list[str] = []
    swarm = Swarm(a >> b, hooks=[lambda e: everything.append(type(e).__name__)])

    @swarm.on(AgentFinished)
    def on_finish(event: AgentFinished) -> None:
        finished.append(event.agent_name)

    @swarm.on(AgentFinished)
    async def slow_hook(event: AgentFinished) -> None:
        await asyncio.sleep(0.01)
        awaited.append(event.agent_name)

    @swarm.on()
    def broken(event: Event) -> None:
        raise RuntimeError("hook bug")

    @swarm.on(RunStarted)
    async def broken_async(event: Event) -> None:
        raise RuntimeError("async hook bug")

    with caplog.at_level(logging.ERROR, logger="swarmcore.events"):
        result = await swarm.run("go")
    assert result.output == "b output"
    assert finished == ["a", "b"]
    assert awaited == ["a", "b"]  # async hooks are done before run() returns
    assert everything[0] == "RunStarted"
    assert everything[-1] == "RunFinished"
    assert "hook bug" in caplog.text
    assert "async hook bug" in caplog.text


def test_hooks_are_checked() -> None:
    a = Agent("a", "x")
    with pytest.raises(UserError, match="A hook must be a function"):
        Swarm(a, hooks=["not callable"])  # type: ignore[list-item]
    with pytest.raises(UserError, match="on\\(\\) takes event classes"):
        Swarm(a).on(str)  # type: ignore[arg-type]


async def test_a_failed_run_streams_run_finished_then_raises() -> None:
    model = ScriptedModel([Reply(text="a done"), Fail(401)])
    a, b = (Agent(n, "x", model=model.model) for n in "ab")
    seen: list[Event] = []

    async def consume() -> None:
        async for event in Swarm(a >> b).stream("go"):
            seen.append(event)

    with pytest.raises(ModelError, match="rejected the API key") as caught:
        await consume()
    last = seen[-1]
    assert isinstance(last, RunFinished)
    assert last.error is caught.value
    failed = [e for e in seen if isinstance(e, AgentFinished) and e.error is not None]
    assert [e.agent_name for e in failed] == ["b"]
    step_end = [e for e in seen if isinstance(e, StepFinished)][-1]
    assert step_end.failed == ("b",)


async def test_leaving_a_stream_early_cancels_the_run() -> None:
    model = FunctionModel(lambda r: Reply(text="slow", delay=30))
    a = Agent("a", "x", model=model.model)
    stream = Swarm(a).stream("go")
    async for event in stream:
        if isinstance(event, ModelCallStarted):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    pending = [
        t
        for t in asyncio.all_tasks()
        if "LoggingWorker" not in t.get_coro().__qualname__  # type: ignore[union-attr]
    ]
    assert pending == [asyncio.current_task()]


async def test_retries_and_fallbacks_are_events() -> None:
    primary = ScriptedModel([Fail(503), Fail(503)])
    backup = ScriptedModel([Reply(text="ok")])
    agent = Agent("a", "x", model=primary.model, fallback_models=[backup.model], retry=FAST)
    seen = await collect(Swarm(agent))
    retries = [e for e in seen if isinstance(e, RetryScheduled)]
    assert [(r.scope, r.attempt, r.model) for r in retries] == [("model_call", 1, primary.model)]
    (fallback,) = [e for e in seen if isinstance(e, ModelFallback)]
    assert (fallback.from_model, fallback.to_model) == (primary.model, backup.model)
    call = next(e for e in seen if isinstance(e, ModelCallStarted))
    assert fallback.parent_id == retries[0].parent_id == call.span_id
    done = next(e for e in seen if isinstance(e, ModelCallFinished))
    assert (done.model, done.attempts) == (backup.model, 3)


# --- budgets --------------------------------------------------------------------------------


def tokens_model() -> FunctionModel:
    return FunctionModel(lambda r: Reply(text="ok", prompt_tokens=60, completion_tokens=40))


async def test_token_budget_stops_the_run_and_keeps_finished_results() -> None:
    model = tokens_model()
    a, b, c = agents(model.model, "a", "b", "c")
    with pytest.raises(BudgetExceeded, match="200 of max_tokens=150 spent") as caught:
        await Swarm(a >> b >> c, max_tokens=150).run("go")
    error = caught.value
    assert (error.agent_name, error.spent_tokens) == ("c", 200)
    assert error.partial is not None
    assert list(error.partial.context) == ["a", "b"]
    assert len(model.requests) == 2
    # The refused agent is listed as the one whose failure ended the run, as for any other.
    (failure,) = error.partial.failures
    assert (failure.agent_name, failure.error_type, failure.retryable) == (
        "c",
        "BudgetExceeded",
        False,
    )
    assert failure.message == str(error)


async def test_one_budget_is_shared_by_parallel_branches() -> None:
    model = tokens_model()
    first, *wide = agents(model.model, "first", "w1", "w2", "w3", "w4")
    from swarmcore import parallel

    # 100 tokens per call: first spends 100, the group of four may start only while < 250.
    flow = first >> parallel(*wide) >> agents(model.model, "last")[0]
    with pytest.raises(BudgetExceeded):
        await Swarm(flow, max_tokens=250).run("go")
    assert len(model.requests) == 5  # the four started together, then "last" was refused


async def test_a_run_inside_a_budgeted_runs_tool_is_not_charged_to_that_budget() -> None:
    inner_model = tokens_model()  # 100 tokens a call: three calls, beyond the outer budget
    inner = Swarm(chain(*agents(inner_model.model, "i1", "i2", "i3")))

    async def research(topic: str) -> str:
        """Run the inner flow.

        Args:
            topic: What to research.
        """
        return (await inner.run(topic)).output

    def outer_reply(request: RecordedRequest) -> Reply:
        done = any(m["role"] == "tool" for m in request.messages)
        return Reply(
            text="ok" if done else None,
            tool_calls=() if done else Reply.tool("research", topic="tea").tool_calls,
            prompt_tokens=60,
            completion_tokens=40,
        )

    outer_model = FunctionModel(outer_reply)
    boss = Agent("boss", "boss delegates.", model=outer_model.model, tools=[research])
    # The inner run has no budget of its own: it hides the outer meter, which counts
    # only the outer agent's two calls (200 tokens; the second started at 100 < 150).
    result = await Swarm(boss, max_tokens=150).run("go")
    assert result.output == "ok"
    assert len(inner_model.requests) == 3
    assert result.token_usage.total_tokens == 200


async def test_cost_budget_fails_closed_on_unpriced_models() -> None:
    model = echo_model()
    (a,) = agents(model.model, "a")
    with pytest.raises(BudgetExceeded, match="has no price for swarmcore-test/") as caught:
        await Swarm(a, max_cost=1.0).run("go")
    assert model.requests == []
    assert caught.value.partial is not None
    result = await Swarm(a, max_cost=1.0, allow_unpriced=True).run("go")
    assert result.cost is None
    with pytest.raises(UserError, match="max_cost must be a positive finite number"):
        Swarm(a, max_cost=0)


# --- dry run, usage table, logging ------------------------------------------------------------


async def test_dry_run_counts_calls_and_prompt_tokens_without_running_tools() -> None:
    ran: list[str] = []

    def dangerous(path: str) -> str:
        """Delete a file.

        Args:
            path: Which file.
        """
        ran.append(path)
        return "deleted"

    a = Agent("a", "Clean up.", model="openai/gpt-4o-mini", tools=[dangerous])
    b = Agent("b", "Report.", model="nosuchprovider/model-x")
    report = await Swarm(a >> b).dry_run("tidy the disk")
    assert ran == []
    est_a, est_b = report.agents
    assert (est_a.agent_name, est_a.model) == ("a", "openai/gpt-4o-mini")
    assert est_a.model_calls == 2  # the offline model calls the tool, then answers
    assert est_a.prompt_tokens > 0
    assert est_a.prompt_cost is not None
    assert est_a.prompt_cost > 0
    assert est_b.prompt_cost is None
    assert report.prompt_cost is None
    assert report.model_calls == est_a.model_calls + est_b.model_calls
    table = report.table()
    assert "openai/gpt-4o-mini" in table
    assert "unpriced" in table


async def test_usage_table_lists_agents_failures_and_totals() -> None:
    model = FunctionModel(
        lambda r: (
            Fail(400)
            if r.system.startswith("c")
            else Reply("ok", prompt_tokens=10, completion_tokens=5)
        )  # type: ignore[arg-type]
    )
    a, b, c = agents(model.model, "a", "b", "c")
    result = await Swarm(a >> (b | c).with_policy("best_effort")).run("go")
    table = result.usage_table()
    lines = table.splitlines()
    assert lines[0].split() == [
        "agent",
        "model",
        "calls",
        "prompt",
        "completion",
        "total",
        "cost",
        "time",
        "status",
    ]
    (failed,) = [line for line in lines if line.startswith("c ")]
    # the failed agent keeps its model and its time; the error has a column of its own
    assert re.fullmatch(
        rf"c +{re.escape(model.model)} +(- +){{5}}\d+\.\ds +failed \(ModelError\)", failed
    )
    assert [line.split()[-1] for line in lines[2:4]] == ["done", "done"]
    total = lines[-1].split()
    assert total[:5] == ["total", "2", "20", "10", "30"]
    assert total[5] == "unpriced"


def test_cached_and_reasoning_tokens_add_up_as_parts_of_prompt_and_completion() -> None:
    a = TokenUsage(prompt_tokens=100, completion_tokens=20, cached_tokens=64, reasoning_tokens=12)
    b = TokenUsage(prompt_tokens=30, completion_tokens=9, reasoning_tokens=4)
    both = TokenUsage(
        prompt_tokens=130, completion_tokens=29, cached_tokens=64, reasoning_tokens=16
    )
    assert a + b == both
    assert both.total_tokens == 159  # parts, not additions
    assert sum_usage([a, b]) == both
    assert sum_usage([a, b, a]) == both + a
    assert sum_usage([a]) is a
    assert sum_usage([]) == TokenUsage()
    assert both.model_dump() == {
        "prompt_tokens": 130,
        "completion_tokens": 29,
        "cached_tokens": 64,
        "reasoning_tokens": 16,
        "total_tokens": 159,
    }
    assert TokenUsage.model_validate_json(both.model_dump_json()) == both


async def test_usage_table_shows_cached_and_reasoning_tokens_only_when_reported() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.system.startswith("a"):
            return Reply("ok", prompt_tokens=100, completion_tokens=20, cached_tokens=64)
        return Reply("ok", prompt_tokens=10, completion_tokens=5, reasoning_tokens=3)

    model = FunctionModel(answer)
    a, b = agents(model.model, "a", "b")
    lines = (await Swarm(a >> b).run("go")).usage_table().splitlines()
    assert lines[0].split()[2:8] == [
        "calls",
        "prompt",
        "cached",
        "completion",
        "reasoning",
        "total",
    ]
    assert lines[2].split()[2:8] == ["1", "100", "64", "20", "0", "120"]
    assert lines[3].split()[2:8] == ["1", "10", "0", "5", "3", "15"]
    assert lines[-1].split()[1:7] == ["2", "110", "64", "25", "3", "135"]
    only_cached = (await Swarm(a).run("go")).usage_table().splitlines()
    assert only_cached[0].split()[2:7] == ["calls", "prompt", "cached", "completion", "total"]


async def test_events_become_log_records_only_when_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    with caplog.at_level(logging.WARNING, logger="swarmcore"):
        await Swarm(a >> b).run("go")
    assert not [r for r in caplog.records if r.name == "swarmcore.run"]
    with caplog.at_level(logging.DEBUG, logger="swarmcore.run"):
        result = await Swarm(a >> b).run("go")
    records = [r for r in caplog.records if r.name == "swarmcore.run"]
    assert any(r.getMessage().startswith("agent b finished") for r in records)
    agent_records = [r for r in records if r.agent_name]  # type: ignore[attr-defined]
    assert {r.agent_name for r in agent_records} == {"a", "b"}  # type: ignore[attr-defined]
    assert {r.run_id for r in records} == {result.run_id}  # type: ignore[attr-defined]


async def test_offline_models_stream_text_and_tool_calls_with_the_same_results() -> None:
    from swarmcore.events import TextDelta

    def script() -> list[Reply]:
        return [
            Reply.tool("lookup", term="tea"),
            Reply(text="tea is good\n<summary>tea</summary>", prompt_tokens=7, completion_tokens=3),
        ]

    plain_model, streamed_model = ScriptedModel(script()), ScriptedModel(script())
    plain = await Swarm(Agent("a", "x", model=plain_model.model, tools=[lookup])).run("go")
    deltas: list[str] = []
    streamed = None
    swarm = Swarm(Agent("a", "x", model=streamed_model.model, tools=[lookup]))
    async for event in swarm.stream("go", text=True):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, RunFinished):
            streamed = event.result
    assert streamed is not None
    assert "".join(deltas) == "tea is good\n<summary>tea</summary>"
    assert streamed.output == plain.output == "tea is good"
    assert streamed["a"].tool_calls[0].result == "tea facts"
    assert streamed.token_usage == plain.token_usage
    assert streamed_model.requests[0].params.get("stream") is True


def test_event_classes_load_for_dry_runs_and_logging_in_a_fresh_process() -> None:
    # The event classes load on first use, through the module's __getattr__, which code
    # inside swarmcore.events never goes through: in a process where nothing had named
    # them yet, dry_run's hook check and the DEBUG log of each event raised NameError.
    code = """
import asyncio, logging
logging.basicConfig(level=logging.DEBUG, format="%(name)s %(message)s")
logging.getLogger("LiteLLM").setLevel(logging.WARNING)
from swarmcore import Agent, Swarm
from swarmcore.testing import ScriptedModel

async def main():
    report = await Swarm(Agent("a", "x")).dry_run("go")
    print("dry run:", type(report).__name__)
    model = ScriptedModel(["hi"])
    result = await Swarm(Agent("b", "x", model=model.model)).run("go")
    print("run:", result.output)

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", code + QUICK_EXIT],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "dry run: DryRunReport" in done.stdout
    assert "run: hi" in done.stdout
    assert "NameError" not in done.stderr, done.stderr
    assert re.search(r"agent b: .* answered in ", done.stderr), done.stderr
