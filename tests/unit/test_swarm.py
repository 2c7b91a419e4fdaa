from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from swarmcore import (
    Agent,
    AgentDefaults,
    AgentError,
    ModelError,
    RetryPolicy,
    SharedContext,
    Swarm,
    UserError,
    chain,
    events,
)
from swarmcore.modes import ContextMode, PullMode
from swarmcore.testing import Call, Fail, FunctionModel, OfflineModel, RecordedRequest, Reply
from tests.helpers import ANYONE, agents, echo_model, framed, nonce_of, rendezvous_model


async def test_sequential_flow_passes_context_forward() -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    result = await Swarm(a >> b).run("task")
    assert result.output == "b output"
    assert result.context == {"a": "a output", "b": "b output"}
    assert [r.agent_name for r in result.history] == ["a", "b"]
    assert [r.summary for r in result.history] == ["a summary", "b summary"]
    assert result.token_usage.total_tokens == sum(
        r.token_usage.total_tokens for r in result.history
    )
    assert result.history[0].token_usage + result.history[1].token_usage == result.token_usage
    assert result.duration_seconds > 0
    assert result["b"].output == "b output"
    with pytest.raises(KeyError, match="finished agents: a, b"):
        result["zzz"]


async def test_history_and_context_follow_flow_order_not_completion_order() -> None:
    # b finishes last although it comes first in the group.
    model = echo_model(delays={"b": 0.3})
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    result = await Swarm(a >> (b | c) >> d).run("task")
    assert [r.agent_name for r in result.history] == ["a", "b", "c", "d"]
    assert list(result.context) == ["a", "b", "c", "d"]
    finished = [r.user for r in model.requests]
    assert len(finished) == 4


async def test_parallel_group_runs_at_the_same_time() -> None:
    model, arrived = rendezvous_model(3)  # times out unless all three overlap
    a, b, c = (Agent(n, f"{n} x", model=model.model) for n in "abc")
    result = await Swarm(a | b | c).run("go")
    assert sorted(arrived) == ["a", "b", "c"]
    assert result.output == "## a\n\ndone\n\n## b\n\ndone\n\n## c\n\ndone"


async def test_final_group_with_a_branch_joins_terminal_outputs() -> None:
    model = echo_model()
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    result = await Swarm(a >> ((b >> c) | d)).run("task")
    assert result.output == "## c\n\nc output\n\n## d\n\nd output"
    assert [r.agent_name for r in result.history] == ["a", "b", "c", "d"]


async def test_branches_see_their_own_predecessors_not_their_siblings() -> None:
    model = OfflineModel()
    a, b, c, d, e = (Agent(n, f"{n} works.", model=model.model) for n in "abcde")
    result = await Swarm(a >> ((b >> c) | d) >> e, context_mode="pull").run("study x")
    hints = {r.system.split()[0]: r.system for r in model.requests if r.user == "study x"}
    assert "- b (" in hints["c"]
    assert "- a (" in hints["c"]
    assert "- d (" not in hints["c"]
    assert "- b (" not in hints["d"]
    assert "- c (" not in hints["d"]
    assert all(f"- {n} (" in hints["e"] for n in "abcd")
    assert list(result.context) == ["a", "b", "c", "d", "e"]


async def test_parallel_members_see_the_context_as_it_was_when_their_group_started() -> None:
    # The members share one view of the context: a sibling that finishes first must
    # not show up in it, whichever member reads it and however late.
    def answer(request: RecordedRequest) -> Reply:
        name = request.system.split()[0]
        if name in {"c", "d"} and not request.tool_results:
            return Reply(tool_calls=[Call("list_context", {})], delay=0.05)
        return Reply(text=f"{name} done")

    model = FunctionModel(answer)
    a, b, c, d, e = agents(model.model, "a", "b", "c", "d", "e")
    result = await Swarm(a >> (b | c | d) >> e, context_mode="pull").run("task")

    listed = {
        r.system.split()[0]: str(r.tool_results[0]["content"])
        for r in model.requests
        if r.tool_results
    }
    assert set(listed) == {"c", "d"}
    for seen in listed.values():
        assert "- a (" in seen
        assert "- b (" not in seen  # b had finished by then
        assert "1 earlier outputs" in seen
    assert list(result.context) == ["a", "b", "c", "d", "e"]


