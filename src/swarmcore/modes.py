"""Context modes: what an agent of a flow is handed of the agents before it.

A mode is a small strategy. Given the view of the context one step sees (the
outputs of every earlier step and of the earlier agents of its own branch) and
the names of the previous step, it returns a hint for the system prompt and the
run-local tools that read that view. The tools are closures over the view, so
they need nothing from the agent run that calls them.

- **pull**: a short, bounded hint (the previous step and the few most
  recent agents, with sizes and one-line summaries) and the tools
  ``list_context``, ``get_context`` and ``search_context``. The first step gets
  neither.
- **push**: the previous step in full and earlier steps as summaries in the
  prompt, plus ``expand_context`` when anything is summarised.
- **auto** (default): at most ``context_budget`` tokens of context, the most
  useful first (the previous step in full when it fits, else the passages most
  relevant to the agent, then a summary), and ``read_context`` for the rest
  (:mod:`swarmcore._passages` chooses). It is the one mode whose hint depends
  on the agent: its instructions and the task, handed over as a
  :class:`Recipient`.

Wherever an agent's words appear (the hint, the pushed context, what the tools
return), they are framed by one :class:`~swarmcore.context.Framing` per
prepared view, so no output can pass itself off as another agent's.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from swarmcore._flow import Flow
from swarmcore._passages import fit_context
from swarmcore._tools import Tool, function_tool
from swarmcore.agent import Agent
from swarmcore.context import (
    ContextEntry,
    Framing,
    SharedContext,
    search_entries,
    shorten,
)
from swarmcore.errors import UserError

__all__ = [
    "CONTEXT_TOOL_NAMES",
    "DEFAULT_CONTEXT_MODE",
    "ContextMode",
    "Mode",
    "Prepared",
    "Recipient",
    "check_agents",
    "mode_named",
]

ContextMode = Literal["pull", "push", "auto"]

DEFAULT_CONTEXT_MODE: ContextMode = "auto"
"""The mode a Swarm runs in when ``context_mode`` is not given.

Auto since the context benchmark (``benchmarks/context.py``) showed it sending the
fewest input tokens on every shape, with every fact delivered: 0.16-0.40x pull's
and 0.11-0.69x push's. Pull was the default before.
"""

CONTEXT_TOOL_NAMES = (
    "list_context",
    "get_context",
    "search_context",
    "expand_context",
    "read_context",
)
"""Names the context modes inject; an agent's own tools may not use them."""

HINT_RECENT = 3
"""How many recent agents the pull hint names besides the previous step."""
HINT_MAX_NAMED = 12
"""The most agents the pull hint ever names (a wide previous step is cut here)."""
HINT_SUMMARY_CHARS = 100
DEFAULT_CONTEXT_BUDGET = 400
"""Tokens of context per agent under auto mode when ``context_budget`` is not given.

Chosen by the context benchmark (``benchmarks/context.py``, budgets 250 to 700):
400 sent the fewest tokens over its five shapes with every fact delivered. At 250-300
an agent needing facts of three outputs no longer gets all three and reads more with
the tool; from 500 up every agent is sent more than it reads.
"""


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a mode hands one agent: a system-prompt hint and run-local tools."""

    hint: str | None = None
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True, slots=True)
class Recipient:
    """The agent a mode prepares context for: what it is and what it is asked."""

    agent: str
    """The agent's name."""
    instructions: str
    """Its instructions, prompt variables filled."""
    task: str
    """The run's task (the agent's user message)."""


class Mode(Protocol):
    """A context mode: prepares what an agent sees of ``view``."""

    name: ContextMode

    @property
    def budget(self) -> int | None:
        """Tokens of context an agent's prompt may hold; None when the mode sets no budget."""
        ...

    @property
    def per_agent(self) -> bool:
        """Whether ``prepare`` reads its ``recipient``.

        When False, every agent at one position of the flow (the members of a
        parallel group) shares one preparation.
        """
        ...

    def prepare(
        self, view: SharedContext, previous: Sequence[str], recipient: Recipient
    ) -> Prepared:
        """The hint and tools for ``recipient``, which sees ``view`` after the ``previous`` step."""
        ...


