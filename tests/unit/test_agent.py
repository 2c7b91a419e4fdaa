from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import threading
from typing import Any

import pytest

from swarmcore import (
    Agent,
    AgentError,
    MaxTurnsExceeded,
    ModelError,
    SharedContext,
    Swarm,
    Tool,
    UserError,
    function_tool,
)
from swarmcore.testing import Call, Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.helpers import framed, rendezvous_model


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


async def test_tool_loop_runs_until_text_and_sums_usage() -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[Call("add", {"a": 2, "b": 3})], prompt_tokens=10, completion_tokens=4
            ),
            Reply(
                text="It is 5.\n<summary>Added 2 and 3.</summary>",
                prompt_tokens=20,
                completion_tokens=6,
            ),
        ]
    )
    agent = Agent("calc", "You add numbers.", model=model.model, tools=[add])
    result = await agent.run("What is 2 + 3?")
    model.assert_consumed()
    assert result.output == "It is 5."
    assert result.summary == "Added 2 and 3."
    assert result.token_usage.prompt_tokens == 30
    assert result.token_usage.completion_tokens == 10
    assert result.token_usage.total_tokens == 40
    assert [c.token_usage.total_tokens for c in result.llm_calls] == [14, 26]
    assert result.tool_calls[0].result == "5"
    assert result.tool_calls[0].error is None
    first, second = model.requests
    assert first.tool_names == ["add"]
    assert first.system.startswith("You add numbers.")
    assert "<summary>" in first.system
    assert first.user == "What is 2 + 3?"
    assert second.tool_results == [
        {"role": "tool", "tool_call_id": first_call_id(result), "content": "5"}
    ]
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def lambda_free_untyped(value):  # type: ignore[no-untyped-def]
    """A tool whose parameter has no annotation."""
    return value


def first_call_id(result) -> str:  # type: ignore[no-untyped-def]
    return result.tool_calls[0].call_id


async def test_parallel_tool_calls_run_concurrently_and_return_in_call_order() -> None:
    both_running = threading.Barrier(2, timeout=5)

    def slow_sync(tag: str) -> str:
        """Wait for the other call (deadlocks if calls ran one at a time)."""
        both_running.wait()
        return f"sync {tag}"

    async def fast_async(tag: str) -> str:
        """Answer at once."""
        return f"async {tag}"

    calls = [
        Call("slow_sync", {"tag": "one"}, id="id_1"),
        Call("fast_async", {"tag": "two"}, id="id_2"),
        Call("slow_sync", {"tag": "three"}, id="id_3"),
    ]
    model = ScriptedModel([Reply(tool_calls=calls), "done"])
    agent = Agent("p", "Parallel.", model=model.model, tools=[slow_sync, fast_async])
    result = await agent.run("go")
    assert [(r.call_id, r.result) for r in result.tool_calls] == [
        ("id_1", "sync one"),
        ("id_2", "async two"),
        ("id_3", "sync three"),
    ]
    sent = model.requests[1].tool_results
    assert [(m["tool_call_id"], m["content"]) for m in sent] == [
        ("id_1", "sync one"),
        ("id_2", "async two"),
        ("id_3", "sync three"),
    ]