async def test_context_tools_read_their_own_runs_context_when_runs_overlap() -> None:
    # One set of context tools serves every run: each call reads the context of the
    # agent run that made it, so two overlapping runs never read each other's outputs.
    def answer(request: RecordedRequest) -> Reply:
        name = request.system.split()[0]
        if name == "b" and not request.tool_results:
            return Reply(tool_calls=[Call("get_context", {"agent_name": "a"})], delay=0.02)
        if name == "b":
            return Reply(text=f"b read: {request.tool_results[0]['content']}")
        return Reply(text=f"a on {request.user}", delay=0.01)

    model = FunctionModel(answer)
    a, b = agents(model.model, "a", "b")
    swarm = Swarm(a >> b, context_mode="pull")
    one, two = await asyncio.gather(swarm.run("ONE"), swarm.run("TWO"))
    for result, task in ((one, "ONE"), (two, "TWO")):
        nonce = nonce_of(str(result["b"].messages[0]["content"]))
        assert framed(result.context["b"], nonce) == [("a", None, f"a on {task}")]


async def test_an_agent_run_alone_reads_the_context_it_is_given_through_pull_tools() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if not request.tool_results:
            return Reply(tool_calls=[Call("get_context", {"agent_name": "notes"})])
        return Reply(text=f"got {request.tool_results[0]['content']}")

    context = SharedContext()
    context.set("notes", "the sky is green")
    model = FunctionModel(answer)
    result = await Agent("reader", "Read.", model=model.model).run(
        "go",
        context,
        extra_tools=PullMode().prepare(context, (), ANYONE).tools,
        context_hint="Notes are in the context.",
    )
    expected = context.framing().block("notes", "the sky is green")
    assert result.output == f"got {expected}"


async def test_context_tools_read_the_view_they_were_made_over_not_later_entries() -> None:
    model = FunctionModel(
        lambda r: (
            Reply(text=str(r.tool_results[0]["content"]))
            if r.tool_results
            else Reply(tool_calls=[Call("list_context", {})])
        )
    )
    context = SharedContext()
    context.set("notes", "first")
    tools = PullMode().prepare(context, (), ANYONE).tools
    context.set("late", "added after the tools were made")
    result = await Agent("reader", "Read.", model=model.model).run("go", extra_tools=tools)
    assert "notes" in result.output
    assert "late" in result.output  # the tools read the live view, which the walk never grows


async def test_concurrent_runs_of_one_swarm_share_nothing() -> None:
    def answer(request: RecordedRequest) -> Reply:
        return Reply(text=f"{request.system.split()[0]} on {request.user}")

    model = FunctionModel(answer)
    a, b = (Agent(n, f"{n} x", model=model.model) for n in "ab")
    swarm = Swarm(a >> b, context_mode="push")
    one, two = await asyncio.gather(swarm.run("ONE"), swarm.run("TWO"))
    assert one.context == {"a": "a on ONE", "b": "b on ONE"}
    assert two.context == {"a": "a on TWO", "b": "b on TWO"}
    for req in model.requests:
        other = "TWO" if req.user == "ONE" else "ONE"
        assert f"on {other}" not in req.system


async def test_pull_mode_first_step_gets_nothing_later_steps_get_hint_and_tools() -> None:
    model = OfflineModel()
    a, b = (Agent(n, f"{n} works.", model=model.model) for n in "ab")
    await Swarm(a >> b, context_mode="pull").run("topic")
    first_a = next(r for r in model.requests if r.system.startswith("a "))
    first_b = next(r for r in model.requests if r.system.startswith("b "))
    assert first_a.tools == []
    assert "Shared context" not in first_a.system
    assert first_b.tool_names == ["list_context", "get_context", "search_context"]
    assert "## Shared context" in first_b.system
    assert "- a (" in first_b.system
    assert "Offline answer" not in first_b.system  # outputs are pulled, not pushed
    b_calls = [r for r in model.requests if r.system.startswith("b ")]
    assert any(
        "Offline answer (a works.)" in str(m.get("content")) for m in b_calls[-1].tool_results
    )


