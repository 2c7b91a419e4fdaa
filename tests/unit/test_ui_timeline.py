"""The run timeline: a stored run drawn as a Gantt chart of agents, model calls and tool calls."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmcore import Agent, ModelError, Swarm
from swarmcore._ui.timeline import NO_TIMING, NOT_RUN, timeline_svg
from swarmcore.results import AgentFailure, AgentResult
from swarmcore.store import SQLiteStore
from swarmcore.store._base import RunRecord
from swarmcore.testing import Call, Fail, FunctionModel, RecordedRequest, Reply

SVG = "{http://www.w3.org/2000/svg}"
DELAY = 0.2


@dataclass(frozen=True)
class Bar:
    classes: frozenset[str]
    x1: float
    x2: float
    title: str


def rows(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    found = [g for g in root.iter(f"{SVG}g") if g.get("class") == "row"]
    named = {g.get("data-agent", ""): g for g in found}
    assert len(named) == len(found)  # one row per agent
    return named


def order(svg: str) -> list[str]:
    return [
        g.get("data-agent", "")
        for g in ET.fromstring(svg).iter(f"{SVG}g")
        if g.get("class") == "row"
    ]


def bars(row: ET.Element, kind: str) -> list[Bar]:
    out: list[Bar] = []
    for rect in row.iter(f"{SVG}rect"):
        classes = frozenset(rect.get("class", "").split())
        if kind in classes:
            x = float(rect.get("x", "nan"))
            title = rect.find(f"{SVG}title")
            assert title is not None
            out.append(Bar(classes, x, x + float(rect.get("width", "nan")), title.text or ""))
    return out


def only(row: ET.Element, kind: str) -> Bar:
    [bar] = bars(row, kind)
    return bar


def lookup(topic: str) -> str:
    """Look a topic up."""
    time.sleep(0.02)
    return f"facts about {topic}"


async def stored_diamond(tmp_path: Path) -> RunRecord:
    """``a >> (b | c) >> d``: b and c overlap (DELAY per model call); b calls a tool."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        delay = DELAY if who in ("b", "c") else 0.0
        if who == "b" and not request.tool_results:
            return Reply(tool_calls=(Call("lookup", {"topic": "x"}),), delay=delay)
        return Reply(text=f"{who} output", delay=delay)

    model = FunctionModel(answer)
    a, c, d = (Agent(n, f"{n} does its part.", model=model.model) for n in "acd")
    b = Agent("b", "b does its part.", model=model.model, tools=[lookup])
    store = SQLiteStore(tmp_path / "runs.db")
    result = await Swarm(a >> (b | c) >> d, store=store).run("the task")
    record = store.get_run(result.run_id)
    assert record is not None
    return record


async def test_a_stored_diamond_draws_parallel_branches_and_their_calls(tmp_path: Path) -> None:
    record = await stored_diamond(tmp_path)
    svg = timeline_svg(record)
    got = rows(svg)
    assert sorted(got) == ["a", "b", "c", "d"]
    assert order(svg)[0] == "a"
    assert order(svg)[-1] == "d"
    a, b, c, d = (only(got[n], "agent") for n in "abcd")
    assert all("succeeded" in bar.classes for bar in (a, b, c, d))
    assert a.x2 <= min(b.x1, c.x1) + 1  # a ran first
    assert b.x1 < c.x2
    assert c.x1 < b.x2
    assert d.x1 >= max(b.x2, c.x2) - 1  # d started once both had finished

    for name in "abcd":
        agent = only(got[name], "agent")
        models = bars(got[name], "model")
        assert len(models) == (2 if name == "b" else 1)
        for call in models:  # each model call lies within its agent's bar
            assert agent.x1 - 0.5 <= call.x1 <= call.x2 <= agent.x2 + 0.5
            assert call.title.startswith("model ")
            assert "tokens" in call.title
            assert "1 attempt" in call.title
    tool = only(got["b"], "tool")
    assert "lookup" in tool.title
    b_asked, b_answered = sorted(bars(got["b"], "model"), key=lambda bar: bar.x1)
    assert b_asked.x2 - 0.5 <= tool.x1 <= tool.x2 <= b_answered.x1 + 0.5
    assert all(not bars(got[n], "tool") for n in "acd")

    ticks = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text") if t.text and t.text[-1] == "s"]
    assert ticks[0] == "0s"
    assert len(ticks) >= 3
    assert NO_TIMING not in svg


