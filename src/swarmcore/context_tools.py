"""What each context mode hands an agent: tools over the context its run sees, and a hint.

Pull mode gives ``list_context``, ``get_context`` and ``search_context`` plus a
short, bounded hint; push mode renders the context into the prompt and adds
``expand_context`` when anything is summarised. The tools are built once per
process and read the context their calling agent run was given, so no run
pays for schemas, tool objects or closures.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from swarmcore.agent import run_context
from swarmcore.context import SEARCH_MAX_HITS, ContextEntry, SharedContext, shorten
from swarmcore.tools import Tool, function_tool

__all__ = [
    "CONTEXT_TOOL_NAMES",
    "pull_hint",
    "pull_tools",
    "push_hint",
    "push_tools",
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
    raise RuntimeError("context tool prototype called; use pull_tools() or push_tools()")


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
def _bound() -> dict[str, Tool]:
    # Bound once per process, not per step: each reads the context its calling agent
    # run was given (run_context), so a step creates no tools, closures or schemas.
    impls = {
        "list_context": _list,
        "get_context": _read,
        "search_context": _search,
        "expand_context": _read,
    }
    prototypes = (list_context, get_context, search_context, expand_context)
    return {fn.__name__: function_tool(fn).bind(impls[fn.__name__]) for fn in prototypes}


@functools.cache
def pull_tools() -> tuple[Tool, ...]:
    """``list_context``, ``get_context`` and ``search_context``, over the calling run's context.

    The same tuple every time: an agent caches its tool set merged with it.
    """
    tools = _bound()
    return tools["list_context"], tools["get_context"], tools["search_context"]


@functools.cache
def push_tools() -> tuple[Tool, ...]:
    """``expand_context`` (push mode, when anything is summarised), over the run's context."""
    return (_bound()["expand_context"],)


def _list() -> str:
    context = run_context()
    lines = [f"{len(context)} earlier outputs, in flow order:"]
    lines += [
        f"- {e.name} ({len(e.output):,} chars): {shorten(e.summary, HINT_SUMMARY_CHARS)}"
        for e in context.entries()
    ]
    return "\n".join(lines + _failure_lines(context))


def _search(query: str) -> str:
    context = run_context()
    hits = context.search(query)
    if not hits:
        return f"No lines match {query!r} in: {', '.join(context.keys())}."
    lines = [f"{h.name}:{h.line_number}: {h.line}" for h in hits]
    if len(hits) >= SEARCH_MAX_HITS:
        lines.append(f"(first {SEARCH_MAX_HITS} matches shown; narrow the query for more)")
    return "\n".join(lines)


def _failure_lines(context: SharedContext) -> list[str]:
    failures = context.failures()
    if not failures:
        return []
    lines = ["Failed, with no output (do not wait for them):"]
    lines += [
        f"- {name}: {shorten(reason, HINT_SUMMARY_CHARS)}" for name, reason in failures.items()
    ]
    return lines


def _read(agent_name: str) -> str:
    context = run_context()
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
    entries = context.entries()
    # No more entries than the recent ones named anyway: every one is shown.
    shown = entries if len(entries) <= HINT_RECENT else _chosen(entries, previous)
    lines = [
        "## Shared context",
        "Earlier agents' outputs are not in this prompt. Read them with the tools "
        "list_context(), get_context(agent_name) and search_context(query).",
        "Most recent:" if len(shown) < len(entries) else "Available:",
    ]
    for entry in shown:
        summary = shorten(entry.summary, HINT_SUMMARY_CHARS)
        lines.append(f"- {entry.name} ({len(entry.output):,} chars): {summary}")
    hidden = len(entries) - len(shown)
    if hidden:
        lines.append(f"{hidden} earlier outputs are not listed here; list_context() shows them.")
    return "\n".join(lines + _failure_lines(context))


def _chosen(entries: list[ContextEntry], previous: Sequence[str]) -> list[ContextEntry]:
    """The previous step's entries (at most HINT_MAX_NAMED) and the most recent others."""
    before = set(previous)  # a wide previous step: a tuple's `in` made this O(N²)
    keep = set([e.name for e in entries if e.name in before][:HINT_MAX_NAMED])
    room = min(HINT_RECENT, HINT_MAX_NAMED - len(keep))
    if room > 0:
        keep.update([e.name for e in entries if e.name not in keep][-room:])
    return [e for e in entries if e.name in keep]


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
