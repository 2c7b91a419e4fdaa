"""SharedContext: what earlier agents produced, in full and as one-line summaries.

Entries are kept in flow order whatever order parallel agents finish in. Agents
are asked to end their answer with ``<summary>...</summary>``; the tag is parsed
out of the output, and without it the full output stands for both (shown
shortened wherever a summary appears in a prompt).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ContextEntry", "SearchHit", "SharedContext", "parse_summary", "shorten"]

_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.IGNORECASE | re.DOTALL)

SEARCH_MAX_HITS = 20
"""Lines ``search`` returns at most, so a broad pattern cannot flood a prompt."""
SEARCH_TIME_BUDGET = 0.25
"""Seconds of regex work ``search`` allows before it falls back to a literal search."""
_SEARCH_MAX_LINE = 300
_V = TypeVar("_V")


def parse_summary(text: str) -> tuple[str, str | None]:
    """Split a model's answer into its body and its ``<summary>`` (None when absent).

    The last summary tag wins; an unclosed tag at the end (a truncated answer)
    still counts. The summary is collapsed to one line.
    """
    matches = list(_SUMMARY.finditer(text))
    if not matches:
        return text.strip(), None
    last = matches[-1]
    summary = " ".join(last.group(1).split())
    body = (text[: last.start()] + text[last.end() :]).strip()
    if not summary:
        return body, None
    return (body or summary), summary


def shorten(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters, with an ellipsis when cut."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class ContextEntry:
    """One agent's contribution to the context."""

    name: str
    output: str
    summary: str
    summarised: bool
    """Whether ``summary`` is a real summary (False when the output stands for it)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One line of an entry that matched a search."""

    name: str
    line_number: int
    line: str


