"""ToolCallRecord.parsed_arguments: the model's JSON arguments as a dict.

0.3.x records held a dict in ``arguments``; 1.0 keeps the raw JSON text there,
so ``call.arguments["query"]`` raises TypeError. The accessor gives the dict
back (docs/migration.md points 0.3.x code to it).
"""

from __future__ import annotations

import pytest

from swarmcore import Agent, ToolCallRecord
from swarmcore.testing import Call, Reply, ScriptedModel


def search(query: str, limit: int = 3) -> str:
    """Search the notes.

    Args:
        query: What to look for.
        limit: The most notes to return.
    """
    return f"{limit} notes on {query}"


def ping() -> str:
    """Check the service."""
    return "pong"


async def test_parsed_arguments_of_a_run_are_the_models_object() -> None:
    model = ScriptedModel([Reply.tool("search", query="agents", limit=2, tags=["a", "b"]), "done"])
    result = await Agent("r", "Research.", model=model.model, tools=[search]).run("go")
    [call] = result.tool_calls
    assert call.arguments == '{"query": "agents", "limit": 2, "tags": ["a", "b"]}'
    assert call.parsed_arguments == {"query": "agents", "limit": 2, "tags": ["a", "b"]}
    assert call.parsed_arguments["query"] == "agents"
    with pytest.raises(TypeError):  # what 0.3.x code meets: arguments is text now
        call.arguments["query"]  # type: ignore[index]


async def test_parsed_arguments_is_a_new_dict_and_never_stored() -> None:
    model = ScriptedModel([Reply.tool("search", query="agents"), "done"])
    result = await Agent("r", "Research.", model=model.model, tools=[search]).run("go")
    [call] = result.tool_calls
    call.parsed_arguments["query"] = "changed"
    assert call.parsed_arguments == {"query": "agents"}
    dumped = call.model_dump_json()
    assert "parsed_arguments" not in dumped
    assert ToolCallRecord.model_validate_json(dumped) == call


async def test_empty_arguments_are_an_empty_dict() -> None:
    model = ScriptedModel([Reply(tool_calls=[Call("ping", "")]), "done"])
    result = await Agent("p", "Ping.", model=model.model, tools=[ping]).run("go")
    [call] = result.tool_calls
    assert (call.error, call.result) == (None, "pong")
    assert call.parsed_arguments == {}


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"query": "agen', "not valid JSON"),
        ('["agents"]', "JSON but not an object"),
    ],
)
async def test_arguments_the_tool_never_ran_with_say_so(raw: str, says: str) -> None:
    model = ScriptedModel([Reply(tool_calls=[Call("search", raw, id="c7")]), "done"])
    result = await Agent("r", "Research.", model=model.model, tools=[search]).run("go")
    [call] = result.tool_calls
    assert call.error is not None
    assert call.arguments == raw
    with pytest.raises(ValueError, match=rf"Tool call c7 to 'search'.*{says}.*record's error"):
        _ = call.parsed_arguments
