"""The iteration key: ``name`` or ``name#k``, written and read in one place (results.AgentKey)."""

from __future__ import annotations

import pytest

from swarmcore import Agent, Swarm, UserError, loop
from swarmcore.results import AgentKey
from swarmcore.testing import ScriptedModel


@pytest.mark.parametrize(
    ("text", "base", "iteration"),
    [
        ("writer", "writer", None),
        ("writer#1", "writer", 1),
        ("writer#12", "writer", 12),
        ("my-agent_2#3", "my-agent_2", 3),
    ],
    ids=["name", "first", "two-digits", "dashes-and-digits"],
)
def test_parse_reads_a_name_or_an_iteration(text: str, base: str, iteration: int | None) -> None:
    key = AgentKey.parse(text)
    assert (key.base, key.iteration) == (base, iteration)
    assert str(key) == text
    assert AgentKey(base, iteration) == key


@pytest.mark.parametrize(
    "text",
    [
        "",
        "#",
        "#2",
        "w#",
        "w#0",
        "w#02",
        "w#-1",
        "w#x",
        "w# 2",
        "w#2 ",
        "w#٣",  # an Arabic-Indic digit: not a number swarmcore writes
        "a#b#2",
        "a#2#3",
        "notes#draft",
        "line\nbreak#2",
    ],
)
def test_every_string_reads_back_as_itself(text: str) -> None:
    # Records and stores written before keep their keys byte for byte.
    assert str(AgentKey.parse(text)) == text


def test_only_canonical_numbers_are_iterations() -> None:
    assert AgentKey.parse("w#0").iteration is None
    assert AgentKey.parse("w#02").iteration is None
    assert AgentKey.parse("w#x") == AgentKey("w#x")
    assert AgentKey.parse("a#b#2") == AgentKey("a#b", 2)


def test_a_key_that_could_not_round_trip_is_refused() -> None:
    with pytest.raises(ValueError, match="counts from 1"):
        AgentKey("w", 0)
    with pytest.raises(ValueError, match="iteration key"):
        AgentKey("w#2")


def test_agent_names_cannot_contain_the_separator() -> None:
    with pytest.raises(UserError, match="'w#2' is not a valid identifier"):
        Agent("w#2", "x")


async def test_a_loop_keys_its_iterations_and_reads_the_newest() -> None:
    model = ScriptedModel(["draft 1", "draft 2"])
    writer = Agent("writer", "Write.", model=model.model)
    result = await Swarm(loop(writer, max_iterations=2)).run("task")
    assert [AgentKey.parse(r.agent_name) for r in result.history] == [
        AgentKey("writer", 1),
        AgentKey("writer", 2),
    ]
    assert result["writer"].output == "draft 2"
    assert result.context["writer#1"] == "draft 1"
