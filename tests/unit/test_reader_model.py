"""ReaderModel: answers with what it sees, finds what it needs with the right tool, once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swarmcore import Agent, Swarm, chain
from swarmcore.testing import (
    Call,
    ReaderModel,
    RecordedRequest,
    Reply,
    facts_in,
    needed_facts,
    score_facts,
    stated_facts,
)

NEEDS = "You are d.\nYou need the launch date (fact F07) and the budget (fact F12)."


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def frame(agent: str, text: str, kind: str | None = None) -> str:
    label = f' kind="{kind}"' if kind else ""
    return f'<output agent="{agent}"{label} id="abcdef12">{text}</output id="abcdef12">'


def request(
    system: str,
    offered: tuple[str, ...] = (),
    rounds: list[tuple[Call, str]] | None = None,
    user: str = "Plan it.",
) -> RecordedRequest:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    for call, result in rounds or []:
        messages.append(Reply(tool_calls=[call]).as_message())
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return RecordedRequest(model="reader", messages=messages, tools=tools(*offered))


def calls(step: object) -> list[tuple[str, dict[str, Any]]]:
    assert isinstance(step, Reply)
    return [(c.name, json.loads(c.arguments_json)) for c in step.tool_calls]


def text(step: object) -> str:
    assert isinstance(step, Reply)
    assert step.text is not None
    assert not step.tool_calls
    return step.text


PULL = ("list_context", "get_context", "search_context")


def test_the_convention_is_parsed() -> None:
    assert needed_facts(NEEDS) == {"F07": "launch date", "F12": "budget"}
    assert stated_facts("State fact F03: the vendor is Acme. Then write.") == {
        "F03": "F03: the vendor is Acme."
    }
    assert facts_in("x F03: the vendor is Acme. y F04: the cut-off is 3…") == {
        "F03": "F03: the vendor is Acme."
    }


async def test_states_its_facts_among_filler_with_a_summary_naming_them() -> None:
    model = ReaderModel()
    answer = text(await model.respond(request("You are a.\nState fact F03: the vendor is Acme.")))
    body, summary = answer.rsplit("\n\n", 1)
    paragraphs = body.split("\n\n")
    assert len(paragraphs) == 4
    assert "F03: the vendor is Acme." not in paragraphs[0]
    assert not paragraphs[1].startswith("F03")
    assert "F03: the vendor is Acme." in body
    assert summary == "<summary>Covers F03 (vendor).</summary>"
    # Deterministic: the same instructions give the same answer.
    again = text(
        await ReaderModel().respond(request("You are a.\nState fact F03: the vendor is Acme."))
    )
    assert again == answer


async def test_topic_summaries_name_only_what_the_work_is_about() -> None:
    model = ReaderModel(summaries="topic")
    asked = request("You are a.\nState fact F03: the vendor is Acme.", user="Plan the rollout.")
    answer = text(await model.respond(asked))
    assert "F03: the vendor is Acme." in answer
    assert answer.endswith("<summary>Notes on: Plan the rollout.</summary>")


@pytest.mark.parametrize("where", ["system", "user", "tool"])
async def test_answers_with_the_facts_it_sees_anywhere(where: str) -> None:
    facts = "F07: the launch date is 14 March. F12: the budget is 40 units."
    seen = {
        "system": request(f"{NEEDS}\n\n{frame('b', facts)}", PULL),
        "user": request(NEEDS, PULL, user=f"Plan it. {facts}"),
        "tool": request(
            NEEDS, PULL, [(Call("get_context", {"agent_name": "b"}), frame("b", facts))]
        ),
    }[where]
    model = ReaderModel()
    answer = text(await model.respond(seen))
    assert "F07: the launch date is 14 March." in answer
    assert "F12: the budget is 40 units." in answer
    assert model.answers[-1].delivered == {"F07", "F12"}


async def test_reads_the_agent_whose_summary_names_the_fact() -> None:
    system = f"{NEEDS}\n- b (900 chars): {frame('b', 'Covers F07 (launch date).')}"
    system += f"\n- c (900 chars): {frame('c', 'Covers the budget.')}"
    step = await ReaderModel().respond(request(system, PULL))
    assert calls(step) == [
        ("get_context", {"agent_name": "b"}),  # named by id
        ("get_context", {"agent_name": "c"}),  # named by topic
    ]


async def test_push_expands_the_summarised_agent() -> None:
    system = f"{NEEDS}\n{frame('b', 'Covers F07 (launch date) and F12 (budget).', 'summary')}"
    step = await ReaderModel().respond(request(system, ("expand_context",)))
    assert calls(step) == [("expand_context", {"agent_name": "b"})]


@pytest.mark.parametrize(
    ("search", "queries"), [("id", ["F07", "F12"]), ("words", ["launch date", "budget"])]
)
async def test_lists_when_nothing_names_the_fact_then_searches(
    search: str, queries: list[str]
) -> None:
    model = ReaderModel(search="id" if search == "id" else "words")
    first = await model.respond(request(NEEDS, PULL))
    assert calls(first) == [("list_context", {})]
    listed = f"1 earlier outputs:\n- b (900 chars): {frame('b', 'Notes on the rollout.')}"
    second = await model.respond(request(NEEDS, PULL, [(Call("list_context"), listed)]))
    assert calls(second) == [("search_context", {"query": q}) for q in queries]


@pytest.mark.parametrize(
    "line",
    ["line 3: The group met. F07: the launch date is 14 Ma…", "line 3: The group met and talked…"],
    ids=["cut in the fact", "cut before it"],
)
async def test_an_agent_a_search_hit_is_read_in_full(line: str) -> None:
    rounds = [(Call("search_context", {"query": "F07"}), frame("b", line))]
    step = await ReaderModel().respond(request(NEEDS, ("search_context", "get_context"), rounds))
    assert ("get_context", {"agent_name": "b"}) in calls(step)


async def test_never_the_same_call_twice_and_then_it_answers() -> None:
    named = frame("b", "Covers F07 (launch date).")
    system = f"You are d.\nYou need the launch date (fact F07).\n{named}"
    offered = ("get_context", "search_context")
    read = Call("get_context", {"agent_name": "b"})
    searched = Call("search_context", {"query": "F07"})
    model = ReaderModel()
    # b's output did not hold the fact after all: search instead of reading b again.
    step = await model.respond(request(system, offered, [(read, frame("b", "Nothing here."))]))
    assert calls(step) == [("search_context", {"query": "F07"})]
    # Nothing left to try: it answers without the fact, and says nothing false.
    rounds = [(read, frame("b", "Nothing here.")), (searched, "No lines match 'F07'.")]
    answer = text(await model.respond(request(system, offered, rounds)))
    assert "F07:" not in answer
    assert model.answers[-1].needed == {"F07"}
    assert model.answers[-1].delivered == frozenset()
    assert model.answers[-1].calls == 2


async def test_with_no_clue_it_reads_the_summarised_agents_in_flow_order() -> None:
    summaries = "\n".join(frame(n, "\nNotes on: Plan it.\n", "summary") for n in ("a", "b", "c"))
    system = f"You are d.\nYou need the launch date (fact F07).\n{summaries}"
    model = ReaderModel(summaries="topic")
    first = await model.respond(request(system, ("expand_context",)))
    assert calls(first) == [("expand_context", {"agent_name": "a"})]
    missed = [(Call("expand_context", {"agent_name": "a"}), frame("a", "Nothing here."))]
    second = await model.respond(request(system, ("expand_context",), missed))
    assert calls(second) == [("expand_context", {"agent_name": "b"})]


async def test_gives_up_after_its_rounds() -> None:
    rounds = [(Call("search_context", {"query": f"q{i}"}), "No lines match.") for i in range(2)]
    model = ReaderModel(max_rounds=2)
    answer = text(await model.respond(request(NEEDS, PULL, rounds)))
    assert "<summary>" in answer


def flow_needing(model: str) -> tuple[list[Agent], Any]:
    agents = [
        Agent("a", "You are a.\nState fact F01: the north depot is Kestrel 41.", model=model),
        Agent("b", "You are b.\nState fact F02: the launch date is 14 March.", model=model),
        Agent(
            "c",
            "You are c.\nYou need the north depot (fact F01) and the launch date (fact F02).",
            model=model,
        ),
    ]
    return agents, chain(*agents)


@pytest.mark.parametrize(
    ("mode", "summaries", "reads"),
    [
        # Summaries name the facts: read the agents they name.
        ("pull", "facts", ["get_context", "get_context"]),
        # They do not: list, then search in words; each hit shows the passage around
        # its match, the fact's sentence whole, so nothing needs reading in full.
        ("pull", "topic", ["list_context", "search_context", "search_context"]),
        # b is in the prompt in full; a is summarised (naming the fact, or not): expand it.
        ("push", "facts", ["expand_context"]),
        ("push", "topic", ["expand_context"]),
    ],
)
async def test_a_swarm_delivers_every_fact(mode: str, summaries: str, reads: list[str]) -> None:
    model = ReaderModel(summaries="facts" if summaries == "facts" else "topic", search="words")
    agents, flow = flow_needing(model.model)
    result = await Swarm(flow, context_mode="pull" if mode == "pull" else "push").run("Plan it.")
    assert "F01: the north depot is Kestrel 41." in result.output
    assert "F02: the launch date is 14 March." in result.output
    made = [c.tool_name for c in result["c"].tool_calls]
    assert made == reads
    assert model.answers[-1].delivered == {"F01", "F02"}
    score = score_facts(agents, result.context)
    assert (score.needed, score.delivered, score.rate) == (2, 2, 1.0)


def test_score_facts_counts_wrong_and_missing_facts() -> None:
    agents = [
        Agent("a", "State fact F01: the depot is Kestrel 41.", model="openai/x"),
        Agent("w", "You need the depot (fact F01) and the date (fact F02).", model="openai/x"),
    ]
    outputs = {
        "a": "F01: the depot is Kestrel 41.",
        "w#1": "Some text. f01: The Depot is  Kestrel 41. F02: the date is 3 May.",
        "w#2": "F01: the depot is Kestrel 14.",  # wrong value
    }
    score = score_facts(agents, outputs)
    assert (score.needed, score.delivered) == (4, 2)
    assert score.missing == {"w#2": ("F01", "F02")}
    assert score.rate == 0.5