class PullMode:
    """Pull: a short hint and three tools; the first step gets neither."""

    name: ContextMode = "pull"
    budget: int | None = None
    per_agent: bool = False

    def prepare(
        self, view: SharedContext, previous: Sequence[str], recipient: Recipient
    ) -> Prepared:
        """See :class:`Mode`."""
        if not len(view) and not view.failures():
            return Prepared()
        framing = view.framing()  # one nonce for the hint and the tools' results
        return Prepared(pull_hint(view, previous, framing), _pull_tools(view, framing))


class PushMode:
    """Push: the previous step in full, earlier steps as summaries, and expand_context."""

    name: ContextMode = "push"
    budget: int | None = None
    per_agent: bool = False

    def prepare(
        self, view: SharedContext, previous: Sequence[str], recipient: Recipient
    ) -> Prepared:
        """See :class:`Mode`."""
        if not len(view) and not view.failures():
            return Prepared()
        framing = view.framing()
        shown = _shown_whole(view, previous)
        reader = _Reader(view, framing, shown)
        summarised = len(shown) < len(view)
        tools = (_schema("expand_context").bind(reader.read),) if summarised else ()
        return Prepared(push_hint(view, previous, framing), tools)


class AutoMode:
    """Auto: at most ``budget`` tokens of context, the most useful first, and read_context.

    The hint holds the previous step in full when it fits, else the passages of
    earlier outputs most relevant to the agent's instructions and the task,
    then a summary of the latest of the rest, each framed with its author and
    place. ``read_context`` (the pull tools in one schema) reads whatever did
    not fit; it is left out when everything did. The first step gets nothing.

    Args:
        budget: The most tokens (cl100k_base) the context hint may count.
    """

    name: ContextMode = "auto"
    per_agent: bool = True

    def __init__(self, budget: int = DEFAULT_CONTEXT_BUDGET) -> None:
        self.budget = budget

    def prepare(
        self, view: SharedContext, previous: Sequence[str], recipient: Recipient
    ) -> Prepared:
        """See :class:`Mode`."""
        if not len(view) and not view.failures():
            return Prepared()
        framing = view.framing()
        hint, complete = fit_context(
            view,
            previous,
            framing,
            self.budget,
            instructions=recipient.instructions,
            task=recipient.task,
        )
        return Prepared(hint, () if complete else _auto_tools(view, framing))


_MODES: dict[str, Mode] = {"pull": PullMode(), "push": PushMode(), "auto": AutoMode()}


def mode_named(name: object, budget: object = None) -> Mode:
    """The mode called ``name``; ``budget`` is auto mode's ``context_budget`` (None: the default).

    Raises:
        UserError: ``name`` is not ``"pull"``, ``"push"`` or ``"auto"``; or
            ``budget`` is not a whole number above 0, or is given for another mode.
    """
    mode = _MODES.get(name) if isinstance(name, str) else None
    if mode is None:
        raise UserError(f"context_mode must be 'pull', 'push' or 'auto', got {name!r}.")
    if budget is None:
        return mode
    if not isinstance(mode, AutoMode):
        # Refused rather than ignored: 0.3.x code passes context_budget= (a character budget
        # there), and a budget that silently does nothing would look like one that holds.
        raise UserError(
            f"context_budget applies to context_mode='auto' only (tokens of context in each "
            f"agent's prompt), and context_mode is {name!r}; write context_mode='auto', or "
            "leave context_budget out."
        )
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise UserError(
            f"context_budget must be a whole number of tokens above 0 (e.g. "
            f"{DEFAULT_CONTEXT_BUDGET}), got {budget!r}."
        )
    return AutoMode(budget)


def _pull_tools(view: SharedContext, framing: Framing) -> tuple[Tool, ...]:
    """list_context, get_context and search_context over ``view``, framed by ``framing``."""
    reader = _Reader(view, framing)
    return (
        _schema("list_context").bind(reader.list),
        _schema("get_context").bind(reader.read),
        _schema("search_context").bind(reader.search),
    )


def _auto_tools(view: SharedContext, framing: Framing) -> tuple[Tool, ...]:
    """read_context: the pull tools in one schema, a third of their tokens on every call."""
    return (_schema("read_context").bind(_Reader(view, framing).read_any),)


# --- the tools -------------------------------------------------------------------------


# Their docstrings are the tool schemas every context-reading prompt carries: kept to
# what a model needs (the results explain themselves: fallbacks, cut-offs, errors).


