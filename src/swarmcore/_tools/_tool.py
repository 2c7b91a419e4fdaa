"""The Tool value: a name, a description, a JSON schema, and the validated call of a function."""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import pydantic_core
from pydantic import BaseModel, ValidationError

from swarmcore._checks import DEFAULT, Default, check_number, no_limit
from swarmcore.errors import SwarmError, UserError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")

MAX_ARGUMENTS_CHARS = 1_000_000
"""The longest JSON arguments a tool call may send; longer ones go back to the model."""


def validate_name(name: object, what: str) -> str:
    """Check that ``name`` is an identifier every provider accepts as a tool or agent name.

    Args:
        name: The name to check.
        what: What is named (``"Tool"``, ``"Agent"``), for the error message.

    Returns:
        The name, unchanged.

    Raises:
        UserError: The name is not a string of 1 to 64 letters, digits, ``_`` or
            ``-`` starting with a letter or ``_``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise UserError(
            f"{what} name {name!r} is not a valid identifier; use 1 to 64 letters, digits, "
            "'_' or '-', starting with a letter or '_' (e.g. 'web_search')."
        )
    return name


class ToolArgumentsError(Exception):
    """The model sent arguments a tool cannot accept (goes back to the model as text)."""


class ToolReportedError(Exception):
    """A failure the tool reports itself (an MCP server's): goes back to the model as its text.

    Unlike an exception a tool raises, it is not described as "raised <type>".
    """


class TaskPending(SwarmError):
    """Under a durable engine: the server made a task for the call, to be followed on its own.

    The recorded call stops with this error once the server answered with a task
    handle, so the handle is recorded with the call; the agent's loop then makes
    the call again as "follow task ``task_id``", and a worker killed while it
    waits resumes following the same task rather than calling the tool again.

    Args:
        task_id: The server's task.
    """

    task_id: str

    def __init__(self, task_id: str) -> None:
        super().__init__(f"The call continues as the server's task {task_id!r}.")
        self.task_id = task_id


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model can call, with its JSON schema and argument validator.

    Build one with :func:`function_tool`, or pass a plain function in an
    Agent's ``tools`` and it is converted for you.
    """

    name: str
    """The name the model calls the tool by."""
    description: str
    """What the tool does, shown to the model."""
    parameters: dict[str, Any]
    """The JSON schema of the arguments."""
    fn: Callable[..., Any] = field(repr=False)
    """The function that runs."""
    _args_model: type[BaseModel] = field(repr=False)
    _positional: tuple[str, ...] = field(repr=False, default=())
    timeout: float | Default | None = DEFAULT
    """Seconds one call may take before it is stopped and reported to the model as an
    error; None for no limit; unset (``DEFAULT``) uses the agent's ``tool_timeout``."""
    requires_approval: bool = False
    """Ask the run's approval callback before every call (see :class:`Approval`)."""
    delegate: Any = field(default=None, repr=False)
    """The Agent this tool runs, for tools made by ``agent.as_tool()``; else None."""

    def timeout_note(self) -> str:
        """What the model should know when a call of this tool runs out of time (or "")."""
        return ""

    def __post_init__(self) -> None:
        # None: no limit for this tool, whatever the agent's tool_timeout (DEFAULT defers to it)
        owner = f"Tool {self.name!r}"
        if self.timeout is not DEFAULT:
            check_number(owner, "timeout", self.timeout, unlimited=True, none="no limit")
            object.__setattr__(self, "timeout", no_limit(owner, "timeout", self.timeout))

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """The tool in OpenAI's ``tools=`` format (made once; a bound copy shares it)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def bind(self, fn: Callable[..., Any]) -> Tool:
        """The same tool (schema and validator reused) running a different function.

        The function must take the same parameters; this is how run-local tools
        such as the context tools avoid rebuilding their schema on every run.

        Args:
            fn: The function the new tool runs.

        Returns:
            A copy of this tool whose calls run ``fn``.
        """
        # A copy with one field swapped. replace() validates and rebuilds, and copy.copy()
        # goes through __reduce_ex__: each cost ~10 us a context tool of every step, ~25 us
        # an agent run, which showed in benchmarks/run.py's W3 CPU/call row.
        bound = object.__new__(type(self))
        bound.__dict__.update(self.__dict__, fn=fn)
        return bound

    async def invoke(self, arguments: str) -> str:
        """Validate the JSON ``arguments``, run the function, and serialise its result.

        Sync functions run in a worker thread so a slow tool never blocks the
        agents running beside it.

        Args:
            arguments: The arguments the model sent, as JSON text.

        Returns:
            The function's result as text for the model.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON or fail validation.
            Exception: Whatever the function raises.
        """
        values = self.validate_arguments(arguments)
        args = [values.pop(n) for n in self._positional]
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(*args, **values)
        else:
            result = await asyncio.to_thread(self.fn, *args, **values)
            if inspect.isawaitable(result):
                result = await result
        return serialise_result(result)

    def json_object(self, arguments: str) -> dict[str, Any]:
        """The JSON ``arguments`` as an object (empty text means none), before validation.

        The one parse of a call's arguments, whatever the tool (approval or not,
        Python or MCP). The arguments are model text: pydantic-core parses them,
        so nesting too deep or a number too long is a ``ValueError`` like any
        malformed JSON, never a ``RecursionError``.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON, not an object,
                or longer than :data:`MAX_ARGUMENTS_CHARS`.
        """
        if len(arguments) > MAX_ARGUMENTS_CHARS:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments are {len(arguments):,} characters, over "
                f"the limit of {MAX_ARGUMENTS_CHARS:,}. Send shorter arguments."
            )
        try:
            raw = pydantic_core.from_json(arguments.strip() or "{}")
        except ValueError as exc:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments are not valid JSON ({exc}). Send one JSON "
                "object matching the tool's parameters."
            ) from exc
        if not isinstance(raw, dict):
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments must be a JSON object, got "
                f"{type(raw).__name__}. Send one JSON object matching the tool's parameters."
            )
        return cast("dict[str, Any]", raw)

    def validate_arguments(self, arguments: str) -> dict[str, Any]:
        """Parse and validate the JSON ``arguments`` the model sent.

        Args:
            arguments: The arguments as JSON text; empty text means none.

        Returns:
            The values the function is called with, by parameter name.

        Raises:
            ToolArgumentsError: The arguments are not a JSON object or fail validation.
        """
        raw = self.json_object(arguments)
        try:
            model = self._args_model.model_validate(raw)
        except ValidationError as exc:
            from swarmcore._structured import explain  # only on the error path

            raise ToolArgumentsError(
                f"Tool {self.name!r}: invalid arguments: {explain(exc)}. Fix them and call again."
            ) from exc
        # Fields are stored under internal names (p_<name>) with the parameter as alias.
        return {name[2:]: getattr(model, name) for name in type(model).model_fields}


@runtime_checkable
class Toolset(Protocol):
    """Tools that exist only at run time, such as an MCP server's; pass one in an Agent's tools."""

    name: str
    """The toolset's name, for errors and records."""

    async def tools(self) -> list[Tool]:
        """The tools to offer in this run."""
        ...


def serialise_result(result: object) -> str:
    """A tool's return value as text for the model: strings as they are, anything else as JSON.

    Args:
        result: What the tool returned.

    Returns:
        The text sent to the model.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return pydantic_core.to_json(result, fallback=str).decode()