async def test_model_mistakes_go_back_to_the_model_and_are_recorded() -> None:
    def boom(x: int) -> int:
        """Fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    Call("ad", {"a": 1}),
                    Call("add", "{not json"),
                    Call("add", {"a": "one", "b": 2}),
                    Call("boom", {"x": 1}),
                ]
            ),
            "recovered",
        ]
    )
    agent = Agent("m", "Mistakes.", model=model.model, tools=[add, boom])
    result = await agent.run("go")
    assert result.output == "recovered"
    errors = [r.error for r in result.tool_calls]
    assert errors[0] == "Unknown tool 'ad'. Available tools: add, boom."
    assert errors[1] is not None
    assert "not valid JSON" in errors[1]
    assert errors[2] is not None
    assert "a: Input should be a valid integer" in errors[2]
    assert errors[3] == "Tool 'boom' raised RuntimeError: disk on fire"
    assert [m["content"] for m in model.requests[1].tool_results] == errors


async def test_max_turns_ends_a_runaway_loop() -> None:
    model = ScriptedModel([Reply.tool("add", a=1, b=1)] * 3)
    agent = Agent("loop", "Loops.", model=model.model, tools=[add], max_turns=3)
    with pytest.raises(
        MaxTurnsExceeded,
        match=r"made 3 model calls without a final answer \(max_turns=3\); raise max_turns",
    ) as info:
        await agent.run("go")
    assert info.value.agent_name == "loop"
    assert info.value.max_turns == 3


async def test_agent_is_frozen_and_stateless_across_runs() -> None:
    model = FunctionModel(lambda r: f"saw {len(r.messages)} messages")
    agent = Agent("s", "Stateless.", model=model.model)
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.name = "x"  # type: ignore[misc]
    first = await agent.run("FIRST-TASK")
    second = await agent.run("SECOND-TASK")
    assert first.output == second.output == "saw 2 messages"
    assert model.requests[1].user == "SECOND-TASK"
    assert all("FIRST-TASK" not in str(m) for m in model.requests[1].messages)


async def test_extra_tools_and_hint_are_run_local() -> None:
    def secret() -> str:
        """Tell the secret."""
        return "42"

    model = ScriptedModel([Reply.tool("secret"), "ok", "plain"])
    agent = Agent("e", "Extra.", model=model.model, tools=[add])
    await agent.run("go", extra_tools=[secret], context_hint="HINT TEXT")
    await agent.run("again")
    assert model.requests[0].tool_names == ["add", "secret"]
    assert "HINT TEXT" in model.requests[0].system
    assert model.requests[2].tool_names == ["add"]
    assert "HINT TEXT" not in model.requests[2].system
    assert [t.name for t in agent.tools] == ["add"]
    with pytest.raises(UserError, match="already has a tool named 'add'"):
        await agent.run("go", extra_tools=[add])
    with pytest.raises(UserError, match="already has a tool named 'add'"):  # a Tool, too
        await agent.run("go", extra_tools=[function_tool(add)])
    with pytest.raises(UserError, match="two tools named 'secret'"):
        await agent.run("go", extra_tools=[function_tool(secret), function_tool(secret)])


async def test_what_runs_share_is_kept_only_for_what_it_was_made_for() -> None:
    # An agent keeps what its runs share (tool specs, the call's fixed arguments, its name
    # in errors): a list of extra tools filled in after a run, or a renamed twin, gets its own.
    def secret() -> str:
        """Tell the secret."""
        return "42"

    model = ScriptedModel(["one", Reply.tool("secret"), "two", Fail(401, "bad key")])
    agent = Agent("e", "Extra.", model=model.model, tools=[add])
    extra: list[Tool] = []
    await agent.run("go", extra_tools=extra)
    extra.append(function_tool(secret))
    await agent.run("go", extra_tools=extra)
    assert model.requests[0].tool_names == ["add"]
    assert model.requests[1].tool_names == ["add", "secret"]
    with pytest.raises(ModelError, match=r"^Agent 'e#2': "):
        await agent.renamed("e#2").run("go")


async def test_context_without_hint_is_rendered_in_full() -> None:
    model = ScriptedModel(["ok"])
    ctx = SharedContext()
    ctx.set("researcher", "FULL RESEARCH", summary="short")
    await Agent("w", "Write.", model=model.model).run("go", ctx)
    assert framed(model.requests[0].system) == [("researcher", None, "FULL RESEARCH")]


async def test_agent_without_tools_makes_one_call() -> None:
    model = ScriptedModel(["only answer"])
    result = await Agent("d", "Direct.", model=model.model).run("go")
    assert result.output == "only answer"
    assert result.summary == "only answer"
    assert len(result.llm_calls) == 1
    assert model.requests[0].tools == []


async def test_a_tool_call_to_an_agent_without_tools_goes_back_as_an_unknown_tool() -> None:
    model = ScriptedModel([Reply.tool("search", query="tea"), "answered without it"])
    result = await Agent("d", "Direct.", model=model.model).run("go")
    assert result.output == "answered without it"
    unknown = "Unknown tool 'search'. Available tools: none."
    [record] = result.tool_calls
    assert (record.tool_name, record.arguments, record.error) == (
        "search",
        '{"query": "tea"}',
        unknown,
    )
    assert [c.tool_calls for c in result.llm_calls] == [1, 0]
    assert model.requests[1].tool_results == [
        {"role": "tool", "tool_call_id": record.call_id, "content": unknown}
    ]
    assert result.messages[2]["tool_calls"][0]["function"]["name"] == "search"
    model.assert_consumed()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "has space"}, "Agent name 'has space' is not a valid identifier"),
        ({"name": ""}, "not a valid identifier"),
        ({"model": ""}, "model must be a LiteLLM model string"),
        ({"max_turns": 0}, "max_turns must be a positive whole number"),
        ({"timeout": -1}, "timeout must be a positive number"),
        ({"retry": -1}, "max_retries must be 0 or more"),
        ({"retry": "3"}, "retry must be a RetryPolicy or a number of retries"),
        ({"fallback_models": "openai/gpt-4o"}, "fallback_models must be a list"),
        ({"max_parallel_tools": 0}, "max_parallel_tools must be a positive whole number"),
        ({"tool_timeout": 0}, "tool_timeout must be a positive number"),
        ({"tools": "add"}, "tools must be a list of functions"),
        ({"tools": [add, add]}, "two tools named 'add'"),
        ({"tools": [lambda_free_untyped]}, "parameter 'value' has no type annotation"),
    ],
    ids=[
        "space",
        "empty",
        "model",
        "turns",
        "timeout",
        "retries",
        "retry-type",
        "fallbacks-str",
        "parallel-tools",
        "tool-timeout",
        "tools-str",
        "dup-tools",
        "untyped-tool",
    ],
)
def test_bad_settings_fail_at_construction(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"name": "ok", "instructions": "x"}
    with pytest.raises(UserError, match=message):
        Agent(**{**base, **kwargs})  # type: ignore[arg-type]


def test_a_test_model_object_as_model_hints_at_its_name() -> None:
    scripted = ScriptedModel(["hi"])
    with pytest.raises(UserError) as caught:
        Agent("a", "x", model=scripted)  # type: ignore[arg-type]
    assert str(caught.value).endswith(
        f"Pass the ScriptedModel's name, not the object: model=<your ScriptedModel>.model "
        f"(here {scripted.model!r})."
    )


def test_api_key_never_shows_in_repr() -> None:
    agent = Agent("k", "x", api_key="sk-very-secret-key")
    assert "sk-very-secret" not in repr(agent)
    assert repr(agent) == "Agent('k', model='openai/gpt-4o-mini')"


async def test_empty_task_is_refused_before_any_call() -> None:
    model = ScriptedModel([])
    with pytest.raises(UserError, match="non-empty string"):
        await Agent("a", "x", model=model.model).run("  ")
    assert model.requests == []


async def test_auth_error_names_the_missing_key() -> None:
    model = ScriptedModel([Fail(401, "Incorrect API key provided: sk-abcdef123456789")])
    agent = Agent("w", "x", model=model.model)
    with pytest.raises(ModelError, match="rejected the API key \\(401\\)") as info:
        await agent.run("go")
    assert info.value.status_code == 401
    assert info.value.retryable is False
    assert "sk-abcdef123456789" not in str(info.value)
    # No made-up variable name (SWARMCORE-TEST_API_KEY) for a provider that has none.
    assert "_API_KEY" not in str(info.value)
    assert "pass api_key=" in str(info.value)
    assert len(model.requests) == 1


async def test_missing_openai_key_says_which_variable() -> None:
    agent = Agent("w", "x", model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", retry=0)
    with pytest.raises(ModelError, match="set OPENAI_API_KEY"):
        await agent.run("go")


async def test_transient_errors_are_retried() -> None:
    model = ScriptedModel([Fail(429, "slow down"), Fail(503, "busy"), "finally"])
    result = await Agent("r", "x", model=model.model, retry=2).run("go")
    assert result.output == "finally"
    assert len(model.requests) == 3


async def test_transient_errors_give_up_after_retries() -> None:
    model = ScriptedModel([Fail(500, "down"), Fail(500, "down")])
    with pytest.raises(ModelError, match=r"attempt 2 of 2.*transient") as info:
        await Agent("r", "x", model=model.model, retry=1).run("go")
    assert info.value.retryable
    assert info.value.status_code == 500


@pytest.mark.parametrize(
    ("status", "message"),
    [(400, "rejected the request \\(400\\)"), (403, "denied permission"), (404, "was not found")],
    ids=["400", "403", "404"],
)
async def test_request_errors_fail_at_once(status: int, message: str) -> None:
    model = ScriptedModel([Fail(status, "nope"), "never"])
    with pytest.raises(ModelError, match=message):
        await Agent("r", "x", model=model.model).run("go")
    assert len(model.requests) == 1


async def test_call_timeout_and_agent_timeout() -> None:
    slow = ScriptedModel([Reply(text="late", delay=2)])
    with pytest.raises(ModelError, match=r"did not answer within 0\.05s"):
        await Agent("t", "x", model=slow.model, call_timeout=0.05, retry=0).run("go")
    hang = FunctionModel(lambda r: Reply(text="late", delay=2))
    with pytest.raises(AgentError, match=r"did not finish within timeout=0\.1s"):
        await Agent("t", "x", model=hang.model, timeout=0.1).run("go")


async def test_unknown_provider_is_explained() -> None:
    with pytest.raises(ModelError, match="does not know this provider"):
        await Agent("u", "x", model="nosuchprovider/model", retry=0).run("go")


async def test_two_agents_on_one_model_run_in_parallel() -> None:
    model, started = rendezvous_model(2, text="ok")
    a, b = Agent("a", "a x", model=model.model), Agent("b", "b x", model=model.model)
    results = await asyncio.gather(a.run("go"), b.run("go"))
    assert sorted(started) == ["a", "b"]
    assert [r.output for r in results] == ["ok", "ok"]


async def test_a_model_call_does_not_carry_the_run_in_its_context() -> None:
    # LiteLLM schedules its logging in tasks that copy the model call's context and
    # outlive the call; a run state there would keep the run's tools and messages alive.
    contexts: list[contextvars.Context] = []

    def answer(request: RecordedRequest) -> Reply:
        contexts.append(contextvars.copy_context())
        if len(contexts) == 1:
            return Reply(tool_calls=[Call("add", {"a": 1, "b": 2})])
        return Reply(text="3")

    model = FunctionModel(answer)
    result = await Agent("adder", "Add.", model=model.model, tools=[add]).run("1 + 2?")

    assert result.output == "3"
    assert len(contexts) == 2
    held = [type(v) for ctx in contexts for v in ctx.values()]
    assert not [t for t in held if t.__module__ == "swarmcore.agent"], held


@pytest.mark.parametrize(
    ("spelling", "attribute", "means"),
    [
        pytest.param({"tools": None}, "tools", (), id="tools=None-means-no-tools"),
        pytest.param({"max_turns": None}, "max_turns", 10, id="max_turns=None-means-the-default"),
        pytest.param(
            {"model_settings": None}, "model_settings", {}, id="model_settings=None-means-none"
        ),
        pytest.param(
            {"fallback_models": None}, "fallback_models", (), id="fallback_models=None-means-none"
        ),
    ],
)
def test_none_means_the_default_for_common_spellings(
    spelling: dict[str, Any], attribute: str, means: object
) -> None:
    agent = Agent("a", "x", **spelling)
    assert getattr(agent, attribute) == means


async def test_model_settings_none_runs_as_the_default_and_clones() -> None:
    model = ScriptedModel([Reply(text="one"), Reply(text="two")])
    agent = Agent("a", "x", model=model.model, model_settings=None)
    assert (await Swarm(agent).run("go")).output == "one"
    warm = Agent("a", "x", model=model.model, model_settings={"temperature": 0.3})
    assert warm.clone(model_settings=None).model_settings == {}
    assert (await Swarm(warm.clone(model_settings=None)).run("go")).output == "two"


def test_model_settings_that_are_not_a_mapping_say_what_to_pass() -> None:
    with pytest.raises(UserError, match=r"model_settings must be a dict of call arguments"):
        Agent("a", "x", model_settings=[("temperature", 0.2)])  # pyright: ignore[reportArgumentType]


def test_fallback_models_that_are_not_a_list_say_what_to_pass() -> None:
    with pytest.raises(UserError, match=r"fallback_models must be a list of LiteLLM model"):
        Agent("a", "x", fallback_models=3)  # pyright: ignore[reportArgumentType]


async def test_swarm_hooks_none_means_no_hooks() -> None:
    model = ScriptedModel([Reply(text="done")])
    result = await Swarm(Agent("a", "x", model=model.model), hooks=None).run("go")
    assert result.output == "done"


@pytest.mark.parametrize(
    ("build", "replacement"),
    [
        pytest.param(
            lambda: Agent("a", "x", max_retries=3),  # pyright: ignore[reportCallIssue]
            "retry=N",
            id="Agent-max_retries",
        ),
        pytest.param(
            lambda: Agent("a", "x").clone(max_retries=3), "retry=N", id="clone-max_retries"
        ),
        pytest.param(
            lambda: Swarm(Agent("a", "x"), timeout=30),  # pyright: ignore[reportCallIssue]
            "AgentDefaults(call_timeout=...)",
            id="Swarm-timeout",
        ),
        pytest.param(
            lambda: Swarm(Agent("a", "x"), max_retries=2),  # pyright: ignore[reportCallIssue]
            "AgentDefaults(retry=N)",
            id="Swarm-max_retries",
        ),
    ],
)
def test_a_0_3_keyword_names_its_replacement(build: Any, replacement: str) -> None:
    with pytest.raises(TypeError, match=r"swarmcore 0\.3\.x") as caught:
        build()
    assert replacement in str(caught.value)
    assert "migration" in str(caught.value)


def test_an_unknown_keyword_is_still_pythons_own_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        Agent("a", "x", bogus=1)  # pyright: ignore[reportCallIssue]