async def test_a_failed_agent_is_drawn_failed(tmp_path: Path) -> None:
    model = FunctionModel(
        lambda r: Fail(400, "no") if r.system.startswith("x") else Reply(text="ok")
    )
    store = SQLiteStore(tmp_path / "runs.db")
    flow = Agent("a", "a works.", model=model.model) >> Agent("x", "x fails.", model=model.model)
    with pytest.raises(ModelError):
        await Swarm(flow, store=store).run("go")
    [summary] = store.list_runs()
    record = store.get_run(summary.run_id)
    assert record is not None
    got = rows(timeline_svg(record))
    assert order(timeline_svg(record)) == ["a", "x"]
    failed = only(got["x"], "agent")
    assert "failed" in failed.classes
    assert "succeeded" not in failed.classes
    assert "ModelError" in failed.title
    assert "succeeded" in only(got["a"], "agent").classes
    assert failed.x1 >= only(got["a"], "agent").x2 - 1


async def test_a_retried_agents_failed_attempt_shows_in_its_row(tmp_path: Path) -> None:
    record = await stored_diamond(tmp_path)
    b = next(r for r in record.results if r.agent_name == "b")
    assert b.started_at is not None
    first = AgentFailure(
        agent_name="b",
        error_type="ModelError",
        message="rate limited",
        retryable=True,
        duration_seconds=0.05,
        started_at=b.started_at - 0.1,
    )
    got = rows(timeline_svg(record.model_copy(update={"failures": [first]})))
    assert sorted(got) == ["a", "b", "c", "d"]
    failed, succeeded = sorted(bars(got["b"], "agent"), key=lambda bar: bar.x1)
    assert "failed" in failed.classes
    assert "succeeded" in succeeded.classes
    assert failed.x2 <= succeeded.x1
    assert "rate limited" in failed.title


async def test_records_without_start_times_are_listed_with_a_note(tmp_path: Path) -> None:
    record = await stored_diamond(tmp_path)
    old = record.model_copy(
        update={
            "results": [
                r.model_copy(
                    update={
                        "started_at": None,
                        "llm_calls": [
                            c.model_copy(update={"started_at": None}) for c in r.llm_calls
                        ],
                        "tool_calls": [
                            t.model_copy(update={"started_at": None}) for t in r.tool_calls
                        ],
                    }
                )
                for r in record.results
            ],
            "failures": [
                AgentFailure(agent_name="e", error_type="Skipped", message="", cancelled=True)
            ],
        }
    )
    svg = timeline_svg(old)
    got = rows(svg)
    assert sorted(got) == ["a", "b", "c", "d", "e"]
    for name, row in got.items():
        assert not bars(row, "agent")
        assert not bars(row, "model")
        assert not bars(row, "tool")
        [note] = [t for t in row.iter(f"{SVG}text") if t.get("class") == "note"]
        assert note.text == (NOT_RUN if name == "e" else NO_TIMING)


HOSTILE = '<script>alert(1)</script><a href="javascript:alert(2)">x</a>&\x00'


async def test_hostile_text_is_escaped_and_inert(tmp_path: Path) -> None:
    record = await stored_diamond(tmp_path)
    results: list[AgentResult] = []
    for r in record.results:
        update: dict[str, object] = {
            "agent_name": HOSTILE if r.agent_name == "d" else r.agent_name,
            "llm_calls": [c.model_copy(update={"model": HOSTILE}) for c in r.llm_calls],
            "tool_calls": [t.model_copy(update={"tool_name": HOSTILE}) for t in r.tool_calls],
            "model": HOSTILE,
        }
        results.append(r.model_copy(update=update))
    failure = AgentFailure(
        agent_name="f",
        error_type="ToolError",
        message=HOSTILE,
        duration_seconds=0.1,
        started_at=record.started_at,
    )
    svg = timeline_svg(record.model_copy(update={"results": results, "failures": [failure]}))
    assert "<script" not in svg.lower()
    assert "<a " not in svg
    got = rows(svg)  # parses: the text is escaped, not markup
    safe = HOSTILE.replace("\x00", "\ufffd")
    assert safe in got
    assert only(got["b"], "tool").title.startswith(f"tool {safe}: ")
    assert all(safe in bar.title for bar in bars(got["b"], "model"))
    assert safe in only(got["f"], "agent").title
    root = ET.fromstring(svg)
    assert not [
        e for e in root.iter() if e.tag in (f"{SVG}script", f"{SVG}a", f"{SVG}foreignObject")
    ]
    assert not [k for e in root.iter() for k in e.attrib if "href" in k or k.startswith("on")]
