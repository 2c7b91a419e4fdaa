"""Parsing flow expressions such as ``"researcher >> (analyst | critic) >> writer"``.

The language is the one ``Flow.expression()`` prints::

    flow := seq
    seq  := par (">>" par)*
    par  := atom ("|" atom)*
    atom := NAME | "(" seq ")"
    NAME := [A-Za-z_][A-Za-z0-9_-]*

``|`` binds tighter than ``>>``, as in Python, so ``a >> b | c`` is
``a >> (b | c)``. Whitespace, newlines included, is free.

The text may come from a model, so it is tokenized and parsed by hand, never
evaluated, and its length and nesting depth are capped. Every error is a
``UserError`` that says what is wrong, where (with a caret), and what to write
instead, so it can go back to the model that wrote the expression.

The parser knows agents only by name: it returns a small syntax tree
(:class:`NameExpr`, :class:`ChainExpr`, :class:`ParallelExpr`) and
``Flow.parse`` (:mod:`swarmcore._flow.model`) turns the tree into a Flow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar, cast

from swarmcore.errors import UserError

# Limits for text a model wrote: flows are short, and recursion must stay far from its limit.
_MAX_LENGTH = 10_000  # characters, checked before anything is stripped
_MAX_DEPTH = 50  # nested parentheses

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# A Markdown fence: an optional info string ("```text") is only one when a newline follows it.
_FENCE = re.compile(r"```(?:[A-Za-z0-9_+-]*[ \t]*\n)?(.*)```", re.DOTALL)
_BACKTICKS = re.compile(r"`([^`]*)`")
_HOW = (
    "Join agent names with '>>' (one after another) and '|' (at the same time), "
    "e.g. 'a >> (b | c) >> d'."
)
_CHAR_HINTS = {
    ">": "Use '>>' to run agents one after another.",
    "-": "Use '>>' to run agents one after another.",
    "→": "Use '>>' to run agents one after another.",
    ",": "Use '|' to run agents at the same time, or '>>' to run them one after another.",
    "&": "Use '|' to run agents at the same time.",
    "+": "Use '|' to run agents at the same time, or '>>' to run them one after another.",
    "'": "Write agent names without quotes.",
    '"': "Write agent names without quotes.",
    "[": "Group with parentheses '(' and ')'.",
    "{": "Group with parentheses '(' and ')'.",
}
_WINDOW = 60  # characters shown either side of the caret in a very long line

_T = TypeVar("_T")

_Kind: TypeAlias = Literal["name", ">>", "|", "(", ")", "end"]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str
    pos: int


@dataclass(frozen=True, slots=True)
class NameExpr:
    """An agent, by the name the expression used for it."""

    name: str
    """The name as written (a key of the ``names`` given to :func:`parse_expression`)."""
    pos: int
    """Where the name starts in the unwrapped expression (0-based)."""


@dataclass(frozen=True, slots=True)
class ChainExpr:
    """Two or more parts that run one after another (``a >> b``)."""

    items: tuple[Expr, ...]
    """The parts, in order."""
    pos: int
    """Where the first part starts."""


@dataclass(frozen=True, slots=True)
class ParallelExpr:
    """Two or more parts that run at the same time (``a | b``)."""

    items: tuple[Expr, ...]
    """The parts, in order."""
    pos: int
    """Where the first part starts."""


Expr: TypeAlias = "NameExpr | ChainExpr | ParallelExpr"
"""A parsed flow expression; parentheses leave no node of their own."""


def parse_expression(expression: str, names: Mapping[str, str]) -> Expr:
    """Parse a flow expression such as ``"researcher >> (analyst | critic) >> writer"``.

    Surrounding whitespace, a surrounding pair of backticks or a Markdown
    fence, and a trailing period are ignored, since models often add them.

    Args:
        expression: The flow in the ``>>``/``|`` language.
        names: Each name the expression may use, to the name of the agent it
            stands for (the same name, unless the caller gave aliases). An
            agent may appear once.

    Returns:
        The syntax tree; a chain or group of one part is that part.

    Raises:
        UserError: The expression is not a string, too long or nested too
            deeply; a syntax error (with its position); an unknown name (with
            the closest known names); or an agent used twice.
    """
    if not isinstance(expression, str):
        raise UserError(
            f"A flow expression must be a string such as 'a >> (b | c)', "
            f"got {type(expression).__name__}."
        )
    if len(expression) > _MAX_LENGTH:
        raise UserError(
            f"The flow expression is {len(expression):,} characters long; the limit is "
            f"{_MAX_LENGTH:,}. Write only agent names, '>>', '|' and parentheses."
        )
    text = _unwrap(expression)
    return _Parser(text, _tokenize(text), names).parse()


def name_table(agents: Iterable[_T] | Mapping[str, _T], kind: type[_T]) -> dict[str, _T]:
    """The agents an expression may name, by name, checked for untyped callers.

    Args:
        agents: Objects of type ``kind`` keyed by their ``name`` attribute; or
            a mapping of name (or alias) to such an object.
        kind: What each agent must be an instance of.

    Raises:
        UserError: ``agents`` is neither an iterable nor a mapping, holds
            something that is not a ``kind``, or two of its agents share a name.
    """
    pairs: list[tuple[object, object]]
    if isinstance(agents, Mapping):
        pairs = list(cast("Mapping[object, object]", agents).items())
    elif isinstance(agents, Iterable) and not isinstance(agents, (str, bytes)):
        pairs = [(getattr(a, "name", None), a) for a in agents]
    else:
        raise UserError(
            f"Flow.parse() takes the agents as a list or a mapping of name to agent, "
            f"got {type(agents).__name__}."
        )
    table: dict[str, _T] = {}
    for name, agent in pairs:
        if not isinstance(agent, kind):
            raise UserError(
                f"Flow.parse() got {agent!r:.40} among the agents; pass Agent objects "
                f"(or a mapping of name to Agent)."
            )
        if not isinstance(name, str):
            raise UserError(f"Flow.parse() got the agent name {name!r:.40}; names are strings.")
        if name in table and table[name] is not agent:
            raise UserError(
                f"Two agents are named {name!r}; names must be unique, so rename one "
                f"(agent.clone(name='{name}_2'))."
            )
        table[name] = agent
    return table


def _unwrap(expression: str) -> str:
    """The expression without what models wrap around it: whitespace, backticks, a period."""
    text = expression.strip().removesuffix(".").rstrip()
    wrapped = _FENCE.fullmatch(text) or _BACKTICKS.fullmatch(text)
    if wrapped:
        text = wrapped.group(1).strip().removesuffix(".").rstrip()
    return text


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char.isspace():
            pos += 1
        elif name := _NAME.match(text, pos):
            tokens.append(_Token("name", name.group(), pos))
            pos = name.end()
        elif text.startswith(">>", pos):
            tokens.append(_Token(">>", ">>", pos))
            pos += 2
        elif char in "|()":
            kind: _Kind = "|" if char == "|" else "(" if char == "(" else ")"
            tokens.append(_Token(kind, char, pos))
            pos += 1
        else:
            problem = f"unexpected character {char!r}"
            raise _syntax_error(text, pos, problem, _CHAR_HINTS.get(char, _HOW))
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    """Recursive descent over the tokens; builds the syntax tree as it goes."""

    def __init__(self, text: str, tokens: list[_Token], names: Mapping[str, str]) -> None:
        self._text = text
        self._tokens = tokens
        self._names = names
        self._index = 0
        self._depth = 0
        self._used: dict[str, _Token] = {}  # agent name -> where it was first used

    def parse(self) -> Expr:
        expr = self._seq()
        self._close(None)
        return expr

    def _seq(self) -> Expr:
        items = [self._par()]
        while self._peek().kind == ">>":
            self._index += 1
            items.append(self._par())
        return items[0] if len(items) == 1 else ChainExpr(tuple(items), items[0].pos)

    def _par(self) -> Expr:
        items = [self._atom()]
        while self._peek().kind == "|":
            self._index += 1
            items.append(self._atom())
        return items[0] if len(items) == 1 else ParallelExpr(tuple(items), items[0].pos)

    def _atom(self) -> Expr:
        token = self._peek()
        if token.kind == "name":
            self._index += 1
            return self._name(token)
        if token.kind != "(":
            raise self._missing_operand(token)
        self._index += 1
        if self._peek().kind == ")":
            raise self._error(token, "empty parentheses", "Put agent names inside them.")
        self._depth += 1
        if self._depth > _MAX_DEPTH:
            problem = f"parentheses nested more than {_MAX_DEPTH} deep"
            raise self._error(token, problem, "Flatten the expression.")
        inner = self._seq()
        self._close(token)
        self._depth -= 1
        return inner

    def _close(self, opening: _Token | None) -> None:
        """Consume the ``)`` that ends the group opened at ``opening`` (None: the expression)."""
        token = self._peek()
        self._index += 1
        if token.kind == ("end" if opening is None else ")"):
            return
        between = "Put '>>' (one after another) or '|' (at the same time) between them."
        match token.kind:
            case "name":
                raise self._error(token, "two agent names in a row", between)
            case "(":
                raise self._error(token, "'(' right after an agent or group", between)
            case ")":
                raise self._error(token, "unmatched ')'", "Remove it, or add the '(' it closes.")
            case _:
                assert opening is not None  # the only token a sequence can stop at besides these
                where = self._where(opening.pos)
                fix = f"Add a ')' to close the '(' at {where}."
                raise self._error(token, "missing ')'", fix)

    def _name(self, token: _Token) -> NameExpr:
        agent = self._names.get(token.text)
        if agent is None:
            import difflib  # only for this error: a valid expression never loads it

            names = list(self._names)
            close = difflib.get_close_matches(token.text, names, n=3)
            guess = f"Did you mean {' or '.join(map(repr, close))}? " if close else ""
            available = ", ".join(names) or "(none)"
            fix = f"{guess}Available agents: {available}."
            raise self._error(token, f"unknown agent {_short(token.text)}", fix)
        first = self._used.get(agent)
        if first is not None:
            alias = "" if token.text == agent else f" (as {token.text!r})"
            problem = f"agent {agent!r}{alias} is used twice (first at {self._where(first.pos)})"
            fix = (
                "A flow runs each agent once and names must be unique; remove one, or add "
                f"a copy under another name (agent.clone(name='{agent}_2'))."
            )
            raise self._error(token, problem, fix)
        self._used[agent] = token
        return NameExpr(token.text, token.pos)

    def _missing_operand(self, token: _Token) -> UserError:
        """The error for ``token`` where a name or ``(`` was expected."""
        previous = self._tokens[self._index - 1] if self._index else None
        if previous is not None and previous.kind in (">>", "|"):
            found = "the end" if token.kind == "end" else repr(token.text)
            problem = f"{previous.text!r} with nothing after it (found {found})"
            return self._error(previous, problem, f"Put an agent name or '(' after it. {_HOW}")
        if token.kind in (">>", "|"):
            problem = f"{token.text!r} with nothing before it"
            return self._error(token, problem, f"Put an agent name or ')' before it. {_HOW}")
        if token.kind == ")":
            return self._error(token, "unmatched ')'", "Remove it, or add the '(' it closes.")
        return self._error(token, "the expression is empty", _HOW)

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _where(self, pos: int) -> str:
        return _where(self._text, pos)

    def _error(self, token: _Token, problem: str, fix: str) -> UserError:
        return _syntax_error(self._text, token.pos, problem, fix)


def _short(name: str) -> str:
    """``name`` quoted, cut short if it is longer than any agent's name can be."""
    return repr(name) if len(name) <= 64 else repr(name[:64]) + "..."


def _where(text: str, pos: int) -> str:
    """``column 7``, or ``line 2, column 7`` in a multi-line expression (both from 1)."""
    column = f"column {pos - text.rfind(chr(10), 0, pos)}"
    if "\n" not in text:
        return column
    return f"line {text.count(chr(10), 0, pos) + 1}, {column}"


def _syntax_error(text: str, pos: int, problem: str, fix: str) -> UserError:
    """An error naming ``problem`` at ``pos``, with the line and a caret under the position."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    # Other whitespace (tabs, \r) would shift the caret; show it as spaces.
    line = "".join(" " if c.isspace() else c for c in line)
    offset = pos - line_start
    if len(line) > 2 * _WINDOW:
        start, end = max(0, offset - _WINDOW), offset + _WINDOW
        prefix = "..." if start else ""
        line = prefix + line[start:end] + ("..." if end < len(line) else "")
        offset += len(prefix) - start
    return UserError(
        f"Invalid flow expression at {_where(text, pos)}: {problem}.\n"
        f"    {line}\n    {' ' * offset}^\n{fix}"
    )