async def test_pull_mode_first_agent_gets_its_stray_tool_call_answered_and_recorded() -> None:
    def reply(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "a" and not request.tool_results:  # a has no tools, yet calls one
            return Reply.tool("get_context", agent_name="nobody")
        seen = request.tool_results[0]["content"] if request.tool_results else "nothing"
        return Reply(text=f"{who} heard: {seen}")

    model = FunctionModel(reply)
    a, b = (Agent(n, f"{n} works.", model=model.model) for n in "ab")
    seen = [e async for e in Swarm(a >> b, context_mode="pull").stream("go")]
    run = next(e for e in seen if isinstance(e, events.RunFinished)).result
    assert run is not None
    result_a = run.history[0]
    unknown = "Unknown tool 'get_context'. Available tools: none."
    assert result_a.output == f"a heard: {unknown}"
    assert [r.error for r in result_a.tool_calls] == [unknown]
    assert [c.tool_calls for c in result_a.llm_calls] == [1, 0]
    [finished] = [e for e in seen if isinstance(e, events.ToolCallFinished)]
    assert (finished.agent_name, finished.tool_name, finished.error) == (
        "a",
        "get_context",
        unknown,
    )


async def test_pull_prompt_stays_flat_as_the_chain_grows() -> None:
    model = OfflineModel()
    names = [f"agent_{i:02d}" for i in range(1, 21)]
    flow = chain(
        *(Agent(n, f"{n} adds one fact about the topic.", model=model.model) for n in names)
    )
    await Swarm(flow, context_mode="pull").run("the history of tea")
    first_requests = {}
    for r in model.requests:
        first_requests.setdefault(r.system.split()[0], r)
    second, twentieth = first_requests["agent_02"], first_requests["agent_20"]
    assert twentieth.prompt_chars <= 1.5 * second.prompt_chars
    assert "earlier outputs are not listed here" in twentieth.system


async def test_push_mode_previous_in_full_earlier_as_summaries_with_expand_tool() -> None:
    model = OfflineModel()
    a, b, c = (Agent(n, f"{n} works.", model=model.model) for n in "abc")
    result = await Swarm(a >> b >> c, context_mode="push").run("topic")
    first_b = next(r for r in model.requests if r.system.startswith("b "))
    first_c = next(r for r in model.requests if r.system.startswith("c "))
    assert first_b.tools == []  # nothing summarised yet: only the previous step
    assert framed(first_b.system) == [("a", None, result.context["a"])]
    assert first_c.tool_names == ["expand_context"]
    assert framed(first_c.system) == [
        ("a", "summary", result["a"].summary),
        ("b", None, result.context["b"]),
    ]
    assert [t.tool_name for t in result["c"].tool_calls] == ["expand_context"]
    expanded = framed(result["c"].tool_calls[0].result, nonce_of(first_c.system))
    assert expanded == [("a", None, result.context["a"])]


async def test_failure_keeps_finished_results_as_partial() -> None:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "c":
            return Fail(400, "bad request for c")
        return Reply(text=f"{who} done", delay=0.05 if who == "b" else 0)

    model = FunctionModel(answer)
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    with pytest.raises(ModelError, match="Agent 'c'") as info:
        await Swarm(a >> (b | c) >> d).run("go")
    partial = info.value.partial
    assert partial is not None
    assert partial.context == {"a": "a done"}  # b was cancelled when c failed
    assert [r.agent_name for r in partial.history] == ["a"]
    assert not any(r.system.startswith("d ") for r in model.requests)


@pytest.mark.parametrize("observed", [False, True], ids=["unobserved", "observed"])
async def test_a_bug_in_user_code_fails_its_agent_and_keeps_the_partial_results(
    observed: bool,
) -> None:
    def broken_validator(text: str) -> None:
        raise KeyError("oops")  # not a rejection (that is ValueError): a bug

    model = echo_model()
    a = Agent("a", "a writes", model=model.model)
    b = Agent("b", "b writes", model=model.model, output_validators=[broken_validator])
    c = Agent("c", "c writes", model=model.model)
    seen: list[object] = []
    swarm = Swarm(a >> (b | c), hooks=[seen.append] if observed else [])
    with pytest.raises(AgentError, match="Agent 'b' failed with KeyError: 'oops'") as info:
        await swarm.run("go")
    assert isinstance(info.value.__cause__, KeyError)
    partial = info.value.partial
    assert partial is not None
    assert partial.context["a"] == "a output"
    assert [f.agent_name for f in partial.failures][:1] == ["b"]
    assert partial.failures[0].error_type == "AgentError"
    assert bool(seen) is observed


async def test_failure_after_a_group_keeps_the_whole_group() -> None:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        return Fail(401, "no") if who == "d" else Reply(text=f"{who} done")

    model = FunctionModel(answer)
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    with pytest.raises(AgentError) as info:
        await Swarm(a >> (b | c) >> d).run("go")
    assert info.value.agent_name == "d"
    assert info.value.partial is not None
    assert info.value.partial.context == {"a": "a done", "b": "b done", "c": "c done"}
    assert info.value.partial.output == "c done"


def test_swarm_validates_its_arguments() -> None:
    a = Agent("a", "x")
    with pytest.raises(UserError, match="context_mode must be 'pull', 'push' or 'auto', got 'pul'"):
        Swarm(a, context_mode="pul")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="takes a Flow or an Agent"):
        Swarm("a")  # type: ignore[arg-type]

    def get_context(agent_name: str) -> str:
        """Clashes with the context tools."""
        return agent_name

    with pytest.raises(UserError, match=r"tool named 'get_context'.*rename the tool"):
        Swarm(Agent("b", "x", tools=[get_context]))
    assert repr(Swarm(a, context_mode="push")) == "Swarm(a, context_mode='push')"
    assert Swarm(a).context_mode == "auto"


