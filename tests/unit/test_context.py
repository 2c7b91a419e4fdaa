from __future__ import annotations

import time

import pytest

from swarmcore import SharedContext
from swarmcore.context import SEARCH_MAX_HITS, parse_summary, shorten
from tests.helpers import framed


@pytest.mark.parametrize(
    ("text", "body", "summary"),
    [
        ("Body.\n<summary>One line.</summary>", "Body.", "One line."),
        (
            "Body.\n<SUMMARY>\n  spread\n  over lines </SUMMARY>\n",
            "Body.",
            "spread over lines",
        ),
        (
            "a <summary>first</summary> b <summary>last</summary>",
            "a <summary>first</summary> b",
            "last",
        ),
        ("Truncated answer <summary>cut off", "Truncated answer <summary>cut off", None),
        ("No tag at all.", "No tag at all.", None),
        ("Empty <summary> </summary>", "Empty", None),
        ("<summary>only a summary</summary>", "only a summary", "only a summary"),
    ],
    ids=["plain", "multiline", "last-wins", "unclosed", "none", "empty", "only"],
)
def test_parse_summary(text: str, body: str, summary: str | None) -> None:
    assert parse_summary(text) == (body, summary)


def test_entries_keep_flow_order_whatever_order_they_are_set() -> None:
    ctx = SharedContext(order=["a", "b", "c", "d"])
    ctx.set("c", "C")
    ctx.set("a", "A", summary="sa")
    ctx.set("extra", "X")
    ctx.set("b", "B")
    assert ctx.keys() == ["a", "b", "c", "extra"]
    assert ctx.get("a") == "A"
    assert ctx.get_summary("a") == "sa"
    assert ctx.get_summary("b") == "B"  # the output stands for a missing summary
    assert ctx.get("nope") is None
    assert ctx.get("nope", "dflt") == "dflt"
    assert [e.summarised for e in ctx.entries()] == [True, False, False, False]
    assert ctx.as_dict() == {"a": "A", "b": "B", "c": "C", "extra": "X"}
    assert "a" in ctx
    assert len(ctx) == 4
    sub = ctx.subset(["c", "a"])
    assert sub.keys() == ["a", "c"]
    assert "b" not in sub


def test_a_wide_group_finishing_shuffled_reads_in_flow_order_at_every_point() -> None:
    names = [f"w{i:03d}" for i in range(300)]
    ctx = SharedContext(order=names)
    arrival = names[::7] + [n for n in names if n not in names[::7]][::-1]
    failed = set(arrival[::11])
    for count, name in enumerate(arrival, start=1):
        if name in failed:
            ctx.set_failure(name, f"{name} broke")
        else:
            ctx.set(name, name.upper())
        if count % 50 == 0:  # reads between arrivals see flow order, then more arrive
            assert ctx.keys() == [n for n in names if n in ctx]
            assert list(ctx.failures()) == [n for n in names if n in ctx.failures()]
    stored = [n for n in names if n not in failed]
    assert ctx.keys() == stored
    assert list(ctx) == stored
    assert [e.name for e in ctx.entries()] == stored
    assert list(ctx.as_dict()) == stored
    assert list(ctx.failures()) == [n for n in names if n in failed]
    view = ctx.subset(reversed(names[:40]))
    assert view.keys() == [n for n in names[:40] if n not in failed]
    assert list(view.failures()) == [n for n in names[:40] if n in failed]
    shown = [(agent, kind) for agent, kind, _ in framed(ctx.format_for_prompt())]
    assert shown == [(n, None) for n in stored] + [(n, "failed") for n in names if n in failed]


def test_unranked_names_keep_the_order_they_were_set_in_among_ranked_ones() -> None:
    ctx = SharedContext(order=["a", "b"])
    ctx.set("late_1", "1")
    ctx.set("b", "B")
    ctx.set("late_2", "2")
    ctx.set("a", "A")
    ctx.place({"b#2": (1, 2)})  # a loop iteration placed at run time, after b
    ctx.set("b#2", "B2")
    ctx.set("late_3", "3")
    assert ctx.keys() == ["a", "b", "b#2", "late_1", "late_2", "late_3"]


def test_format_for_prompt_expands_and_labels_summaries() -> None:
    ctx = SharedContext()
    ctx.set("researcher", "long research " * 40, summary="research in one line")
    ctx.set("analyst", "analysis body", summary="analysis")
    text = ctx.format_for_prompt(expand=["analyst"])
    assert framed(text) == [
        ("researcher", "summary", "research in one line"),
        ("analyst", None, "analysis body"),
    ]
    assert "long research" not in text
    everything = framed(ctx.format_for_prompt())
    assert everything == [
        ("researcher", None, "long research " * 40),
        ("analyst", None, "analysis body"),
    ]


def test_summary_without_tag_is_shortened_in_prompts() -> None:
    ctx = SharedContext()
    ctx.set("a", "word " * 200)
    [(agent, kind, words)] = framed(ctx.format_for_prompt(expand=[]))
    assert (agent, kind) == ("a", "summary")
    assert len(words) <= 200
    assert words.endswith("…")
    assert shorten("a\nb   c", 10) == "a b c"


def test_search_regex_and_literal() -> None:
    ctx = SharedContext()
    ctx.set("a", "alpha beta\nGamma delta\nepsilon")
    ctx.set("b", "beta again")
    hits = ctx.search(r"gam+a|again")
    assert [(h.name, h.line_number, h.line) for h in hits] == [
        ("a", 2, "Gamma delta"),
        ("b", 1, "beta again"),
    ]
    # An invalid regex falls back to a literal search.
    ctx.set("c", "price is (10")
    assert [h.name for h in ctx.search("(10")] == ["c"]


def test_search_caps_returned_lines() -> None:
    ctx = SharedContext()
    ctx.set("a", "\n".join(f"match {i}" for i in range(500)))
    assert len(ctx.search("match")) == SEARCH_MAX_HITS


def test_pathological_regex_cannot_hang() -> None:
    ctx = SharedContext()
    evil_line = "a" * 60 + "!"
    ctx.set("a", "\n".join([evil_line] * 50 + ["(a|aa)+$ literal"]))
    start = time.monotonic()
    hits = ctx.search("(a|aa)+$")
    elapsed = time.monotonic() - start
    # Catastrophic backtracking would take hours; the budget stops it and the
    # literal fallback finds the one line that contains the pattern text.
    assert elapsed < 5
    assert [(h.name, h.line_number) for h in hits] == [("a", 51)]
