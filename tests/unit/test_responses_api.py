"""The Responses API as the native backend speaks it: requests built, responses read."""

from __future__ import annotations

from typing import Any

import pytest

from swarmcore import Agent, AgentDefaults, Swarm, UserError
from swarmcore.llm import _openai_backend as openai_backend
from swarmcore.llm import _responses as responses
from swarmcore.llm._types import (
    CallSpec,
    EndpointError,
    LLMReply,
    LLMRequest,
    MalformedReply,
    Message,
    ToolCall,
)
from swarmcore.llm.backends import backend_for
from swarmcore.results import TokenUsage
from swarmcore.store import records
from swarmcore.testing import FunctionModel, Reply

_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    },
}
_REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}


def _body(messages: list[Message], **options: Any) -> dict[str, Any]:
    call = CallSpec(agent_name="a", model="openai/o4-mini", api="responses", **options)
    return openai_backend._body(LLMRequest(call, messages), "openai/o4-mini")  # pyright: ignore[reportPrivateUsage]


def test_a_tool_loop_conversation_becomes_input_items() -> None:
    reply = LLMReply(
        text=None,
        tool_calls=(ToolCall("c1", "add", '{"a": 1}'),),
        usage=TokenUsage(),
        cost=None,
        finish_reason="tool_calls",
        duration_seconds=0.0,
        reasoning=(_REASONING,),
    )
    messages: list[Message] = [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "1 + 2?"},
        reply.as_message(),
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
    ]
    body = _body(messages, tools=(_TOOL,))
    assert body["model"] == "o4-mini"
    assert body["instructions"] == "You add."
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "1 + 2?"},
        _REASONING,
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two numbers.",
            "parameters": _TOOL["function"]["parameters"],
            "strict": False,  # the API's default is true, which refuses a non-strict schema
        }
    ]
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]


def test_settings_are_renamed_where_the_responses_api_names_them_otherwise() -> None:
    settings = {
        "max_tokens": 300,
        "reasoning_effort": "high",
        "reasoning": {"summary": "auto"},
        "tool_choice": {"type": "function", "function": {"name": "add"}},
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "api_key": "sk-not-in-the-body",
    }
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    body = _body(
        [{"role": "user", "content": "hi"}],
        settings=settings,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "Out", "schema": schema, "strict": False},
        },
    )
    assert body["max_output_tokens"] == 300
    assert "max_tokens" not in body
    assert "api_key" not in body
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert (body["parallel_tool_calls"], body["temperature"]) == (False, 0.2)
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "Out", "schema": schema, "strict": False}
    }
    assert "instructions" not in body


def test_a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning() -> None:
    # OpenAI refuses the include for it: "Encrypted content is not supported with this model."
    call = CallSpec(agent_name="a", model="openai/gpt-4o-mini", api="responses")
    request = LLMRequest(call, [{"role": "user", "content": "hi"}])
    body = openai_backend._body(request, "openai/gpt-4o-mini")  # pyright: ignore[reportPrivateUsage]
    assert body["store"] is False
    assert "include" not in body


def test_a_stored_conversation_asks_for_no_encrypted_reasoning() -> None:
    body = _body([{"role": "user", "content": "hi"}], settings={"store": True})
    assert body["store"] is True
    assert "include" not in body


def test_content_parts_are_converted() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    body = _body([{"role": "user", "content": [{"type": "text", "text": "see"}, image]}])  # pyright: ignore[reportArgumentType]
    assert body["input"][0]["content"] == [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
    ]


def test_chat_completions_never_get_reasoning_items() -> None:
    message: Message = {"role": "assistant", "content": "ok", "reasoning": [dict(_REASONING)]}
    call = CallSpec(agent_name="a", model="openai/gpt-4o-mini")
    body = openai_backend._body(LLMRequest(call, [message]), "openai/gpt-4o-mini")  # pyright: ignore[reportPrivateUsage]
    assert body["messages"] == [{"role": "assistant", "content": "ok"}]


