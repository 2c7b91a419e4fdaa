"""Each backend (native, LiteLLM) -> real HTTP -> MockOpenAIServer on 127.0.0.1."""

from __future__ import annotations

import pytest

from swarmcore import Agent, ModelError, Swarm, TokenUsage
from swarmcore.context import Framing
from swarmcore.events import ModelCallFinished, RunFinished
from swarmcore.llm import load_litellm
from swarmcore.testing import Call, Fail, MockOpenAIServer, RecordedRequest, Reply
from tests.helpers import nonce_of

# Once per model backend: the native OpenAI one and LiteLLM must behave the same.
pytestmark = pytest.mark.usefixtures("each_backend")


def lookup(term: str, limit: int = 2) -> list[str]:
    """Look a term up.

    Args:
        term: What to look up.
        limit: Most results.
    """
    return [f"{term} fact {i}" for i in range(limit)]


async def test_tool_loop_over_http(mock_openai_server: MockOpenAIServer) -> None:
    server = mock_openai_server
    server.add(
        Reply(
            tool_calls=[
                Call("lookup", {"term": "tea"}, id="call_a"),
                Call("lookup", {"term": "milk", "limit": 1}, id="call_b"),
            ]
        ),
        Reply(
            text="Tea and milk.\n<summary>Looked up two terms.</summary>",
            prompt_tokens=50,
            completion_tokens=7,
        ),
    )
    agent = Agent("researcher", "You research.", tools=[lookup], **server.model_kwargs)
    result = await agent.run("Tell me about tea")
    assert result.output == "Tea and milk."
    assert result.summary == "Looked up two terms."
    assert [r.result for r in result.tool_calls] == [
        '["tea fact 0","tea fact 1"]',
        '["milk fact 0"]',
    ]
    first, second = server.raw_bodies
    assert first["model"] == "test-model"
    assert first["tools"][0]["function"]["name"] == "lookup"
    assert first["tools"][0]["function"]["parameters"]["properties"]["term"] == {
        "description": "What to look up.",
        "type": "string",
    }
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert [c["id"] for c in second["messages"][2]["tool_calls"]] == ["call_a", "call_b"]
    assert [(m["tool_call_id"], m["content"]) for m in second["messages"][3:]] == [
        ("call_a", '["tea fact 0","tea fact 1"]'),
        ("call_b", '["milk fact 0"]'),
    ]
    assert result.llm_calls[1].token_usage.prompt_tokens == 50
    assert server.headers[0]["authorization"] == "Bearer sk-test-local"


async def test_a_tool_call_to_an_agent_without_tools_goes_back_over_http(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(
        Reply(tool_calls=[Call("search", {"q": "tea"}, id="call_x")]),
        Reply(text="Answered without tools."),
    )
    result = await Agent("plain", "You answer.", **server.model_kwargs).run("Tell me")
    assert result.output == "Answered without tools."
    unknown = "Unknown tool 'search'. Available tools: none."
    assert [(r.call_id, r.error) for r in result.tool_calls] == [("call_x", unknown)]
    assert [c.tool_calls for c in result.llm_calls] == [1, 0]
    first, second = server.raw_bodies
    assert "tools" not in first
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_x"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_x", "content": unknown}


async def test_swarm_over_http_in_pull_mode() -> None:
    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if "get_context" in request.tool_names and not request.tool_results:
            return Reply.tool("get_context", agent_name="first")
        seen = request.tool_results[0]["content"] if request.tool_results else "nothing"
        return Reply(text=f"{who} saw {seen}")

    with MockOpenAIServer(responder=answer) as server:
        first = Agent("first", "first agent", **server.model_kwargs)
        second = Agent("second", "second agent", **server.model_kwargs)
        result = await Swarm(first >> second, context_mode="pull").run("go")
    nonce = nonce_of(server.raw_bodies[1]["messages"][0]["content"])
    assert result.output == "second saw " + Framing(nonce).block("first", "first saw nothing")
    assert "list_context" in server.raw_bodies[1]["tools"][0]["function"]["name"]


