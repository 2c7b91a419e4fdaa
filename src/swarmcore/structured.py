"""Structured output and the text tool protocol: JSON in prose, found, validated and explained.

Two jobs share one extractor. An agent with an ``output_type`` must end with a
JSON value that validates; a model without native tool calling asks for tools
by writing a JSON object. Models wrap JSON in fences, prose or both, so
:func:`json_candidates` yields every JSON value in a text, the whole text
first, then fenced blocks, then values embedded in prose, and the first that
fits wins. Everything per agent (adapter, schema, instructions) is built once.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from swarmcore.errors import UserError

__all__ = [
    "SCHEMA_PROMPT",
    "OutputSpec",
    "OutputValidator",
    "TextToolCall",
    "explain",
    "json_candidates",
    "parse_text_tool_calls",
    "run_validators",
    "text_tool_instructions",
]

OutputValidator = Callable[[Any], "str | Awaitable[str | None] | None"]
"""Inspects an agent's output (the parsed object, or the text when there is no
``output_type``): returns None to accept it, or feedback text (or raises
ValueError) to send it back to the model for another try."""

SCHEMA_PROMPT = (
    "Answer with only a JSON value that matches this JSON schema, with no other text "
    "(a ```json fence is fine):"
)
"""Precedes the schema in the instructions of text-protocol structured output."""

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def json_candidates(text: str) -> Iterator[str]:
    """Every JSON value in ``text`` as a substring, most likely first.

    The whole text, then each fenced block (with or without a language tag),
    then each object or array embedded in prose, left to right.
    """
    stripped = text.strip()
    seen: set[str] = set()
    if _parses(stripped):
        seen.add(stripped)
        yield stripped
    for match in _FENCE.finditer(text):
        block = match.group(1).strip()
        if block not in seen and _parses(block):
            seen.add(block)
            yield block
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            _, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        value = text[start:end]
        if value not in seen:
            seen.add(value)
            yield value
        index = end


def _parses(text: str) -> bool:
    if not text or text[0] not in '{["-0123456789tfn':
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def explain(exc: ValidationError, limit: int = 5) -> str:
    """A pydantic error in one line a model (or a person) can act on."""
    parts: list[str] = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        got = err.get("input")
        got_text = "" if err["type"] == "missing" else f" (got {json.dumps(got, default=str)[:60]})"
        parts.append(f"{loc}: {err['msg']}{got_text}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


@dataclass(frozen=True, slots=True, eq=False)
class OutputSpec:
    """An ``output_type`` made ready once: validator, schema, prompt text, response format."""

    output_type: Any
    adapter: TypeAdapter[Any]
    schema: dict[str, Any]
    name: str
    is_object: bool
    """Whether the schema is a JSON object (native response formats need one)."""
    instructions: str
    """For models without a native response format: the schema and how to answer."""
    response_format: dict[str, Any]

    @classmethod
    def of(cls, output_type: Any, owner: str) -> OutputSpec:
        """Build the spec for ``output_type``.

        Raises:
            UserError: pydantic cannot validate or describe the type.
        """
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = adapter.json_schema()
        except Exception as exc:
            raise UserError(
                f"{owner}: output_type {output_type!r} cannot become a JSON schema ({exc}); "
                "use a pydantic model, a dataclass, a TypedDict or a standard type."
            ) from exc
        raw_name = getattr(output_type, "__name__", None) or "output"
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(raw_name))[:64] or "output"
        rendered = json.dumps(schema, separators=(",", ":"))
        instructions = f"{SCHEMA_PROMPT}\n{rendered}"
        response_format = {
            "type": "json_schema",
            # strict would demand every field be required; pydantic defaults are not.
            "json_schema": {"name": name, "schema": schema, "strict": False},
        }
        return cls(
            output_type=output_type,
            adapter=adapter,
            schema=schema,
            name=name,
            is_object=schema.get("type") == "object" or "properties" in schema,
            instructions=instructions,
            response_format=response_format,
        )

    def parse(self, text: str) -> tuple[Any, str | None]:
        """The first JSON value in ``text`` that validates, or None and feedback for the model."""
        first_error: ValidationError | None = None
        for candidate in json_candidates(text):
            try:
                return self.adapter.validate_json(candidate), None
            except ValidationError as exc:
                first_error = first_error or exc
        if first_error is not None:
            return None, f"the JSON does not match the schema: {explain(first_error)}"
        return None, "no JSON value was found in the answer"

    def dump(self, value: Any) -> str:
        """``value`` as the JSON text later agents read."""
        return self.adapter.dump_json(value, indent=2).decode()


async def run_validators(validators: Sequence[OutputValidator], value: Any) -> str | None:
    """Feedback from the first validator that rejects ``value``, or None when all accept it.

    A validator rejects by returning non-empty text or raising ValueError (a
    pydantic ValidationError is one); any other exception is a bug and propagates.
    """
    for validate in validators:
        try:
            verdict = validate(value)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except ValidationError as exc:
            return explain(exc)
        except ValueError as exc:
            return str(exc) or type(exc).__name__
        if verdict is not None and not isinstance(verdict, str):
            raise UserError(
                f"Output validator {getattr(validate, '__name__', validate)!r} returned "
                f"{type(verdict).__name__}; return None to accept or feedback text to reject."
            )
        if verdict:
            return verdict
    return None


@dataclass(frozen=True, slots=True)
class TextToolCall:
    """A tool call a model wrote as JSON text."""

    name: str
    arguments: str


def text_tool_instructions(specs: Sequence[Mapping[str, Any]]) -> str:
    """The system-prompt section that teaches a model without native tools to call ``specs``."""
    lines = [
        "# Tools",
        "You can call the tools below. To call tools, reply with only this JSON object and "
        'nothing else: {"tool_calls": [{"name": "<tool name>", "arguments": {<arguments>}}]}. '
        "List several calls to make them together. Their results come back in the next "
        "message. When you have the final answer, reply without a tool_calls object.",
        "",
    ]
    for spec in specs:
        fn = spec["function"]
        lines.append(f"- {fn['name']}: {fn.get('description', '')}")
        lines.append(f"  arguments schema: {json.dumps(fn.get('parameters', {}))}")
    return "\n".join(lines)


def parse_text_tool_calls(text: str, known: Mapping[str, object]) -> list[TextToolCall]:
    """The tool calls written in ``text``; empty when it is a final answer.

    Accepts ``{"tool_calls": [{"name": ..., "arguments": {...}}]}`` and, for a
    tool the agent has, a bare ``{"name": ..., "arguments": {...}}``. Unknown
    names inside ``tool_calls`` are kept, so the model is told they do not exist.
    """
    for candidate in json_candidates(text):
        value: Any = json.loads(candidate)
        if not isinstance(value, dict):
            continue
        obj = cast(dict[str, Any], value)
        raw = obj.get("tool_calls")
        if isinstance(raw, list):
            calls = [_text_call(c) for c in cast(list[Any], raw)]
            found = [c for c in calls if c is not None]
            if found:
                return found
        elif obj.get("name") in known and set(obj) <= {"name", "arguments"}:
            call = _text_call(obj)
            if call is not None:
                return [call]
    return []


def _text_call(raw: Any) -> TextToolCall | None:
    if not isinstance(raw, dict):
        return None
    item = cast(dict[str, Any], raw)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments: Any = item.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return TextToolCall(name=name, arguments=text)