async def test_empty_task_is_refused() -> None:
    with pytest.raises(UserError, match="non-empty task"):
        await Swarm(Agent("a", "x")).run("")


async def test_nested_groups_inside_branches() -> None:
    model = OfflineModel()
    a, b, c, d, e, f = (Agent(n, f"{n} works.", model=model.model) for n in "abcdef")
    flow = a >> ((b >> (c | d)) | e) >> f
    result = await Swarm(flow, context_mode="pull").run("nested")
    assert [r.agent_name for r in result.history] == ["a", "b", "c", "d", "e", "f"]
    hints = {r.system.split()[0]: r.system for r in model.requests if r.user == "nested"}
    # c sees a and b (its branch), not e (a sibling branch); f sees everything.
    assert "- b (" in hints["c"]
    assert "- e (" not in hints["c"]
    assert all(f"- {n} (" in hints["f"] for n in "cde")  # the previous step is always named
    assert result.output == result.context["f"]


# --- a cache-stable prompt: the same inputs, the same bytes --------------------------


def _lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def _requests_per_agent(requests: list[RecordedRequest]) -> dict[str, list[str]]:
    """Each request as the JSON a provider receives, by agent (its instructions' first word)."""
    sent: dict[str, list[str]] = {}
    for request in requests:
        body = json.dumps([request.messages, request.tools, request.params], sort_keys=True)
        sent.setdefault(request.system.split()[0], []).append(body)
    return sent


async def _stable_run(mode: ContextMode, native: bool, slow: str) -> dict[str, list[str]]:
    """a >> (b | c) >> d >> e, tools everywhere, d failing once, ``slow`` finishing last."""
    failed: set[str] = set()

    def answer(request: RecordedRequest) -> Reply | Fail:
        name = request.system.split()[0]
        said = json.dumps(request.messages)
        for tool in ("_lookup", "search_context", "expand_context"):
            offered = tool in request.tool_names or f"- {tool}:" in request.system
            if offered and f"## {tool} (" not in said and f'"name": "{tool}"' not in said:
                arguments = {"_lookup": {"city": "Oslo"}, "search_context": {"query": "answer"}}
                call = Call(tool, arguments.get(tool, {"agent_name": "a"}), id=f"{name}-{tool}")
                return Reply(tool_calls=[call])
        if name == "d" and name not in failed:
            failed.add(name)
            return Fail(500, "overloaded")  # the model call fails: d's step is run again
        delay = 0.05 if name == slow else 0.0
        return Reply(text=f"{name}'s answer.\n<summary>{name} answered.</summary>", delay=delay)

    model = FunctionModel(answer, supports={"function_calling": native})
    a, b, c, d, e = (
        Agent(n, f"{n} does its part.", model=model.model, tools=[_lookup]) for n in "abcde"
    )
    fast = AgentDefaults(retry=RetryPolicy(max_retries=0, initial_delay=0.01, jitter=0))
    flow = a >> (b | c) >> d >> e
    await Swarm(flow, context_mode=mode, defaults=fast, step_retries=1).run("Plan it.")
    return _requests_per_agent(model.requests)


@pytest.mark.parametrize("mode", ["pull", "push", "auto"])
@pytest.mark.parametrize("native", [True, False], ids=["native-tools", "text-tools"])
async def test_the_same_inputs_send_byte_identical_requests_across_runs_and_retries(
    mode: ContextMode, native: bool
) -> None:
    first = await _stable_run(mode, native, slow="b")
    second = await _stable_run(mode, native, slow="c")  # the group finishes the other way round
    assert first == second
    d = first["d"]
    retried = len(d) // 2
    assert d[:retried] == d[retried:]  # the step retry sends what the first attempt sent
    assert len(d) >= 4
    for requests in first.values():  # within a run: each request extends the one before
        agent_run = requests[retried:] if requests is d else requests
        for earlier, later in itertools.pairwise(agent_run):
            kept = json.loads(earlier)[0]
            assert json.loads(later)[0][: len(kept)] == kept


async def test_the_system_prompt_puts_the_agents_own_parts_before_the_context() -> None:
    model = echo_model()
    a = Agent("a", "a does its part.", model=model.model)
    b = Agent("b", "b does its part.", model=model.model, tools=[_lookup], tool_protocol="text")
    await Swarm(a >> b, context_mode="push").run("task")
    system = model.requests[-1].system
    parts = ["b does its part.", "# Tools", "End your answer with", "# Context from earlier"]
    assert [system.index(p) for p in parts] == sorted(system.index(p) for p in parts)
