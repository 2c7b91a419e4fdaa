"""Structured output, the text tool protocol, and direct vs tool mode."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from swarmcore import (
    Agent,
    AgentError,
    OutputValidationError,
    Swarm,
    UserError,
    loop,
)
from swarmcore._structured import json_candidates
from swarmcore._text_tools import text_tool_marker
from swarmcore.agent import SUMMARY_INSTRUCTION
from swarmcore.context import Framing
from swarmcore.store import SQLiteStore
from swarmcore.testing import Call, Fail, RecordedRequest, Reply, ScriptedModel
from tests.helpers import framed, nonce_of


class City(BaseModel):
    name: str = Field(description="The city's name.")
    population: int = Field(description="People living there.")


OSLO = City(name="Oslo", population=709000)
OSLO_JSON = '{"name": "Oslo", "population": 709000}'
WRAPPED = '{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}'
OSLO_DUMP = '{\n  "name": "Oslo",\n  "population": 709000\n}'


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def population(city: str) -> int:
    """Look up how many people live in a city.

    Args:
        city: The city's name.
    """
    return {"Oslo": 709000}.get(city, 0)


def json_values(text: str) -> list[Any]:
    """Every JSON object embedded in ``text`` (independent of the code under test)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    index = text.find("{")
    while index >= 0:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        values.append(value)
        index = text.find("{", end)
    return values


def last_message(request: RecordedRequest) -> dict[str, Any]:
    return request.messages[-1]


# --- json_candidates ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', ['{"a": 1}']),
        ("  [1, 2]\n", ["[1, 2]"]),
        ('{"a": {"b": [1, {"c": 2}]}}', ['{"a": {"b": [1, {"c": 2}]}}']),
        ("42", ["42"]),
        ('Here it is:\n```json\n{"a": 1}\n```\nDone.', ['{"a": 1}']),
        ("```\n[1, 2]\n```", ["[1, 2]"]),
        ('```JSON \n{"a": 1}\n```', ['{"a": 1}']),
        (
            'First {"a": 1} then [2, 3], {not json} and {"b": {"c": 4}}.',
            ['{"a": 1}', "[2, 3]", '{"b": {"c": 4}}'],
        ),
        # fenced blocks come before values in prose, wherever they are
        ('Prose {"p": 1}\n```json\n{"f": 2}\n```', ['{"f": 2}', '{"p": 1}']),
        ("No JSON here.", []),
        ("The answer is 42.", []),
        ('Broken {"a": 1', []),
        ("", []),
    ],
    ids=[
        "bare-object",
        "bare-array-with-whitespace",
        "nested-once",
        "bare-scalar",
        "fenced-json",
        "fenced-no-tag",
        "fenced-upper-tag-trailing-space",
        "prose-left-to-right",
        "fence-before-prose",
        "none",
        "scalar-in-prose-not-found",
        "broken",
        "empty",
    ],
)
def test_json_candidates(text: str, expected: list[str]) -> None:
    assert list(json_candidates(text)) == expected


def test_json_candidates_yields_whole_text_before_its_parts() -> None:
    text = '{"tool_calls": []}'
    assert list(json_candidates(text)) == [text]
    # a fenced block that is not valid JSON is skipped, the prose scan still finds values
    assert list(json_candidates('```json\n{oops}\n```\nUse {"x": 1}')) == ['{"x": 1}']


# --- structured output, text protocol -----------------------------------------------------


async def test_text_protocol_puts_the_schema_in_the_prompt_and_parses_the_answer() -> None:
    model = ScriptedModel([OSLO_JSON])
    agent = Agent("city", "You find cities.", model=model.model, output_type=City)
    result = await agent.run("Largest city in Norway?")
    model.assert_consumed()
    request = model.requests[0]
    assert request.system.startswith("You find cities.")
    assert City.model_json_schema() in json_values(request.system)
    assert "The city's name." in request.system
    assert "<summary>" not in request.system
    assert SUMMARY_INSTRUCTION not in request.system
    assert "response_format" not in request.params
    assert request.tools == []
    assert isinstance(result.parsed, City)
    assert result.rejections == 0
    assert result.parsed == OSLO
    assert result.output == OSLO_DUMP
    assert json.loads(result.output) == {"name": "Oslo", "population": 709000}
    assert result.summary == result.output
    assert len(result.llm_calls) == 1


