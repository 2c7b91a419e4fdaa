"""docs/migration.md covers what code written for swarmcore 0.3.x meets in 1.0.

Every name 0.3.1 exported is mentioned, every field of its hook events is
mapped, and every record field that is gone or changed type is named. The
1.0 names the guide's tables give as replacements exist; its 1.0 code is in
``python`` blocks, which test_docs.py runs like every page's, and the 0.3.x
code in ``text`` blocks marked as such.

The 0.3.1 data below was extracted once from the wheel on PyPI
(``pip download --no-deps swarmcore==0.3.1``: swarmcore-0.3.1-py3-none-any.whl,
sha256 5f2ae3809bfe1753fb8a21667d2b16f88e2aaa90d6b3012e08fb18d887a95325):
``__all__`` of ``swarmcore/__init__.py``, and the annotated fields of the
classes in ``swarmcore/hooks.py`` and ``swarmcore/models.py``. Nothing here
touches the network.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import swarmcore
import swarmcore.events
from swarmcore._flow import FlowShape
from swarmcore.console import ConsoleProgress

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migration.md"

OLD_ALL = (
    "Agent",
    "AgentEndData",
    "analyst",
    "AgentError",
    "AgentErrorData",
    "AgentResult",
    "AgentStartData",
    "ConsoleReporter",
    "Event",
    "EventType",
    "Flow",
    "Hooks",
    "LLMCallEndData",
    "LLMCallStartData",
    "LLMCallRecord",
    "LoggingHandler",
    "SharedContext",
    "StepEndData",
    "StepStartData",
    "Swarm",
    "SwarmEndData",
    "SwarmError",
    "SwarmResult",
    "SwarmStartData",
    "ToolCallEndData",
    "ToolCallRecord",
    "ToolCallStartData",
    "chain",
    "console_hooks",
    "editor",
    "enable_logging",
    "make_context_tools",
    "parallel",
    "researcher",
    "search_web",
    "summarizer",
    "writer",
)
"""``swarmcore.__all__`` of 0.3.1, in its order."""

OLD_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "Event": ("type", "data"),
    "SwarmStartData": ("task", "step_count"),
    "SwarmEndData": ("duration_seconds", "agent_count", "total_cost"),
    "StepStartData": ("step_index", "agents", "parallel"),
    "StepEndData": ("step_index",),
    "AgentStartData": ("agent", "task"),
    "AgentEndData": ("agent", "duration_seconds", "cost"),
    "AgentErrorData": ("agent", "error"),
    "LLMCallStartData": ("agent", "call_index"),
    "LLMCallEndData": (
        "agent",
        "call_index",
        "finish_reason",
        "duration_seconds",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    ),
    "ToolCallStartData": ("agent", "tool", "arguments"),
    "ToolCallEndData": ("agent", "tool", "duration_seconds"),
}
"""0.3.1's ``Event`` and the fields of each ``*Data`` class (swarmcore/hooks.py)."""

OLD_RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "ToolCallRecord": ("tool_name", "arguments", "result", "duration_seconds"),
    "LLMCallRecord": (
        "call_index",
        "token_usage",
        "duration_seconds",
        "tool_calls_requested",
        "finish_reason",
        "cost",
    ),
    "AgentResult": (
        "agent_name",
        "input_task",
        "output",
        "summary",
        "model",
        "duration_seconds",
        "token_usage",
        "llm_calls",
        "tool_calls",
        "llm_call_count",
        "tool_call_count",
        "cost",
    ),
    "SwarmResult": (
        "output",
        "context",
        "history",
        "duration_seconds",
        "total_token_usage",
        "total_cost",
        "token_usage_table",  # the public methods, from here on
        "context_pull_report",
        "summary",
        "print_summary",
    ),
}
"""0.3.1's result models (swarmcore/models.py): fields, then public methods."""

CHANGED_TYPE = {
    "ToolCallRecord.arguments": "a dict in 0.3.1, the model's JSON text now",
    "LLMCallRecord.cost": "0.0 when unknown in 0.3.1, None now",
    "LLMCallRecord.finish_reason": '"" when none in 0.3.1, None now',
    "AgentResult.cost": "0.0 when unknown in 0.3.1, None now",
    "TokenUsage.total_tokens": "a field one could set in 0.3.1, computed now",
}
"""Fields that kept their name but not their type: code reading them breaks at run time."""

CURRENT: dict[str, type] = {
    **{
        name: value
        for name in swarmcore.events.__all__
        if inspect.isclass(value := getattr(swarmcore.events, name))
    },
    **{
        name: value
        for name in swarmcore.__all__
        if inspect.isclass(value := getattr(swarmcore, name))
    },
    "ConsoleProgress": ConsoleProgress,
}
"""1.0 classes a ``Now`` cell may name as ``Class.attribute``."""

# What events.py and errors.py import only for type checking, for resolving annotations.
_ANNOTATED = {
    "AgentResult": swarmcore.AgentResult,
    "SwarmResult": swarmcore.SwarmResult,
    "TokenUsage": swarmcore.TokenUsage,
    "FlowShape": FlowShape,
}


def _split(text: str) -> tuple[str, str]:
    """The guide's fenced blocks, and its text with them left out."""
    fences = re.compile(r"^```[^\n]*\n.*?^```", re.M | re.S)
    return "\n".join(fences.findall(text)), fences.sub("", text)


def _code(text: str) -> str:
    """Everything the guide writes as code: inline spans and fenced blocks."""
    blocks, prose = _split(text)
    return "\n".join([blocks, *re.findall(r"`([^`]+)`", prose)])


