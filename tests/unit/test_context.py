from __future__ import annotations

import time

import pytest

from swarmcore import Agent, SharedContext, Swarm
from swarmcore.context import (
    SEARCH_MAX_CHARS,
    SEARCH_MAX_HITS,
    SEARCH_WINDOW,
    parse_summary,
    search_entries,
    shorten,
)
from swarmcore.modes import Mode, PullMode, PushMode, Recipient
from swarmcore.testing import Call, Reply, ScriptedModel
from tests.helpers import framed, nonce_of


@pytest.mark.parametrize(
    ("text", "body", "summary"),
    [
        ("Body.\n<summary>One line.</summary>", "Body.", "One line."),
        ("<summary>One line.</summary>\nBody.", "Body.", "One line."),
        (
            "First paragraph.\n\n<summary>One line.</summary>\n\nSecond paragraph.",
            "First paragraph.\n\nSecond paragraph.",
            "One line.",
        ),
        (
            "First line.\n<summary>One line.</summary>\nSecond line.",
            "First line.\nSecond line.",
            "One line.",
        ),
        (
            "<summary>Early.</summary>\nBody.\n\n<summary>Late.</summary>\n\nEnd.",
            "<summary>Early.</summary>\nBody.\n\nEnd.",
            "Late.",
        ),
        (
            "Body.\n<SUMMARY>\n  spread\n  over lines </SUMMARY>\n",
            "Body.",
            "spread over lines",
        ),
        (
            "Steps:\n\n<summary>Setup.</summary>\n\n    indented code\n",
            "Steps:\n\n    indented code",
            "Setup.",
        ),
        (
            "a <summary>first</summary> b <summary>last</summary>",
            "a <summary>first</summary> b <summary>last</summary>",
            None,
        ),
        (
            "The HTML <summary> element labels a <details> block.",
            "The HTML <summary> element labels a <details> block.",
            None,
        ),
        ("Truncated answer <summary>cut off", "Truncated answer <summary>cut off", None),
        ("No tag at all.", "No tag at all.", None),
        ("Empty\n<summary> </summary>", "Empty", None),
        ("<summary>only a summary</summary>", "only a summary", "only a summary"),
    ],
    ids=[
        "last",
        "first",
        "between-paragraphs",
        "between-lines",
        "several-the-last-wins",
        "multiline",
        "indentation-after-kept",
        "inline-pairs",
        "inline-mention",
        "unclosed",
        "none",
        "empty",
        "only",
    ],
)
def test_parse_summary(text: str, body: str, summary: str | None) -> None:
    assert parse_summary(text) == (body, summary)


RESEARCH = (
    "<summary>Tea began in China.</summary>\n\n"
    "Tea was first drunk in southwest China.\n\nIt reached Europe in the 1600s."
)
ANALYSIS = "Trade spread it.\n\n<summary>Trade routes explain the spread.</summary>\n\nThen taste."


async def test_a_summary_anywhere_reaches_the_next_agents_as_a_summary_in_pull_mode() -> None:
    researcher, analyst = ScriptedModel([RESEARCH]), ScriptedModel([ANALYSIS])
    writer = ScriptedModel(
        [Reply(tool_calls=[Call("get_context", {"agent_name": "researcher"})]), "Report."]
    )
    flow = (
        Agent("researcher", "Research.", model=researcher.model)
        >> Agent("analyst", "Analyse.", model=analyst.model)
        >> Agent("writer", "Write.", model=writer.model)
    )
    result = await Swarm(flow, context_mode="pull").run("tea")
    assert result["researcher"].summary == "Tea began in China."
    assert result["researcher"].output == (
        "Tea was first drunk in southwest China.\n\nIt reached Europe in the 1600s."
    )
    assert result["analyst"].output == "Trade spread it.\n\nThen taste."
    hint = writer.requests[0].system
    assert framed(hint) == [
        ("researcher", None, "Tea began in China."),
        ("analyst", None, "Trade routes explain the spread."),
    ]
    [read] = writer.requests[1].tool_results
    assert framed(str(read["content"]), nonce_of(hint)) == [
        ("researcher", None, result["researcher"].output)
    ]


async def test_a_summary_anywhere_reaches_the_next_agents_as_a_summary_in_push_mode() -> None:
    researcher, analyst = ScriptedModel([RESEARCH]), ScriptedModel([ANALYSIS])
    writer = ScriptedModel(["Report."])
    flow = (
        Agent("researcher", "Research.", model=researcher.model)
        >> Agent("analyst", "Analyse.", model=analyst.model)
        >> Agent("writer", "Write.", model=writer.model)
    )
    await Swarm(flow, context_mode="push").run("tea")
    pushed = writer.requests[0].system
    assert framed(pushed) == [
        ("researcher", "summary", "Tea began in China."),
        ("analyst", None, "Trade spread it.\n\nThen taste."),
    ]
    context = pushed[pushed.index("# Context from earlier agents") :]
    assert "<summary>" not in context.lower()  # the tags never reach the next agent
    assert "holds a one-line summary of that agent's output" in context  # said in words


