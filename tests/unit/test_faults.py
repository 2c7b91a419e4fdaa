"""Fault injection on the offline models: classified retries, timeouts, fallbacks, policies."""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable

import pytest

from swarmcore import (
    Agent,
    AgentDefaults,
    AgentError,
    AgentResult,
    GroupError,
    ModelError,
    Quorum,
    RetryPolicy,
    Swarm,
    UserError,
    parallel,
)
from swarmcore._tools import function_tool
from swarmcore.testing import Call, Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.helpers import agents, echo_model, framed

FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.02, jitter=0)


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, object]]]:
    """Everything the event loop's exception handler sees ("Task exception was never retrieved")."""
    seen: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    yield seen
    gc.collect()
    loop.set_exception_handler(previous)


def ours(tasks: set[asyncio.Task[object]]) -> set[asyncio.Task[object]]:
    """Tasks minus litellm's process-wide logging worker, which outlives every call by design."""
    return {t for t in tasks if "LoggingWorker" not in getattr(t.get_coro(), "__qualname__", "")}


# --- classified retries ----------------------------------------------------------------


async def test_transient_failures_retry_then_succeed_and_count_attempts() -> None:
    model = ScriptedModel([Fail(429), Fail(503), Reply(text="ok")])
    result = await Agent("a", "x", model=model.model, retry=FAST).run("go")
    assert result.output == "ok"
    assert result.llm_calls[0].attempts == 3
    model.assert_consumed()


async def test_retry_after_is_honoured() -> None:
    model = ScriptedModel([Fail(429, headers={"Retry-After": "0.4"}), Reply(text="ok")])
    start = time.perf_counter()
    await Agent("a", "x", model=model.model, retry=FAST).run("go")
    assert time.perf_counter() - start >= 0.4  # the backoff alone would be 0.01 s


async def test_retry_after_beyond_the_limit_fails_at_once() -> None:
    model = ScriptedModel([Fail(429, headers={"retry-after": "3600"}), Reply(text="never")])
    policy = RetryPolicy(max_retries=5, initial_delay=0.01, max_retry_after=30)
    with pytest.raises(ModelError, match="asked to wait 3600s, longer than max_retry_after=30s"):
        await Agent("a", "x", model=model.model, retry=policy).run("go")
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "rejected the request \\(400\\)"),
        (401, "rejected the API key \\(401\\)"),
        (403, "denied permission \\(403\\)"),
        (404, "was not found \\(404\\).*Check the model name"),
    ],
)
async def test_errors_retrying_cannot_fix_fail_at_once(status: int, message: str) -> None:
    model = ScriptedModel([Fail(status, "nope"), Reply(text="never")])
    agent = Agent("writer", "x", model=model.model, retry=FAST, fallback_models=(model.model,))
    with pytest.raises(ModelError, match=message) as caught:
        await agent.run("go")
    error = caught.value
    assert (error.agent_name, error.model, error.status_code) == ("writer", model.model, status)
    assert not error.retryable
    assert "Agent 'writer'" in str(error)
    assert len(model.requests) == 1  # no retry, no fallback


