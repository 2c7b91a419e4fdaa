"""Run records as data: the one JSON form of everything a run records, versioned.

The run store (SQLite) keeps agent results, failures and decisions as the JSON of
the models in :mod:`swarmcore.results`; a durable engine records those and more
(its run's inputs, model replies, tool records, approvals, errors). Both write the
same record models, and a durable engine writes them through this module:
:func:`dumps` makes a document ``{"swarmcore": RECORD_VERSION, "value": ...}`` in
which each record is tagged with its type, and :func:`loads` validates it back with
pydantic. Nothing here pickles, and nothing reads a pickle: a document that is not
this JSON is refused, so a database row never runs code when it is read.

The encoding of a value:

- JSON scalars and lists are themselves; a non-finite float is ``{"$float": "inf"}``;
  a tuple is ``{"$tuple": [...]}``; a dict with string keys is itself, or
  ``{"$dict": {...}}`` when one of its keys starts with ``$``;
- a record (:data:`RECORDS`) is ``{"$record": "AgentResult", "data": {...}}``, its
  ``data`` the model's JSON (for ``AgentResult``, the body the SQLite store keeps);
- an exception is ``{"$error": "swarmcore.errors.ModelError", "message": ...,
  "attributes": {...}}``: a swarmcore error comes back as its class with its
  attributes (``partial`` included); a built-in one as itself; any other as a
  :class:`RecordedError` that names it.

A change to a record model that old documents no longer validate against needs a
new :data:`RECORD_VERSION` and a step in :data:`UPGRADES`; the fixture test
(``tests/unit/test_records.py``) fails by name until then.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, cast

from pydantic import TypeAdapter

from swarmcore.errors import SwarmError

__all__ = [
    "RECORDS",
    "RECORD_VERSION",
    "UPGRADES",
    "RecordedError",
    "dump",
    "dumps",
    "load",
    "loads",
]

RECORD_VERSION = 1
"""The version of the record encoding written now; documents carry it as ``"swarmcore"``."""

UPGRADES: dict[int, Callable[[Any], Any]] = {}
"""How a document's value of version ``v`` becomes one of version ``v + 1`` (none yet)."""

RECORDS = (
    "AgentFailure",
    "AgentResult",
    "Approval",
    "ApprovalRequest",
    "Decision",
    "LLMCallRecord",
    "LLMReply",
    "SwarmResult",
    "TokenUsage",
    "ToolCall",
    "ToolCallRecord",
)
"""The record types a document may hold, by name (what ``"$record"`` says)."""


