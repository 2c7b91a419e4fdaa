"""Agent capabilities: agents as tools, continuation, prompt variables, run_sync, approval."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarmcore import (
    Agent,
    AgentDefaults,
    AgentError,
    Approval,
    ApprovalRequest,
    BudgetExceeded,
    DelegationDepthExceeded,
    ModelError,
    Swarm,
    Tool,
    UserError,
    function_tool,
)
from swarmcore.events import (
    AgentStarted,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    ToolCallStarted,
)
from swarmcore.llm import load_litellm
from swarmcore.llm._types import BackendName
from swarmcore.results import sum_usage
from swarmcore.testing import (
    Call,
    Fail,
    FunctionModel,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
)

PRICED = "openai/gpt-4o-mini"


def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


def deleter() -> tuple[Tool, list[str]]:
    """A tool that needs approval, and the paths it was really run with."""
    ran: list[str] = []

    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: The file to delete.
        """
        ran.append(path)
        return f"deleted {path}"

    return function_tool(delete_file, requires_approval=True), ran


def recorder(
    decision: Any,
) -> tuple[Callable[[ApprovalRequest], Any], list[ApprovalRequest]]:
    """A sync approval callback returning ``decision``, and the requests it was asked."""
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Any:
        asked.append(request)
        return decision

    return approve, asked


def lazy_delegate(registry: dict[str, Agent], name: str, max_depth: int) -> Tool:
    """``registry[name].as_tool()`` looked up at call time, so agents can call each other."""

    async def delegate(task: str) -> str:
        """Delegate a task.

        Args:
            task: The task.
        """
        return await registry[name].as_tool(max_depth=max_depth).fn(task)

    return function_tool(delegate, name=name)


def delegating_to(
    tool: Callable[[RecordedRequest], str], task: str
) -> Callable[[RecordedRequest], Reply]:
    """Always delegate; after 10 calls answer instead, so a broken depth limit fails fast."""
    calls: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        calls.append(request)
        if len(calls) > 10:
            return Reply(text="runaway delegation was not stopped")
        return Reply.tool(tool(request), task=task)

    return answer


def price(prompt: int, completion: int) -> float:
    cost = load_litellm().cost_per_token(
        model=PRICED, prompt_tokens=prompt, completion_tokens=completion
    )
    return float(cost[0] + cost[1])


# --- agent as tool -------------------------------------------------------------------------


async def test_as_tool_is_offered_by_name_and_description_and_returns_the_workers_output() -> None:
    worker_model = ScriptedModel(["Paris is the capital.\n<summary>Paris.</summary>"])
    worker = Agent("researcher", "You research facts. Be brief.", model=worker_model.model)
    boss_model = ScriptedModel(
        [Reply.tool("research", task="What is the capital of France?"), Reply(text="Paris")]
    )
    tool = worker.as_tool(name="research", description="Looks facts up.", max_depth=1)
    boss = Agent("boss", "You answer questions.", model=boss_model.model, tools=[tool])

    result = await boss.run("Tell me about France.")

    offered = boss_model.requests[0].tools
    assert [t["function"]["name"] for t in offered] == ["research"]
    assert offered[0]["function"]["description"] == "Looks facts up."
    assert offered[0]["function"]["parameters"]["required"] == ["task"]
    seen = worker_model.requests[0]
    assert [m["role"] for m in seen.messages] == ["system", "user"]  # nothing of the caller's
    assert seen.user == "What is the capital of France?"
    assert seen.system.startswith("You research facts. Be brief.")
    assert boss_model.requests[1].tool_results[0]["content"] == "Paris is the capital."
    assert result.tool_calls[0].tool_name == "research"
    assert result.tool_calls[0].result == "Paris is the capital."
    assert result.tool_calls[0].error is None
    assert result.output == "Paris"
    worker_model.assert_consumed()
    boss_model.assert_consumed()


def test_as_tool_defaults_to_the_agents_name_and_first_sentence() -> None:
    worker = Agent("researcher", "You research facts. Be brief.\nMore detail.")
    tool = worker.as_tool()
    assert tool.name == "researcher"
    assert tool.description == (
        "Ask the agent 'researcher' to do a task; returns its answer. You research facts."
    )
    assert list(tool.parameters["properties"]) == ["task"]


def test_as_tool_rejects_a_bad_name_or_max_depth() -> None:
    worker = Agent("worker", "Works.")
    with pytest.raises(UserError, match="Tool name 'bad name' is not a valid identifier"):
        worker.as_tool(name="bad name")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UserError, match="max_depth must be a positive whole number"):
            worker.as_tool(max_depth=bad)  # type: ignore[arg-type]


def two_turn_worker() -> tuple[ScriptedModel, Agent]:
    """A worker that calls ``echo`` once (5+1 tokens), then answers (6+2 tokens)."""
    model = ScriptedModel(
        [
            Reply(tool_calls=[Call("echo", {"text": "hi"})], prompt_tokens=5, completion_tokens=1),
            Reply(text="worker answer", prompt_tokens=6, completion_tokens=2),
        ]
    )
    return model, Agent("worker", "Works.", model=model.model, tools=[echo])


