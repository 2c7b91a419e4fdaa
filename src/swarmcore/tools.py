"""Tools: plain functions turned into JSON schemas, validated calls and recorded results.

A function's signature becomes a pydantic model (so ``list[T]``, ``X | None``,
``Literal``, enums, nested models, defaults and ``Annotated[..., Field(...)]``
all work), its Google-style docstring gives the descriptions, and every call's
arguments are validated before the function runs. The schema is built once,
when the Agent is built; a signature that cannot become a schema fails there.

Model mistakes (an unknown tool, malformed JSON, invalid arguments) and tools
that raise become a tool result the model can act on, and are recorded; they
never crash the run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from swarmcore.errors import SwarmError, UserError
from swarmcore.models import ToolCallRecord

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Tool",
    "Toolset",
    "function_tool",
    "run_tool_call",
    "to_tools",
    "truncate",
    "validate_name",
]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples?|Notes?|Attributes):\s*$"
)


def validate_name(name: object, what: str) -> str:
    """Check that ``name`` is an identifier every provider accepts as a tool or agent name.

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


# No slots: bind() copies a tool's fields in one dict update (it runs per agent run).
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
    timeout: float | None = None
    """Seconds one call may take before it is stopped and reported to the model as an
    error; None uses the agent's ``tool_timeout``."""
    requires_approval: bool = False
    """Ask the run's approval callback before every call (see :class:`Approval`)."""
    delegate: Any = field(default=None, repr=False)
    """The Agent this tool runs, for tools made by ``agent.as_tool()``; else None."""
    _spec: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, int | float)
            or self.timeout <= 0
        ):
            raise UserError(
                f"Tool {self.name!r}: timeout must be a positive number of seconds or None, "
                f"got {self.timeout!r}."
            )
        spec = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }
        object.__setattr__(self, "_spec", spec)

    @property
    def spec(self) -> dict[str, Any]:
        """The tool in OpenAI's ``tools=`` format (built once)."""
        return self._spec

    def bind(self, fn: Callable[..., Any]) -> Tool:
        """The same tool (schema and validator reused) running a different function.

        The function must take the same parameters; this is how run-local tools
        such as the context tools avoid rebuilding their schema on every run.
        """
        # Not dataclasses.replace (re-validates, rebuilds the spec) nor copy.copy
        # (calls dataclasses.fields() each time): this runs per agent run.
        bound = object.__new__(Tool)
        fields = bound.__dict__
        fields.update(self.__dict__)
        fields["fn"] = fn
        return bound

    async def invoke(self, arguments: str) -> str:
        """Validate the JSON ``arguments``, run the function, and serialise its result.

        Sync functions run in a worker thread so a slow tool never blocks the
        agents running beside it.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON or fail validation.
            Exception: Whatever the function raises.
        """
        values = self._validate(arguments)
        args = [values.pop(n) for n in self._positional]
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(*args, **values)
        else:
            result = await asyncio.to_thread(self.fn, *args, **values)
            if inspect.isawaitable(result):
                result = await result
        return serialise_result(result)

    def _validate(self, arguments: str) -> dict[str, Any]:
        text = arguments.strip() or "{}"
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments are not valid JSON ({exc.msg} at "
                f"position {exc.pos}). Send one JSON object matching the tool's parameters."
            ) from exc
        if not isinstance(raw, dict):
            raise ToolArgumentsError(
                f"Tool {self.name!r}: the arguments must be a JSON object, got "
                f"{type(raw).__name__}. Send one JSON object matching the tool's parameters."
            )
        try:
            model = self._args_model.model_validate(raw)
        except ValidationError as exc:
            from swarmcore.structured import explain  # only on the error path

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


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call to a tool marked ``requires_approval``, waiting for a decision."""

    agent_name: str
    """The agent that wants to call the tool."""
    tool_name: str
    """The tool."""
    arguments: dict[str, Any]
    """The arguments the model sent (already validated against the tool's schema)."""
    call_id: str
    """The provider's ``tool_call_id``."""


@dataclass(frozen=True, slots=True)
class Approval:
    """An approval callback's decision: :meth:`allow`, :meth:`deny` or :meth:`edit`.

    A callback may also return ``True`` (allow) or ``False`` (deny).
    """

    decision: Literal["allow", "deny", "edit"]
    reason: str = ""
    """Why a call was denied; the model is told."""
    arguments: Mapping[str, Any] | None = None
    """The arguments to run with instead, for ``edit``."""

    @classmethod
    def allow(cls) -> Approval:
        """Run the call as the model asked."""
        return cls("allow")

    @classmethod
    def deny(cls, reason: str = "") -> Approval:
        """Do not run the call; the model is told it was denied, and why."""
        return cls("deny", reason=reason)

    @classmethod
    def edit(cls, arguments: Mapping[str, Any]) -> Approval:
        """Run the call with these arguments instead (validated like the model's)."""
        return cls("edit", arguments=dict(arguments))


Approver = Callable[[ApprovalRequest], "Approval | bool | Awaitable[Approval | bool]"]
"""An approval callback, sync or async."""


async def _decide(approve: Approver, request: ApprovalRequest) -> Approval:
    verdict = approve(request)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    if isinstance(verdict, bool):
        return Approval.allow() if verdict else Approval.deny()
    if not isinstance(verdict, Approval):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callbacks
        raise UserError(
            f"The approval callback returned {type(verdict).__name__} for tool "
            f"{request.tool_name!r}; return Approval.allow(), Approval.deny(reason), "
            "Approval.edit(arguments), True or False."
        )
    return verdict


class ToolArgumentsError(Exception):
    """The model sent arguments a tool cannot accept (goes back to the model as text)."""


def serialise_result(result: object) -> str:
    """A tool's return value as text for the model: strings as they are, anything else as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return pydantic_core.to_json(result, fallback=str).decode()


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_approval: bool = False,
) -> Tool:
    """Turn a plain function (sync or async) into a Tool.

    Args:
        fn: The function. Every parameter needs a type annotation.
        name: The tool name; defaults to the function's ``__name__``.
        description: What the tool does; defaults to the docstring's first paragraph.
        timeout: Seconds one call may take; None uses the agent's ``tool_timeout``.
            An async tool is cancelled at the limit; a sync tool's thread cannot
            be stopped, so it finishes in the background and its result is dropped.
        requires_approval: Ask the run's approval callback (``Swarm(approve=...)``)
            before every call; it can allow, deny or edit the arguments.

    Raises:
        UserError: A parameter has no annotation, is ``*args``/``**kwargs``, or
            has a type that cannot become a JSON schema; the message names it.
    """
    if not callable(fn):
        raise UserError(f"Tools must be functions or Tool objects, got {type(fn).__name__}.")
    tool_name = validate_name(name or getattr(fn, "__name__", ""), "Tool")
    summary, arg_docs = parse_docstring(inspect.getdoc(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # unresolvable forward references, typos in annotations
        raise UserError(
            f"Tool {tool_name!r}: its type annotations cannot be resolved: {exc}."
        ) from exc
    fields: dict[str, Any] = {}
    positional: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        fields[f"p_{param.name}"] = _field(tool_name, param, hints, arg_docs)
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(param.name)
    args_model = create_model(
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )
    try:
        schema = args_model.model_json_schema(by_alias=True)
    except Exception as exc:  # a default that cannot be rendered as JSON, for instance
        raise UserError(f"Tool {tool_name!r}: cannot build a JSON schema: {exc}") from exc
    _strip_titles(schema)
    return Tool(
        name=tool_name,
        description=description or summary or tool_name.replace("_", " "),
        parameters=schema,
        fn=fn,
        _args_model=args_model,
        _positional=tuple(positional),
        timeout=timeout,
        requires_approval=requires_approval,
    )


def to_tools(items: Iterable[Callable[..., Any] | Tool], *, owner: str) -> tuple[Tool, ...]:
    """Convert functions to Tools and check that names are unique.

    Raises:
        UserError: A function cannot become a tool, or two tools share a name.
    """
    tools = tuple(t if isinstance(t, Tool) else function_tool(t) for t in items)
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise UserError(
                f"{owner} has two tools named {tool.name!r}; give one another name with "
                f"function_tool(fn, name=...)."
            )
        seen.add(tool.name)
    return tools


async def run_tool_call(
    tools: Mapping[str, Tool],
    call_id: str,
    name: str,
    arguments: str,
    *,
    default_timeout: float | None = None,
    max_result_chars: int | None = None,
    approve: Approver | None = None,
    agent_name: str = "",
) -> ToolCallRecord:
    """Run one tool call; every failure becomes an error result the model can act on.

    Args:
        tools: The tools by name.
        call_id: The provider's ``tool_call_id``.
        name: The tool the model named.
        arguments: The raw JSON arguments.
        default_timeout: Seconds allowed for a tool without its own ``timeout``;
            None for no limit.
        max_result_chars: Longer results are cut to this many characters and
            marked as cut; None keeps them whole.
        approve: The approval callback for tools marked ``requires_approval``.
        agent_name: The calling agent, for the approval request.

    Cancellation is never swallowed: only ordinary exceptions (and the tool's
    own timeout) become results.

    Raises:
        UserError: The tool requires approval and there is no callback, or the
            callback returned something that is not a decision.
    """
    start = time.perf_counter()
    error: str | None = None
    approval: str | None = None
    tool = tools.get(name)
    if tool is not None and tool.requires_approval:
        arguments, error, approval = await _ask(tool, approve, agent_name, call_id, arguments)
    if error is not None:
        result = error
    elif tool is None:
        available = ", ".join(tools) or "none"
        error = f"Unknown tool {name!r}. Available tools: {available}."
        result = error
    else:
        limit = tool.timeout if tool.timeout is not None else default_timeout
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                result = await tool.invoke(arguments)
        except ToolArgumentsError as exc:
            error = str(exc)
            result = error
        except (
            SwarmError
        ):  # swarmcore's own stop signals (a dead MCP server, a budget) end the agent
            raise
        except TimeoutError as exc:
            if deadline.expired():
                error = (
                    f"Tool {name!r} did not finish within {limit:g}s and was stopped. "
                    "Try simpler arguments or another approach."
                )
            else:  # the tool's own TimeoutError, not our limit
                error = f"Tool {name!r} raised TimeoutError: {exc}"
            result = error
        except Exception as exc:  # a tool's own failure is reported to the model, not raised
            error = f"Tool {name!r} raised {type(exc).__name__}: {exc}"
            result = error
    result, full_length = truncate(result, max_result_chars)
    return ToolCallRecord(
        call_id=call_id,
        tool_name=name,
        arguments=arguments,
        result=result,
        error=error,
        duration_seconds=time.perf_counter() - start,
        truncated_from=full_length,
        server=getattr(tool, "server", None),
        approval=approval,
    )


async def _ask(
    tool: Tool, approve: Approver | None, agent_name: str, call_id: str, arguments: str
) -> tuple[str, str | None, str | None]:
    """Ask for approval: (arguments to run with, error for the model, approval outcome)."""
    try:
        decision = await _approval(tool, approve, agent_name, call_id, arguments)
    except ToolArgumentsError as exc:  # bad arguments go back to the model, not to a person
        return arguments, str(exc), None
    outcome = {"allow": "allowed", "deny": "denied", "edit": "edited"}[decision.decision]
    if decision.decision == "deny":
        return arguments, _denied(tool.name, decision.reason), outcome
    if decision.arguments is not None:
        arguments = json.dumps(dict(decision.arguments))
    return arguments, None, outcome


async def _approval(
    tool: Tool, approve: Approver | None, agent_name: str, call_id: str, arguments: str
) -> Approval:
    tool._validate(arguments)  # pyright: ignore[reportPrivateUsage] -- same module; fail before asking
    if approve is None:
        raise UserError(
            f"Tool {tool.name!r} requires approval, and this run has no approval callback; "
            "pass approve=callback to Swarm(...) or agent.run(...)."
        )
    shown: dict[str, Any] = json.loads(arguments.strip() or "{}")
    return await _decide(approve, ApprovalRequest(agent_name, tool.name, shown, call_id))


def _denied(name: str, reason: str) -> str:
    why = f": {reason}" if reason else ""
    return (
        f"The user denied this call to {name!r}{why}. Do not repeat it; continue without it "
        "or ask for something else."
    )


def truncate(text: str, limit: int | None) -> tuple[str, int | None]:
    """Cut ``text`` to ``limit`` characters with a visible marker.

    Returns:
        The text to send, and its original length when it was cut (else None).
    """
    if limit is None or len(text) <= limit:
        return text, None
    marker = (
        f"\n\n[truncated: showing the first {limit:,} of {len(text):,} characters; "
        "ask for a narrower result if you need the rest]"
    )
    return text[:limit] + marker, len(text)


# --- schema building -----------------------------------------------------------------


def _field(
    tool: str, param: inspect.Parameter, hints: Mapping[str, Any], docs: Mapping[str, str]
) -> tuple[Any, Any]:
    where = f"Tool {tool!r}: parameter {param.name!r}"
    if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise UserError(
            f"{where} is *args or **kwargs, which has no JSON schema; "
            "list the parameters one by one."
        )
    if param.name not in hints:
        raise UserError(
            f"{where} has no type annotation; annotate it ({param.name}: str, for instance)."
        )
    annotation = hints[param.name]
    try:
        TypeAdapter(annotation).json_schema()
    except Exception as exc:  # pydantic raises several error types for unsupported types
        raise UserError(
            f"{where} has type {_type_name(annotation)}, which cannot become a JSON schema; "
            f"use str, int, float, bool, list, dict, Literal, an Enum or a pydantic model "
            f"({type(exc).__name__})."
        ) from exc
    kwargs: dict[str, Any] = {"alias": param.name}
    if param.name in docs and not _has_field_description(annotation):
        kwargs["description"] = docs[param.name]
    default: Any = ... if param.default is inspect.Parameter.empty else param.default
    return (annotation, Field(default, **kwargs))


def _has_field_description(annotation: object) -> bool:
    """An ``Annotated[..., Field(description=...)]`` description wins over the docstring."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(getattr(m, "description", None) for m in typing.get_args(annotation)[1:])


def _type_name(annotation: object) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


def _strip_titles(node: object) -> None:
    """Drop pydantic's generated titles: they repeat the names and cost prompt tokens."""
    if isinstance(node, dict):
        schema = typing.cast(dict[str, Any], node)
        if isinstance(schema.get("title"), str):
            del schema["title"]
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for sub in typing.cast(dict[str, Any], value).values():
                    _strip_titles(sub)
            elif key != "default":
                _strip_titles(value)
    elif isinstance(node, list):
        for item in typing.cast(list[Any], node):
            _strip_titles(item)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its first paragraph and its ``Args:`` entries."""
    if not doc:
        return "", {}
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary_lines.append(line.strip())
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line.strip())
        if header and not line.startswith((" ", "\t")):
            section, current = header.group(1), None
            continue
        if section is None or section not in ("Args", "Arguments", "Parameters"):
            continue
        if not line.strip():
            continue
        entry = re.match(r"^\s{1,8}(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
        if entry and _indent(line) <= _indent_of_entries(lines, section):
            current = str(entry.group(1)).lstrip("*")
            args[current] = entry.group(3).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary_lines), args


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indent_of_entries(lines: list[str], section: str) -> int:
    """The indentation of the first entry under ``section:`` (continuations are deeper)."""
    inside = False
    for line in lines:
        if line.strip() == f"{section}:":
            inside = True
            continue
        if inside and line.strip():
            return _indent(line)
    return 4
