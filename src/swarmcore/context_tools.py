"""What each context mode hands an agent: run-local tools over one SharedContext, and a hint.

Pull mode gives ``list_context``, ``get_context`` and ``search_context`` plus a
short, bounded hint; push mode renders the context into the prompt and adds
``expand_context`` when anything is summarised. The tools' schemas are built
once per process and bound to each run's context with ``Tool.bind``, so no
run pays for schema building.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from swarmcore.context import SEARCH_MAX_HITS, SharedContext, shorten
from swarmcore.tools import Tool, function_tool

__all__ = [
    "CONTEXT_TOOL_NAMES",
    "make_expand_tool",
    "make_pull_tools",
    "pull_hint",
    "push_hint",
    "summarises",
]

CONTEXT_TOOL_NAMES = ("list_context", "get_context", "search_context", "expand_context")
"""Names the context modes inject; an agent's own tools may not use them."""

HINT_RECENT = 3
"""How many recent agents the pull hint names besides the previous step."""
HINT_MAX_NAMED = 12
"""The most agents the pull hint ever names (a wide previous step is cut here)."""
HINT_SUMMARY_CHARS = 100


def _unbound(*_: object) -> str:
    raise RuntimeError("context tool called without a SharedContext; use make_pull_tools()")


# The prototypes only lend their signature and docstring to the schema.
def list_context() -> str:
    """List the outputs of earlier agents: name, size and one-line summary, in flow order."""
    return _unbound()


def get_context(agent_name: str) -> str:
    """Read the full output of an earlier agent.

    Args:
        agent_name: The agent whose output to read, as listed by list_context.
    """
    return _unbound(agent_name)


def search_context(query: str) -> str:
    """Find lines in earlier agents' outputs that match a regular expression or plain text.

    Args:
        query: A regular expression or plain text; matching ignores case.
    """
    return _unbound(query)


def expand_context(agent_name: str) -> str:
    """Read the full output of an earlier agent that the prompt shows only as a summary.

    Args:
        agent_name: The agent whose full output to read.
    """
    return _unbound(agent_name)


@functools.cache
def _prototypes() -> dict[str, Tool]:
    return {
        fn.__name__: function_tool(fn)
        for fn in (list_context, get_context, search_context, expand_context)
    }


def make_pull_tools(context: SharedContext) -> tuple[Tool, ...]:
    """``list_context``, ``get_context`` and ``search_context`` over ``context``."""
    proto = _prototypes()

    def list_impl() -> str:
        lines = [f"{len(context)} earlier outputs, in flow order:"]
        lines += [
            f"- {e.name} ({len(e.output):,} chars): {shorten(e.summary, HINT_SUMMARY_CHARS)}"
            for e in context.entries()
        ]
        return "\n".join(lines + _failure_lines(context))

    def search_impl(query: str) -> str:
        hits = context.search(query)
        if not hits:
            return f"No lines match {query!r} in: {', '.join(context.keys())}."
        lines = [f"{h.name}:{h.line_number}: {h.line}" for h in hits]
        if len(hits) >= SEARCH_MAX_HITS:
            lines.append(f"(first {SEARCH_MAX_HITS} matches shown; narrow the query for more)")
        return "\n".join(lines)

    return (
        proto["list_context"].bind(list_impl),
        proto["get_context"].bind(functools.partial(_read, context)),
        proto["search_context"].bind(search_impl),
    )


def make_expand_tool(context: SharedContext) -> Tool:
    """``expand_context`` over ``context`` (push mode)."""
    return _prototypes()["expand_context"].bind(functools.partial(_read, context))


def _failure_lines(context: SharedContext) -> list[str]:
    failures = context.failures()
    if not failures:
        return []
    lines = ["Failed, with no output (do not wait for them):"]
    lines += [
        f"- {name}: {shorten(reason, HINT_SUMMARY_CHARS)}" for name, reason in failures.items()
    ]
    return lines


def _read(context: SharedContext, agent_name: str) -> str:
    output = context.get(agent_name)
    reason = context.failures().get(agent_name)
    if output is None and reason is not None:
        raise LookupError(f"Agent {agent_name!r} failed and left no output: {reason}")
    if output is None:
        available = ", ".join(context.keys()) or "none yet"
        raise LookupError(
            f"No output from {agent_name!r} in the shared context. Available: {available}."
        )
    return output


def pull_hint(context: SharedContext, previous: Sequence[str]) -> str:
    """The pull-mode system-prompt hint: bounded, whatever the length of the flow.

    It names the previous step's agents and the few most recent others, each
    with its size and a one-line summary, and says how many more outputs
    ``list_context`` can show.
    """
    names = context.keys()
    before = set(previous)  # a wide previous step: a tuple's `in` made this O(N²)
    keep = set([n for n in names if n in before][:HINT_MAX_NAMED])
    room = min(HINT_RECENT, HINT_MAX_NAMED - len(keep))
    if room > 0:
        keep.update([n for n in names if n not in keep][-room:])
    shown = [n for n in names if n in keep]
    lines = [
        "## Shared context",
        "Earlier agents' outputs are not in this prompt. Read them with the tools "
        "list_context(), get_context(agent_name) and search_context(query).",
        "Most recent:" if len(shown) < len(names) else "Available:",
    ]
    for name in shown:
        entry = context.entry(name)
        if entry is not None:
            summary = shorten(entry.summary, HINT_SUMMARY_CHARS)
            lines.append(f"- {name} ({len(entry.output):,} chars): {summary}")
    hidden = len(names) - len(shown)
    if hidden:
        lines.append(f"{hidden} earlier outputs are not listed here; list_context() shows them.")
    return "\n".join(lines + _failure_lines(context))


def summarises(context: SharedContext, previous: Sequence[str]) -> bool:
    """Whether push mode shows any entry as a summary (one not of the previous step)."""
    full = set(previous)  # a set: after a wide group, `in` on the tuple would be O(N²)
    return any(name not in full for name in context)


def push_hint(context: SharedContext, previous: Sequence[str]) -> str:
    """The push-mode context: the previous step in full, earlier steps as summaries."""
    text = context.format_for_prompt(expand=previous)
    note = ""
    if summarises(context, previous):  # failures are shown whole already
        note = (
            "\n\nEntries marked (summary) are shortened; "
            "expand_context(agent_name) reads one in full."
        )
    return f"# Context from earlier agents\n\n{text}{note}"