async def test_delegation_usage_rolls_up_into_the_caller_the_swarm_and_the_usage_table() -> None:
    _worker_model, worker = two_turn_worker()
    boss_model = ScriptedModel(
        [
            Reply(
                tool_calls=[Call("worker", {"task": "do it"})],
                prompt_tokens=10,
                completion_tokens=2,
            ),
            Reply(text="boss answer", prompt_tokens=20, completion_tokens=4),
        ]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    result = await Swarm(boss).run("go")

    own = result["boss"]
    assert len(own.llm_calls) == 2
    assert [c.token_usage.total_tokens for c in own.llm_calls] == [12, 24]
    assert len(own.delegations) == 1
    delegated = own.delegations[0]
    assert delegated.agent_name == "worker"
    assert delegated.output == "worker answer"
    assert len(delegated.llm_calls) == 2
    assert delegated.tool_calls[0].result == "echo: hi"
    assert (delegated.token_usage.prompt_tokens, delegated.token_usage.completion_tokens) == (
        11,
        3,
    )
    assert (own.token_usage.prompt_tokens, own.token_usage.completion_tokens) == (41, 9)
    assert own.token_usage.total_tokens == 50
    assert result.token_usage.total_tokens == 50
    assert [r.agent_name for r in result.history] == ["boss"]  # delegates are not flow steps
    # Test models are unpriced: unpriced everywhere, never a partial sum.
    assert delegated.cost is None
    assert own.cost is None
    assert result.cost is None

    lines = result.usage_table().splitlines()
    assert lines[0].split() == [
        "agent", "model", "calls", "prompt", "completion", "total", "cost", "time", "status"
    ]  # fmt: skip
    boss_row, worker_row, total_row = lines[2].split(), lines[3].split(), lines[-1].split()
    assert lines[3].startswith("  > worker ")  # the delegate, listed under its caller
    assert boss_row[0] == "boss"
    assert boss_row[2:7] == ["4", "41", "9", "50", "unpriced"]  # calls include the delegate's
    assert worker_row[1:2] + worker_row[3:8] == ["worker", "2", "11", "3", "14", "unpriced"]
    assert total_row[:6] == ["total", "4", "41", "9", "50", "unpriced"]
    assert len(lines) == 6  # header, rule, boss, worker, rule, total


async def test_delegation_cost_rolls_up_with_a_priced_model() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.system.startswith("worker"):
            return Reply(text="worker answer", prompt_tokens=200_000, completion_tokens=1_000)
        if not request.tool_results:
            return Reply(
                tool_calls=[Call("worker", {"task": "sub"})],
                prompt_tokens=100_000,
                completion_tokens=500,
            )
        return Reply(text="boss answer", prompt_tokens=300_000, completion_tokens=2_000)

    with MockOpenAIServer(responder=answer) as server:
        settings: dict[str, Any] = {
            "model": PRICED,
            "api_base": server.url,
            "api_key": "sk-test-local",
            "retry": 0,
        }
        worker = Agent("worker", "worker works.", **settings)
        boss = Agent("boss", "boss leads.", tools=[worker.as_tool()], **settings)
        result = await Swarm(boss).run("go")

    own = result["boss"]
    worker_cost = price(200_000, 1_000)
    boss_cost = price(100_000, 500) + price(300_000, 2_000)
    assert own.delegations[0].cost == pytest.approx(worker_cost)
    assert [c.cost for c in own.llm_calls] == [
        pytest.approx(price(100_000, 500)),
        pytest.approx(price(300_000, 2_000)),
    ]
    assert own.cost == pytest.approx(boss_cost + worker_cost)
    assert result.cost == pytest.approx(boss_cost + worker_cost)
    assert own.token_usage.total_tokens == 603_500
    table = result.usage_table()
    assert f"${boss_cost + worker_cost:.4f}" in table
    assert f"${worker_cost:.4f}" in table


async def test_an_agent_delegating_to_itself_stops_at_max_depth() -> None:
    model = FunctionModel(delegating_to(lambda request: "again", "go deeper"))
    registry: dict[str, Agent] = {}
    looping = Agent(
        "again", "Delegates.", model=model.model, tools=[lazy_delegate(registry, "again", 2)]
    )
    registry["again"] = looping

    with pytest.raises(DelegationDepthExceeded) as info:
        await looping.run("start")

    error = info.value
    assert error.chain == ["again", "again", "again", "again"]
    assert error.max_depth == 2
    assert error.agent_name == "again"
    assert "again -> again -> again -> again is 3 levels, past max_depth=2" in str(error)
    assert len(model.requests) == 3  # the outer run and two delegations; the third is refused
    assert [r.user for r in model.requests] == ["start", "go deeper", "go deeper"]


async def test_agents_calling_each_other_stop_at_max_depth_in_a_swarm() -> None:
    model = FunctionModel(
        delegating_to(lambda request: "pong" if request.system.startswith("ping") else "ping", "x")
    )
    registry: dict[str, Agent] = {}
    ping = Agent(
        "ping", "ping calls pong.", model=model.model, tools=[lazy_delegate(registry, "pong", 3)]
    )
    pong = Agent(
        "pong", "pong calls ping.", model=model.model, tools=[lazy_delegate(registry, "ping", 3)]
    )
    registry.update(ping=ping, pong=pong)

    with pytest.raises(DelegationDepthExceeded) as info:
        await Swarm(ping).run("start")

    error = info.value
    assert error.chain == ["ping", "pong", "ping", "pong", "ping"]
    assert error.max_depth == 3
    assert error.agent_name == "pong"  # the caller whose delegation was refused
    assert "ping -> pong -> ping -> pong -> ping is 4 levels" in str(error)
    assert [r.system.split()[0] for r in model.requests] == ["ping", "pong", "ping", "pong"]
    assert error.partial is not None
    assert [f.error_type for f in error.partial.failures] == ["DelegationDepthExceeded"]


async def test_a_chain_of_delegations_within_max_depth_succeeds() -> None:
    leaf_model = ScriptedModel(["leaf answer"])
    mid_model = ScriptedModel([Reply.tool("leaf", task="leaf task"), Reply(text="mid answer")])
    top_model = ScriptedModel([Reply.tool("mid", task="mid task"), Reply(text="top answer")])
    leaf = Agent("leaf", "Leaf.", model=leaf_model.model)
    mid = Agent("mid", "Mid.", model=mid_model.model, tools=[leaf.as_tool(max_depth=2)])
    top = Agent("top", "Top.", model=top_model.model, tools=[mid.as_tool(max_depth=2)])

    result = await top.run("go")

    assert result.output == "top answer"
    assert [d.agent_name for d in result.delegations] == ["mid"]
    assert [d.agent_name for d in result.delegations[0].delegations] == ["leaf"]
    assert mid_model.requests[1].tool_results[0]["content"] == "leaf answer"
    own = sum_usage([c.token_usage for c in result.llm_calls])
    mid_result = result.delegations[0]
    mid_own = sum_usage([c.token_usage for c in mid_result.llm_calls])
    leaf_usage = mid_result.delegations[0].token_usage
    assert mid_result.token_usage == mid_own + leaf_usage
    assert result.token_usage == own + mid_own + leaf_usage
    assert len(leaf_model.requests) == 1


async def test_a_delegate_that_runs_out_of_time_is_listed_with_what_it_spent() -> None:
    # Its first call answers (a tool call, 100 tokens spent); its second outlasts timeout.
    worker_model = ScriptedModel(
        [
            Reply(tool_calls=Reply.tool("note", text="a").tool_calls, completion_tokens=40),
            Reply(text="late", delay=2),
        ]
    )

    def note(text: str) -> str:
        """Take a note.

        Args:
            text: The note.
        """
        return "noted"

    worker = Agent("worker", "Works.", model=worker_model.model, tools=[note], timeout=0.3)
    boss_model = ScriptedModel(
        [Reply.tool("worker", task="try this"), Reply(text="answered without the worker")]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    result = await Swarm(boss).run("go")

    assert result.output == "answered without the worker"
    assert "did not finish within timeout=0.3s" in (result["boss"].tool_calls[0].error or "")
    (late,) = result["boss"].delegations
    assert late.output.startswith("(failed) AgentError")
    assert late.token_usage.completion_tokens == 40  # its first call, kept
    assert len(late.llm_calls) == 1
    assert result.token_usage.completion_tokens >= 40


async def test_a_failing_delegate_is_a_tool_error_and_the_caller_still_answers() -> None:
    worker_model = ScriptedModel([Fail(400, "the worker's request was bad")])
    worker = Agent("worker", "Works.", model=worker_model.model, retry=0)
    boss_model = ScriptedModel(
        [Reply.tool("worker", task="try this"), Reply(text="answered without the worker")]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    result = await Swarm(boss).run("go")

    record = result["boss"].tool_calls[0]
    assert record.tool_name == "worker"
    assert record.error is not None
    assert "agent 'worker' failed" in record.error
    assert "the worker's request was bad" in record.error
    assert record.result == record.error
    assert boss_model.requests[1].tool_results[0]["content"] == record.error
    assert result.output == "answered without the worker"
    (failed,) = result["boss"].delegations  # listed, with what it spent, though it failed
    assert failed.agent_name == "worker"
    assert failed.output.startswith("(failed) ModelError")
    assert result.failures == []
    assert len(worker_model.requests) == 1
    boss_model.assert_consumed()


async def test_parallel_delegations_are_listed_in_call_order() -> None:
    async def answer(request: RecordedRequest) -> Reply:
        if request.user == "slow job":
            await asyncio.sleep(0.1)
        return Reply(text=f"did {request.user}")

    worker_model = FunctionModel(answer)
    worker = Agent("worker", "Works.", model=worker_model.model)
    boss_model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    Call("worker", {"task": "slow job"}),
                    Call("worker", {"task": "fast job"}),
                ]
            ),
            Reply(text="done"),
        ]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    result = await boss.run("go")

    assert [r.result for r in result.tool_calls] == ["did slow job", "did fast job"]
    assert [d.output for d in result.delegations] == ["did slow job", "did fast job"]


