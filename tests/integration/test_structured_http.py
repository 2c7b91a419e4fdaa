"""Structured output and the text tool protocol over real HTTP, on both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from swarmcore import Agent
from swarmcore._text_tools import text_tool_marker
from swarmcore.testing import Call, MockOpenAIServer, Reply

# Once per model backend: the native OpenAI one and LiteLLM must behave the same.
pytestmark = pytest.mark.usefixtures("each_backend")


class City(BaseModel):
    name: str = Field(description="The city's name.")
    population: int = Field(description="People living there.")


OSLO_JSON = '{"name": "Oslo", "population": 709000}'


def population(city: str) -> int:
    """Look up how many people live in a city.

    Args:
        city: The city's name.
    """
    return {"Oslo": 709000}.get(city, 0)


def on(server: MockOpenAIServer, model: str) -> dict[str, Any]:
    """Agent keyword arguments for ``model`` served by ``server``."""
    return {"model": model, "api_base": server.url, "api_key": "sk-test-local"}


def system_of(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


async def test_native_structured_output_over_http(mock_openai_server: MockOpenAIServer) -> None:
    server = mock_openai_server
    server.add(Reply(text=OSLO_JSON))
    # LiteLLM's model data says gpt-4o-mini supports response_schema: auto picks native.
    agent = Agent("city", "You find cities.", output_type=City, **on(server, "openai/gpt-4o-mini"))
    result = await agent.run("Largest city in Norway?")
    [body] = server.raw_bodies
    assert body["model"] == "gpt-4o-mini"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "schema": City.model_json_schema(), "strict": False},
    }
    assert "tools" not in body
    assert "City schema" in system_of(body)
    assert "<summary>" not in system_of(body)
    assert result.parsed == City(name="Oslo", population=709000)
    assert result.output == '{\n  "name": "Oslo",\n  "population": 709000\n}'


async def test_text_structured_output_over_http_with_a_retry(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(
        Reply(text='Here: {"name": "Oslo"}'),
        Reply(text=f"```json\n{OSLO_JSON}\n```"),
    )
    # an unknown model: auto uses the text protocol
    agent = Agent("city", "You find cities.", output_type=City, **server.model_kwargs)
    result = await agent.run("Largest city in Norway?")
    first, second = server.raw_bodies
    assert "response_format" not in first
    assert json.dumps(City.model_json_schema(), separators=(",", ":")) in system_of(first)
    assert second["messages"][-2] == {"role": "assistant", "content": 'Here: {"name": "Oslo"}'}
    assert second["messages"][-1]["role"] == "user"
    assert "population" in second["messages"][-1]["content"]
    assert result.parsed == City(name="Oslo", population=709000)


async def test_text_tool_protocol_over_http_sends_no_tools(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    # Written by the server as the text protocol's block, with the marker from the prompt.
    server.add(
        Reply(text="Looking it up.", tool_calls=[Call("population", {"city": "Oslo"})]),
        Reply(text="Oslo has 709000 people.\n<summary>Oslo's population.</summary>"),
    )
    agent = Agent(
        "counter",
        "You count people.",
        tools=[population],
        tool_protocol="text",
        **on(server, "openai/gpt-4o-mini"),
    )
    result = await agent.run("How many people live in Oslo?")
    first, second = server.raw_bodies
    for body in (first, second):
        assert "tools" not in body
        assert "tool_choice" not in body
        assert all(m["role"] in ("system", "user", "assistant") for m in body["messages"])
    assert "- population: Look up how many people live in a city." in system_of(first)
    marker = text_tool_marker(system_of(first))
    assert marker is not None
    assert second["messages"][-2]["content"].startswith(
        f"Looking it up.\n\n```tool_calls {marker}\n"
    )
    [record] = result.tool_calls
    assert (record.tool_name, record.arguments, record.result) == (
        "population",
        '{"city": "Oslo"}',
        "709000",
    )
    assert second["messages"][-1] == {
        "role": "user",
        "content": f"Tool results:\n\n## population ({record.call_id})\n709000",
    }
    assert result.output == "Oslo has 709000 people."
    assert result.summary == "Oslo's population."


async def test_structured_output_with_text_tools_over_http(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(
        Reply.tool("population", city="Oslo"),
        Reply(text=OSLO_JSON),
    )
    agent = Agent(
        "city",
        "You find cities.",
        tools=[population],
        output_type=City,
        tool_protocol="text",
        **on(server, "openai/gpt-4o-mini"),
    )
    result = await agent.run("Largest city in Norway?")
    first, second = server.raw_bodies
    assert "tools" not in first
    assert first["response_format"]["type"] == "json_schema"  # native output, text tools
    assert second["messages"][-1]["content"].endswith("\n709000")
    assert result.tool_calls[0].result == "709000"
    assert result.parsed == City(name="Oslo", population=709000)
