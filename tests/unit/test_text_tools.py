"""The text tool-call protocol: only the block with the run's marker is a call."""

from __future__ import annotations

import json

import pytest

from swarmcore._text_tools import (
    TextToolCall,
    parse_text_tool_calls,
    text_tool_instructions,
    text_tool_marker,
)

OSLO_JSON = '{"name": "Oslo", "population": 709000}'  # a structured answer, not a call
MARK = "0123456789abcdef"
WRAPPED = '{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}'
ADD = TextToolCall("add", '{"a": 2, "b": 3}')


def block(payload: str, marker: str = MARK) -> str:
    """The text tool protocol's block, as the instructions show it."""
    return f"```tool_calls {marker}\n{payload}\n```"


@pytest.mark.parametrize(
    "text",
    [
        block(WRAPPED),
        f"  \n{block(WRAPPED)}\n",
        f"I will add them now.\n{block(WRAPPED)}\nThen I answer.",
        block('{"name": "add", "arguments": {"a": 2, "b": 3}}'),
        block('{\n  "tool_calls": [\n    {"name": "add", "arguments": {"a": 2, "b": 3}}\n  ]\n}'),
        f"```tool_calls {MARK}  \n{WRAPPED}",  # a reply cut before its closing fence
    ],
    ids=["whole-reply", "padded", "in-prose", "single-call", "pretty", "unclosed"],
)
def test_parse_text_tool_calls_finds_the_marked_block(text: str) -> None:
    assert parse_text_tool_calls(text, MARK) == ([ADD], None)


def test_parse_text_tool_calls_several_and_unknown_names_kept() -> None:
    payload = json.dumps(
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                {"name": "nope", "arguments": {}},
                {"name": "population"},
                {"name": "add", "arguments": '{"a": 5, "b": 6}'},  # a string is kept as it is
            ]
        }
    )
    assert parse_text_tool_calls(block(payload), MARK) == (
        [
            TextToolCall("add", '{"a": 1, "b": 2}'),
            TextToolCall("nope", "{}"),
            TextToolCall("population", "{}"),
            TextToolCall("add", '{"a": 5, "b": 6}'),
        ],
        None,
    )


@pytest.mark.parametrize(
    "text",
    [
        "Oslo has 709,000 people.\n<summary>Population found.</summary>",
        WRAPPED,
        f"```json\n{WRAPPED}\n```",
        f"I will add them now. {WRAPPED} Then I answer.",
        '{"name": "add", "arguments": {"a": 2, "b": 3}}',
        f"```tool_calls\n{WRAPPED}\n```",
        block(WRAPPED, marker="fedcba9876543210"),
        OSLO_JSON,
    ],
    ids=[
        "prose",
        "bare-json",
        "fenced-json",
        "json-in-prose",
        "bare-single-call",
        "block-without-marker",
        "block-with-another-marker",
        "structured-answer",
    ],
)
def test_parse_text_tool_calls_without_the_marker_is_an_answer(text: str) -> None:
    assert parse_text_tool_calls(text, MARK) == ([], None)


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        (block('{"tool_calls": []}'), "lists no calls"),
        (block('{"tool_calls": [{"arguments": {}}]}'), "call 1 in the tool_calls block is not"),
        (block('{"tool_calls": [{"name": "add", "arguments": [1]}]}'), "call 1"),
        (block('{"tool_calls": [{"name": "add"'), "not valid JSON"),
        (block(WRAPPED) + "\n" + block(WRAPPED), "more than one"),
        (f"```tool_calls {MARK} {WRAPPED}\n```", "must stand alone"),
    ],
    ids=["empty-list", "nameless", "arguments-not-object", "broken-json", "two-blocks", "inline"],
)
def test_a_marked_block_that_cannot_be_read_gives_feedback(text: str, feedback: str) -> None:
    calls, said = parse_text_tool_calls(text, MARK)
    assert calls == []
    assert said is not None
    assert feedback in said


def test_text_tool_marker_reads_the_protocol_section_not_a_quoted_one() -> None:
    quoted = text_tool_instructions([], "fedcba9876543210")  # e.g. pushed context
    system = f"Do things.\n\n{text_tool_instructions([], MARK)}\n\n{quoted}"
    assert text_tool_marker(system) == MARK
    assert text_tool_marker("No tools here.") is None