async def test_a_failed_delegates_spending_is_still_counted() -> None:
    worker_model = ScriptedModel(
        [
            Reply(
                tool_calls=[Call("echo", {"text": "a"})], prompt_tokens=100, completion_tokens=50
            ),
            Fail(400),
        ]
    )
    worker = Agent("worker", "Works.", model=worker_model.model, tools=[echo], retry=0)
    boss_model = ScriptedModel(
        [
            Reply(tool_calls=[Call("worker", {"task": "t"})], prompt_tokens=1, completion_tokens=1),
            Reply(text="ok", prompt_tokens=1, completion_tokens=1),
        ]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    result = await Swarm(boss).run("go")

    assert result["boss"].tool_calls[0].error is not None
    assert result.token_usage.total_tokens == 154


async def test_the_delegate_shares_the_runs_token_budget() -> None:
    worker_model = ScriptedModel(
        [
            Reply(
                tool_calls=[Call("echo", {"text": "hi"})], prompt_tokens=50, completion_tokens=50
            ),
            Reply(text="never reached"),
        ]
    )
    worker = Agent("worker", "Works.", model=worker_model.model, tools=[echo])
    boss_model = ScriptedModel(
        [
            Reply(tool_calls=[Call("worker", {"task": "t"})], prompt_tokens=5, completion_tokens=5),
            Reply(text="never reached"),
        ]
    )
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])

    with pytest.raises(BudgetExceeded, match="agent 'worker' was not allowed") as info:
        await Swarm(boss, max_tokens=50).run("go")

    error = info.value
    assert error.agent_name == "worker"
    assert error.spent_tokens == 110  # the caller's 10 and the delegate's 100
    assert error.max_tokens == 50
    assert error.partial is not None
    assert len(boss_model.requests) == 1  # not turned into a tool error the caller acts on
    assert len(worker_model.requests) == 1
    assert worker_model.remaining == 1


