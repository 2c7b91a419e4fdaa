from __future__ import annotations

import asyncio
import json
import re
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from swarmcore import Tool, UserError, function_tool
from swarmcore._tools import run_tool_call


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    number: int = 1


def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    scores: dict[str, int],
    maybe: str | None,
    mode: Literal["fast", "slow"],
    colour: Colour,
    address: Address,
    limit: Annotated[int, Field(description="At most this many.", ge=1, le=10)] = 5,
) -> str:
    """Do everything at once.

    More detail that is not the first paragraph.

    Args:
        text: Some text.
        count: How many
            (a continuation line).
        ratio (float): A ratio.
        flag: A flag.
        tags: Tags.
        scores: Scores by name.
        maybe: Optional text.
        mode: Speed.
        colour: A colour.
        address: Where.
        limit: Overridden by the Field description.

    Returns:
        A string.
    """
    return f"{text}:{count}:{address.street}:{colour.value}:{limit}"


def test_schema_covers_every_supported_type() -> None:
    tool = function_tool(everything)
    assert tool.name == "everything"
    assert tool.description == "Do everything at once."
    params = tool.parameters
    props = params["properties"]
    assert props["text"] == {"type": "string", "description": "Some text."}
    assert props["count"]["type"] == "integer"
    assert props["count"]["description"] == "How many (a continuation line)."
    assert props["ratio"] == {"type": "number", "description": "A ratio."}
    assert props["flag"]["type"] == "boolean"
    assert props["tags"]["type"] == "array"
    assert props["tags"]["items"] == {"type": "string"}
    assert props["scores"]["additionalProperties"] == {"type": "integer"}
    assert {"type": "null"} in props["maybe"]["anyOf"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["colour"]["$ref"] == "#/$defs/Colour"
    assert params["$defs"]["Colour"]["enum"] == ["red", "blue"]
    assert params["$defs"]["Address"]["required"] == ["street"]
    assert props["limit"]["description"] == "At most this many."
    assert props["limit"]["maximum"] == 10
    assert props["limit"]["default"] == 5
    assert set(params["required"]) == {
        "text",
        "count",
        "ratio",
        "flag",
        "tags",
        "scores",
        "maybe",
        "mode",
        "colour",
        "address",
    }
    assert params["additionalProperties"] is False
    assert "title" not in params
    assert "title" not in props["text"]
    assert tool.spec == {
        "type": "function",
        "function": {"name": "everything", "description": tool.description, "parameters": params},
    }


async def test_arguments_are_validated_and_converted() -> None:
    tool = function_tool(everything)
    args = {
        "text": "t",
        "count": 2,
        "ratio": 0.5,
        "flag": True,
        "tags": [],
        "scores": {},
        "maybe": None,
        "mode": "fast",
        "colour": "blue",
        "address": {"street": "Main"},
    }
    assert await tool.invoke(json.dumps(args)) == "t:2:Main:blue:5"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"text": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ('{"text": "a", "count": "many"}', "count: Input should be a valid integer"),
        ('{"text": "a", "count": 1, "bogus": 1}', "Extra inputs are not permitted"),
    ],
    ids=["malformed", "not-object", "wrong-type", "extra"],
)
async def test_bad_arguments_become_error_results(arguments: str, message: str) -> None:
    def small(text: str, count: int) -> str:
        """Small tool."""
        return text * count

    record = await run_tool_call({"small": function_tool(small)}, "c1", "small", arguments)
    assert record.error is not None
    assert message in record.error
    assert record.result == record.error
    assert record.call_id == "c1"


async def test_unknown_tool_and_raising_tool_become_error_results() -> None:
    def boom(x: int) -> int:
        """Explode."""
        raise ValueError(f"bad x {x}")

    tools = {"boom": function_tool(boom)}
    unknown = await run_tool_call(tools, "c1", "bom", "{}")
    assert unknown.error == "Unknown tool 'bom'. Available tools: boom."
    raised = await run_tool_call(tools, "c2", "boom", '{"x": 3}')
    assert raised.error == "Tool 'boom' raised ValueError: bad x 3"


@dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        (Address(street="Main"), '{"street":"Main","number":1}'),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        ([Address(street="A")], '[{"street":"A","number":1}]'),
        (Point(1, 2), '{"x":1,"y":2}'),
        (None, "null"),
        (3.5, "3.5"),
    ],
    ids=["str", "model", "dict", "list-of-models", "dataclass", "none", "float"],
)
async def test_results_are_serialised_to_json(value: object, expected: str) -> None:
    def give() -> object:
        """Give the value."""
        return value

    assert await function_tool(give).invoke("{}") == expected


async def test_sync_tools_run_in_a_worker_thread() -> None:
    main_thread = threading.get_ident()

    def where() -> int:
        """Report the thread."""
        return threading.get_ident()

    async def where_async() -> int:
        """Report the thread."""
        return threading.get_ident()

    assert int(await function_tool(where).invoke("")) != main_thread
    assert int(await function_tool(where_async).invoke("")) == main_thread
    # A blocked sync tool does not block the event loop.
    release = threading.Event()

    def blocked() -> str:
        """Wait."""
        release.wait(5)
        return "released"

    task = asyncio.create_task(function_tool(blocked).invoke(""))
    await asyncio.sleep(0.01)
    release.set()
    assert await task == "released"


class Opaque:
    pass


def no_annotation(x) -> str:  # type: ignore[no-untyped-def]
    """Missing annotation."""
    return str(x)


def star_args(*items: str) -> str:
    """Star args."""
    return "".join(items)


def opaque(thing: Opaque) -> str:
    """Unsupported type."""
    return "x"


def object_typed(payload: object) -> str:
    """Meant a JSON object."""
    return "x"


def object_named(payload: "object") -> str:  # noqa: UP037 -- the string is the point
    """Meant a JSON object, written as a string."""
    return "x"


def json_named(text: "string", count: "integer") -> str:  # type: ignore[name-defined]  # noqa: F821, UP037
    """JSON Schema's type names, not Python's."""
    return "x"


NO_SCHEMA = (
    "has type object, which gives the model no schema at all; write dict[str, Any] "
    "(or a pydantic model) for a JSON object, or Any for any value."
)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (no_annotation, "Tool 'no_annotation': parameter 'x' has no type annotation"),
        (object_typed, "^Tool 'object_typed': parameter 'payload' " + re.escape(NO_SCHEMA)),
        (object_named, "^Tool 'object_named': parameter 'payload' " + re.escape(NO_SCHEMA)),
        (json_named, re.escape("Annotate with Python types (text: str, count: int).")),
        (star_args, "parameter 'items' is \\*args or \\*\\*kwargs"),
        (opaque, "parameter 'thing' has type Opaque, which cannot become a JSON schema"),
        (lambda x: x, "Tool name '<lambda>' is not a valid identifier"),
    ],
    ids=[
        "no-annotation",
        "object",
        "object-as-string",
        "json-type-names",
        "star-args",
        "opaque-type",
        "lambda",
    ],
)
def test_unusable_signatures_fail_when_built(fn: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        function_tool(fn)  # type: ignore[arg-type]


def test_tool_can_be_renamed_and_bound() -> None:
    def f(x: int) -> int:
        """Double."""
        return 2 * x

    tool = function_tool(f, name="double", description="Doubles x.")
    assert isinstance(tool, Tool)
    assert tool.name == "double"
    assert tool.description == "Doubles x."
    rebound = tool.bind(lambda x: 3 * x)
    assert rebound.parameters is tool.parameters
    assert asyncio.run(rebound.invoke('{"x": 2}')) == "6"


def test_parameter_named_like_a_pydantic_attribute() -> None:
    def shadow(json: str, schema: int = 1) -> str:
        """Parameters that shadow BaseModel attributes."""
        return f"{json}{schema}"

    tool = function_tool(shadow)
    assert set(tool.parameters["properties"]) == {"json", "schema"}
    assert asyncio.run(tool.invoke('{"json": "a", "schema": 2}')) == "a2"