class RecordedError(SwarmError):
    """An error a durable engine recorded whose class swarmcore does not rebuild.

    Only swarmcore's own errors and Python's built-in ones come back as their class;
    any other (a library's, a user's) comes back as this, with its message.

    Attributes:
        error_type: The recorded error's class (``module.QualifiedName``).
    """

    def __init__(self, message: str, *, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@cache
def _types() -> dict[str, type[Any]]:
    # Imported on first use: the store's other modules never need the model seam or tools.
    from swarmcore._tools import Approval, ApprovalRequest
    from swarmcore.llm._types import LLMReply, ToolCall
    from swarmcore.results import (
        AgentFailure,
        AgentResult,
        Decision,
        LLMCallRecord,
        SwarmResult,
        TokenUsage,
        ToolCallRecord,
    )

    found: dict[str, type[Any]] = {
        "AgentFailure": AgentFailure,
        "AgentResult": AgentResult,
        "Approval": Approval,
        "ApprovalRequest": ApprovalRequest,
        "Decision": Decision,
        "LLMCallRecord": LLMCallRecord,
        "LLMReply": LLMReply,
        "SwarmResult": SwarmResult,
        "TokenUsage": TokenUsage,
        "ToolCall": ToolCall,
        "ToolCallRecord": ToolCallRecord,
    }
    assert tuple(sorted(found)) == RECORDS  # one list, checked where it is used
    return found


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(_types()[name])


def _record_name(value: object) -> str | None:
    name = type(value).__name__
    return name if name in RECORDS and type(value) is _types()[name] else None


def dump(value: object) -> Any:
    """``value`` as JSON data in the record encoding (see the module's docstring).

    Raises:
        TypeError: ``value`` holds something that is neither JSON data, a record
            nor an exception (a durable engine records nothing else).
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, list):
        return [dump(v) for v in cast("list[object]", value)]
    if isinstance(value, tuple):
        return {"$tuple": [dump(v) for v in cast("tuple[object, ...]", value)]}
    if isinstance(value, Mapping):
        return _dump_mapping(cast("Mapping[object, object]", value))
    if isinstance(value, BaseException):
        return _dump_error(value)
    name = _record_name(value)
    if name is None:
        raise TypeError(
            f"A run record holds JSON data and swarmcore's records, not "
            f"{type(value).__module__}.{type(value).__qualname__} ({value!r:.80})."
        )
    return {"$record": name, "data": _adapter(name).dump_python(value, mode="json")}


def _dump_mapping(value: Mapping[object, object]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"A run record's mappings have text keys, got {key!r}.")
        out[key] = dump(item)
    return {"$dict": out} if any(k.startswith("$") for k in out) else out


def _dump_error(error: BaseException) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for key, item in vars(error).items():
        try:
            attributes[key] = dump(item)
        except TypeError:  # an attribute no record holds (a response object): its text
            attributes[key] = repr(item)
    kind = type(error)
    data = {
        "$error": f"{kind.__module__}.{kind.__qualname__}",
        "message": str(error),
        "attributes": attributes,
    }
    if kind.__module__ == "builtins":  # rebuilt from its arguments (KeyError's str quotes)
        with contextlib.suppress(TypeError):
            data["args"] = dump(list(error.args))
    return data


def load(data: Any) -> Any:
    """A value from its record encoding (what :func:`dump` made), records validated.

    Raises:
        ValueError: ``data`` is not in the record encoding, or a record does not
            validate (pydantic's ``ValidationError`` is a ``ValueError``).
    """
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [load(v) for v in cast("list[Any]", data)]
    if not isinstance(data, dict):
        raise ValueError(f"Not a run record's JSON: {data!r:.80}.")
    tagged = cast("dict[str, Any]", data)
    if "$record" in tagged:
        name = tagged["$record"]
        if name not in RECORDS:
            raise ValueError(f"Unknown record type {name!r} (known: {', '.join(RECORDS)}).")
        return _adapter(name).validate_python(tagged["data"])
    if "$error" in tagged:
        return _load_error(tagged)
    if "$tuple" in tagged:
        return tuple(load(v) for v in tagged["$tuple"])
    if "$float" in tagged:
        return float(tagged["$float"])
    if "$dict" in tagged:
        tagged = tagged["$dict"]
    elif any(k.startswith("$") for k in tagged):
        raise ValueError(f"Unknown record tag in {sorted(tagged)!r}.")
    return {k: load(v) for k, v in tagged.items()}


def _error_classes(base: type[SwarmError] = SwarmError) -> dict[str, type[SwarmError]]:
    """The error classes of swarmcore loaded in this process, by ``module.QualifiedName``."""
    found = {f"{base.__module__}.{base.__qualname__}": base}
    for sub in base.__subclasses__():
        found |= _error_classes(sub)
    return found


def _load_error(data: dict[str, Any]) -> BaseException:
    kind, message = str(data["$error"]), str(data.get("message", ""))
    attributes = load(data.get("attributes") or {})
    cls = _error_classes().get(kind)
    if cls is not None:
        # Not cls(...): constructors take keyword-only attributes, which are restored as stored.
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.partial = None
        error.__dict__.update(attributes)
        return error
    module, _, name = kind.rpartition(".")
    found = getattr(builtins, name, None) if module == "builtins" else None
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            return found(*load(data.get("args", [message])))
        except TypeError:  # a built-in error that takes more than a message
            pass
    return RecordedError(f"{name}: {message}", error_type=kind)


def dumps(value: object) -> str:
    """``value`` as a record document: ``{"swarmcore": RECORD_VERSION, "value": ...}``.

    Raises:
        TypeError: As :func:`dump`.
    """
    document = {"swarmcore": RECORD_VERSION, "value": dump(value)}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def loads(text: str) -> Any:
    """The value of a record document, upgraded to this version and validated.

    Raises:
        ValueError: ``text`` is not a record document (a pickle, say: it is never
            unpickled), it was written by a newer swarmcore, or it does not validate.
    """
    try:
        document: object = json.loads(text)
    except ValueError:
        raise ValueError(
            f"Not a swarmcore record document ({text[:40]!r}...): swarmcore records runs as "
            "JSON and never unpickles one (a run pickled by an earlier release cannot be read: "
            "finish it with that release)."
        ) from None
    fields = cast("dict[str, Any]", document) if isinstance(document, dict) else {}
    version = fields.get("swarmcore")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"Not a swarmcore record document: {text[:80]!r}.")
    if version > RECORD_VERSION:
        raise ValueError(
            f"This record was written by a newer swarmcore (record version {version}; this "
            f"one reads up to {RECORD_VERSION}): upgrade swarmcore to read it."
        )
    value = fields.get("value")
    for step in range(version, RECORD_VERSION):
        value = UPGRADES[step](value)
    return load(value)