async def test_delegate_events_nest_under_the_callers_tool_call() -> None:
    _worker_model, worker = two_turn_worker()
    boss_model = ScriptedModel([Reply.tool("worker", task="t"), Reply(text="done")])
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])
    seen: list[Event] = []
    await Swarm(boss, hooks=[seen.append]).run("go")

    agent_span = next(e for e in seen if isinstance(e, AgentStarted) and e.agent_name == "boss")
    delegation = next(e for e in seen if isinstance(e, ToolCallStarted) and e.tool_name == "worker")
    assert delegation.agent_name == "boss"
    assert delegation.parent_id == agent_span.span_id
    worker_calls = [e for e in seen if isinstance(e, ModelCallStarted) and e.agent_name == "worker"]
    assert [e.turn for e in worker_calls] == [1, 2]
    assert all(e.parent_id == delegation.span_id for e in worker_calls)
    finished = [e for e in seen if isinstance(e, ModelCallFinished) and e.agent_name == "worker"]
    assert [e.span_id for e in finished] == [e.span_id for e in worker_calls]
    assert all(e.parent_id == delegation.span_id for e in finished)
    echo_call = next(e for e in seen if isinstance(e, ToolCallStarted) and e.tool_name == "echo")
    assert echo_call.agent_name == "worker"
    assert echo_call.parent_id == delegation.span_id
    boss_calls = [e for e in seen if isinstance(e, ModelCallStarted) and e.agent_name == "boss"]
    assert [e.parent_id for e in boss_calls] == [agent_span.span_id] * 2
    assert not any(isinstance(e, AgentStarted) and e.agent_name == "worker" for e in seen)


async def test_the_delegate_uses_the_runs_approval_callback() -> None:
    tool, ran = deleter()
    worker_model = ScriptedModel([Reply.tool("delete_file", path="/tmp/a"), Reply(text="ok")])
    worker = Agent("worker", "Works.", model=worker_model.model, tools=[tool])
    boss_model = ScriptedModel([Reply.tool("worker", task="clean up"), Reply(text="done")])
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])
    approve, asked = recorder(Approval.deny("not today"))

    result = await Swarm(boss, approve=approve).run("go")

    assert [(r.agent_name, r.tool_name, r.arguments) for r in asked] == [
        ("worker", "delete_file", {"path": "/tmp/a"})
    ]
    assert ran == []
    assert result["boss"].delegations[0].tool_calls[0].approval == "denied"


# --- continuation and forking ------------------------------------------------------------


async def test_history_continues_the_conversation_under_this_agents_system_message() -> None:
    first_model = ScriptedModel(
        [Reply.tool("echo", text="blue"), Reply(text="Blue.\n<summary>A colour.</summary>")]
    )
    first = await Agent("a", "First agent.", model=first_model.model, tools=[echo]).run(
        "Name a colour."
    )
    second_model = ScriptedModel(["Because the sky is blue."])
    second = Agent("b", "Second agent.", model=second_model.model)

    result = await second.run("Why that one?", history=first.messages)

    sent = second_model.requests[0].messages
    assert sent[0]["role"] == "system"
    assert sent[0]["content"].startswith("Second agent.")
    assert "First agent." not in json.dumps(sent)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1]["content"] == "Name a colour."
    assert sent[2]["tool_calls"][0]["function"]["name"] == "echo"
    assert sent[3]["content"] == "echo: blue"
    assert sent[4]["content"] == "Blue.\n<summary>A colour.</summary>"
    assert sent[5] == {"role": "user", "content": "Why that one?"}
    assert result.output == "Because the sky is blue."
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert result.messages[-1]["content"] == "Because the sky is blue."


