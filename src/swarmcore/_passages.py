"""Auto mode's context: earlier outputs cut into passages, ranked, and fitted to a token budget.

:func:`fit_context` renders what one agent is shown of the view it sees, in at
most ``budget`` tokens (cl100k_base, :func:`swarmcore._tokens.count_tokens`),
counting the whole hint: heading, note, legend and frames. It fills the room
most useful first:

1. the previous step's outputs in full, when all of them fit;
2. agents that failed (one short line each: later agents must not wait for them);
3. passages of the other outputs (paragraphs; a long one cut into windows of
   whole sentences), ranked by BM25 against the agent's instructions and (less)
   the task, chosen one at a time by what each adds to those chosen before;
4. a one-line summary of the latest output of which nothing is shown (an output
   about as short as its summary line is shown whole instead).

What is chosen is rendered in flow order, an output's passages in one frame
with its author and their places (``<output agent="writer" passage="3,5/7"
id="...">``), so the same context gives the same bytes and an agent can read
the rest with ``read_context``.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from swarmcore._tokens import count_tokens
from swarmcore.context import ContextEntry, Framing, SharedContext, shorten

PASSAGE_CHARS = 250
"""A paragraph longer than this is cut into windows of whole sentences up to this size.

A few sentences: on the context benchmark, at the budget chosen, 250 sent 4-9 %
fewer tokens than 150 (whose narrow windows left the loop's agents reading more
with the tool) and 2 % fewer than 300 (whose wider windows carry more filler with
each fact), with every fact delivered.
"""
RELEVANCE_FLOOR = 0.3
"""A passage is shown only if it scores at least this share of the first passage chosen."""
COVERED_WEIGHT = 0.5
"""What a word of the query counts once a chosen passage holds it, against 1 before."""
SUMMARY_CHARS = 100
"""Summaries and failure reasons are shortened to one line of this many characters."""
SUMMARIES_SHOWN = 1
"""The most summaries a hint shows (the latest): past that, read_context() lists them.

Without a cap the summaries of a long chain fill whatever budget is left, and the
prompt grows with the chain's length where it should stay flat. On the context
benchmark one sent 6 % fewer tokens than three on the relay of 20 (where an agent
needs only its predecessor), the same or fewer elsewhere, with every fact delivered.
"""
TASK_WEIGHT = 0.3
"""How much a word of the task counts in ranking, against 1 for a word of the instructions.

Every agent shares the task, and earlier outputs echo it throughout; the
instructions say what this agent needs.
"""

_GAP = "\n…\n"
"""Between two passages of one output shown in one frame (text between them left out)."""
_GAP_TOKENS = 3
# A sentence and the space after it: to a full stop (! ?) and a space, a CJK full stop,
# or a line end.
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s|$)|[\u3002\uff01\uff1f]|\n|$)\s*", re.DOTALL)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# A heading or a label ("Findings:") says what follows: it joins the paragraph after it.
_HEADING = re.compile(r"(#{1,6} [^\n]*|[^\n]{1,80}:)")
_WORD = re.compile(r"\w+")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_BM25_K1 = 1.5
_BM25_B = 0.75
# Words that say nothing about what an agent needs; they would only add noise to ranking.
_STOPWORD_LIST = """a about above after again all also am an and any are as at be been before being
    below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more most
    my no nor not now of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yours need needs use using write give make say says tell find read answer agent agents
    output outputs earlier previous step"""
_STOPWORDS = frozenset(_STOPWORD_LIST.split())


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of an output: a paragraph, or a window of a long one."""

    text: str
    terms: Counter[str]
    """Its words (lowercased, stopwords left out) and how often each occurs (never changed)."""
    tokens: int
    """What it costs in a prompt: its tokens and the line break that follows it."""

    @property
    def length(self) -> int:
        """How many words it has, as BM25 counts length."""
        return sum(self.terms.values())


