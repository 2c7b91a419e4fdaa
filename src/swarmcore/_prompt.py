"""The system prompt of an agent run, and the ``{name}`` variables in instructions.

A system prompt is, in order: the instructions (variables filled); the answer
format: how to call tools when the model has no native tool calling, and what
form the answer takes (a ``<summary>`` line, or JSON); then the context mode's
hint. Stable parts first, for providers' prefix caches: the instructions and the
answer format are the agent's own, the same at every position in a flow and on
every loop iteration, while the context depends on where the agent runs. Then
come the task and the conversation, which grows at its end. Nothing in a prompt
depends on time, chance or the order in which parallel agents finish, so the
same inputs give the same bytes on every retry and every run.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore._structured import OutputSpec
    from swarmcore._tools import Tool
    from swarmcore.llm import Message

SUMMARY_INSTRUCTION = (
    "End your answer with a one-line summary of it, on a line of its own, "
    "inside <summary></summary> tags."
)
"""Appended to every system prompt; the summary is what later agents see first."""

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(text: str) -> frozenset[str]:
    """The ``{name}`` placeholders in ``text`` (``{{`` and ``}}`` are literal braces)."""
    return frozenset(m.group(1) for m in _PLACEHOLDER.finditer(text) if m.group(1))


def render(text: str, variables: Mapping[str, object]) -> str:
    """``text`` with each ``{name}`` replaced by its variable and ``{{``/``}}`` made single.

    Any other brace (a JSON example, say) is left as it is.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0)[0] if name is None else str(variables[name])

    return _PLACEHOLDER.sub(fill, text)


def normalize_variables(variables: Mapping[str, object] | None) -> dict[str, object]:
    """Variables as text (how they are rendered and stored), names checked.

    Raises:
        UserError: Not a mapping, or a name that is not an identifier.
    """
    if variables is None:
        return {}
    if not isinstance(variables, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(f"variables must be a dict of name to value, got {variables!r}.")
    for key in variables:
        if not isinstance(key, str) or not key.isidentifier():  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"Variable names must be identifiers, got {key!r}.")
    return {k: str(v) for k, v in variables.items()}


class MissingVariables(UserError):
    """Instructions use prompt variables the run was not given.

    Attributes:
        used_by: Each missing variable, with the agents whose instructions use it.
    """

    def __init__(self, message: str, used_by: Mapping[str, Sequence[str]]) -> None:
        super().__init__(message)
        self.used_by = {name: list(agents) for name, agents in used_by.items()}


class _UsesVariables(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def variables(self) -> frozenset[str]: ...


def check_variables(agents: Iterable[_UsesVariables], variables: Mapping[str, object]) -> None:
    """Fail before any model call when an agent's instructions use a variable not given.

    Raises:
        UserError: Naming every missing variable and the agents that use it.
    """
    missing: dict[str, list[str]] = {}
    for agent in agents:
        for name in sorted(agent.variables - variables.keys()):
            missing.setdefault(name, []).append(agent.name)
    if not missing:
        return
    listed = "; ".join(
        f"{{{name}}} (used by {', '.join(repr(a) for a in users)})"
        for name, users in missing.items()
    )
    example = ", ".join(f"{name!r}: ..." for name in missing)
    raise MissingVariables(
        f"Missing prompt variables: {listed}. Pass them as variables={{{example}}}, or write "
        "{{ and }} for literal braces in instructions.",
        missing,
    )


def answer_format(
    tools: Sequence[Tool], marker: str | None, output: OutputSpec | None, native_output: bool
) -> str:
    """What follows the instructions: the text tool protocol, and the form of the answer.

    ``marker`` is the run's text tool protocol marker; None when the model calls
    tools natively (or has none).
    """
    tail: list[str] = []
    if tools and marker is not None:
        from swarmcore._text_tools import text_tool_instructions

        tail.append(text_tool_instructions([t.spec for t in tools], marker))
    if output is None:
        tail.append(SUMMARY_INSTRUCTION)
    elif native_output:
        tail.append(f"Answer with only a JSON value that matches the {output.name} schema.")
    else:
        tail.append(output.instructions)
    return "\n\n".join(tail)


def system_prompt(
    instructions: str, variables: Mapping[str, object], hint: str | None, answer: str
) -> str:
    """The instructions with variables filled, the answer format, then the context hint."""
    parts = (render(instructions, variables).strip(), answer, hint.strip() if hint else "")
    return "\n\n".join(part for part in parts if part)


def messages(system: str, task: str, history: Sequence[Message] | None) -> list[Message]:
    """The first request's messages: system, any earlier conversation, then the task."""
    earlier = [m for m in history or () if m.get("role") != "system"]
    return [{"role": "system", "content": system}, *earlier, {"role": "user", "content": task}]


def copy_history(owner: str, history: Sequence[Mapping[str, Any]] | None) -> list[Message] | None:
    """A deep copy of ``history``, so two runs from one history stay independent.

    Raises:
        UserError: ``history`` is not a list of messages.
    """
    if history is None:
        return None
    if (
        not isinstance(history, Sequence)  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        or isinstance(history, (str, bytes))
        or not all(isinstance(m, Mapping) and "role" in m for m in history)
    ):
        raise UserError(
            f"Agent {owner!r}: history must be a list of messages (dicts with a 'role'), "
            "such as an earlier result's messages."
        )
    return [cast("Message", copy.deepcopy(dict(m))) for m in history]  # each has a role