async def test_two_continuations_from_one_history_are_independent() -> None:
    base_model = ScriptedModel(["Base answer."])
    base = await Agent("a", "Agent.", model=base_model.model).run("Start here.")
    snapshot = copy.deepcopy(base.messages)

    def answer(request: RecordedRequest) -> Reply:
        return Reply(text=f"answer to {request.user}", delay=0.01)

    model = FunctionModel(answer)
    agent = Agent("a", "Agent.", model=model.model)
    left, right = await asyncio.gather(
        agent.run("Question L", history=base.messages),
        agent.run("Question R", history=base.messages),
    )

    by_question = {r.user: json.dumps(r.messages) for r in model.requests}
    assert set(by_question) == {"Question L", "Question R"}
    assert "Question R" not in by_question["Question L"]
    assert "Question L" not in by_question["Question R"]
    assert [m["content"] for m in left.messages[1:]] == [
        "Start here.",
        "Base answer.",
        "Question L",
        "answer to Question L",
    ]
    assert [m["content"] for m in right.messages[1:]] == [
        "Start here.",
        "Base answer.",
        "Question R",
        "answer to Question R",
    ]
    assert base.messages == snapshot
    left.messages[1]["content"] = "changed"  # a continuation holds copies, not the originals
    assert base.messages[1]["content"] == "Start here."
    assert right.messages[1]["content"] == "Start here."


@pytest.mark.parametrize(
    "history",
    ["a string", [{"content": "no role"}], ["not a dict"], [{"role": "user"}, 3]],
)
async def test_invalid_history_is_a_user_error_before_any_model_call(history: Any) -> None:
    model = ScriptedModel(["never"])
    agent = Agent("a", "Agent.", model=model.model)
    with pytest.raises(UserError, match=r"Agent 'a': history must be a list of messages"):
        await agent.run("go", history=history)
    assert model.requests == []


# --- prompt variables --------------------------------------------------------------------


TEMPLATE = (
    'Write about {topic} for {count} readers. Keep {{braces}} and {{name}}. Example: {"a": 1}.'
)
RENDERED = 'Write about tea for 3 readers. Keep {braces} and {name}. Example: {"a": 1}.'


def test_agent_variables_lists_the_placeholders() -> None:
    assert Agent("a", TEMPLATE).variables == frozenset({"topic", "count"})
    assert Agent("a", "No placeholders; {{literal}} and {} and {1}.").variables == frozenset()


async def test_swarm_run_fills_variables_and_keeps_literal_braces() -> None:
    model = ScriptedModel(["done"])
    agent = Agent("writer", TEMPLATE, model=model.model)
    await Swarm(agent).run("go", variables={"topic": "tea", "count": 3})
    assert model.requests[0].system.startswith(RENDERED + "\n\n")


async def test_agent_run_fills_variables_with_str_of_each_value() -> None:
    model = ScriptedModel(["done"])
    agent = Agent("writer", "{topic} / {count} / {ratio} / {items} / {nothing}", model=model.model)
    await agent.run(
        "go",
        variables={"topic": "tea", "count": 3, "ratio": 0.5, "items": [1, 2], "nothing": None},
    )
    assert model.requests[0].system.startswith("tea / 3 / 0.5 / [1, 2] / None\n\n")


async def test_a_missing_variable_fails_before_any_model_call() -> None:
    model = ScriptedModel(["never", "never"])
    a = Agent("a", "About {topic}.", model=model.model)
    b = Agent("b", "For {audience} and {tone}.", model=model.model)
    with pytest.raises(UserError, match=r"\{audience\} \(used by 'b'\).*\{tone\} \(used by 'b'\)"):
        await Swarm(a >> b).run("go", variables={"topic": "tea"})
    with pytest.raises(UserError, match=r"\{topic\} \(used by 'a'\)"):
        await Swarm(a >> b).run("go")
    with pytest.raises(UserError, match=r"Missing prompt variables: \{topic\} \(used by 'a'\)"):
        await a.run("go")
    with pytest.raises(UserError, match=r"\{topic\}"):
        await a.run("go", variables={"other": "x"})
    assert model.requests == []


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"bad name": 1}, "Variable names must be identifiers, got 'bad name'"),
        ({"1st": 1}, "Variable names must be identifiers, got '1st'"),
        ({1: "x"}, "Variable names must be identifiers, got 1"),
        (["topic"], "variables must be a dict"),
    ],
)
async def test_swarm_rejects_invalid_variables(variables: Any, message: str) -> None:
    model = ScriptedModel(["never"])
    agent = Agent("a", "About {topic}.", model=model.model)
    with pytest.raises(UserError, match=message):
        await Swarm(agent).run("go", variables=variables)
    assert model.requests == []


async def test_agent_run_rejects_invalid_variables_like_swarm_run() -> None:
    model = ScriptedModel(["done"])
    agent = Agent("a", "About {topic}.", model=model.model)
    with pytest.raises(UserError, match="Variable names must be identifiers"):
        await agent.run("go", variables={"topic": "tea", "bad name": 1})