def _now_cells(text: str) -> list[str]:
    """The ``Now`` column of every ``| 0.3.x | Now |`` table."""
    cells: list[str] = []
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        row = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if row == ["0.3.x", "Now"]:
            in_table = True
        elif in_table and len(row) == 2 and not set(row[1]) <= {"-"}:
            cells.append(row[1])
    return cells


def _member(owner: type, name: str) -> tuple[bool, Any]:
    """Whether ``owner`` has ``name``, and its type when known (None: stop resolving)."""
    if issubclass(owner, BaseModel):
        if name in owner.model_fields:
            return True, owner.model_fields[name].annotation
        if name in owner.model_computed_fields:
            return True, owner.model_computed_fields[name].return_type
    try:
        hints: dict[str, Any] = typing.get_type_hints(owner, localns=_ANNOTATED)
    except NameError:  # an annotation names a class imported only for type checking
        hints = {k: None for c in owner.__mro__ for k in inspect.get_annotations(c)}
    if name in hints:  # a dataclass's field, or an attribute an exception declares
        return True, hints[name]
    attribute = inspect.getattr_static(owner, name, None)
    if isinstance(attribute, property) and attribute.fget is not None:
        return True, typing.get_type_hints(attribute.fget).get("return")
    return attribute is not None, None


def _unknown(path: str) -> str | None:
    """What in ``Class.a.b`` does not exist, or None when all of it does."""
    first, *names = path.split(".")
    owner: Any = CURRENT[first]
    for i, name in enumerate(names):
        found, kind = _member(owner, name)
        if not found:
            return f"{'.'.join([first, *names[:i]])} has no {name!r}"
        options = typing.get_args(kind) if isinstance(kind, types.UnionType) else (kind,)
        classes = [k for k in options if isinstance(k, type) and k is not type(None)]
        if len(classes) != 1:  # a method, or a plain value: nothing further to follow
            return None
        owner = classes[0]
    return None


TEXT = GUIDE.read_text()
CODE = _code(TEXT)


@pytest.mark.parametrize("name", OLD_ALL)
def test_guide_mentions_every_public_name_of_0_3_1(name: str) -> None:
    assert re.search(rf"\b{name}\b", CODE), (
        f"docs/migration.md never mentions {name} (in swarmcore 0.3.1's __all__) as code: "
        "say what 0.3.x code using it writes now."
    )


@pytest.mark.parametrize(
    "field", [f"{cls}.{name}" for cls, names in OLD_EVENT_FIELDS.items() for name in names]
)
def test_guide_maps_every_field_of_the_0_3_1_hook_events(field: str) -> None:
    assert re.search(rf"\b{re.escape(field)}\b", CODE), (
        f"docs/migration.md does not say where 0.3.1's hook event field {field} went: "
        "add a row to the table of event fields."
    )


GONE = [
    f"{cls}.{name}"
    for cls, names in OLD_RECORD_FIELDS.items()
    for name in names
    if not _member(CURRENT[cls], name)[0]
]
"""0.3.1 record fields and methods 1.0 does not have."""


def test_what_is_gone_is_found() -> None:
    assert "LLMCallRecord.tool_calls_requested" in GONE
    assert "SwarmResult.total_cost" in GONE
    assert "ToolCallRecord.arguments" not in GONE


@pytest.mark.parametrize("field", GONE)
def test_guide_names_every_0_3_1_record_field_that_is_gone(field: str) -> None:
    name = field.split(".")[1]
    assert re.search(rf"\.{name}\b", CODE), (
        f"docs/migration.md does not mention {field}, which 0.3.1 had and 1.0 has not."
    )


@pytest.mark.parametrize("field", sorted(CHANGED_TYPE))
def test_guide_names_every_record_field_whose_type_changed(field: str) -> None:
    cls, name = field.split(".")
    assert _member(CURRENT[cls], name)[0], f"{field} is gone: move it out of CHANGED_TYPE"
    assert re.search(rf"\b{re.escape(field)}\b", CODE), (
        f"docs/migration.md does not name {field} ({CHANGED_TYPE[field]})."
    )


def test_guide_offers_the_parsed_arguments_of_a_tool_call() -> None:
    assert "call.parsed_arguments" in CODE
    assert _member(swarmcore.ToolCallRecord, "parsed_arguments") == (True, dict[str, Any])


def test_the_replacements_the_guide_names_exist() -> None:
    cells = _now_cells(TEXT)
    assert len(cells) > 60, "the guide's | 0.3.x | Now | tables were not found"
    pattern = re.compile(rf"\b({'|'.join(CURRENT)})((?:\.\w+)+)")
    named = [m.group(0) for cell in cells for span in re.findall(r"`([^`]+)`", cell)
             for m in pattern.finditer(span)]  # fmt: skip
    assert "AgentFinished.result.cost" in named
    unknown = {path: why for path in named if (why := _unknown(path))}
    assert not unknown, f"docs/migration.md names what 1.0 does not have: {unknown}"


def test_old_code_is_marked_and_all_other_code_runs() -> None:
    blocks, _ = _split(TEXT)
    for block in re.findall(r"^```([^\n]*)\n(.*?)^```", blocks, re.M | re.S):
        language, code = block
        if language.startswith("python"):
            continue  # run by test_docs.py
        assert code.startswith("# swarmcore 0.3.x\n"), (
            f"a ```{language} block of docs/migration.md is not 0.3.x code (which starts "
            f"'# swarmcore 0.3.x'), so nothing runs it; write 1.0 code as ```python:\n{code}"
        )