async def test_retryable_http_errors_are_retried_then_succeed(
    mock_openai_server: MockOpenAIServer,
) -> None:
    mock_openai_server.add(Fail(429, "Rate limit reached"), Fail(502, "bad gateway"), "ok")
    agent = Agent("r", "x", retry=2, **mock_openai_server.model_kwargs)
    assert (await agent.run("go")).output == "ok"
    assert len(mock_openai_server.requests) == 3


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "rejected the API key \\(401\\)"),
        (404, "was not found \\(404\\)"),
        (400, "rejected the request \\(400\\)"),
    ],
    ids=["401", "404", "400"],
)
async def test_fatal_http_errors_fail_at_once(
    mock_openai_server: MockOpenAIServer, status: int, message: str
) -> None:
    mock_openai_server.add(Fail(status, "Incorrect API key provided: sk-test-local"), "never")
    agent = Agent("f", "x", retry=3, **mock_openai_server.model_kwargs)
    with pytest.raises(ModelError, match=message) as info:
        await agent.run("go")
    assert info.value.status_code == status
    assert "sk-test-local" not in str(info.value)
    assert len(mock_openai_server.requests) == 1


async def test_server_streams_text_and_tool_calls(mock_openai_server: MockOpenAIServer) -> None:
    litellm = load_litellm()
    mock_openai_server.add(
        Reply(text="streamed words here", prompt_tokens=9, completion_tokens=3),
        Reply(tool_calls=[Call("lookup", {"term": "tea"}, id="call_s")]),
    )
    kwargs = mock_openai_server.model_kwargs
    chunks = []
    stream = await litellm.acompletion(
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
        max_retries=0,
        **kwargs,
    )
    async for chunk in stream:
        chunks.append(chunk)
    rebuilt = litellm.stream_chunk_builder(chunks)
    assert rebuilt.choices[0].message.content == "streamed words here"
    assert rebuilt.usage.prompt_tokens == 9
    stream = await litellm.acompletion(
        messages=[{"role": "user", "content": "hi"}], stream=True, max_retries=0, **kwargs
    )
    chunks = [c async for c in stream]
    call = litellm.stream_chunk_builder(chunks).choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_s",
        "lookup",
        '{"term": "tea"}',
    )
    assert mock_openai_server.raw_bodies[0]["stream"] is True


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_cached_and_reasoning_tokens_reach_each_call_and_the_totals(
    mock_openai_server: MockOpenAIServer, streamed: bool
) -> None:
    mock_openai_server.add(
        Reply(
            tool_calls=[Call("lookup", {"term": "tea"})],
            prompt_tokens=100,
            completion_tokens=20,
            cached_tokens=64,
            reasoning_tokens=12,
        ),
        Reply(text="Tea.", prompt_tokens=130, completion_tokens=9, cached_tokens=96),
    )
    swarm = Swarm(Agent("r", "You research.", tools=[lookup], **mock_openai_server.model_kwargs))
    if streamed:
        events = [e async for e in swarm.stream("tea", text=True)]
        finished = events[-1]
        assert isinstance(finished, RunFinished)
        assert finished.result is not None
        result = finished.result
        calls = [e.usage for e in events if isinstance(e, ModelCallFinished)]
    else:
        result, calls = await swarm.run("tea"), []
    assert [b.get("stream") for b in mock_openai_server.raw_bodies] == [streamed or None] * 2
    first, second = (c.token_usage for c in result["r"].llm_calls)
    assert first == TokenUsage(
        prompt_tokens=100, completion_tokens=20, cached_tokens=64, reasoning_tokens=12
    )
    assert second == TokenUsage(prompt_tokens=130, completion_tokens=9, cached_tokens=96)
    total = TokenUsage(
        prompt_tokens=230, completion_tokens=29, cached_tokens=160, reasoning_tokens=12
    )
    assert result["r"].token_usage == result.token_usage == total
    assert result.token_usage.total_tokens == 259  # parts of prompt and completion, not extra
    if streamed:  # the events carry them too
        assert calls == [first, second]