async def test_variables_are_stored_with_the_run_and_reused_by_resume(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    calls: list[str] = []

    def answer(request: RecordedRequest) -> Reply | Fail:
        calls.append(request.system.split("\n")[0])
        if request.system.startswith("b") and calls.count(calls[-1]) == 1:
            return Fail(400, "b fails once")
        return Reply(text=f"{request.system.split()[0]} output")

    model = FunctionModel(answer)
    a = Agent("a", "a writes about {topic}.", model=model.model, retry=0)
    b = Agent("b", "b writes for {audience}, {count} lines.", model=model.model, retry=0)

    with pytest.raises(AgentError) as info:
        await Swarm(a >> b, store=db).run(
            "go", variables={"topic": "tea", "audience": "kids", "count": 2}
        )
    assert info.value.partial is not None
    run_id = info.value.partial.run_id

    later = Swarm(a >> b, store=db)  # a new Swarm: the variables come from the store
    assert later.store is not None
    record = later.store.get_run(run_id)
    assert record is not None
    assert record.settings["variables"] == {"topic": "tea", "audience": "kids", "count": "2"}
    result = await later.resume(run_id)

    assert result.output == "b output"
    assert calls == [
        "a writes about tea.",
        "b writes for kids, 2 lines.",
        "b writes for kids, 2 lines.",
    ]


async def test_stream_accepts_variables() -> None:
    model = ScriptedModel(["done"])
    agent = Agent("writer", "About {topic}.", model=model.model)
    swarm = Swarm(agent)
    with pytest.raises(UserError, match=r"\{topic\}"):
        async for _ in swarm.stream("go"):
            pass
    seen = [e async for e in swarm.stream("go", variables={"topic": "tea"})]
    assert isinstance(seen[-1], RunFinished)
    assert seen[-1].result is not None
    assert seen[-1].result.output == "done"
    assert model.requests[0].system.startswith("About tea.\n\n")


async def test_dry_run_accepts_variables_and_renders_them() -> None:
    agent = Agent("writer", "About {topic}.", model=PRICED)
    swarm = Swarm(agent)
    with pytest.raises(UserError, match=r"\{topic\} \(used by 'writer'\)"):
        await swarm.dry_run("go")
    short = await swarm.dry_run("go", variables={"topic": "tea"})
    long = await swarm.dry_run("go", variables={"topic": "tea " * 200})
    assert short.agents[0].model_calls == 1
    assert long.agents[0].model_calls == 1
    assert long.prompt_tokens >= short.prompt_tokens + 150  # the value went into the prompt


async def test_a_delegate_receives_the_callers_run_variables() -> None:
    worker_model = ScriptedModel(["worker done"])
    worker = Agent("worker", "Research {topic} in depth.", model=worker_model.model)
    boss_model = ScriptedModel([Reply.tool("worker", task="dig"), Reply(text="done")])
    boss = Agent("boss", "Lead on {topic}.", model=boss_model.model, tools=[worker.as_tool()])

    await Swarm(boss).run("go", variables={"topic": "tea"})

    assert boss_model.requests[0].system.startswith("Lead on tea.")
    assert worker_model.requests[0].system.startswith("Research tea in depth.")
    worker_model2 = ScriptedModel(["worker done"])
    boss_model2 = ScriptedModel([Reply.tool("worker", task="dig"), Reply(text="done")])
    worker2 = worker.clone(model=worker_model2.model)
    boss2 = boss.clone(model=boss_model2.model, tools=[worker2.as_tool()])
    await boss2.run("go", variables={"topic": "coffee"})
    assert worker_model2.requests[0].system.startswith("Research coffee in depth.")


async def test_a_delegates_missing_variable_fails_before_any_model_call() -> None:
    worker_model = ScriptedModel(["never"])
    worker = Agent("worker", "Research {topic}.", model=worker_model.model)
    boss_model = ScriptedModel([Reply.tool("worker", task="dig"), Reply(text="done")])
    boss = Agent("boss", "Lead.", model=boss_model.model, tools=[worker.as_tool()])
    with pytest.raises(UserError, match=r"\{topic\} \(used by 'worker'\)"):
        await Swarm(boss).run("go")
    assert boss_model.requests == []


# --- run_sync ----------------------------------------------------------------------------


def test_run_sync_from_plain_sync_code() -> None:
    model = ScriptedModel(["swarm answer", "agent answer"])
    agent = Agent("a", "About {topic}.", model=model.model)

    swarm_result = Swarm(agent).run_sync("go", variables={"topic": "tea"})
    agent_result = agent.run_sync("again", variables={"topic": "coffee"})

    assert swarm_result.output == "swarm answer"
    assert swarm_result["a"].output == "swarm answer"
    assert agent_result.output == "agent answer"
    assert [r.system.split("\n")[0] for r in model.requests] == ["About tea.", "About coffee."]
    assert [r.user for r in model.requests] == ["go", "again"]


def test_run_sync_inside_a_running_event_loop() -> None:
    threads: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        threads.append(threading.current_thread().name)
        return Reply(text=f"answer to {request.user}")

    model = FunctionModel(answer)
    agent = Agent("a", "Agent.", model=model.model)

    async def notebook_cell() -> tuple[str, str]:
        asyncio.get_running_loop()  # a loop is running here, as in a notebook
        swarm_result = Swarm(agent).run_sync("first")
        agent_result = agent.run_sync("second")
        return swarm_result.output, agent_result.output

    assert asyncio.run(notebook_cell()) == ("answer to first", "answer to second")
    assert len(threads) == 2
    assert all(t.startswith("swarmcore-run-sync") for t in threads)


def test_run_sync_bad_input_raises_user_error_in_the_caller() -> None:
    model = ScriptedModel(["never"])
    agent = Agent("a", "About {topic}.", model=model.model)
    swarm = Swarm(agent)
    with pytest.raises(UserError, match="non-empty task"):
        swarm.run_sync("")
    with pytest.raises(UserError, match="non-empty task"):
        swarm.run_sync("   ")
    with pytest.raises(UserError, match=r"\{topic\} \(used by 'a'\)"):
        swarm.run_sync("go")
    with pytest.raises(UserError, match="the task must be a non-empty string"):
        agent.run_sync("", variables={"topic": "tea"})
    with pytest.raises(UserError, match=r"\{topic\}"):
        agent.run_sync("go")

    async def in_loop() -> None:
        with pytest.raises(UserError, match=r"\{topic\}"):
            swarm.run_sync("go")
        with pytest.raises(UserError, match="non-empty string"):
            agent.run_sync(" ", variables={"topic": "tea"})

    asyncio.run(in_loop())
    assert model.requests == []


def test_run_sync_propagates_an_agent_error_with_partial_results() -> None:
    def answer(request: RecordedRequest) -> Reply | Fail:
        if request.system.startswith("b"):
            return Fail(400, "b is broken")
        return Reply(text="a output")

    model = FunctionModel(answer)
    a = Agent("a", "a first.", model=model.model, retry=0)
    b = Agent("b", "b second.", model=model.model, retry=0)
    swarm = Swarm(a >> b)

    def check(error: ModelError) -> None:
        assert error.agent_name == "b"
        assert error.status_code == 400
        assert error.partial is not None
        assert error.partial.context == {"a": "a output"}
        assert [f.agent_name for f in error.partial.failures] == ["b"]

    with pytest.raises(ModelError, match="b is broken") as plain:
        swarm.run_sync("go")
    check(plain.value)

    async def in_loop() -> ModelError:
        with pytest.raises(ModelError, match="b is broken") as nested:
            swarm.run_sync("go")
        return nested.value

    check(asyncio.run(in_loop()))
    with pytest.raises(ModelError, match="b is broken") as direct:
        b.run_sync("go")
    assert direct.value.agent_name == "b"


# --- human approval ----------------------------------------------------------------------


def ops_agent(model: ScriptedModel, *tools: Any) -> Agent:
    return Agent("ops", "Runs operations.", model=model.model, tools=list(tools))


def delete_then_answer() -> ScriptedModel:
    """Calls delete_file(path="/tmp/x") with call id ``call_del``, then answers "done"."""
    call = Call("delete_file", {"path": "/tmp/x"}, id="call_del")
    return ScriptedModel([Reply(tool_calls=[call]), "done"])


@pytest.mark.parametrize("decision", [Approval.allow(), True], ids=["allow", "true"])
async def test_an_allowed_call_runs_as_the_model_asked(decision: Any) -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, asked = recorder(decision)

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert asked == [ApprovalRequest("ops", "delete_file", {"path": "/tmp/x"}, "call_del")]
    assert isinstance(asked[0].arguments, dict)
    assert ran == ["/tmp/x"]
    record = result["ops"].tool_calls[0]
    assert (record.approval, record.error, record.result) == ("allowed", None, "deleted /tmp/x")
    assert model.requests[1].tool_results[0]["content"] == "deleted /tmp/x"
    model.assert_consumed()


@pytest.mark.parametrize(
    ("decision", "reason"),
    [(Approval.deny("too risky"), ": too risky"), (False, "")],
    ids=["deny", "false"],
)
async def test_a_denied_call_does_not_run_and_the_model_is_told_why(
    decision: Any, reason: str
) -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, asked = recorder(decision)

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert len(asked) == 1
    assert ran == []
    denial = (
        f"The user denied this call to 'delete_file'{reason}. Do not repeat it; continue "
        "without it or ask for something else."
    )
    record = result["ops"].tool_calls[0]
    assert (record.approval, record.error, record.result) == ("denied", denial, denial)
    assert model.requests[1].tool_results[0] == {
        "role": "tool",
        "tool_call_id": "call_del",
        "content": denial,
    }
    assert result.output == "done"


async def test_an_edited_call_runs_with_the_edited_arguments() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, _ = recorder(Approval.edit({"path": "/tmp/safe"}))

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert ran == ["/tmp/safe"]
    record = result["ops"].tool_calls[0]
    assert record.approval == "edited"
    assert json.loads(record.arguments) == {"path": "/tmp/safe"}
    assert record.result == "deleted /tmp/safe"
    assert model.requests[1].tool_results[0]["content"] == "deleted /tmp/safe"


async def test_edited_arguments_are_validated_like_the_models() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, _ = recorder(Approval.edit({"file": "/tmp/safe"}))

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert ran == []
    record = result["ops"].tool_calls[0]
    assert record.error is not None
    assert record.error.startswith("Tool 'delete_file': invalid arguments")
    assert model.requests[1].tool_results[0]["content"] == record.error


async def test_an_async_approval_callback_is_awaited() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0.01)
        asked.append(request)
        return Approval.deny("async says no") if request.arguments["path"] == "/tmp/x" else True

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert [r.call_id for r in asked] == ["call_del"]
    assert ran == []
    assert result["ops"].tool_calls[0].approval == "denied"
    assert "async says no" in model.requests[1].tool_results[0]["content"]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ('{"path": ', "Tool 'delete_file': the arguments are not valid JSON"),
        ({"path": ["x"]}, "Tool 'delete_file': invalid arguments"),
        ({}, "Tool 'delete_file': invalid arguments"),
    ],
    ids=["malformed", "wrong-type", "missing"],
)
async def test_invalid_arguments_go_back_to_the_model_without_asking(
    arguments: Any, error: str
) -> None:
    tool, ran = deleter()
    model = ScriptedModel(
        [Reply(tool_calls=[Call("delete_file", arguments, id="call_bad")]), "gave up"]
    )
    approve, asked = recorder(Approval.allow())

    result = await Swarm(ops_agent(model, tool), approve=approve).run("clean")

    assert asked == []
    assert ran == []
    record = result["ops"].tool_calls[0]
    assert record.approval is None
    assert record.error is not None
    assert record.error.startswith(error)
    assert model.requests[1].tool_results[0]["content"] == record.error