def _list_context() -> str:
    """List earlier outputs: name, size, summary."""
    raise NotImplementedError  # lends its signature and docstring to the schema only


def _get_context(agent_name: str) -> str:
    """Read an earlier agent's full output."""
    raise NotImplementedError


def _search_context(query: str, regex: bool = False) -> str:
    """Search earlier outputs, any case; shows the passage around each match.

    Args:
        query: Text to find.
        regex: Read query as a regular expression (max 500 chars).
    """
    raise NotImplementedError


def _read_context(agent_name: str = "", query: str = "") -> str:
    """Read earlier outputs: one agent's in full, or the passages matching query; neither lists them."""  # noqa: E501 (the tool's description: one line)
    raise NotImplementedError


def _expand_context(agent_name: str) -> str:
    """Read the full output of an agent shown as a summary."""
    raise NotImplementedError


_PROTOTYPES: dict[str, Callable[..., Any]] = {
    "list_context": _list_context,
    "get_context": _get_context,
    "search_context": _search_context,
    "expand_context": _expand_context,
    "read_context": _read_context,
}


@functools.cache
def _schema(name: str) -> Tool:
    """The tool's schema, made once per process; each step binds its own reader to it."""
    return function_tool(_PROTOTYPES[name], name=name)


class _Reader:
    """What the context tools of one step do, over the view that step sees.

    ``shown`` names the entries the prompt already holds in full (push mode):
    reading one again says so instead of sending it twice.
    """

    def __init__(
        self, view: SharedContext, framing: Framing, shown: frozenset[str] = frozenset()
    ) -> None:
        self._view = view
        self._frame = framing
        self._shown = shown

    # Async: list and read only touch memory, so they need no worker thread.
    async def list(self) -> str:
        view = self._view
        lines = [f"{len(view)} earlier outputs, in flow order:"]
        lines += [_listed(e, self._frame) for e in view.entries()]
        return "\n".join(lines + _failure_lines(view, self._frame))

    async def read(self, agent_name: str) -> str:
        view = self._view
        output = view.get(agent_name)
        reason = view.failures().get(agent_name)
        if output is None and reason is not None:
            framed = self._frame.inline(agent_name, shorten(reason, 500), "failed")
            raise LookupError(f"Agent {agent_name!r} failed and left no output: {framed}")
        if output is None:
            available = ", ".join(view.keys()) or "none yet"
            raise LookupError(
                f"No output from {agent_name!r} in the shared context. Available: {available}."
            )
        if agent_name in self._shown:
            return f"{agent_name}'s output is already in full in your prompt."
        return self._frame.block(agent_name, output)

    async def read_any(self, agent_name: str = "", query: str = "") -> str:
        """read_context: ``agent_name``'s output, else ``query``'s matches, else the list."""
        if agent_name.strip() and query.strip():
            raise ValueError(
                "Give agent_name (to read one output) or query (to search them all), not both."
            )
        if agent_name.strip():
            return await self.read(agent_name.strip())
        if query.strip():
            return await self.search(query)
        return await self.list()

    async def search(self, query: str, regex: bool = False) -> str:
        view = self._view
        if not query.strip():
            raise ValueError("The query is empty; give the text to find.")
        # A worker thread: the regex releases the GIL while it matches, so a hard
        # pattern never stalls the other agents; search_entries bounds the work itself.
        report = await asyncio.to_thread(search_entries, view.entries(), query, regex=regex)
        asked = f"{shorten(query, 80)!r}"
        if report.literal_because:
            asked += f" (searched as plain text: {report.literal_because})"
        if not report.hits:
            return f"No match for {asked} in: {', '.join(view.keys())}."
        if report.all_words:
            head = f"No passage holds {asked} as a phrase; passages with all its words:"
        else:
            head = f"Matches for {asked}:"
        by_agent: dict[str, list[str]] = {}
        for hit in report.hits:
            more = f" (+{hit.more} more in this paragraph)" if hit.more else ""
            by_agent.setdefault(hit.name, []).append(f"line {hit.line_number}{more}: {hit.excerpt}")
        parts = [head]
        parts += [self._frame.block(name, "\n".join(lines)) for name, lines in by_agent.items()]
        if report.truncated:
            parts.append(f"(the first {len(report.hits)} matches; narrow the query for more)")
        return "\n".join(parts)