_SPLIT: weakref.WeakKeyDictionary[ContextEntry, tuple[Passage, ...]] = weakref.WeakKeyDictionary()
"""Each entry's passages, made once: in a chain every later agent sees the same earlier
outputs. Weak: an entry's passages go with it, so no run's text outlives the run."""


def passages(entry: ContextEntry) -> tuple[Passage, ...]:
    """``entry``'s output cut into passages: paragraphs, long ones cut into windows, in order."""
    split = _SPLIT.get(entry)
    if split is None:
        split = _SPLIT[entry] = split_passages(entry.output)
    return split


def split_passages(text: str) -> tuple[Passage, ...]:
    """``text`` cut into passages: paragraphs, long ones cut into windows, in order."""
    pieces: list[str] = []
    pending = ""
    for paragraph in _PARAGRAPH_BREAK.split(text.strip()):
        paragraph = f"{pending}\n\n{paragraph}" if pending else paragraph
        if _HEADING.fullmatch(paragraph):
            pending = paragraph
            continue
        pending = ""
        pieces += _windows(paragraph)
    if pending:
        pieces.append(pending)
    return tuple(
        Passage(piece, Counter(_terms(piece)), count_tokens(piece) + 1)
        for piece in pieces
        if piece.strip()
    )


def _windows(paragraph: str) -> list[str]:
    """``paragraph`` cut into windows of whole sentences, each at most PASSAGE_CHARS.

    A sentence longer than that is cut at spaces (a single long word at the limit),
    so every window stays bounded. Line breaks inside a window are kept.
    """
    windows: list[str] = []
    current = ""
    for sentence in _SENTENCE.findall(paragraph):
        while len(sentence.rstrip()) > PASSAGE_CHARS:
            if current.strip():
                windows.append(current.rstrip())
            current = ""
            cut = sentence.rfind(" ", 0, PASSAGE_CHARS)
            cut = cut if cut > PASSAGE_CHARS // 2 else PASSAGE_CHARS
            windows.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if current and len((current + sentence).rstrip()) > PASSAGE_CHARS:
            windows.append(current.rstrip())
            current = ""
        current += sentence
    if current.strip():
        windows.append(current.rstrip())
    return windows


def _terms(text: str) -> list[str]:
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _UNSPACED.search(word):
            # Chinese, Japanese and Korean put no spaces between words: a run of them is
            # one \w+ match, so it is read as its overlapping character pairs instead.
            terms += [word[i : i + 2] for i in range(max(1, len(word) - 1))]
        elif len(word) > 1 and word not in _STOPWORDS:
            terms.append(word)
    return terms


def _name_terms(name: str) -> list[str]:
    """The words of an agent's name, so "facts from the planner" finds the planner's passages."""
    return _terms(f"{name} {name.replace('_', ' ').replace('-', ' ')}")


def bm25(query: Mapping[str, float], documents: Sequence[Mapping[str, int]]) -> list[float]:
    """Each document's Okapi BM25 score for ``query``: terms with their weights."""
    return [
        sum(query[t] * gain for t, gain in terms.items())
        for terms in bm25_terms(query.keys(), documents)
    ]


def bm25_terms(
    query: Iterable[str], documents: Sequence[Mapping[str, int]]
) -> list[dict[str, float]]:
    """What each term of ``query`` adds to each document's Okapi BM25 score, at weight 1."""
    if not documents:
        return []
    wanted = set(query)
    lengths = [sum(d.values()) for d in documents]
    average = sum(lengths) / len(documents) or 1.0
    frequency = Counter(t for d in documents for t in wanted.intersection(d))
    total = len(documents)
    idf = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
    gains: list[dict[str, float]] = []
    for document, length in zip(documents, lengths, strict=True):
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average)
        gains.append(
            {
                t: weight * document[t] * (_BM25_K1 + 1) / (document[t] + norm)
                for t, weight in idf.items()
                if t in document
            }
        )
    return gains