async def test_a_tool_needing_approval_without_a_callback_fails_before_any_model_call() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    first = Agent("first", "First.", model=model.model)
    ops = ops_agent(model, tool)
    message = r"Tool 'delete_file' of agent 'ops' requires approval, and no approval callback"
    with pytest.raises(UserError, match=message):
        await Swarm(first >> ops).run("clean")
    with pytest.raises(UserError, match=message):
        Swarm(ops).run_sync("clean")
    with pytest.raises(UserError, match=message):
        async for _ in Swarm(ops).stream("clean"):
            pass
    with pytest.raises(UserError, match=message):
        await ops.run("clean")
    assert model.requests == []
    assert ran == []
    with pytest.raises(UserError, match="approve must be a function, got str"):
        Swarm(ops, approve="yes")  # type: ignore[arg-type]


async def test_a_delegates_approval_tool_without_a_callback_fails_before_any_model_call() -> None:
    tool, ran = deleter()
    worker_model = delete_then_answer()
    worker = ops_agent(worker_model, tool)
    boss_model = ScriptedModel([Reply.tool("ops", task="clean"), Reply(text="done")])
    boss = Agent("boss", "Leads.", model=boss_model.model, tools=[worker.as_tool()])
    with pytest.raises(UserError, match="requires approval"):
        await Swarm(boss).run("clean")
    assert boss_model.requests == []
    assert ran == []