@pytest.mark.parametrize(
    "reply",
    [
        OSLO_JSON,
        f"  \n{OSLO_JSON}\n  ",
        f"```json\n{OSLO_JSON}\n```",
        f"```\n{OSLO_JSON}\n```",
        f"Sure! Here is the answer:\n```json\n{OSLO_JSON}\n```\nLet me know if you need more.",
        f"The largest city is {OSLO_JSON}, as of 2024.",
        'Not this one {"name": "Oslo"}, but this: {"name": "Oslo", "population": 709000}',
    ],
    ids=["bare", "padded", "fenced-json", "fenced-no-tag", "fence-in-prose", "prose", "second"],
)
async def test_text_protocol_extracts_the_json(reply: str) -> None:
    model = ScriptedModel([reply])
    agent = Agent("city", "You find cities.", model=model.model, output_type=City)
    result = await agent.run("go")
    model.assert_consumed()
    assert result.parsed == OSLO
    assert result.output == OSLO_DUMP


async def test_a_non_object_output_type_works_in_text_mode() -> None:
    model = ScriptedModel(["The primes are [2, 3, 5] as asked."])
    agent = Agent("primes", "List primes.", model=model.model, output_type=list[int])
    result = await agent.run("first three primes")
    assert result.parsed == [2, 3, 5]
    assert result.output == "[\n  2,\n  3,\n  5\n]"
    assert {"items": {"type": "integer"}, "type": "array"} in json_values(model.requests[0].system)
    assert "response_format" not in model.requests[0].params


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Span(TypedDict):
    start: int
    end: int


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (Span, '```json\n{"start": 3, "end": 9}\n```', {"start": 3, "end": 9}),
        (dict[str, int], 'Counts: {"a": 1, "b": 2}', {"a": 1, "b": 2}),
    ],
    ids=["dataclass", "typeddict", "dict"],
)
async def test_other_output_types(output_type: Any, reply: str, expected: Any) -> None:
    model = ScriptedModel([reply])
    agent = Agent("typed", "Answer.", model=model.model, output_type=output_type)
    result = await agent.run("go")
    assert result.parsed == expected
    assert type(result.parsed) is type(expected)


# --- validation failure goes back to the model ---------------------------------------------


@pytest.mark.parametrize(
    ("bad", "expected_in_feedback"),
    [
        ('{"name": "Oslo"}', ["population", "Field required"]),
        ('{"name": "Oslo", "population": "lots"}', ["population", "lots"]),
        ("I am not sure, probably Oslo.", ["no JSON value was found"]),
    ],
    ids=["missing-field", "wrong-type", "no-json"],
)
async def test_an_invalid_answer_goes_back_with_the_error(
    bad: str, expected_in_feedback: list[str]
) -> None:
    model = ScriptedModel([bad, f"```json\n{OSLO_JSON}\n```"])
    agent = Agent("city", "You find cities.", model=model.model, output_type=City)
    result = await agent.run("Largest city in Norway?")
    model.assert_consumed()
    assert result.parsed == OSLO
    assert result.output == OSLO_DUMP
    retry = model.requests[1]
    assert retry.messages[-2] == {"role": "assistant", "content": bad}
    feedback = last_message(retry)
    assert feedback["role"] == "user"
    assert feedback["content"].startswith("Your answer was rejected: ")
    for part in expected_in_feedback:
        assert part in feedback["content"]
    assert "JSON" in feedback["content"]
    assert [m["role"] for m in retry.messages] == ["system", "user", "assistant", "user"]
    assert retry.messages[1]["content"] == "Largest city in Norway?"
    assert len(result.llm_calls) == 2
    assert result.rejections == 1
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_after_output_retries_plus_one_bad_answers_the_error_is_raised() -> None:
    answers = ['{"name": "Oslo"}', '{"name": "Bergen"}', '{"name": "Trondheim"}']
    model = ScriptedModel(answers)
    agent = Agent("city", "You find cities.", model=model.model, output_type=City)
    assert agent.output_retries == 2
    with pytest.raises(OutputValidationError, match="rejected 3 times") as info:
        await agent.run("go")
    model.assert_consumed()
    error = info.value
    assert error.attempts == 3
    assert error.agent_name == "city"
    assert error.last_output == '{"name": "Trondheim"}'
    assert "population" in error.feedback
    assert error.feedback.startswith("the JSON does not match the schema")
    assert isinstance(error, AgentError)
    assert not error.retryable
    # every bad answer before the last went back to the model
    assert [m["content"] for m in model.requests[2].messages if m["role"] == "assistant"] == [
        '{"name": "Oslo"}',
        '{"name": "Bergen"}',
    ]