def test_an_empty_context_renders_as_nothing() -> None:
    assert SharedContext().format_for_prompt() == ""
    assert SharedContext().format_for_prompt(expand=[]) == ""
    failed = SharedContext()
    failed.set_failure("a", "boom")
    assert framed(failed.format_for_prompt()) == [("a", "failed", "boom")]


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


def test_search_regex_only_when_asked() -> None:
    ctx = SharedContext()
    ctx.set("a", "alpha beta\nGamma delta\nepsilon")
    ctx.set("b", "beta again")
    hits = ctx.search(r"gam+a|again", regex=True)
    assert [(h.name, h.line_number, h.excerpt) for h in hits] == [
        ("a", 2, "alpha beta Gamma delta epsilon"),  # the paragraph around the match
        ("b", 1, "beta again"),
    ]
    assert ctx.search(r"gam+a|again") == []  # plain text: the characters as written
    # An invalid regex falls back to a literal search.
    ctx.set("c", "price is (10")
    assert [h.name for h in ctx.search("(10", regex=True)] == ["c"]


def test_a_plain_query_with_brackets_is_found_as_written() -> None:
    ctx = SharedContext()
    ctx.set("a", "The code FACT[k01] is 42.\n\nFACT k01 is not it, nor FACT[k02].")
    report = search_entries(ctx.entries(), "fact[K01]")
    assert [(h.name, h.line_number, h.excerpt) for h in report.hits] == [
        ("a", 1, "The code FACT[k01] is 42.")
    ]
    assert report.literal_because is None  # plain text was asked for: nothing to explain
    assert not report.all_words


def test_plain_search_ignores_case_and_whitespace_runs_and_keeps_the_text() -> None:
    ctx = SharedContext()
    ctx.set("a", "Die Straße\nist  lang.\n\nSTRASSE zwei")
    hits = ctx.search("strasse IST lang")
    assert [(h.line_number, h.excerpt) for h in hits] == [(1, "Die Straße ist lang.")]


def test_a_match_deep_in_a_long_paragraph_comes_with_the_text_around_it() -> None:
    before = " ".join(f"before{i} sits here." for i in range(150))  # ~2,500 characters
    after = " ".join(f"after{i} sits there." for i in range(150))
    ctx = SharedContext()
    ctx.set("a", f"Title\n\n{before} The key FACT[k07] is 1,234. {after}\n\nEnd.")
    assert before.index("before149") > 2_000
    [hit] = ctx.search("FACT[k07]")
    assert hit.line_number == 3
    assert "The key FACT[k07] is 1,234." in hit.excerpt
    assert "before142 sits here." in hit.excerpt
    assert "after5 sits there." in hit.excerpt
    assert "before0 " not in hit.excerpt
    assert "after149" not in hit.excerpt
    assert hit.excerpt.startswith("…")
    assert hit.excerpt.endswith("…")
    words = hit.excerpt.strip("…").split(" ")
    assert set(words) <= set(ctx.get("a", "").split())  # cut at word boundaries
    assert len(hit.excerpt) <= 2 * SEARCH_WINDOW + len("FACT[k07]") + 2


def test_close_matches_share_an_excerpt_and_distant_ones_are_counted() -> None:
    filler = " ".join(f"w{i}" for i in range(400))
    ctx = SharedContext()
    ctx.set("a", f"alpha one, alpha two. {filler} alpha three, alpha four.\n\nalpha five.")
    first, second = ctx.search("alpha")
    assert first.excerpt.startswith("alpha one, alpha two. w0 w1")
    assert first.excerpt.endswith("…")
    assert "three" not in first.excerpt
    assert first.more == 2  # three and four: further into the paragraph
    assert (second.line_number, second.excerpt, second.more) == (3, "alpha five.", 0)


def test_several_words_found_nowhere_as_a_phrase_find_passages_with_all_of_them() -> None:
    ctx = SharedContext()
    ctx.set("a", "Green tea costs 4 euros.\n\nBlack tea.")
    ctx.set("b", "The price of green tea rose.")
    report = search_entries(ctx.entries(), "green tea price")
    assert report.all_words
    assert [(h.name, h.excerpt) for h in report.hits] == [("b", "The price of green tea rose.")]
    phrase = search_entries(ctx.entries(), "green tea")
    assert not phrase.all_words
    assert [h.name for h in phrase.hits] == ["a", "b"]


def test_search_caps_its_hits() -> None:
    ctx = SharedContext()
    ctx.set("a", "\n\n".join(f"match {i}" for i in range(500)))
    report = search_entries(ctx.entries(), "match")
    assert len(report.hits) == SEARCH_MAX_HITS
    assert report.truncated
    long = SharedContext()
    words = "word " * 100
    long.set("a", "\n\n".join(f"{words}match {i} {words}" for i in range(15)))
    report = search_entries(long.entries(), "match")
    assert len(report.hits) < 15
    assert sum(len(h.excerpt) for h in report.hits) <= SEARCH_MAX_CHARS
    assert report.truncated
    assert not search_entries(long.entries(), "match 3 ").truncated