async def test_agent_run_takes_an_approval_callback() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, asked = recorder(True)

    result = await ops_agent(model, tool).run("clean", approve=approve)

    assert [r.agent_name for r in asked] == ["ops"]
    assert ran == ["/tmp/x"]
    assert result.tool_calls[0].approval == "allowed"


async def test_a_callback_returning_something_else_is_a_user_error() -> None:
    tool, ran = deleter()
    model = delete_then_answer()
    approve, _ = recorder("yes")

    with pytest.raises(UserError, match=r"returned str for tool 'delete_file'; return Approval"):
        await Swarm(ops_agent(model, tool), approve=approve).run("clean")
    assert ran == []
    assert len(model.requests) == 1
    model2 = delete_then_answer()
    with pytest.raises(UserError, match="returned NoneType"):
        await ops_agent(model2, tool).run("clean", approve=lambda request: None)
    assert ran == []


async def test_tools_without_requires_approval_never_ask() -> None:
    tool, ran = deleter()
    model = ScriptedModel(
        [Reply(tool_calls=[Call("echo", {"text": "hi"}), Call("echo", {"text": "ho"})]), "done"]
    )
    approve, asked = recorder(Approval.deny("no"))

    result = await Swarm(ops_agent(model, tool, echo), approve=approve).run("clean")

    assert asked == []
    assert ran == []
    assert [(r.result, r.approval) for r in result["ops"].tool_calls] == [
        ("echo: hi", None),
        ("echo: ho", None),
    ]
    plain_model = ScriptedModel(["ok"])
    plain = await Agent("plain", "Plain.", model=plain_model.model).run("go")
    assert plain.output == "ok"  # no approval-requiring tool: no callback needed


@pytest.mark.parametrize("backend", ["native", "litellm"])
async def test_dry_run_rehearses_whatever_backend_the_agents_chose(backend: BackendName) -> None:
    agent = Agent("writer", "Write.", model=PRICED, backend=backend)
    for swarm in (
        Swarm(agent),
        Swarm(agent.clone(backend=None), defaults=AgentDefaults(backend=backend)),
    ):
        report = await swarm.dry_run("go")
        assert report.agents[0].model_calls == 1