@pytest.mark.parametrize("retries", [0, 1, 4])
async def test_output_retries_sets_how_many_answers_are_sent_back(retries: int) -> None:
    model = ScriptedModel(["no json"] * (retries + 1))
    agent = Agent(
        "city", "You find cities.", model=model.model, output_type=City, output_retries=retries
    )
    with pytest.raises(OutputValidationError) as info:
        await agent.run("go")
    model.assert_consumed()
    assert len(model.requests) == retries + 1
    assert info.value.attempts == retries + 1
    assert info.value.last_output == "no json"
    assert info.value.feedback == "no JSON value was found in the answer"


async def test_rejected_answers_do_not_use_up_max_turns() -> None:
    model = ScriptedModel(["no json", OSLO_JSON])
    agent = Agent("city", "x", model=model.model, output_type=City, max_turns=1)
    result = await agent.run("go")
    assert result.parsed == OSLO
    model.assert_consumed()


# --- structured output, native protocol ------------------------------------------------------


def native_format(schema_name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name, "schema": schema, "strict": False},
    }


async def test_native_protocol_sends_the_schema_as_response_format() -> None:
    model = ScriptedModel([OSLO_JSON])
    agent = Agent(
        "city", "You find cities.", model=model.model, output_type=City, output_protocol="native"
    )
    result = await agent.run("go")
    request = model.requests[0]
    assert request.params["response_format"] == native_format("City", City.model_json_schema())
    assert "City schema" in request.system
    assert City.model_json_schema() not in json_values(request.system)  # not in the prompt too
    assert "<summary>" not in request.system
    assert result.parsed == OSLO
    assert result.output == OSLO_DUMP


async def test_native_protocol_still_sends_bad_answers_back() -> None:
    model = ScriptedModel(['{"name": "Oslo", "population": "many"}', OSLO_JSON])
    agent = Agent("city", "x", model=model.model, output_type=City, output_protocol="native")
    result = await agent.run("go")
    assert result.parsed == OSLO
    assert all("response_format" in r.params for r in model.requests)
    assert "population" in last_message(model.requests[1])["content"]


async def test_auto_picks_native_when_the_model_data_says_it_supports_response_schema() -> None:
    model = ScriptedModel([OSLO_JSON], supports={"response_schema": True})
    agent = Agent("city", "x", model=model.model, output_type=City)
    assert agent.output_protocol == "auto"
    result = await agent.run("go")
    assert model.requests[0].params["response_format"] == native_format(
        "City", City.model_json_schema()
    )
    assert City.model_json_schema() not in json_values(model.requests[0].system)
    assert result.parsed == OSLO


@pytest.mark.parametrize("known", [False, None], ids=["unsupported", "unknown-model"])
async def test_auto_uses_text_when_the_model_data_does_not_say_yes(known: bool | None) -> None:
    model = ScriptedModel(
        [OSLO_JSON], supports=None if known is None else {"response_schema": known}
    )
    agent = Agent("city", "x", model=model.model, output_type=City)
    result = await agent.run("go")
    assert "response_format" not in model.requests[0].params
    assert City.model_json_schema() in json_values(model.requests[0].system)
    assert result.parsed == OSLO


async def test_auto_uses_text_for_a_non_object_type_even_when_native_is_supported() -> None:
    model = ScriptedModel(["[4, 5]"], supports={"response_schema": True})
    agent = Agent("nums", "x", model=model.model, output_type=list[int])
    result = await agent.run("go")
    assert "response_format" not in model.requests[0].params
    assert {"items": {"type": "integer"}, "type": "array"} in json_values(model.requests[0].system)
    assert result.parsed == [4, 5]


async def test_text_protocol_wins_over_model_support() -> None:
    model = ScriptedModel([OSLO_JSON], supports={"response_schema": True})
    agent = Agent("city", "x", model=model.model, output_type=City, output_protocol="text")
    result = await agent.run("go")
    assert "response_format" not in model.requests[0].params
    assert City.model_json_schema() in json_values(model.requests[0].system)
    assert result.parsed == OSLO