def _response(**fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "error": None,
        "model": "o4-mini-2025-04-16",
        "output": [
            _REASONING,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Adding.", "annotations": []}],
            },
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"},
        ],
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 40},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 20},
            "total_tokens": 130,
        },
        **fields,
    }


def test_a_response_is_read_with_its_calls_reasoning_and_usage() -> None:
    whole = responses.response(_response())
    assert whole.text == "Adding."
    assert whole.tool_calls == (ToolCall("c1", "add", "{}"),)
    assert whole.reasoning == (_REASONING,)
    assert whole.usage == TokenUsage(
        prompt_tokens=100, completion_tokens=30, cached_tokens=40, reasoning_tokens=20
    )
    assert (whole.finish_reason, whole.model, whole.has_usage) == (
        "tool_calls",
        "o4-mini-2025-04-16",
        True,
    )


def test_an_incomplete_response_finishes_as_length() -> None:
    cut = _response(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert responses.response(cut).finish_reason == "length"
    filtered = _response(status="incomplete", incomplete_details={"reason": "content_filter"})
    assert responses.response(filtered).finish_reason == "content_filter"


def test_a_failed_response_raises_the_providers_error() -> None:
    failed = _response(status="failed", error={"code": "server_error", "message": "boom"})
    with pytest.raises(EndpointError) as caught:
        responses.response(failed)
    assert caught.value.message == "boom"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"choices": []}, "no output"),
        (_response(status="in_progress"), "not finished"),
        (_response(output=[{"type": "function_call", "name": "x"}]), "has no id"),
        (
            _response(
                output=[{"type": "message", "content": [{"type": "output_text", "text": 5}]}]
            ),
            "not text",
        ),
        (_response(usage={"input_tokens": -1}), r"^usage\.input_tokens is -1, not a token"),
        (
            _response(usage={"output_tokens_details": {"reasoning_tokens": "x"}}),
            r"^usage\.output_tokens_details\.reasoning_tokens is a str",
        ),
    ],
)
def test_a_malformed_response_says_what_is_wrong(data: object, said: str) -> None:
    with pytest.raises(MalformedReply, match=said):
        responses.response(data)


# --- choosing the API --------------------------------------------------------------------


def test_the_api_is_checked_where_it_is_given() -> None:
    with pytest.raises(UserError, match=r"unknown OpenAI API 'chat'; use one of chat_completions"):
        Agent("a", "x", api="chat")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="native backend only"):
        Agent("a", "x", api="responses", backend="litellm")
    with pytest.raises(UserError, match="AgentDefaults: api='responses' is spoken by the native"):
        AgentDefaults(api="responses", backend="litellm")


def test_an_agent_takes_the_swarms_api_unless_it_chose_its_own() -> None:
    defaults = AgentDefaults(api="responses")
    assert defaults.resolve(Agent("a", "x")).api == "responses"
    assert defaults.resolve(Agent("a", "x", api="chat_completions")).api == "chat_completions"
    assert AgentDefaults().resolve(Agent("a", "x")).api is None


def test_an_openai_model_sent_through_litellm_refuses_the_responses_api() -> None:
    # The backend chosen where Agent() cannot see it (a Swarm's defaults, the environment).
    call = CallSpec("a", "openai/o4-mini", backend="litellm", api="responses")
    with pytest.raises(UserError, match="'openai/o4-mini' goes through LiteLLM"):
        backend_for(call, call.model)
    # Another provider's model has neither OpenAI API: a Swarm's api= is not for it.
    other = CallSpec("a", "anthropic/claude-sonnet-4-5", api="responses")
    assert type(backend_for(other, other.model)).__name__ == "LiteLLMBackend"