class SharedContext:
    """Outputs of earlier agents, keyed by agent name, in flow order.

    Args:
        order: Agent names in flow order; entries are kept in this order
            whatever order they are set in. Names not listed go last, in the
            order they were set.
    """

    # The members of a parallel group finish in any order. A name that arrives out of flow
    # order marks its dict unsorted, and the next read that needs the order sorts it once:
    # sorting on every arrival made a 500-member group cost O(N² log N) (35 ms a run).

    def __init__(self, order: Iterable[str] = ()) -> None:
        self._order: dict[str, tuple[int, ...]] = {name: (i,) for i, name in enumerate(order)}
        self._entries: dict[str, ContextEntry] = {}
        self._failures: dict[str, str] = {}
        self._unsorted_entries = False
        self._unsorted_failures = False

    def set_failure(self, key: str, reason: str) -> None:
        """Record that the agent ``key`` failed (or was cancelled) and left no output."""
        if not self._unsorted_failures and self._arrives_out_of_order(self._failures, key):
            self._unsorted_failures = True
        self._failures[key] = reason

    def failures(self) -> dict[str, str]:
        """Agents that failed and left no output, in flow order: name to reason."""
        return dict(self._ordered_failures())

    def set(self, key: str, value: str, summary: str | None = None) -> None:
        """Store ``value`` under ``key`` with its one-line summary (the value when None)."""
        entry = ContextEntry(key, value, summary or value, summarised=summary is not None)
        if not self._unsorted_entries and self._arrives_out_of_order(self._entries, key):
            self._unsorted_entries = True
        self._entries[key] = entry

    def _arrives_out_of_order(self, items: dict[str, Any], key: str) -> bool:
        return (
            key not in items and bool(items) and self._rank(key) < self._rank(next(reversed(items)))
        )

    def _ordered(self) -> dict[str, ContextEntry]:
        """The entries in flow order (sorted here, once, after out-of-order arrivals)."""
        if self._unsorted_entries:
            self._entries = self._by_rank(self._entries)
            self._unsorted_entries = False
        return self._entries

    def _ordered_failures(self) -> dict[str, str]:
        if self._unsorted_failures:
            self._failures = self._by_rank(self._failures)
            self._unsorted_failures = False
        return self._failures

    def _by_rank(self, items: dict[str, _V]) -> dict[str, _V]:
        # Stable: names without a rank keep the order they were set in.
        return {k: items[k] for k in sorted(items, key=self._rank)}

    def _rank(self, key: str) -> tuple[int, ...]:
        rank = self._order.get(key)  # no default tuple built for the names that have one
        return rank if rank is not None else (len(self._order),)

    def place(self, ranks: Mapping[str, tuple[int, ...]]) -> None:
        """Give names that appear at run time (loop iterations, planned agents) their order.

        A rank is compared as a tuple against the ``(position,)`` of the flow's
        own names, so ``writer#2`` can sit between its loop's start and the
        step after the loop. Every view made by :meth:`subset` sees it.
        """
        self._order.update(ranks)

    def in_order(self, names: Iterable[str]) -> list[str]:
        """``names`` sorted in flow order (run-time names included, see :meth:`place`)."""
        return sorted(names, key=self._rank)

    def latest(self, name: str) -> str | None:
        """The newest output of ``name``: of its last loop iteration (``name#k``), or its own."""
        newest: tuple[int, str] | None = None
        for key, entry in self._ordered().items():
            base, _, k = key.partition("#")
            if base == name and (k.isdigit() or not k):
                rank = int(k) if k else 0
                if newest is None or rank >= newest[0]:
                    newest = (rank, entry.output)
        return newest[1] if newest else None

    def get(self, key: str, default: str | None = None) -> str | None:
        """The full output stored under ``key``, or ``default``."""
        entry = self._entries.get(key)
        return entry.output if entry else default

    def get_summary(self, key: str, default: str | None = None) -> str | None:
        """The summary under ``key`` (the output when none was given), or ``default``."""
        entry = self._entries.get(key)
        return entry.summary if entry else default

    def keys(self) -> list[str]:
        """Agent names in flow order."""
        return list(self._ordered())

    def entries(self) -> list[ContextEntry]:
        """Every entry in flow order."""
        return list(self._ordered().values())

    def entry(self, key: str) -> ContextEntry | None:
        """The entry stored under ``key``, or None."""
        return self._entries.get(key)

    def subset(self, keys: Iterable[str]) -> SharedContext:
        """A new context holding only ``keys`` (those present), in the same order."""
        wanted = set(keys)
        view = SharedContext()
        view._order = self._order
        view._entries = {k: e for k, e in self._ordered().items() if k in wanted}
        if self._failures:
            view._failures = {k: r for k, r in self._ordered_failures().items() if k in wanted}
        return view

    def as_dict(self) -> dict[str, str]:
        """Agent name to full output, in flow order."""
        return {k: e.output for k, e in self._ordered().items()}

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ordered())

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {len(e.output)} chars" for k, e in self._ordered().items())
        return f"SharedContext({sizes})"

    def search(self, pattern: str, *, max_hits: int = SEARCH_MAX_HITS) -> list[SearchHit]:
        """Lines of any entry matching ``pattern`` (a regex, case-insensitive), in flow order.

        The pattern may come from a model, so the work is bounded: the regex gets
        ``SEARCH_TIME_BUDGET`` seconds in all, and an invalid or too slow pattern
        falls back to a literal, case-insensitive substring search. At most
        ``max_hits`` lines are returned.
        """
        matcher = _compile(pattern)
        deadline = time.monotonic() + SEARCH_TIME_BUDGET
        hits: list[SearchHit] = []
        entries = self._ordered().values()
        for entry in entries:
            for number, line in enumerate(entry.output.splitlines(), start=1):
                if matcher is not None:
                    found = _regex_match(matcher, line, deadline)
                    if found is None:  # over budget: redo everything literally
                        return _literal_search(entries, pattern, max_hits)
                elif pattern.lower() in line.lower():
                    found = True
                else:
                    found = False
                if found:
                    hits.append(SearchHit(entry.name, number, shorten(line, _SEARCH_MAX_LINE)))
                    if len(hits) >= max_hits:
                        return hits
        return hits

    def format_for_prompt(self, expand: Iterable[str] | None = None) -> str:
        """Render the context as Markdown sections for a prompt.

        Args:
            expand: Names to show in full; every other entry shows its summary
                (shortened to one line) under a header labelled ``(summary)``.
                None shows every entry in full.
        """
        full = None if expand is None else set(expand)
        sections: list[str] = []
        for entry in self._ordered().values():
            if full is None or entry.name in full:
                sections.append(f"## {entry.name}\n\n{entry.output}")
            else:
                sections.append(f"## {entry.name} (summary)\n\n{shorten(entry.summary, 200)}")
        sections += [
            f"## {name} (failed, no output)\n\n{shorten(reason, 200)}"
            for name, reason in self._ordered_failures().items()
        ]
        return "\n\n".join(sections)


def _compile(pattern: str) -> Any:
    """Compile with the ``regex`` module (it supports timeouts); None means search literally."""
    import regex

    try:
        return regex.compile(pattern, regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError):
        return None


def _regex_match(matcher: Any, line: str, deadline: float) -> bool | None:
    """Whether ``line`` matches; None when the search ran past ``deadline``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        return matcher.search(line, timeout=remaining) is not None
    except TimeoutError:
        return None


def _literal_search(
    entries: Iterable[ContextEntry], pattern: str, max_hits: int
) -> list[SearchHit]:
    needle = pattern.lower()
    hits: list[SearchHit] = []
    for entry in entries:
        for number, line in enumerate(entry.output.splitlines(), start=1):
            if needle in line.lower():
                hits.append(SearchHit(entry.name, number, shorten(line, _SEARCH_MAX_LINE)))
                if len(hits) >= max_hits:
                    return hits
    return hits