@pytest.mark.parametrize("output_type", [list[int], int, str, City | None])
def test_native_protocol_with_a_non_object_type_is_refused(output_type: Any) -> None:
    with pytest.raises(UserError, match="output_protocol='native' needs an output_type"):
        Agent("bad", "x", output_type=output_type, output_protocol="native")


def test_invalid_structured_settings_are_refused() -> None:
    with pytest.raises(UserError, match="output_protocol must be 'auto', 'native' or 'text'"):
        Agent("a", "x", output_type=City, output_protocol="json")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="tool_protocol must be"):
        Agent("a", "x", tool_protocol="xml")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="output_retries must be 0 or more"):
        Agent("a", "x", output_type=City, output_retries=-1)
    with pytest.raises(UserError, match="output_validators must be a list of functions"):
        Agent("a", "x", output_validators=lambda v: None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="cannot become a JSON schema"):
        Agent("a", "x", output_type=object())


# --- output validators -------------------------------------------------------------------------


async def test_a_sync_validator_gets_the_parsed_object_and_its_feedback_reaches_the_model() -> None:
    seen: list[Any] = []

    def positive(city: City) -> str | None:
        seen.append(city)
        return None if city.population > 0 else "population must be positive"

    model = ScriptedModel(['{"name": "Oslo", "population": -1}', OSLO_JSON])
    agent = Agent("city", "x", model=model.model, output_type=City, output_validators=[positive])
    result = await agent.run("go")
    model.assert_consumed()
    assert seen == [City(name="Oslo", population=-1), OSLO]
    assert all(isinstance(c, City) for c in seen)
    feedback = last_message(model.requests[1])
    assert feedback["role"] == "user"
    assert "population must be positive" in feedback["content"]
    assert model.requests[1].messages[-2]["content"] == '{"name": "Oslo", "population": -1}'
    assert result.parsed == OSLO


async def test_an_async_validator() -> None:
    async def not_bergen(city: City) -> str | None:
        await asyncio.sleep(0)
        return "Bergen is not the largest city" if city.name == "Bergen" else None

    model = ScriptedModel(['{"name": "Bergen", "population": 291000}', OSLO_JSON])
    agent = Agent("city", "x", model=model.model, output_type=City, output_validators=[not_bergen])
    result = await agent.run("go")
    assert "Bergen is not the largest city" in last_message(model.requests[1])["content"]
    assert result.parsed == OSLO


async def test_a_validator_raising_value_error_rejects_with_its_message() -> None:
    def upper(city: City) -> None:
        if not city.name.isupper():
            raise ValueError("name must be in capitals")

    model = ScriptedModel([OSLO_JSON, '{"name": "OSLO", "population": 709000}'])
    agent = Agent("city", "x", model=model.model, output_type=City, output_validators=[upper])
    result = await agent.run("go")
    assert "name must be in capitals" in last_message(model.requests[1])["content"]
    assert result.parsed == City(name="OSLO", population=709000)


async def test_validators_run_in_order_and_the_first_rejection_wins() -> None:
    calls: list[str] = []

    def first(city: City) -> str | None:
        calls.append("first")
        return "too small" if city.population < 1000 else None

    def second(city: City) -> str | None:
        calls.append("second")
        return None

    model = ScriptedModel(['{"name": "Oslo", "population": 5}', OSLO_JSON])
    agent = Agent(
        "city", "x", model=model.model, output_type=City, output_validators=[first, second]
    )
    await agent.run("go")
    assert calls == ["first", "first", "second"]


async def test_without_output_type_a_validator_gets_the_text_without_its_summary() -> None:
    seen: list[Any] = []

    def long_enough(text: str) -> str | None:
        seen.append(text)
        return "the answer is too short" if len(text) < 15 else None

    model = ScriptedModel(
        [
            "Too short.\n<summary>Short.</summary>",
            "A long enough answer.\n<summary>Long.</summary>",
        ]
    )
    agent = Agent("writer", "x", model=model.model, output_validators=[long_enough])
    result = await agent.run("go")
    assert seen == ["Too short.", "A long enough answer."]
    assert result.output == "A long enough answer."
    assert result.summary == "Long."
    assert result.parsed is None
    feedback = last_message(model.requests[1])["content"]
    assert "the answer is too short" in feedback
    assert "<summary>" in model.requests[0].system  # a plain agent keeps its summary


