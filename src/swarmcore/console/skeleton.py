"""The flow's skeleton: every agent's row, shown as waiting from the run's start.

The rows are read back from the flow's ``>>``/``|`` expression on RunStarted.
This module is the only place that does so, so that it can be swapped for a
typed shape of the flow without touching the rest of the console.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from swarmcore.console.rows import Row, RunState, walk, walk_agents
from swarmcore.events import RunStarted

__all__ = ["skeleton"]

_TOKEN = re.compile(r"\s*(>>|\||\(|\)|[A-Za-z0-9_-]+)")


def skeleton(event: RunStarted, state: RunState) -> list[Row]:
    """The rows of the run's flow, with its agents and groups indexed in ``state``.

    Gives no rows when the expression cannot be read or does not name exactly
    the run's agents; the tree then grows from the events as they come.
    """
    tokens = _tokenize(event.flow)
    if tokens is None:
        return []
    parser = _Parser(tokens)
    try:
        steps = parser.sequence()
    except (IndexError, ValueError):
        return []
    if parser.index != len(tokens):
        return []
    names = [row.label for row in walk_agents(steps)]
    if len(set(names)) != len(names) or set(names) != set(event.agents):
        return []
    for row in walk_agents(steps):
        state.agents[row.label] = row
    _index_groups(steps, state)
    return steps


def _tokenize(text: str) -> list[str] | None:
    tokens: list[str] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return None
        tokens.append(match.group(1))
        position = match.end()
    return tokens


class _Parser:
    """Reads ``sequence := parallel (">>" parallel)*``, ``parallel := atom ("|" atom)*``.

    An ``atom`` is a name or a parenthesised sequence.
    """

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.index = 0

    def sequence(self) -> list[Row]:
        steps = self.parallel()
        while self.index < len(self.tokens) and self.tokens[self.index] == ">>":
            self.index += 1
            steps.extend(self.parallel())
        return steps

    def parallel(self) -> list[Row]:
        members = [self.atom()]
        while self.index < len(self.tokens) and self.tokens[self.index] == "|":
            self.index += 1
            members.append(self.atom())
        if len(members) == 1:
            return members[0]
        children = [m[0] if len(m) == 1 else Row("branch", "branch", m) for m in members]
        return [Row("parallel", "group", children)]

    def atom(self) -> list[Row]:
        token = self.tokens[self.index]
        self.index += 1
        if token == "(":
            inner = self.sequence()
            if self.tokens[self.index] != ")":
                raise ValueError(token)
            self.index += 1
            return inner
        if token in (")", ">>", "|"):
            raise ValueError(token)
        return [Row(token, "agent")]


def _index_groups(rows: Sequence[Row], state: RunState) -> None:
    for row in walk(rows):
        if row.kind == "group":
            state.groups[frozenset(a.label for a in walk_agents(row.children))] = row