# --- choosing and rendering -------------------------------------------------------------


@dataclass(slots=True)
class _Choice:
    """What the hint shows of each output (by index in flow order), in the order it was chosen."""

    whole: set[int] = field(default_factory=set[int])
    parts: dict[int, set[int]] = field(default_factory=dict[int, set[int]])
    summaries: set[int] = field(default_factory=set[int])
    failures: set[int] = field(default_factory=set[int])
    """Failures shown, by index in flow order."""
    order: list[tuple[str, int, int]] = field(default_factory=list[tuple[str, int, int]])
    """Each choice as (kind, entry index, passage index): the last is dropped first."""

    def add(self, kind: str, index: int, part: int = -1) -> None:
        match kind:
            case "whole":
                self.whole.add(index)
            case "part":
                self.parts.setdefault(index, set()).add(part)
            case "summary":
                self.summaries.add(index)
            case _:
                self.failures.add(index)
        self.order.append((kind, index, part))

    def drop_last(self) -> None:
        kind, index, part = self.order.pop()
        match kind:
            case "whole":
                self.whole.discard(index)
            case "part":
                self.parts[index].discard(part)
                if not self.parts[index]:
                    del self.parts[index]
            case "summary":
                self.summaries.discard(index)
            case _:
                self.failures.discard(index)

    def __bool__(self) -> bool:
        return bool(self.order)


@dataclass(frozen=True, slots=True)
class _Context:
    """What fitting reads: the entries, their passages, the failures, the frames."""

    entries: list[ContextEntry]
    passages: list[tuple[Passage, ...]]
    failures: dict[str, str]
    frame: Framing
    budget: int


def fit_context(
    view: SharedContext,
    previous: Sequence[str],
    framing: Framing,
    budget: int,
    *,
    instructions: str,
    task: str,
) -> tuple[str | None, bool]:
    """The auto-mode hint for an agent that sees ``view``, in at most ``budget`` tokens.

    Args:
        view: The outputs (and failures) the agent sees.
        previous: The previous step's agents: shown in full when all of them fit.
        instructions: The agent's instructions, to rank passages by.
        task: The run's task, to rank by too, with less weight (:data:`TASK_WEIGHT`).
        framing: The frames, shared with the tools that read the same view.
        budget: The most tokens the hint may count, framing and legend included.

    Returns:
        The hint (None when not even one line fits), and whether it holds every
        output in full and every failure (then the agent needs no tool to read more).
    """
    entries = view.entries()
    ctx = _Context(entries, [passages(e) for e in entries], view.failures(), framing, budget)
    query = dict.fromkeys(_terms(task), TASK_WEIGHT) | dict.fromkeys(_terms(instructions), 1.0)
    choice = _choose(ctx, previous, query)
    while choice:
        text = _render(ctx, choice)
        if count_tokens(text) <= budget:
            return text, _complete(ctx, choice)
        choice.drop_last()  # the estimate was short: drop the least useful
    bare = (
        "Earlier agents' outputs are not in this prompt; read_context() lists them, "
        "read_context(agent_name) reads one, read_context(query=...) searches them."
    )
    return (bare if count_tokens(bare) <= budget else None), False


def _complete(ctx: _Context, choice: _Choice) -> bool:
    whole = sum(1 for i in range(len(ctx.entries)) if _shown_whole(ctx, choice, i))
    return whole == len(ctx.entries) and len(choice.failures) == len(ctx.failures)


def _shown_whole(ctx: _Context, choice: _Choice, index: int) -> bool:
    """Whether output ``index`` is shown in full: chosen whole, or every passage of it."""
    return index in choice.whole or len(choice.parts.get(index, ())) == len(ctx.passages[index])