async def test_a_validator_returning_something_else_is_a_user_error() -> None:
    def yes(city: City) -> Any:  # a bool, where None or text is expected
        return True

    model = ScriptedModel([OSLO_JSON])
    agent = Agent("city", "x", model=model.model, output_type=City, output_validators=[yes])
    with pytest.raises(UserError, match="returned bool; return None to accept"):
        await agent.run("go")


async def test_a_validator_returning_empty_text_accepts() -> None:
    model = ScriptedModel([OSLO_JSON])
    agent = Agent(
        "city", "x", model=model.model, output_type=City, output_validators=[lambda c: ""]
    )
    assert (await agent.run("go")).parsed == OSLO
    model.assert_consumed()


async def test_validators_and_output_type_share_one_retry_limit() -> None:
    seen: list[City] = []

    def positive(city: City) -> str | None:
        seen.append(city)
        return None if city.population > 0 else "population must be positive"

    bad_schema = '{"name": "Oslo"}'
    bad_value = '{"name": "Oslo", "population": -5}'
    model = ScriptedModel([bad_schema, bad_value, OSLO_JSON])
    agent = Agent(
        "city",
        "x",
        model=model.model,
        output_type=City,
        output_validators=[positive],
        output_retries=1,
    )
    with pytest.raises(OutputValidationError) as info:
        await agent.run("go")
    assert model.remaining == 1  # the good answer was never asked for
    assert info.value.attempts == 2
    assert info.value.last_output == bad_value
    assert info.value.feedback == "population must be positive"
    assert seen == [City(name="Oslo", population=-5)]  # not called for the schema failure


# --- structured agents in a Swarm -----------------------------------------------------------


async def test_a_later_agent_reads_the_structured_output_as_json_text() -> None:
    first = ScriptedModel([f"```json\n{OSLO_JSON}\n```"])
    second = ScriptedModel(["Oslo is big.\n<summary>Report.</summary>"])
    city = Agent("city", "Find the city.", model=first.model, output_type=City)
    writer = Agent("writer", "Write a report.", model=second.model)
    result = await Swarm(city >> writer, context_mode="push").run("Norway")
    assert ("city", None, OSLO_DUMP) in framed(second.requests[0].system)
    assert result["city"].parsed == OSLO
    assert isinstance(result["city"].parsed, City)
    assert result["city"].output == OSLO_DUMP
    assert result.context["city"] == OSLO_DUMP
    assert result["writer"].parsed is None
    assert result.output == "Oslo is big."


