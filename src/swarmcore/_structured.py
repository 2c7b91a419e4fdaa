"""Structured output: JSON in prose, found, validated and explained.

An agent with an ``output_type`` must end with a JSON value that validates;
models wrap it in fences, prose or both, so :func:`json_candidates` yields
every JSON value in a text, the whole text first, then fenced blocks, then
values embedded in prose, and the first that fits wins. Everything per agent
(adapter, schema, instructions) is built once. (The text tool-call protocol,
which also reads JSON out of model text, is :mod:`swarmcore._text_tools`.)

Model text is untrusted: every search is linear in the text and capped at
:data:`MAX_JSON_CHARS`, and JSON is parsed by pydantic-core, whose nesting and
number limits raise ``ValueError`` (never ``RecursionError``). Whatever cannot
be read becomes feedback for the model, never the end of the run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from swarmcore.errors import UserError

OutputValidator = Callable[[Any], "str | Awaitable[str | None] | None"]
"""Inspects an agent's output (the parsed object, or the text when there is no
``output_type``): returns None to accept it, or feedback text (or raises
ValueError) to send it back to the model for another try."""

SCHEMA_PROMPT = (
    "Answer with only a JSON value that matches this JSON schema, with no other text "
    "(a ```json fence is fine):"
)
"""Precedes the schema in the instructions of text-protocol structured output."""

MAX_JSON_CHARS = 1_000_000
"""The longest model text searched for JSON: a structured answer or a text tool-call block.

A longer one is rejected with feedback to the model (shorten the answer) instead
of being searched; a plain text answer of any length is kept as it is.
"""

OFF_LOOP_CHARS = 20_000
"""Answers longer than this are searched for JSON in a worker thread, so the
agents running beside this one keep running meanwhile."""

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
# What the bracket scan stops at: brackets, quotes, escapes, and newlines (never inside a string).
_TOKEN = re.compile(r'\\["\\]|[][{}"\\\n]')
_CLOSER = {"}": "{", "]": "["}


def json_candidates(text: str) -> Iterator[str]:
    """Every JSON value in ``text`` as a substring, most likely first.

    The whole text, then each fenced block (with or without a language tag),
    then each object or array embedded in prose, left to right (an outer one
    before the values inside it, which are tried only when it is not JSON).
    The work is linear in the text: each value is found by one scan and parsed
    at most a few times over, however hostile the text.
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
    budget = 2 * len(text)  # characters handed to the parser for spans in prose
    inside_of = 0  # the end of the last span yielded: spans before it are inside it
    for start, end in _spans(text):
        if start < inside_of:
            continue
        if budget <= 0:
            return
        value = text[start:end]
        budget -= len(value)
        if value in seen or _parses(value):
            inside_of = end
            if value not in seen:
                seen.add(value)
                yield value
        # else: not JSON as a whole; the spans inside it come next


def _parses(text: str) -> bool:
    if not text or text[0] not in '{["-0123456789tfn':
        return False
    try:
        pydantic_core.from_json(text)
    except ValueError:
        return False
    return True


def _spans(text: str) -> list[tuple[int, int]]:
    """Every balanced ``{...}`` or ``[...]`` of ``text`` as (start, end), outer before inner.

    One string-aware scan. A bracket that never closes, or closes with the
    wrong kind, is dropped with every bracket still open around it; the
    balanced spans inside them are kept. Flat lists of ints, not objects:
    hostile text opens hundreds of thousands of brackets.
    """
    ends: dict[int, int] = {}
    starts: list[int] = []
    openers: list[str] = []
    in_string = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if in_string:
            if token == '"':
                in_string = False
            elif token == "\n":  # JSON strings never hold a raw newline: this was prose
                in_string = False
                starts.clear()
                openers.clear()
        elif token in "{[":
            starts.append(match.start())
            openers.append(token)
        elif not starts:  # prose: quotes and closers outside any bracket mean nothing
            continue
        elif token == '"':
            in_string = True
        elif token in _CLOSER:
            if openers.pop() != _CLOSER[token]:
                starts.clear()
                openers.clear()
                continue
            ends[starts.pop()] = match.end()
    return sorted(ends.items())


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
        """The first JSON value in ``text`` that validates, or None and feedback for the model.

        A text over :data:`MAX_JSON_CHARS` is not searched: the feedback asks for less.
        """
        if len(text) > MAX_JSON_CHARS:
            return None, (
                f"the answer is {len(text):,} characters, over the {MAX_JSON_CHARS:,} searched "
                "for JSON; answer with only the JSON value"
            )
        first_error: ValidationError | None = None
        for candidate in json_candidates(text):
            try:
                return self.adapter.validate_json(candidate), None
            except ValidationError as exc:
                first_error = first_error or exc
        if first_error is not None:
            return None, f"the JSON does not match the schema: {explain(first_error)}"
        return None, "no JSON value was found in the answer"

    async def read(self, text: str) -> tuple[Any, str | None]:
        """:meth:`parse`, in a worker thread for a long text so other agents keep running."""
        if len(text) > OFF_LOOP_CHARS:
            return await asyncio.to_thread(self.parse, text)
        return self.parse(text)

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