def _choose(ctx: _Context, previous: Sequence[str], query: Mapping[str, float]) -> _Choice:
    """The choice, by estimated cost: each piece's own tokens plus its frame and line break."""
    # The fixed parts at their largest: every kind of output counted in the note.
    room = ctx.budget - count_tokens(_render(ctx, _Choice(), worst=True)) - 2
    fill = _Filler(ctx, room)
    if room > 0:
        fill.previous_step(previous)
        fill.failures()
        fill.passages(query)
        fill.summaries()
    return fill.choice


class _Filler:
    """Fills the room left in the budget, tier by tier, into one choice."""

    def __init__(self, ctx: _Context, room: int) -> None:
        self.ctx = ctx
        self.room = room
        self.choice = _Choice()
        frame = ctx.frame
        self.overhead = {
            e.name: count_tokens(frame.block(e.name, "", passage="10,10/10")) for e in ctx.entries
        }

    def take(self, cost: int, kind: str, index: int, part: int = -1) -> bool:
        if cost > self.room:
            return False
        self.choice.add(kind, index, part)
        self.room -= cost
        return True

    def whole_cost(self, index: int) -> int:
        entry = self.ctx.entries[index]
        return count_tokens(self.ctx.frame.block(entry.name, entry.output)) + 1

    def previous_step(self, previous: Sequence[str]) -> None:
        """1. The previous step in full, all of it or none."""
        ctx, before = self.ctx, set(previous)
        last = [i for i, e in enumerate(ctx.entries) if e.name in before]
        # An estimate first: an output may be long, and counting it whole is not free.
        guess = sum(self.overhead[ctx.entries[i].name] + _tokens_of(ctx.passages[i]) for i in last)
        if not last or guess > self.room:
            return
        cost = sum(self.whole_cost(i) for i in last)
        if cost <= self.room:
            for i in last:
                self.choice.add("whole", i)
            self.room -= cost

    def failures(self) -> None:
        """2. Failures: short, and an agent must know not to wait for them."""
        for index, (name, reason) in enumerate(self.ctx.failures.items()):
            cost = count_tokens(_failure_line(self.ctx.frame, name, reason)) + 1
            self.take(cost, "failed", index)

    def passages(self, query: Mapping[str, float]) -> None:
        """3. The most relevant passages of everything not shown whole.

        Chosen one at a time, each by its score on what the passages chosen before
        left uncovered: a word of the query a chosen passage holds counts
        :data:`COVERED_WEIGHT` as much from then on. So an agent that needs three
        things gets a passage on each, not three on whichever of them matches
        the most words. A passage scoring under :data:`RELEVANCE_FLOOR` of the
        first choice's score is not shown.
        """
        ctx = self.ctx
        candidates = _candidates(ctx, self.choice.whole, query)
        weights = dict(query)
        floor = 0.0
        while candidates and self.room > 0:
            scores = [sum(weights[t] * g for t, g in gains.items()) for _, _, gains in candidates]
            best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
            if scores[best] <= 0 or scores[best] < floor:
                return
            floor = floor or RELEVANCE_FLOOR * scores[best]
            index, part, gains = candidates.pop(best)
            # An output's passages share one frame: the first pays for it, the rest for a gap.
            framed = index in self.choice.parts
            extra = _GAP_TOKENS if framed else self.overhead[ctx.entries[index].name]
            if self.take(ctx.passages[index][part].tokens + extra, "part", index, part):
                for term in gains:
                    weights[term] *= COVERED_WEIGHT

    def summaries(self) -> None:
        """4. Summaries of the outputs of which nothing is shown, the latest first.

        At most SUMMARIES_SHOWN of them. An output hardly longer than its summary
        line is shown whole instead: it says more for about as much.
        """
        ctx, choice = self.ctx, self.choice
        shown = 0
        for index in reversed(range(len(ctx.entries))):
            if index in choice.whole or index in choice.parts:
                continue
            cost = count_tokens(_summary_line(ctx.frame, ctx.entries[index])) + 1
            if _tokens_of(ctx.passages[index]) <= cost and self.take(
                self.whole_cost(index), "whole", index
            ):
                continue
            if shown < SUMMARIES_SHOWN and self.take(cost, "summary", index):
                shown += 1


