"""Checking an MCP tool's arguments against its JSON schema, and its result as text."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from swarmcore._tools import ToolReportedError


def render_result(result: Any, tool: str, server: str, redact: Callable[[str], str] = str) -> str:
    """A ``CallToolResult`` as text for the model.

    Args:
        result: What the server returned.
        tool: The tool's name as the model knows it, for an error the server reports.
        server: The server's name, for the same.
        redact: Cleans the text of an error the server reported (of its credentials).

    Returns:
        The structured content as JSON when there is some, else the content as text.

    Raises:
        ToolReportedError: The server flagged the result as an error (``isError``).
    """
    parts: list[str] = []
    for item in list(getattr(result, "content", None) or []):
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(item.text))
        elif kind == "resource":
            resource = getattr(item, "resource", None)
            parts.append(str(getattr(resource, "text", None) or f"[resource {resource}]"))
        else:
            mime = getattr(item, "mime_type", None) or getattr(item, "mimeType", None) or kind
            parts.append(f"[{kind or 'content'}: {mime}]")
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        # Told as the server's report: nothing was raised on our side.
        raise ToolReportedError(
            f"Tool {tool!r}: the MCP server {server!r} reported an error: "
            f"{redact(text) or 'no details'}"
        )
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False, default=str)
    return text


def schema_validator(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], str | None]:
    """A check of arguments against a tool's JSON schema (with jsonschema, which mcp brings).

    Args:
        schema: The tool's input schema.

    Returns:
        A function giving the first problem with some arguments, or None when they fit.
    """
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - mcp depends on jsonschema
        return lambda _: None
    checker: Any = jsonschema.Draft202012Validator(dict(schema))

    def check(values: dict[str, Any]) -> str | None:
        errors: list[Any] = sorted(checker.iter_errors(values), key=lambda e: list(e.path))
        if not errors:
            return None
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "arguments"
        return f"{where}: {first.message}"

    return check