# --- the hints -------------------------------------------------------------------------


def pull_hint(view: SharedContext, previous: Sequence[str], framing: Framing | None = None) -> str:
    """The pull-mode system-prompt hint: bounded, whatever the length of the flow.

    It names the previous step's agents and the few most recent others, each
    with its size and a one-line summary (framed as that agent's words), and
    says how many more outputs ``list_context`` can show.
    """
    frame = framing or view.framing()
    entries = view.entries()
    shown = entries if len(entries) <= HINT_RECENT else _chosen(entries, previous)
    lines = [
        "## Shared context",
        "Earlier agents' outputs are not in this prompt. Read them with the tools "
        "list_context(), get_context(agent_name) and search_context(query).",
        frame.legend(),
        "Most recent:" if len(shown) < len(entries) else "Available:",
    ]
    lines += [_listed(entry, frame) for entry in shown]
    hidden = len(entries) - len(shown)
    if hidden:
        lines.append(f"{hidden} earlier outputs are not listed here; list_context() shows them.")
    return "\n".join(lines + _failure_lines(view, frame))


def push_hint(view: SharedContext, previous: Sequence[str], framing: Framing | None = None) -> str:
    """The push-mode context: the previous step in full, earlier steps as summaries."""
    text = view.format_for_prompt(expand=previous, framing=framing)
    note = ""
    if len(_shown_whole(view, previous)) < len(view):  # failures are shown whole already
        note = (
            '\n\nA frame marked kind="summary" holds a one-line summary of that agent\'s '
            "output, not the output itself; expand_context(agent_name) reads it in full."
        )
    return f"# Context from earlier agents\n\n{text}{note}"


def _chosen(entries: list[ContextEntry], previous: Sequence[str]) -> list[ContextEntry]:
    """The previous step's entries (at most HINT_MAX_NAMED) and the most recent others."""
    before = set(previous)  # a set: after a wide group, `in` on a tuple would be O(N²)
    keep = {e.name for e in entries if e.name in before}
    if len(keep) > HINT_MAX_NAMED:
        keep = set([e.name for e in entries if e.name in before][:HINT_MAX_NAMED])
    room = min(HINT_RECENT, HINT_MAX_NAMED - len(keep))
    if room > 0:
        keep.update([e.name for e in entries if e.name not in keep][-room:])
    return [e for e in entries if e.name in keep]


def _shown_whole(view: SharedContext, previous: Sequence[str]) -> frozenset[str]:
    """The entries push mode shows in full: the previous step's, and any its summary is."""
    full = set(previous)
    return frozenset(e.name for e in view.entries() if e.name in full or e.whole_in_summary)


def _listed(entry: ContextEntry, frame: Framing) -> str:
    """One line of the hint or of list_context: name, size and the framed summary.

    Every listed line is a summary, so its frame does not say so (a few tokens
    per entry, on every prompt of a pull-mode flow).
    """
    summary = frame.inline(entry.name, shorten(entry.summary, HINT_SUMMARY_CHARS))
    return f"- {entry.name} ({len(entry.output):,} chars): {summary}"


def _failure_lines(view: SharedContext, frame: Framing) -> list[str]:
    failures = view.failures()
    if not failures:
        return []
    lines = ["Failed, with no output (do not wait for them):"]
    lines += [
        f"- {name}: {frame.inline(name, shorten(reason, HINT_SUMMARY_CHARS), 'failed')}"
        for name, reason in failures.items()
    ]
    return lines


def check_agents(flow: Flow) -> list[Agent]:
    """The flow's agents, each an Agent whose tools leave the context tools' names free.

    Raises:
        UserError: Naming the node that is not an Agent, or the clashing tool.
    """
    agents: list[Agent] = []
    for agent in flow.agents:
        if not isinstance(agent, Agent):
            raise UserError(f"Flow holds {agent!r}, which is not an Agent; only Agents can run.")
        tools = [t.name for t in agent.tools if isinstance(t, Tool)]
        clash = [name for name in tools if name in CONTEXT_TOOL_NAMES]
        if clash:
            raise UserError(
                f"Agent {agent.name!r} has a tool named {clash[0]!r}, a name the context modes "
                f"reserve ({', '.join(CONTEXT_TOOL_NAMES)}); rename the tool."
            )
        agents.append(agent)
    return agents
