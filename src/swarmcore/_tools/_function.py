"""A Tool from a Python function: a JSON schema from its signature, text from its docstring.

The signature becomes a pydantic model (so ``list[T]``, ``X | None``,
``Literal``, enums, nested models, defaults and ``Annotated[..., Field(...)]``
all work). The schema is built once, when the Agent is built; a signature
that cannot become a schema fails there.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter, create_model

from swarmcore._checks import DEFAULT, Default
from swarmcore._tools._tool import Tool, validate_name
from swarmcore.errors import UserError

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples?|Notes?|Attributes):\s*$"
)
_ENTRY = re.compile(r"^\s{1,8}(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | Default | None = DEFAULT,
    requires_approval: bool = False,
) -> Tool:
    """Turn a plain function (sync or async) into a Tool.

    Args:
        fn: The function. Every parameter needs a type annotation.
        name: The tool name; defaults to the function's ``__name__``.
        description: What the tool does; defaults to the docstring's first paragraph.
        timeout: Seconds one call may take; None for no limit; unset (``DEFAULT``)
            uses the agent's ``tool_timeout``.
            An async tool is cancelled at the limit; a sync tool's thread cannot
            be stopped, so it finishes in the background and its result is dropped.
        requires_approval: Ask the run's approval callback (``Swarm(approve=...)``)
            before every call; it can allow, deny or edit the arguments.

    Returns:
        The tool.

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
            f"{_json_name_hint(fn)}"
        ) from exc
    parameters = inspect.signature(fn).parameters.values()
    # Fields get internal names (p_<name>) so a parameter may shadow a BaseModel attribute.
    fields: dict[str, Any] = {
        f"p_{p.name}": _field(tool_name, p, hints, arg_docs) for p in parameters
    }
    positional = tuple(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY)
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
        _positional=positional,
        timeout=timeout,
        requires_approval=requires_approval,
    )


def to_tools(items: Iterable[Callable[..., Any] | Tool], *, owner: str) -> tuple[Tool, ...]:
    """Convert functions to Tools and check that names are unique.

    Args:
        items: Functions and Tools, in order.
        owner: Who holds the tools (``"Agent 'writer'"``), for the error message.

    Returns:
        The tools, in the same order.

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


# --- the schema ------------------------------------------------------------------------


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
    if annotation is object:  # pydantic accepts it with an empty schema: the model gets no type
        raise UserError(
            f"{where} has type object, which gives the model no schema at all; write "
            f"dict[str, Any] (or a pydantic model) for a JSON object, or Any for any value."
        )
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


_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list[...]",
    "null": "None",
}


def _json_name_hint(fn: Callable[..., Any]) -> str:
    """For annotations written as JSON Schema type names (``x: "string"``): the Python type."""
    raw = getattr(fn, "__annotations__", {})
    # Under ``from __future__ import annotations`` a string annotation arrives quoted twice.
    texts = {n: h.strip("'\"") for n, h in raw.items() if n != "return" and isinstance(h, str)}
    named = [f"{n}: {_JSON_TYPES[t]}" for n, t in texts.items() if t in _JSON_TYPES]
    return f" Annotate with Python types ({', '.join(named)})." if named else ""


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


# --- the docstring -----------------------------------------------------------------------


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its first paragraph and its ``Args:`` entries.

    Args:
        doc: The docstring, already dedented (``inspect.getdoc``); None for none.

    Returns:
        The first paragraph on one line, and each argument's description by name.
    """
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
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        entry = _ENTRY.match(line)
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