@pytest.mark.parametrize(
    ("settings", "named"),
    [({"seed": 7}, "'seed'"), ({"stop": ["x"], "logprobs": True}, "'logprobs', 'stop'")],
    ids=["seed", "stop-and-logprobs"],
)
def test_the_responses_api_beside_a_setting_it_refuses_is_refused_at_construction(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(UserError) as caught:
        Agent("a", "x", model="openai/o4-mini", api="responses", model_settings=settings)
    assert str(caught.value) == (
        f"Agent 'a': api='responses' and model_settings {named} disagree: OpenAI's Responses "
        "API refuses that setting (only chat completions take it), so every call would fail "
        "with a 400; drop it from model_settings, or choose api='chat_completions'."
    )
    # A fallback that is an OpenAI model would speak it too.
    with pytest.raises(UserError, match="disagree"):
        Agent(
            "a",
            "x",
            model="anthropic/claude-sonnet-4-5",
            fallback_models=["gpt-5"],
            api="responses",
            model_settings=settings,
        )
    # Chat completions take them; another provider's model ignores api=.
    Agent("a", "x", model="openai/o4-mini", api="chat_completions", model_settings=settings)
    Agent("a", "x", model="anthropic/claude-sonnet-4-5", api="responses", model_settings=settings)


def test_the_swarms_default_api_beside_an_agents_refused_setting_is_refused() -> None:
    defaults = AgentDefaults(api="responses")
    seeded = Agent("a", "x", model="openai/gpt-4o-mini", model_settings={"seed": 7})
    with pytest.raises(
        UserError,
        match=r"^Agent 'a' \(its api from the Swarm's AgentDefaults\): "
        r"api='responses' and model_settings 'seed' disagree",
    ):
        Swarm(seeded, defaults=defaults)
    delegate = Agent("helper", "x", model="openai/gpt-4o-mini", model_settings={"stop": ["x"]})
    lead = Agent("lead", "x", model="openai/gpt-4o-mini", tools=[delegate.as_tool()])
    with pytest.raises(UserError, match=r"^Agent 'helper' .*'stop' disagree"):
        Swarm(lead, defaults=defaults)  # a delegate runs on the Swarm's defaults too
    # An agent that chose its own API, or whose model the API is not for, is left alone.
    chose = Agent(
        "b", "x", model="openai/gpt-4o-mini", api="chat_completions", model_settings={"seed": 7}
    )
    other = Agent("c", "x", model="anthropic/claude-sonnet-4-5", model_settings={"stop": ["x"]})
    Swarm(chose >> other, defaults=defaults)
    Swarm(seeded)  # without the default, chat completions as before


async def test_an_in_process_test_model_answers_whatever_api_the_agent_chose() -> None:
    # The offline, function and replay models (and a dry run's) have no wire to speak it on.
    model = FunctionModel(lambda request: Reply(text=f"heard {request.user}"))
    agent = Agent("a", "x", model=model.model, api="responses")
    assert (await agent.run("hi")).output == "heard hi"
    dry = await Swarm(agent).dry_run("hi")
    assert dry.agents[0].model_calls == 1


# --- streaming ---------------------------------------------------------------------------


def test_a_stream_publishes_text_deltas_and_ends_with_the_completed_response() -> None:
    stream = responses.StreamedResponse()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"status": "in_progress", "output": []}},
        {"type": "response.output_text.delta", "delta": "Add"},
        {"type": "response.function_call_arguments.delta", "delta": "{}"},
        {"type": "response.output_text.delta", "delta": "ing."},
        {"type": "response.completed", "response": _response()},
    ]
    assert [stream.add(e) for e in events] == [None, "Add", None, "ing.", None]
    whole = stream.whole("text/event-stream")
    assert (whole.text, whole.tool_calls, whole.reasoning) == (
        "Adding.",
        (ToolCall("c1", "add", "{}"),),
        (_REASONING,),
    )
    assert whole.usage.reasoning_tokens == 20