def test_pathological_regex_cannot_hang() -> None:
    ctx = SharedContext()
    evil_line = "a" * 60 + "!"
    ctx.set("a", "\n".join([evil_line] * 50 + ["(a|aa)+$ literal"]))
    start = time.monotonic()
    report = search_entries(ctx.entries(), "(a|aa)+$", regex=True)
    elapsed = time.monotonic() - start
    # Catastrophic backtracking would take hours; the budget stops it and the
    # literal fallback finds the one line that contains the pattern text.
    assert elapsed < 5
    assert report.literal_because is not None
    assert "matching took over" in report.literal_because
    assert [(h.name, h.line_number) for h in report.hits] == [("a", 51)]


# --- the context tools, as a model calls them ------------------------------------------

READER = Recipient("reader", "Read.", "go")


async def _tool_results(
    context: SharedContext, *calls: Call, mode: Mode | None = None
) -> list[str]:
    """What the context tools answer ``calls`` with, for an agent that sees ``context``."""
    prepared = (mode or PullMode()).prepare(context, context.keys()[-1:], READER)
    model = ScriptedModel([Reply(tool_calls=list(calls)), "Done."])
    agent = Agent("reader", "Read.", model=model.model)
    await agent.run("go", context, extra_tools=prepared.tools, context_hint=prepared.hint)
    return [str(m["content"]) for m in model.requests[1].tool_results]


async def test_search_context_finds_plain_text_and_reads_a_regex_only_when_asked() -> None:
    context = SharedContext()
    context.set("notes", "Intro.\n\nThe code FACT[k01] is 42.")
    context.set("draft", "Nothing here.")
    plain, unasked, regex, blank = await _tool_results(
        context,
        Call("search_context", {"query": "FACT[k01]"}),
        Call("search_context", {"query": r"fact\[k0\d\]"}),
        Call("search_context", {"query": r"fact\[k0\d\]", "regex": True}),
        Call("search_context", {"query": "  "}),
    )
    nonce = context.framing().nonce
    assert plain.startswith("Matches for 'FACT[k01]':")
    assert framed(plain, nonce) == [("notes", None, "line 3: The code FACT[k01] is 42.")]
    assert unasked == "No match for 'fact\\\\[k0\\\\d\\\\]' in: notes, draft."
    assert framed(regex, nonce) == [("notes", None, "line 3: The code FACT[k01] is 42.")]
    assert "query is empty" in blank


async def test_search_context_says_when_it_matched_all_the_words_not_the_phrase() -> None:
    context = SharedContext()
    context.set("notes", "The price of green tea rose.")
    [answer] = await _tool_results(context, Call("search_context", {"query": "green tea price"}))
    assert answer.startswith("No passage holds 'green tea price' as a phrase;")
    assert framed(answer, context.framing().nonce) == [
        ("notes", None, "line 1: The price of green tea rose.")
    ]


def test_context_tool_schemas_are_one_short_sentence_each() -> None:
    context = SharedContext()
    context.set("a", "x", summary="a summary")
    context.set("b", "y")
    pull, push = (
        PullMode().prepare(context, ["b"], READER),
        PushMode().prepare(context, ["b"], READER),
    )
    tools = [*pull.tools, *push.tools]
    assert [t.name for t in tools] == [
        "list_context",
        "get_context",
        "search_context",
        "expand_context",
    ]
    for tool in tools:
        function = tool.spec["function"]
        texts = [function["description"]]
        texts += [
            p["description"]
            for p in function["parameters"]["properties"].values()
            if "description" in p
        ]
        for text in texts:
            assert len(text) <= 80, text  # one short sentence
            assert ". " not in text, text
    search = tools[2].spec["function"]["parameters"]
    assert search["required"] == ["query"]
    assert search["properties"]["regex"]["type"] == "boolean"
    assert search["properties"]["regex"]["default"] is False


async def test_expand_context_never_sends_again_what_the_prompt_holds_in_full() -> None:
    context = SharedContext()
    context.set("early", "A long early report. " * 30, summary="Early report.")
    context.set("late", "The late report.", summary="Late.")
    expanded, already = await _tool_results(
        context,
        Call("expand_context", {"agent_name": "early"}),
        Call("expand_context", {"agent_name": "late"}),  # the previous step: in full
        mode=PushMode(),
    )
    assert framed(expanded, context.framing().nonce) == [("early", None, context.get("early"))]
    assert already == "late's output is already in full in your prompt."


def test_push_shows_an_output_its_summary_would_repeat_in_full_and_offers_no_expansion() -> None:
    context = SharedContext()
    context.set("short", "Yes, ship it.")  # no summary block: the output stands for it
    context.set("last", "The last step.")
    prepared = PushMode().prepare(context, ["last"], READER)
    assert prepared.hint is not None
    assert framed(prepared.hint) == [
        ("short", None, "Yes, ship it."),
        ("last", None, "The last step."),
    ]
    assert 'kind="summary"' not in prepared.hint
    assert prepared.tools == ()