async def test_each_retry_is_logged_with_the_agent_name(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([Fail(503), Reply(text="ok")])
    with caplog.at_level(logging.WARNING, logger="swarmcore"):
        await Agent("a", "x", model=model.model, retry=FAST).run("go")
    (record,) = [r for r in caplog.records if "retry 1 of 2" in r.getMessage()]
    assert record.agent_name == "a"  # type: ignore[attr-defined]
    assert "503" in record.getMessage()


async def test_swarm_defaults_apply_where_the_agent_sets_nothing() -> None:
    flaky = ScriptedModel([Fail(503), Fail(503), Reply(text="a done")])
    own = ScriptedModel([Fail(503), Reply(text="b done")])
    a = Agent("a", "x", model=flaky.model)  # inherits retry=2 from the defaults below
    b = Agent("b", "x", model=own.model, retry=0)  # its own setting wins: no retry
    defaults = AgentDefaults(retry=FAST)
    with pytest.raises(ModelError, match="attempt 1 of 1") as caught:
        await Swarm(a >> b, defaults=defaults).run("go")
    assert caught.value.agent_name == "b"
    partial = caught.value.partial
    assert partial is not None
    assert partial["a"].llm_calls[0].attempts == 3
    assert [f.agent_name for f in partial.failures] == ["b"]


# --- timeouts ---------------------------------------------------------------------------


async def test_a_hanging_provider_times_out_per_call_and_retries() -> None:
    model = ScriptedModel([Reply(text="late", delay=30), Reply(text="ok")])
    result = await Agent("a", "x", model=model.model, call_timeout=0.1, retry=FAST).run("go")
    assert result.output == "ok"
    assert result.llm_calls[0].attempts == 2


async def test_concurrent_calls_each_time_out_on_their_own_deadline() -> None:
    # b starts after a with a shorter call_timeout: its deadline comes first and must
    # fire on time; a, still within its own, must finish untouched.
    steady = ScriptedModel([Reply(text="a done", delay=0.3)])
    hung = ScriptedModel([Reply(text="late", delay=30)])
    a = Agent("a", "x", model=steady.model, call_timeout=5, retry=0)
    b = Agent("b", "x", model=hung.model, call_timeout=0.1, retry=0)
    failed_after: list[float] = []

    async def run_b() -> None:
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        try:
            await b.run("go")
        finally:
            failed_after.append(time.perf_counter() - start)

    results = await asyncio.gather(a.run("go"), run_b(), return_exceptions=True)
    first = results[0]
    assert isinstance(first, AgentResult)
    assert first.output == "a done"
    assert isinstance(results[1], ModelError)
    assert "did not answer within 0.1s" in str(results[1])
    assert failed_after[0] < 2  # not at a's deadline (5 s), nor the reply's (30 s)


async def test_cancelling_a_call_from_outside_is_a_cancellation_not_a_timeout() -> None:
    hung = ScriptedModel([Reply(text="late", delay=30)])
    task = asyncio.create_task(Agent("a", "x", model=hung.model, call_timeout=5, retry=0).run("go"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The cancelled call's deadline is gone; the next one still fires on time.
    again = ScriptedModel([Reply(text="late", delay=30)])
    with pytest.raises(ModelError, match=r"did not answer within 0\.1s"):
        await Agent("b", "x", model=again.model, call_timeout=0.1, retry=0).run("go")


def test_call_timeouts_hold_on_every_event_loop() -> None:
    # run_sync starts a fresh event loop each time: the deadlines follow the loop.
    for _ in range(2):
        hung = ScriptedModel([Reply(text="late", delay=30)])
        with pytest.raises(ModelError, match=r"did not answer within 0\.1s"):
            Agent("a", "x", model=hung.model, call_timeout=0.1, retry=0).run_sync("go")


async def test_call_timeout_default_comes_from_the_swarm() -> None:
    model = ScriptedModel([Reply(text="late", delay=30)])
    agent = Agent("a", "x", model=model.model)
    defaults = AgentDefaults(call_timeout=0.1, retry=0)
    with pytest.raises(ModelError, match=r"did not answer within 0\.1s") as caught:
        await Swarm(agent, defaults=defaults).run("go")
    assert caught.value.retryable


async def test_agent_timeout_bounds_the_whole_loop_and_is_retryable() -> None:
    def slow_tool() -> str:
        """Take a while."""
        time.sleep(0.05)
        return "x"

    model = FunctionModel(lambda r: Reply.tool("slow_tool"))
    agent = Agent("a", "x", model=model.model, tools=[slow_tool], timeout=0.3, max_turns=1000)
    start = time.perf_counter()
    with pytest.raises(AgentError, match=r"did not finish within timeout=0\.3s") as caught:
        await agent.run("go")
    assert time.perf_counter() - start < 5
    assert caught.value.retryable


def test_no_limit_is_spelled_none() -> None:
    assert AgentDefaults(call_timeout=None).call_timeout is None
    agent = Agent("a", "x", call_timeout=None, tool_timeout=None)  # no limit, over any default
    resolved = AgentDefaults(call_timeout=5, tool_timeout=5, timeout=5).resolve(agent)
    assert (resolved.call_timeout, resolved.tool_timeout, resolved.timeout) == (None, None, 5)
    with pytest.raises(UserError, match="call_timeout must be a positive number"):
        AgentDefaults(call_timeout=0)


def _echo(text: str) -> str:
    """Say it back."""
    return text


@pytest.mark.parametrize(
    "build",
    [
        lambda: AgentDefaults(call_timeout=math.inf).call_timeout,
        lambda: AgentDefaults(max_tool_result_chars=math.inf).max_tool_result_chars,  # type: ignore[arg-type]
        lambda: Agent("a", "x", timeout=math.inf).timeout,
        lambda: Agent("a", "x", tool_timeout=math.inf).tool_timeout,
        lambda: function_tool(_echo, timeout=math.inf).timeout,
    ],
    ids=["AgentDefaults", "AgentDefaults-size", "Agent", "Agent-tool", "Tool"],
)
def test_inf_for_no_limit_warns_naming_none_and_still_means_no_limit(
    build: Callable[[], object],
) -> None:
    with pytest.deprecated_call(match=r"=math\.inf is deprecated; pass \w+=None for no limit"):
        assert build() is None


# --- fallback models --------------------------------------------------------------------


async def test_fallback_model_answers_after_retries_exhaust_and_is_recorded() -> None:
    primary = ScriptedModel([Fail(503)] * 3)
    backup = ScriptedModel([Reply(text="from backup")])
    agent = Agent("a", "x", model=primary.model, fallback_models=[backup.model], retry=FAST)
    result = await agent.run("go")
    assert result.output == "from backup"
    assert result.model == backup.model
    assert result.llm_calls[0].model == backup.model
    assert result.llm_calls[0].attempts == 4
    primary.assert_consumed()


async def test_every_model_failing_raises_the_last_models_error() -> None:
    primary = ScriptedModel([Fail(503)])
    backup = ScriptedModel([Fail(429)])
    agent = Agent("a", "x", model=primary.model, fallback_models=[backup.model], retry=0)
    with pytest.raises(ModelError) as caught:
        await agent.run("go")
    assert caught.value.model == backup.model
    assert caught.value.retryable


async def test_fallback_without_a_key_fails_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    primary = ScriptedModel([Reply(text="never")])
    agent = Agent("a", "x", model=primary.model, fallback_models=["anthropic/claude-sonnet-4-5"])
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        await agent.run("go")
    assert primary.requests == []


async def test_a_misspelt_model_without_a_key_is_named_with_the_model_it_resembles() -> None:
    agent = Agent("a", "x", model="openai/gpt-4o-mnii")
    with pytest.raises(ModelError, match="OPENAI_API_KEY") as caught:
        await agent.run("go")
    assert "did you mean 'openai/gpt-4o-mini'?" in str(caught.value)


# --- parallel group policies ------------------------------------------------------------


def group_model(fail: dict[str, Fail], delays: dict[str, float] | None = None) -> FunctionModel:
    """Agents named in ``fail`` fail; others answer '<name> output' after their delay."""

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who in fail:
            return fail[who]
        return Reply(text=f"{who} output", delay=(delays or {}).get(who, 0.0))

    return FunctionModel(answer)


async def test_all_policy_first_failure_cancels_siblings_cleanly(
    loop_errors: list[dict[str, object]],
) -> None:
    model = group_model({"c": Fail(401)}, delays={"b": 30})
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    start = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        await Swarm(a >> (b | c) >> d).run("go")
    assert time.perf_counter() - start < 10  # b's 30 s reply was cancelled
    assert caught.value.agent_name == "c"
    partial = caught.value.partial
    assert partial is not None
    assert list(partial.context) == ["a"]
    assert [(f.agent_name, f.error_type) for f in partial.failures] == [("c", "ModelError")]
    await asyncio.sleep(0)
    gc.collect()
    assert loop_errors == []
    assert ours(asyncio.all_tasks()) == {asyncio.current_task()}


async def test_best_effort_group_goes_on_and_tells_later_agents_who_failed() -> None:
    model = group_model({"c": Fail(401, "bad key")})
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    flow = a >> (b | c).with_policy("best_effort") >> d
    result = await Swarm(flow, context_mode="pull").run("go")
    assert result.output == "d output"
    assert list(result.context) == ["a", "b", "d"]
    (failure,) = result.failures
    assert (failure.agent_name, failure.error_type, failure.cancelled) == ("c", "ModelError", False)
    d_prompt = model.requests[-1].system
    assert "Failed, with no output" in d_prompt
    assert ("c", "failed") in [(a, k) for a, k, w in framed(d_prompt) if "ModelError" in w]


async def test_best_effort_failure_shows_in_push_mode_and_get_context() -> None:
    calls: list[str] = []

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "c":
            return Fail(400, "broken")
        if who == "d" and not request.tool_results:
            return Reply.tool("get_context", agent_name="c")
        if who == "d":
            calls.append(request.tool_results[0]["content"])
        return Reply(text=f"{who} output")

    model = FunctionModel(answer)
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    flow = a >> parallel(b, c, policy="best_effort") >> d
    await Swarm(flow, context_mode="pull").run("go")
    assert "Agent 'c' failed and left no output" in calls[0]

    push = group_model({"c": Fail(400, "broken")})
    a, b, c, d = agents(push.model, "a", "b", "c", "d")
    await Swarm(a >> parallel(b, c, policy="best_effort") >> d, context_mode="push").run("go")
    assert ("c", "failed") in [(a, k) for a, k, _ in framed(push.requests[-1].system)]


async def test_quorum_continues_once_k_succeeded_and_cancels_the_rest() -> None:
    model = group_model({}, delays={"slow": 30})
    a, fast1, fast2, slow, z = agents(model.model, "a", "fast1", "fast2", "slow", "z")
    flow = a >> (fast1 | fast2 | slow).with_policy(Quorum(2)) >> z
    start = time.perf_counter()
    result = await Swarm(flow).run("go")
    assert time.perf_counter() - start < 10
    assert list(result.context) == ["a", "fast1", "fast2", "z"]
    (cancelled,) = result.failures
    assert cancelled.agent_name == "slow"
    assert cancelled.cancelled
    assert "stopped once 2 members" in cancelled.message


def test_a_quorum_group_leaves_no_unawaited_coroutine_in_the_users_process() -> None:
    # Members still in LiteLLM's worker-thread hop when the quorum is reached used to be
    # cancelled there, dropping the provider coroutine the thread had built: every quorum
    # group printed "coroutine ... was never awaited" in a user's own process.
    code = """
import asyncio, gc
from swarmcore import Agent, Quorum, Swarm, parallel
from swarmcore.testing import OfflineModel

async def main():
    model = OfflineModel()
    members = [Agent(f"m{i}", f"m{i} works.", model=model.model) for i in range(12)]
    for _ in range(20):
        result = await Swarm(parallel(*members, policy=Quorum(1))).run("go")
        assert len(result.context) >= 1, result.context

asyncio.run(main())
gc.collect()
print("done")
"""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "done" in done.stdout
    assert "never awaited" not in done.stderr, done.stderr


async def test_quorum_out_of_reach_fails_at_once_with_partial_results() -> None:
    model = group_model({"b": Fail(401), "c": Fail(403)}, delays={"d": 30})
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    flow = a >> parallel(b, c, d, policy=Quorum(2))
    start = time.perf_counter()
    with pytest.raises(GroupError, match=r"needed 2 of 3 members to succeed, and 2 failed") as e:
        await Swarm(flow).run("go")
    assert time.perf_counter() - start < 10  # d was not waited for
    assert e.value.required == 2
    assert {f.agent_name for f in e.value.failures} == {"b", "c"}
    assert e.value.partial is not None
    assert list(e.value.partial.context) == ["a"]


async def test_branches_count_as_one_member_of_a_quorum() -> None:
    model = group_model({"y": Fail(400)})
    a, x, y, p, q = agents(model.model, "a", "x", "y", "p", "q")
    flow = a >> parallel(x >> y, p, q, policy=Quorum(2))
    result = await Swarm(flow).run("go")
    assert set(result.context) == {"a", "x", "p", "q"}
    assert [f.agent_name for f in result.failures] == ["y"]


async def test_agents_after_a_failure_in_a_best_effort_branch_are_reported_skipped() -> None:
    model = group_model({"x": Fail(400)})
    a, x, y, p, z = agents(model.model, "a", "x", "y", "p", "z")
    result = await Swarm(a >> parallel(x >> y, p, policy="best_effort") >> z).run("go")
    assert [(f.agent_name, f.error_type, f.cancelled) for f in result.failures] == [
        ("x", "ModelError", False),
        ("y", "Skipped", True),
    ]
    z_prompt = model.requests[-1].system
    assert ("y", "failed", "Skipped: not run: an earlier agent of its branch failed") in framed(
        z_prompt
    )


async def test_step_retry_runs_a_transiently_failed_agent_again() -> None:
    outcomes = iter([Fail(503), Reply(text="second time lucky")])
    model = FunctionModel(lambda r: next(outcomes))
    agent = Agent("a", "x", model=model.model, retry=0)
    fast = AgentDefaults(retry=RetryPolicy(max_retries=0, initial_delay=0.01, jitter=0))
    result = await Swarm(agent, defaults=fast, step_retries=1).run("go")
    assert result.output == "second time lucky"
    assert result["a"].attempts == 2


async def test_step_retry_skips_errors_retrying_cannot_fix() -> None:
    model = ScriptedModel([Fail(401), Reply(text="never")])
    b = Agent("b", "x", model=model.model)
    c = Agent("c", "x", model=echo_model().model)
    with pytest.raises(ModelError) as caught:
        await Swarm(parallel(b, c, retries=3)).run("go")
    assert len(model.requests) == 1
    assert caught.value.partial is not None
    assert caught.value.partial.failures[0].attempts == 1


def test_group_policies_are_validated_and_kept_apart_from_plain_groups() -> None:
    model = echo_model()
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    with pytest.raises(UserError, match="Quorum\\(3\\) cannot be met by a group of 2"):
        parallel(a, b, policy=Quorum(3))
    with pytest.raises(UserError, match="Unknown group policy 'some'"):
        parallel(a, b, policy="some")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="applies to one parallel group"):
        (a >> b).with_policy("best_effort")
    with pytest.raises(UserError, match="positive whole number"):
        Quorum(0)
    tolerant = (a | b).with_policy("best_effort")
    merged = tolerant | c | d
    # The policied group stays a group of its own inside the new one.
    assert len(merged.step_tuple[0]) == 3
    assert (a | b | c) != parallel(a, b, c, policy="best_effort")
    assert (a | b | c) == parallel(a, b, c)


# --- cancellation -----------------------------------------------------------------------


async def test_cancelling_a_run_stops_model_and_tool_calls_promptly() -> None:
    started = asyncio.Event()
    tool_cancelled = asyncio.Event()

    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "unreachable"

    hang = ScriptedModel([Reply(text="late", delay=3600)])
    tooler = ScriptedModel([Reply.tool("wait_forever")])
    a = Agent("a", "x", model=tooler.model, tools=[wait_forever])
    b = Agent("b", "x", model=hang.model)
    before = asyncio.all_tasks()
    run = asyncio.create_task(Swarm(a | b).run("go"))
    await asyncio.wait_for(started.wait(), 5)
    start = time.perf_counter()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert time.perf_counter() - start < 2
    assert tool_cancelled.is_set()
    await asyncio.sleep(0)
    assert ours(asyncio.all_tasks()) == ours(before)


# --- tool faults ------------------------------------------------------------------------


async def test_tool_faults_go_back_to_the_model_within_max_turns() -> None:
    async def stuck() -> str:
        """Never finishes."""
        await asyncio.sleep(3600)
        return "unreachable"

    def broken(n: int) -> int:
        """Raises.

        Args:
            n: Any number.
        """
        raise RuntimeError(f"cannot handle {n}")

    model = ScriptedModel(
        [
            Reply.tool("broken", n=1),
            Reply.tool("nosuch"),
            Reply(tool_calls=[Call("broken", "{not json")]),
            Reply.tool("stuck"),
            Reply(text="recovered"),
        ]
    )
    agent = Agent("a", "x", model=model.model, tools=[stuck, broken], tool_timeout=0.1, max_turns=5)
    result = await agent.run("go")
    assert result.output == "recovered"
    errors = [r.error or "" for r in result.tool_calls]
    assert "Tool 'broken' raised RuntimeError: cannot handle 1" in errors[0]
    assert "Unknown tool 'nosuch'. Available tools: stuck, broken" in errors[1]
    assert "not valid JSON" in errors[2]
    assert "did not finish within 0.1s and was stopped" in errors[3]
    # Each error reached the model as the tool's result.
    assert [m.tool_results[-1]["content"] for m in model.requests[1:]] == errors


@pytest.mark.parametrize("own", [1.0, None], ids=["longer", "none-no-limit"])
async def test_a_tools_own_timeout_wins_over_the_agents(own: float | None) -> None:
    from swarmcore import function_tool

    async def nap() -> str:
        """Sleeps a little."""
        await asyncio.sleep(0.3)
        return "rested"

    model = ScriptedModel([Reply.tool("nap"), Reply(text="done")])
    agent = Agent("a", "x", model=model.model, tools=[function_tool(nap, timeout=own)])
    result = await Swarm(agent, defaults=AgentDefaults(tool_timeout=0.05)).run("go")
    assert result["a"].tool_calls[0].result == "rested"


async def test_an_agents_none_lifts_the_swarms_limit() -> None:
    async def nap() -> str:
        """Sleeps a little."""
        await asyncio.sleep(0.3)
        return "rested"

    model = ScriptedModel([Reply.tool("nap"), Reply(text="done")])
    agent = Agent("a", "x", model=model.model, tools=[nap], tool_timeout=None)
    result = await Swarm(agent, defaults=AgentDefaults(tool_timeout=0.05)).run("go")
    assert result["a"].tool_calls[0].result == "rested"


async def test_oversized_tool_results_are_truncated_with_a_marker() -> None:
    def dump() -> str:
        """Returns a lot."""
        return "x" * 5000

    model = ScriptedModel([Reply.tool("dump"), Reply(text="ok")])
    agent = Agent("a", "x", model=model.model, tools=[dump], max_tool_result_chars=100)
    result = await agent.run("go")
    record = result.tool_calls[0]
    assert record.truncated_from == 5000
    assert record.result.startswith("x" * 100 + "\n\n[truncated: showing the first 100 of 5,000")
    assert model.requests[1].tool_results[0]["content"] == record.result


async def test_tool_calls_of_one_reply_run_at_most_max_parallel_tools_at_once() -> None:
    running = 0
    peak = 0

    async def work(i: int) -> int:
        """Work.

        Args:
            i: Which.
        """
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return i

    calls = [Call("work", {"i": i}) for i in range(7)]
    model = ScriptedModel([Reply(tool_calls=calls), Reply(text="ok")])
    agent = Agent("a", "x", model=model.model, tools=[work], max_parallel_tools=2)
    result = await agent.run("go")
    assert peak == 2
    assert [r.result for r in result.tool_calls] == [str(i) for i in range(7)]  # call order kept


# --- rate and concurrency governance ----------------------------------------------------


async def test_a_wide_fan_out_queues_behind_the_models_limit() -> None:
    from swarmcore import limit_model

    in_flight = 0
    peak = 0

    async def answer(request: RecordedRequest) -> Reply:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return Reply(text="ok")

    model = FunctionModel(answer)
    limit_model(model.model, max_in_flight=5)
    try:
        members = [Agent(f"a{i}", "x", model=model.model) for i in range(200)]
        result = await Swarm(parallel(*members)).run("go")
    finally:
        limit_model(model.model)
    assert len(result.history) == 200
    assert peak == 5


async def test_requests_per_minute_paces_calls_across_agents() -> None:
    from swarmcore import limit_model

    starts: list[float] = []

    def answer(request: RecordedRequest) -> Reply:
        starts.append(time.perf_counter())
        return Reply(text="ok")

    model = FunctionModel(answer)
    limit_model(model.model, requests_per_minute=600)  # one every 0.1 s, burst of 10
    try:
        members = [Agent(f"a{i}", "x", model=model.model) for i in range(15)]
        await Swarm(parallel(*members)).run("go")
    finally:
        limit_model(model.model)
    assert len(starts) == 15
    assert max(starts) - min(starts) >= 0.4  # 5 beyond the burst, 0.1 s apart