def _candidates(
    ctx: _Context, whole: set[int], query: Mapping[str, float]
) -> list[tuple[int, int, dict[str, float]]]:
    """(entry, passage, what each query word adds to its score) of the outputs not shown whole.

    In ranking order for ties: the later output first (closer to this agent), then
    the earlier passage.
    """
    if not query:
        return []
    keys: list[tuple[int, int]] = []
    documents: list[Mapping[str, int]] = []
    for index, (entry, parts) in enumerate(zip(ctx.entries, ctx.passages, strict=True)):
        author = Counter(_name_terms(entry.name))
        for part, passage in enumerate(parts):
            keys.append((index, part))
            documents.append(passage.terms + author if author else passage.terms)
    # Over every passage: the weights do not depend on the choice.
    gains = bm25_terms(query.keys(), documents)
    kept = [
        (index, part, gain)
        for (index, part), gain in zip(keys, gains, strict=True)
        if index not in whole and gain
    ]
    kept.sort(key=lambda item: (-item[0], item[1]))
    return kept


def _tokens_of(parts: tuple[Passage, ...]) -> int:
    return sum(p.tokens for p in parts)


def _render(ctx: _Context, choice: _Choice, *, worst: bool = False) -> str:
    """The hint: heading, note, legend, then what is chosen, in flow order."""
    frame = ctx.frame
    lines = ["## Shared context", _note(ctx, choice, worst), frame.legend()]
    for index, entry in enumerate(ctx.entries):
        parts = ctx.passages[index]
        shown = choice.parts.get(index, set())
        if _shown_whole(ctx, choice, index):
            lines.append(frame.block(entry.name, entry.output))
        elif shown:
            chosen = sorted(shown)
            where = f"{','.join(str(k + 1) for k in chosen)}/{len(parts)}"
            text = _GAP.join(parts[k].text for k in chosen)
            lines.append(frame.block(entry.name, text, passage=where))
        elif index in choice.summaries:
            lines.append(_summary_line(frame, entry))
    lines += [
        _failure_line(frame, name, reason)
        for index, (name, reason) in enumerate(ctx.failures.items())
        if index in choice.failures
    ]
    return "\n".join(lines)


def _note(ctx: _Context, choice: _Choice, worst: bool) -> str:
    """One line: what of the context is shown, what is not, and how to read the rest."""
    total = len(ctx.entries)
    if worst:  # the longest this line can be: the room left is counted without it
        counts = (total, total, total, total)
    else:
        if _complete(ctx, choice):
            return f"Every earlier output ({total}) is shown below in full."
        whole = sum(1 for i in range(total) if _shown_whole(ctx, choice, i))
        parts = sum(1 for i in choice.parts if not _shown_whole(ctx, choice, i))
        summaries = len(choice.summaries)
        counts = (whole, parts, summaries, total - whole - parts - summaries)
    kinds = ("in full", 'in passages (passage="i/n")', "as summaries", "not shown")
    shown = ", ".join(f"{n} {kind}" for n, kind in zip(counts, kinds, strict=True) if n)
    failed = len(ctx.failures) - (0 if worst else len(choice.failures))
    if failed:
        shown += f", {failed} failures not listed"
    return (
        f"Of {total} earlier outputs, within {ctx.budget:,} tokens: {shown}; "
        "read_context(agent_name) reads one in full, "
        "read_context(query=...) searches them."
    )


def _summary_line(frame: Framing, entry: ContextEntry) -> str:
    return frame.inline(entry.name, shorten(entry.summary, SUMMARY_CHARS), "summary")


def _failure_line(frame: Framing, name: str, reason: str) -> str:
    framed = frame.inline(name, shorten(reason, SUMMARY_CHARS), "failed")
    return f"Failed, no output (do not wait for it): {framed}"
