"""RemoteAgent against a plain a2a-sdk agent (the SDK's own server classes) over loopback HTTP.

No mocks: every test talks to :func:`tests.a2a.servers.a2a_server`, a real
uvicorn server on 127.0.0.1, through the SDK's client; local agents run on
offline models, so no key and no network are needed.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Generator

import pytest

from swarmcore import Agent, Swarm, events, loop, route
from swarmcore._policies import RetryPolicy
from swarmcore.a2a import RemoteAgent, RemoteAgentError
from swarmcore.errors import UserError
from swarmcore.testing import FunctionModel, RecordedRequest, Reply, offline_model
from tests.a2a.servers import BIG, Remote, a2a_server, agent_card, free_url

FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.01, jitter=0)
"""Retries without waiting: what is tested is that they happen, not how long they wait."""


@pytest.fixture(scope="module")
def remote() -> Generator[Remote]:
    with a2a_server() as server:
        yield server


_models: list[FunctionModel] = []
"""Test models live while their agents may run (a model string alone does not keep one)."""


def model_of(fn: Callable[[RecordedRequest], Reply | str]) -> str:
    model = FunctionModel(fn)
    _models.append(model)
    return model.model


def echo(name: str) -> Agent:
    """A local agent whose answer is everything it was given (instructions and task)."""
    return Agent(
        name, f"You are {name}.", model=model_of(lambda r: f"{name} saw: {r.system}\n---\n{r.user}")
    )


async def test_a_remote_step_runs_between_local_agents(remote: Remote) -> None:
    a = Agent("a", "Draft.", model=offline_model())
    b = echo("b")
    r = RemoteAgent(remote.url, name="r")
    result = await Swarm(a >> r >> b, context_mode="push").run("shout this please")

    assert [h.agent_name for h in result.history] == ["a", "r", "b"]
    out = result.context["r"]
    assert out.startswith("SHOUT THIS PLEASE")  # the remote upper-cased what it was sent
    # ...which was the task, then a's output, framed: a's words reached the remote.
    assert result.context["a"].upper()[:40] in out
    assert "# CONTEXT FROM EARLIER AGENTS" in out
    assert out in result.context["b"]  # b sees r's output
    r_result = result.history[1]
    assert r_result.model == f"a2a:{remote.url}"
    assert r_result.token_usage.prompt_tokens == 7  # reported in the remote's metadata
    assert r_result.token_usage.completion_tokens == 5


async def test_pull_mode_sends_earlier_outputs_in_full(remote: Remote) -> None:
    a = Agent("a", "Draft.", model=model_of(lambda r: "the secret word is zebra"))
    r = RemoteAgent(remote.url, name="r")
    result = await Swarm(a >> r, context_mode="pull").run("repeat")
    # pull mode hands a local agent tools; a remote has none, so it gets the outputs themselves
    assert "THE SECRET WORD IS ZEBRA" in result.output


async def test_the_first_step_sends_the_task_alone(remote: Remote) -> None:
    result = await Swarm(RemoteAgent(remote.url, name="r")).run("just this")
    assert result.output == "JUST THIS"
    assert remote.seen.texts[-1] == "just this"


async def test_a_remote_agent_in_a_parallel_group_and_a_route(remote: Remote) -> None:
    a = echo("a")
    r = RemoteAgent(remote.url, name="r")
    r2 = RemoteAgent(remote.url, name="r2", retries=FAST)
    b = echo("b")
    result = await Swarm((a | r) >> route({"remote": r2, "local": b}, by=lambda _: "remote")).run(
        "hello group"
    )
    assert result.context["r"].startswith("HELLO GROUP")
    assert "A SAW" not in result.context["r"]  # a sibling's output is not sent
    assert result.context["r2"].startswith("HELLO GROUP")
    assert "R2" not in result.context  # the route ran the remote branch only
    assert "b" not in result.context
    assert result.output == result.context["r2"]


async def test_a_remote_agent_in_a_loop(remote: Remote) -> None:
    r = RemoteAgent(remote.url, name="r")
    result = await Swarm(loop(r, max_iterations=2)).run("again")
    assert [h.agent_name for h in result.history] == ["r#1", "r#2"]
    assert result.context["r#2"].startswith("AGAIN")


async def test_streaming_reaches_the_events(remote: Remote) -> None:
    swarm = Swarm(RemoteAgent(remote.url, name="r"))
    hooked: list[events.Event] = []
    swarm.on()(hooked.append)
    streamed = [e async for e in swarm.stream("stream these words now", text=True)]

    deltas = [e.text for e in streamed if isinstance(e, events.TextDelta)]
    assert len(deltas) == 3  # the remote sent three artifact chunks
    assert "".join(deltas) == "STREAM THESE WORDS NOW"
    statuses = [e for e in streamed if isinstance(e, events.RemoteStatus)]
    assert [s.state for s in statuses][-2:] == ["working", "completed"]
    assert statuses[-2].message == "reading the task"
    assert all(s.agent_name == "r" and s.url == remote.url for s in statuses)
    # a Swarm hook sees the same events
    assert [e.text for e in hooked if isinstance(e, events.TextDelta)] == deltas
    assert any(isinstance(e, events.RemoteStatus) for e in hooked)


async def test_a_data_part_is_json_text_and_parsed(remote: Remote) -> None:
    result = await Swarm(RemoteAgent(remote.url, name="r")).run("data please")
    parsed = result.history[0].parsed
    assert parsed == {"answer": 42, "echo": "data please"}
    assert json.loads(result.output) == parsed
    assert '"answer": 42,' in result.output or result.output.endswith('"answer": 42}')  # not 42.0


async def test_a_failing_remote_fails_the_run_and_keeps_what_finished(remote: Remote) -> None:
    a = echo("a")
    r = RemoteAgent(remote.url, name="r")
    b = echo("b")
    with pytest.raises(RemoteAgentError) as caught:
        await Swarm(a >> r >> b).run("fail now")
    error = caught.value
    assert "remote exploded: disk full" in str(error)  # the remote's own message
    assert "'r'" in str(error)
    assert remote.url in str(error)
    assert error.state == "failed"
    assert not error.retryable
    assert error.partial is not None
    assert [h.agent_name for h in error.partial.history] == ["a"]
    assert [f.agent_name for f in error.partial.failures] == ["r"]
    assert error.partial.failures[0].model == f"a2a:{remote.url}"


async def test_a_remote_that_raises_is_a_clear_error(remote: Remote) -> None:
    with pytest.raises(RemoteAgentError, match="executor crashed"):
        await Swarm(RemoteAgent(remote.url, name="r")).run("crash please")


async def test_a_hanging_remote_times_out_and_nothing_is_lost(remote: Remote) -> None:
    a = echo("a")
    r = RemoteAgent(remote.url, name="r", timeout=1.0)
    before = len(remote.seen.cancelled)
    with pytest.raises(RemoteAgentError, match=r"did not finish within 1s") as caught:
        await Swarm(a >> r).run("hang forever")
    assert caught.value.retryable
    assert caught.value.partial is not None
    assert [h.agent_name for h in caught.value.partial.history] == ["a"]
    assert len(remote.seen.cancelled) == before + 1  # the abandoned remote task was cancelled


async def test_a_remote_that_is_down_is_retried_then_named() -> None:
    url = free_url()
    a = echo("a")
    r = RemoteAgent(url, name="r", retries=FAST)
    swarm = Swarm(a >> r)
    retries: list[events.RetryScheduled] = []
    swarm.on(events.RetryScheduled)(retries.append)
    with pytest.raises(RemoteAgentError) as caught:
        await swarm.run("anyone there")
    message = str(caught.value)
    assert url in message
    assert "could not be reached" in message
    assert caught.value.retryable
    assert len(retries) == 2  # retries=2: three attempts in all
    assert all(e.agent_name == "r" and e.model == f"a2a:{url}" for e in retries)
    assert caught.value.partial is not None
    assert [h.agent_name for h in caught.value.partial.history] == ["a"]


async def test_a_5xx_is_retried_until_the_remote_answers() -> None:
    with a2a_server(fail_first=2) as server:
        swarm = Swarm(RemoteAgent(server.url, name="r", retries=FAST))
        retries: list[events.RetryScheduled] = []
        swarm.on(events.RetryScheduled)(retries.append)
        assert (await swarm.run("second wind")).output == "SECOND WIND"
    assert server.seen.overloaded == 2
    assert ["HTTP 503" in e.error for e in retries] == [True, True]


async def test_a_5xx_past_the_retries_fails_saying_so() -> None:
    once = RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0)
    with a2a_server(fail_first=10) as server:
        r = RemoteAgent(server.url, name="r", retries=once)
        with pytest.raises(RemoteAgentError, match="answered HTTP 503") as caught:
            await Swarm(r).run("x")
    assert caught.value.retryable
    assert server.seen.overloaded == 2  # the first try and one retry


async def test_step_retries_run_a_down_remote_again() -> None:
    r = RemoteAgent(free_url(), name="r", retries=0)
    with pytest.raises(RemoteAgentError) as caught:
        await Swarm(r, step_retries=1).run("x")
    assert caught.value.partial is not None
    assert caught.value.partial.failures[0].attempts == 2


async def test_an_oversized_answer_is_refused(remote: Remote) -> None:
    a = echo("a")
    r = RemoteAgent(remote.url, name="r")
    with pytest.raises(RemoteAgentError, match=r"more than 1,000,000 characters") as caught:
        await Swarm(a >> r).run("big answer")
    assert caught.value.partial is not None
    assert [h.agent_name for h in caught.value.partial.history] == ["a"]
    # a higher limit takes it
    roomy = RemoteAgent(remote.url, name="r", max_output_chars=BIG)
    assert len((await Swarm(roomy).run("big answer")).output) == BIG


async def test_a_response_past_the_byte_cap_is_refused(remote: Remote) -> None:
    small = RemoteAgent(remote.url, name="r", max_output_chars=10)
    with pytest.raises(RemoteAgentError, match=r"sent a response of more than 65,576 bytes"):
        await Swarm(small).run("big answer")


@pytest.mark.parametrize("task", ["malformed", "notjson"])
async def test_a_malformed_response_is_a_clear_error(remote: Remote, task: str) -> None:
    a = echo("a")
    r = RemoteAgent(f"{remote.url}/bad", name="r")
    with pytest.raises(RemoteAgentError, match="sent a malformed response") as caught:
        await Swarm(a >> r).run(task)
    assert not caught.value.retryable
    assert caught.value.partial is not None
    assert [h.agent_name for h in caught.value.partial.history] == ["a"]


async def test_input_required_fails_the_step_with_the_question(remote: Remote) -> None:
    with pytest.raises(RemoteAgentError, match="which city do you mean") as caught:
        await Swarm(RemoteAgent(remote.url, name="r")).run("ask me")
    assert caught.value.state == "input-required"
    assert remote.seen.cancelled  # the task left waiting for input was cancelled
    assert "put what it needs in the task" in str(caught.value)


async def test_headers_are_sent_and_a_missing_token_says_what_to_do() -> None:
    with a2a_server(token="s3cret") as server:
        r = RemoteAgent(
            server.url, name="r", headers={"Authorization": "Bearer s3cret"}, retries=FAST
        )
        assert (await Swarm(r).run("let me in")).output == "LET ME IN"
        assert set(server.seen.authorization) == {"Bearer s3cret"}  # card and task requests

        anonymous = RemoteAgent(server.url, name="r", retries=FAST)
        with pytest.raises(RemoteAgentError, match=r"HTTP 401.*headers=") as caught:
            await Swarm(anonymous).run("let me in")
        assert not caught.value.retryable
    assert "s3cret" not in repr(r)


async def test_a_card_instead_of_a_url_and_a_card_without_streaming() -> None:
    with a2a_server(streaming=False) as server:
        card = agent_card(f"{server.url}/", streaming=False)
        r = RemoteAgent(card, name="r")
        assert r.instructions == "Upper-cases what it is sent."  # the card's description
        swarm = Swarm(r)
        streamed = [e async for e in swarm.stream("no stream", text=True)]
        finished = streamed[-1]
        assert isinstance(finished, events.RunFinished)
        assert finished.result is not None
        assert finished.result.output == "NO STREAM"
        # the whole task came at once: no chunks to stream, only the final state
        assert not any(isinstance(e, events.TextDelta) for e in streamed)


async def test_as_tool_lets_a_local_agent_delegate(remote: Remote) -> None:
    r = RemoteAgent(remote.url, name="shouter")

    def boss(request: RecordedRequest) -> Reply | str:
        if not request.tool_results:
            return Reply.tool("shouter", task="delegate me")
        return f"the remote said: {request.tool_results[-1]['content']}"

    local = Agent("boss", "Delegate.", model=model_of(boss), tools=[r.as_tool()])
    result = await Swarm(local).run("go")
    assert result.output == "the remote said: DELEGATE ME"
    assert [d.agent_name for d in result.history[0].delegations] == ["shouter"]
    assert result.history[0].delegations[0].token_usage.prompt_tokens == 7


async def test_as_tool_reports_a_remote_failure_to_the_caller(remote: Remote) -> None:
    r = RemoteAgent(remote.url, name="shouter")

    def boss(request: RecordedRequest) -> Reply | str:
        if not request.tool_results:
            return Reply.tool("shouter", task="fail please")
        return f"tool said: {request.tool_results[-1]['content']}"

    local = Agent("boss", "Delegate.", model=model_of(boss), tools=[r.as_tool()])
    result = await Swarm(local).run("go")
    assert "remote exploded: disk full" in result.output


def test_bad_settings_fail_at_construction() -> None:
    with pytest.raises(UserError, match="http"):
        RemoteAgent("ftp://nowhere", name="r")
    with pytest.raises(UserError, match="timeout"):
        RemoteAgent("http://127.0.0.1:1", name="r", timeout=-1)
    with pytest.raises(UserError, match="name"):
        RemoteAgent("http://127.0.0.1:1", name="not a name")
    r = RemoteAgent("http://127.0.0.1:1", name="r")
    assert r.clone(name="r2").name == "r2"
    assert isinstance(r.clone(name="r2"), RemoteAgent)
    with pytest.raises(UserError, match="runs on its remote"):
        r.clone(model="openai/gpt-4o")


def test_no_limit_on_a_remote_task_is_none_and_inf_warns_naming_it() -> None:
    assert RemoteAgent("http://127.0.0.1:1", name="r", timeout=None).timeout is None
    with pytest.deprecated_call(match=r"timeout=math\.inf is deprecated; pass timeout=None"):
        remote = RemoteAgent("http://127.0.0.1:1", name="r", timeout=float("inf"))
    assert remote.timeout is None


@pytest.mark.parametrize(
    "origins",
    [
        pytest.param("https://agents.example.com", id="a-string-not-a-list"),
        pytest.param(["agents.example.com"], id="no-scheme"),
        pytest.param(["ftp://agents.example.com"], id="not-http"),
        pytest.param([42], id="not-text"),
    ],
)
def test_trusted_origins_must_be_a_list_of_http_origins(origins: object) -> None:
    with pytest.raises(UserError, match="trusted_origins"):
        RemoteAgent("http://127.0.0.1:1", name="r", trusted_origins=origins)  # pyright: ignore[reportArgumentType]


def test_trusted_origins_are_kept_as_origins_and_cloned() -> None:
    r = RemoteAgent(
        "http://127.0.0.1:1",
        name="r",
        trusted_origins=["https://Tasks.Example.com/a2a/", "http://[::1]:8080"],
    )
    assert r.trusted_origins == ("https://tasks.example.com:443", "http://[::1]:8080")
    assert r.clone(name="r2").trusted_origins == r.trusted_origins


def test_the_error_survives_pickle() -> None:
    error = RemoteAgentError("boom", agent_name="r", url="http://x", retryable=True, state="failed")
    back = pickle.loads(pickle.dumps(error))
    assert (back.url, back.state, back.retryable, str(back)) == ("http://x", "failed", True, "boom")


async def test_the_cli_s_model_override_moves_local_agents_and_keeps_remote_ones(
    remote: Remote,
) -> None:
    from swarmcore.cli._targets import on_model

    a = Agent("a", "Draft.", model="openai/gpt-4o-mini", fallback_models=["openai/gpt-4o"])
    flow = on_model(a >> RemoteAgent(remote.url, name="r") >> echo("b"), "offline")
    moved, kept, _ = flow.agents
    assert isinstance(kept, RemoteAgent)
    assert kept.url == remote.url
    assert moved.fallback_models == ()
    result = await Swarm(flow).run("shout this")  # a on the offline model, r on its remote
    assert result.context["r"].startswith("SHOUT THIS")


async def test_what_a_remote_reports_spending_counts_against_the_budget(remote: Remote) -> None:
    from swarmcore import BudgetExceeded

    r = RemoteAgent(remote.url, name="r")  # the scripted remote reports 7 + 5 tokens
    with pytest.raises(BudgetExceeded) as caught:
        await Swarm(r >> echo("b"), max_tokens=12).run("shout")
    assert caught.value.agent_name == "b"  # refused: the remote spent the whole budget
    assert caught.value.spent_tokens == 12
    assert [h.agent_name for h in caught.value.partial.history] == ["r"]
    [call] = caught.value.partial.history[0].llm_calls  # the remote task, as one call
    assert call.model == f"a2a:{remote.url}"
    assert call.token_usage.total_tokens == 12
    assert call.finish_reason == "completed"