def test_a_streamed_reasoning_summary_goes_to_its_own_callback() -> None:
    summary: list[str] = []
    stream = responses.StreamedResponse(summary.append)
    delta = {"type": "response.reasoning_summary_text.delta", "delta": "Sum "}
    assert stream.add(delta) is None  # never the answer's text
    stream.add({**delta, "delta": "them."})
    assert summary == ["Sum ", "them."]


def test_streamed_arguments_go_to_their_own_callback_naming_their_call() -> None:
    pieces: list[tuple[int, ToolCall]] = []
    stream = responses.StreamedResponse(on_tool_call=lambda i, call: pieces.append((i, call)))
    call = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": ""}

    def arguments(at: object, delta: str) -> dict[str, Any]:
        return {
            "type": "response.function_call_arguments.delta",
            "output_index": at,
            "delta": delta,
        }

    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning"}},
        {"type": "response.output_item.added", "output_index": 1, "item": call},
        arguments(1, '{"a": '),
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {**call, "call_id": "c2"},
        },
        arguments(2, "{}"),
        arguments(1, "1}"),
        arguments(7, "?"),  # no call was added there: the final response is what counts
        arguments([1], "?"),
        arguments(1, ""),
    ]
    assert [stream.add(e) for e in events] == [None] * len(events)  # never the answer's text
    assert pieces == [
        (0, ToolCall("c1", "add", '{"a": ')),
        (1, ToolCall("c2", "add", "{}")),
        (0, ToolCall("c1", "add", "1}")),
    ]


def test_a_stream_cut_short_or_failed_says_so() -> None:
    stream = responses.StreamedResponse()
    stream.add({"type": "response.output_text.delta", "delta": "Add"})
    with pytest.raises(MalformedReply, match=r"without response\.completed: it was cut short"):
        stream.whole("text/event-stream")
    with pytest.raises(MalformedReply, match="not a stream"):
        responses.StreamedResponse().whole("text/html")
    failed = _response(status="failed", error={"code": "server_error", "message": "overloaded"})
    with pytest.raises(EndpointError, match="overloaded"):
        responses.StreamedResponse().add({"type": "response.failed", "response": failed})


def test_a_recorded_reply_keeps_its_reasoning_for_replay() -> None:
    reply = LLMReply(
        text="ok",
        tool_calls=(),
        usage=TokenUsage(),
        cost=None,
        finish_reason="stop",
        duration_seconds=0.1,
        reasoning=(_REASONING,),
    )
    again = records.loads(records.dumps(reply))
    assert again == reply
    assert again.as_message()["reasoning"] == [_REASONING]


_OFFERED = (_TOOL,)


def test_a_setting_only_chat_completions_take_keeps_them_unless_the_agent_chooses() -> None:
    settings = {"seed": 7}
    call = CallSpec(agent_name="a", model="openai/o4-mini", tools=_OFFERED, settings=settings)
    assert responses.chosen(call, call.model) is False
    chosen = CallSpec("a", "openai/o4-mini", tools=_OFFERED, settings=settings, api="responses")
    assert responses.chosen(chosen, chosen.model) is True


@pytest.mark.parametrize(
    ("model", "tools", "api", "speaks_responses"),
    [
        ("openai/o4-mini", _OFFERED, None, True),  # a reasoning model with tools
        ("gpt-5", _OFFERED, None, True),  # a bare OpenAI name
        ("openai/o4-mini", (), None, False),  # without tools chat completions take it
        ("openai/gpt-4o-mini", _OFFERED, None, False),  # no reasoning model
        ("openai/test-model", _OFFERED, None, False),  # unknown: chat completions, as before
        ("openai/o4-mini", _OFFERED, "chat_completions", False),  # the agent's choice wins
        ("openai/gpt-4o-mini", (), "responses", True),
    ],
)
def test_which_api_a_model_speaks(
    model: str, tools: tuple[Any, ...], api: Any, speaks_responses: bool
) -> None:
    call = CallSpec(agent_name="a", model=model, tools=tools, api=api)
    assert responses.chosen(call, model) is speaks_responses