async def test_resume_restores_parsed_as_the_output_type(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = ScriptedModel([OSLO_JSON])
    failing = ScriptedModel([Fail(400, "bad request")])
    city = Agent("city", "Find the city.", model=first.model, output_type=City)
    writer = Agent("writer", "Write a report.", model=failing.model)
    with pytest.raises(AgentError) as info:
        await Swarm(city >> writer, store=db).run("Norway")
    assert info.value.partial is not None
    assert info.value.partial["city"].parsed == OSLO
    run_id = info.value.partial.run_id

    store = SQLiteStore(db)
    try:
        record = store.get_run(run_id)
    finally:
        store.close()
    assert record is not None
    assert record.results[0].parsed == {"name": "Oslo", "population": 709000}  # stored as JSON

    unused = ScriptedModel([])
    fixed = ScriptedModel(["Oslo is big.\n<summary>Report.</summary>"])
    city2 = Agent("city", "Find the city.", model=unused.model, output_type=City)
    writer2 = Agent("writer", "Write a report.", model=fixed.model)
    swarm2 = Swarm(city2 >> writer2, store=db)
    result = await swarm2.resume(run_id)
    assert unused.requests == []
    fixed.assert_consumed()
    assert isinstance(result["city"].parsed, City)
    assert result["city"].parsed == OSLO
    assert result["city"].output == OSLO_DUMP
    assert result.output == "Oslo is big."
    assert result.run_id == run_id


async def test_resume_restores_parsed_for_each_loop_iteration(tmp_path: Path) -> None:
    """Iterations are stored as ``city#k``: each gets its agent's output_type back."""
    db = tmp_path / "runs.db"
    first = ScriptedModel([OSLO_JSON, OSLO_JSON])
    failing = ScriptedModel([Fail(400, "bad request")])
    city = Agent("city", "Find the city.", model=first.model, output_type=City)
    writer = Agent("writer", "Write a report.", model=failing.model)
    with pytest.raises(AgentError) as info:
        await Swarm(loop(city, max_iterations=2) >> writer, store=db).run("Norway")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id

    fixed = ScriptedModel(["Oslo is big.\n<summary>Report.</summary>"])
    city2 = Agent("city", "Find the city.", model=ScriptedModel([]).model, output_type=City)
    writer2 = Agent("writer", "Write a report.", model=fixed.model)
    result = await Swarm(loop(city2, max_iterations=2) >> writer2, store=db).resume(run_id)
    assert [r.agent_name for r in result.history] == ["city#1", "city#2", "writer"]
    assert all(isinstance(r.parsed, City) for r in result.history[:2])


# --- text tool protocol --------------------------------------------------------------------


@pytest.mark.parametrize(
    "prose",
    ["", "Let me add those."],
    ids=["whole-reply", "block-after-prose"],
)
async def test_text_tool_protocol_runs_tools_written_as_json(prose: str) -> None:
    # The test model writes the call as the protocol's block, marker read from the prompt.
    call = Reply(text=prose or None, tool_calls=[Call("add", {"a": 2, "b": 3})])
    model = ScriptedModel([call, "It is 5.\n<summary>Added 2 and 3.</summary>"])
    agent = Agent("calc", "You add numbers.", model=model.model, tools=[add], tool_protocol="text")
    result = await agent.run("What is 2 + 3?")
    model.assert_consumed()
    first, second = model.requests
    assert first.tools == []
    assert "tools" not in first.params
    assert "tool_choice" not in first.params
    system = first.system
    assert system.startswith("You add numbers.")
    assert "# Tools" in system
    assert "- add: Add two numbers." in system
    marker = text_tool_marker(system)
    assert marker is not None
    assert f'```tool_calls {marker}\n{{"tool_calls": [{{"name": "<tool name>"' in system
    schema = agent.tools[0].spec["function"]["parameters"]  # type: ignore[union-attr]
    assert schema in json_values(system)
    assert "<summary>" in system

    [record] = result.tool_calls
    assert (record.tool_name, record.arguments, record.result, record.error) == (
        "add",
        '{"a": 2, "b": 3}',
        "5",
        None,
    )
    assert second.tools == []
    sent = f"```tool_calls {marker}\n{WRAPPED}\n```"
    assert second.messages[-2] == {
        "role": "assistant",
        "content": f"{prose}\n\n{sent}" if prose else sent,
    }
    assert last_message(second) == {
        "role": "user",
        "content": f"Tool results:\n\n## add ({record.call_id})\n5",
    }
    assert not any(m["role"] == "tool" for m in second.messages)
    assert result.output == "It is 5."
    assert result.summary == "Added 2 and 3."
    assert len(result.llm_calls) == 2


async def test_text_tool_protocol_several_calls_and_an_unknown_tool() -> None:
    calls = [
        Call("add", {"a": 1, "b": 2}),
        Call("launch_rockets", {"count": 3}),
        Call("add", {"a": 10, "b": 20}),
    ]
    model = ScriptedModel([Reply(tool_calls=calls), "3 and 30.\n<summary>Done.</summary>"])
    agent = Agent("calc", "x", model=model.model, tools=[add], tool_protocol="text")
    result = await agent.run("go")
    model.assert_consumed()
    assert [(r.tool_name, r.result) for r in result.tool_calls] == [
        ("add", "3"),
        ("launch_rockets", "Unknown tool 'launch_rockets'. Available tools: add."),
        ("add", "30"),
    ]
    assert [r.error is None for r in result.tool_calls] == [True, False, True]
    assert len({r.call_id for r in result.tool_calls}) == 3
    content = last_message(model.requests[1])["content"]
    assert content.startswith("Tool results:\n\n")
    ids = [r.call_id for r in result.tool_calls]
    assert content.index(f"## add ({ids[0]})\n3") < content.index(
        f"## launch_rockets ({ids[1]})\nUnknown tool"
    )
    assert content.index(f"## launch_rockets ({ids[1]})") < content.index(f"## add ({ids[2]})\n30")
    assert result.output == "3 and 30."


async def test_text_tool_protocol_loops_over_several_turns() -> None:
    model = ScriptedModel([Reply.tool("add", a=1, b=1), Reply.tool("add", a=2, b=2), "Done: 4."])
    agent = Agent("calc", "x", model=model.model, tools=[add], tool_protocol="text")
    result = await agent.run("go")
    model.assert_consumed()
    assert [r.result for r in result.tool_calls] == ["2", "4"]
    assert result.output == "Done: 4."
    assert len(result.llm_calls) == 3
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_auto_uses_the_text_protocol_when_the_model_data_says_no_function_calling() -> None:
    model = ScriptedModel(
        [Reply.tool("add", a=2, b=3), "It is 5."],
        supports={"response_schema": False, "function_calling": False},
    )
    agent = Agent("calc", "x", model=model.model, tools=[add])
    assert agent.tool_protocol == "auto"
    result = await agent.run("go")
    assert model.requests[0].tools == []
    assert "# Tools" in model.requests[0].system
    assert result.tool_calls[0].result == "5"
    assert result.output == "It is 5."


@pytest.mark.parametrize("known", [True, None], ids=["supported", "unknown-model"])
async def test_auto_uses_native_tools_unless_the_model_data_says_no(known: bool | None) -> None:
    supports = None if known is None else {"response_schema": False, "function_calling": known}
    model = ScriptedModel([Reply.tool("add", a=2, b=3), "It is 5."], supports=supports)
    agent = Agent("calc", "x", model=model.model, tools=[add])
    result = await agent.run("go")
    assert model.requests[0].tool_names == ["add"]
    assert "# Tools" not in model.requests[0].system
    assert model.requests[1].tool_results[0]["content"] == "5"
    assert result.tool_calls[0].result == "5"


async def test_native_tool_protocol_ignores_json_written_as_text() -> None:
    model = ScriptedModel([WRAPPED])
    agent = Agent("calc", "x", model=model.model, tools=[add], tool_protocol="native")
    result = await agent.run("go")
    assert result.tool_calls == []
    assert result.output == WRAPPED
    assert model.requests[0].tool_names == ["add"]


async def test_context_tools_in_pull_mode_work_under_the_text_protocol() -> None:
    scout_output = "Oslo has 709,000 people and many ferries."
    first = ScriptedModel([f"{scout_output}\n<summary>Oslo facts.</summary>"])
    second = ScriptedModel(
        [
            Reply.tool("get_context", agent_name="scout"),
            "Oslo: ferries.\n<summary>Report.</summary>",
        ]
    )
    scout = Agent("scout", "Find facts.", model=first.model)
    writer = Agent("writer", "Write.", model=second.model, tool_protocol="text")
    result = await Swarm(scout >> writer, context_mode="pull").run("Norway")
    second.assert_consumed()
    ask, read = second.requests
    assert ask.tools == []
    assert "# Tools" in ask.system
    for name in ("list_context", "get_context", "search_context"):
        assert f"- {name}: " in ask.system
    [record] = result["writer"].tool_calls
    scout_words = Framing(nonce_of(ask.system)).block("scout", scout_output)
    assert (record.tool_name, record.result, record.error) == ("get_context", scout_words, None)
    assert last_message(read) == {
        "role": "user",
        "content": f"Tool results:\n\n## get_context ({record.call_id})\n{scout_words}",
    }
    assert result.output == "Oslo: ferries."


async def test_structured_output_with_text_tools() -> None:
    model = ScriptedModel(
        [
            Reply(text="I need the number.", tool_calls=[Call("population", {"city": "Oslo"})]),
            f"```json\n{OSLO_JSON}\n```",
        ]
    )
    agent = Agent(
        "city",
        "You find cities.",
        model=model.model,
        tools=[population],
        output_type=City,
        tool_protocol="text",
        output_protocol="text",
    )
    result = await agent.run("Largest city in Norway?")
    model.assert_consumed()
    first, second = model.requests
    assert first.tools == []
    assert "response_format" not in first.params
    assert "# Tools" in first.system
    assert "- population: Look up how many people live in a city." in first.system
    assert City.model_json_schema() in json_values(first.system)
    assert "<summary>" not in first.system
    [record] = result.tool_calls
    assert (record.tool_name, record.arguments, record.result) == (
        "population",
        '{"city": "Oslo"}',
        "709000",
    )
    assert last_message(second)["content"].endswith("\n709000")
    assert result.parsed == OSLO
    assert result.output == OSLO_DUMP


async def test_structured_output_with_native_tools() -> None:
    model = ScriptedModel([Reply.tool("population", city="Oslo"), OSLO_JSON])
    agent = Agent("city", "x", model=model.model, tools=[population], output_type=City)
    result = await agent.run("go")
    assert model.requests[0].tool_names == ["population"]
    assert model.requests[1].tool_results[0]["content"] == "709000"
    assert result.parsed == OSLO


# --- direct vs tool mode -------------------------------------------------------------------


async def test_an_agent_without_tools_offers_none_and_answers_a_stray_call_as_unknown() -> None:
    model = ScriptedModel(
        [
            Reply(text="Draft.\n<summary>Drafted.</summary>", tool_calls=[Call("add", {})]),
            "The answer.\n<summary>Answered.</summary>",
        ]
    )
    agent = Agent("direct", "x", model=model.model)
    result = await agent.run("go")
    model.assert_consumed()
    assert [r.tools for r in model.requests] == [[], []]
    assert all("tools" not in r.params for r in model.requests)
    assert result.output == "The answer."  # the text beside a tool call is not the answer
    assert result.summary == "Answered."
    assert [r.error for r in result.tool_calls] == ["Unknown tool 'add'. Available tools: none."]
    assert [c.tool_calls for c in result.llm_calls] == [1, 0]
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


async def test_an_agent_without_tools_treats_json_tool_calls_as_its_answer() -> None:
    model = ScriptedModel([WRAPPED])
    agent = Agent("direct", "x", model=model.model, tool_protocol="text")
    result = await agent.run("go")
    model.assert_consumed()
    assert result.output == WRAPPED
    assert result.tool_calls == []
    assert "# Tools" not in model.requests[0].system


async def test_an_agent_with_tools_loops_until_a_text_answer() -> None:
    model = ScriptedModel(
        [
            Reply(text="Let me add.", tool_calls=[Call("add", {"a": 1, "b": 2})]),
            Reply.tool("add", a=3, b=4),
            "3 then 7.\n<summary>Added twice.</summary>",
        ]
    )
    agent = Agent("calc", "x", model=model.model, tools=[add])
    result = await agent.run("go")
    model.assert_consumed()
    assert all(r.tool_names == ["add"] for r in model.requests)
    assert [r.result for r in result.tool_calls] == ["3", "7"]
    assert len(result.llm_calls) == 3
    assert result.output == "3 then 7."


# --- counts and rehearsals under the text protocol --------------------------------------


async def test_text_protocol_calls_are_counted_like_native_ones() -> None:
    model = ScriptedModel([Reply.tool("add", a=1, b=2), "3"])
    agent = Agent("calc", "Add.", model=model.model, tools=[add], tool_protocol="text")
    seen: list[Any] = []
    swarm = Swarm(agent, hooks=[seen.append])
    result = (await swarm.run("1+2"))["calc"]
    assert [c.tool_calls for c in result.llm_calls] == [1, 0]
    started = [e for e in seen if type(e).__name__ == "ModelCallStarted"]
    finished = [e for e in seen if type(e).__name__ == "ModelCallFinished"]
    assert [e.tools for e in started] == [1, 1]  # offered in the prompt, so offered
    assert [e.tool_calls for e in finished] == [1, 0]


async def test_dry_run_rehearses_text_protocol_agents_with_their_tools() -> None:
    text = Agent("calc", "Add.", tools=[add], tool_protocol="text")
    native = text.clone(tool_protocol="native")
    text_report = await Swarm(text).dry_run("go")
    native_report = await Swarm(native).dry_run("go")
    assert text_report.agents[0].model_calls == native_report.agents[0].model_calls == 2


async def test_dry_run_ignores_validators_the_offline_values_cannot_meet() -> None:
    def big(city: City) -> str | None:
        return None if city.population > 1000 else "too small"

    agent = Agent("city", "Name a city.", output_type=City, output_validators=[big])
    report = await Swarm(agent).dry_run("go")
    assert report.agents[0].model_calls == 1


async def test_feedback_that_ends_a_sentence_gets_no_second_period() -> None:
    def needs_city(text: str) -> str | None:
        return None if "Oslo" in text else "Name a city."

    model = ScriptedModel(["Norway.", "Still Norway."])
    agent = Agent(
        "city", "Name a city.", model=model.model, output_validators=[needs_city], output_retries=1
    )
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("Largest city in Norway?")
    feedback = last_message(model.requests[1])["content"]
    assert feedback == "Your answer was rejected: Name a city. Reply with a corrected answer."
    assert "last reason: Name a city. Make" in str(caught.value)
    assert ".." not in str(caught.value)
