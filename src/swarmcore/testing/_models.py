"""In-process test models: the offline model, a scripted model and a function model."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from swarmcore._structured import SCHEMA_PROMPT
from swarmcore.testing._endpoint import model_string
from swarmcore.testing._replies import Call, Fail, RecordedRequest, Reply, Step, tool_calls_of

_names = itertools.count(1)


class UnexpectedModelCall(AssertionError):
    """A scripted model was called after its script ran out."""


class UnconsumedSteps(AssertionError):
    """A scripted model still had steps left when the test expected none."""


class ScriptedModel:
    """A model whose replies a test dictates, in order; it records every request.

    ```python
    model = ScriptedModel([Reply.tool("search", query="x"), Reply(text="done")])
    agent = Agent("a", "...", model=model.model, tools=[search])
    ...
    model.assert_consumed()
    assert model.requests[1].tool_results[0]["content"] == "..."
    ```

    A call past the end of the script fails the agent with a non-retryable
    error naming the model, and is counted in ``unexpected_calls``.

    Args:
        steps: Replies (``Reply``), failures (``Fail``) or plain strings
            (text replies), consumed one per model call.
        supports: What the model declares it supports, as a hosted model's data
            would (``{"response_schema": True, "function_calling": False}``): the
            agent's ``"auto"`` tool and output protocols choose by it. Unknown when
            absent, as for a model no price list names.
    """

    def __init__(
        self, steps: Iterable[Step | str], *, supports: Mapping[str, bool] | None = None
    ) -> None:
        self._steps = [Reply(text=s) if isinstance(s, str) else s for s in steps]
        self._total = len(self._steps)
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.unexpected_calls = 0
        """Calls that arrived after the script ran out."""
        self.model = model_string(f"scripted-{next(_names)}", self, supports)
        """The model string to put in ``Agent(model=...)``."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Record ``request`` and answer with the next step."""
        self.requests.append(request)
        if not self._steps:
            self.unexpected_calls += 1
            return Fail(
                400,
                f"ScriptedModel {self.model}: call {len(self.requests)} is past the end of "
                f"its script ({self._total} steps). Add a step or check the agent's turn count.",
            )
        return self._steps.pop(0)

    @property
    def remaining(self) -> int:
        """Steps not yet consumed."""
        return len(self._steps)

    def assert_consumed(self) -> None:
        """Fail unless every step was used and no call came after the script ended."""
        if self._steps:
            raise UnconsumedSteps(
                f"{self.model}: {len(self._steps)} of {self._total} steps unused."
            )
        if self.unexpected_calls:
            raise UnexpectedModelCall(
                f"{self.model}: {self.unexpected_calls} calls came after the script ended."
            )


Responder = Callable[[RecordedRequest], "Step | str | Awaitable[Step | str]"]


class FunctionModel:
    """A model that answers with a function of the request (sync or async).

    Useful for parallel agents, whose calls arrive in any order: key the answer
    on ``request.system`` (the agent's instructions) rather than on call order.

    Args:
        fn: Takes a ``RecordedRequest``; returns a ``Reply``, a ``Fail`` or a string.
        supports: What the model declares it supports, as for ``ScriptedModel``.
    """

    def __init__(self, fn: Responder, *, supports: Mapping[str, bool] | None = None) -> None:
        self._fn = fn
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.model = model_string(f"function-{next(_names)}", self, supports)
        """The model string to put in ``Agent(model=...)``."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Record ``request`` and answer with the function's result."""
        self.requests.append(request)
        answer = self._fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return Reply(text=answer) if isinstance(answer, str) else answer


class OfflineModel:
    """A deterministic model that needs no key and no network.

    It behaves like a diligent agent: on its first turn it calls every tool it
    is offered (arguments synthesised from the tools' JSON schemas) and lists
    the shared context; next it reads the most recent outputs with
    ``get_context`` (``read_context`` in auto mode, ``expand_context`` in push
    mode); then it answers with
    text that reflects what it received, ending with a ``<summary>``.

    Args:
        latency: Seconds to wait before each answer (to imitate a provider).
        record: Keep every request in ``requests``. A model that lives as long
            as the process and that nobody inspects (the shared
            :func:`offline_model`, which dry runs use) records nothing, so it
            holds nothing from the runs it served.
    """

    def __init__(
        self, latency: float = 0.0, *, name: str | None = None, record: bool = True
    ) -> None:
        self.latency = latency
        self.record = record
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order (none when ``record`` is False)."""
        self.model = model_string(name or f"offline-{next(_names)}", self)
        """The model string to put in ``Agent(model=...)``."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Decide the next move from what the conversation holds so far."""
        if self.record:
            self.requests.append(request)
        if self.latency:
            await asyncio.sleep(self.latency)
        return _next_move(request)

    @staticmethod
    def reply(request: RecordedRequest) -> Reply:
        """The offline model's answer to ``request``, without waiting or recording.

        It answers a :class:`MockOpenAIServer` the way the model answers in
        process: ``MockOpenAIServer(responder=OfflineModel.reply)`` is an
        OpenAI-compatible endpoint that runs any script offline.
        """
        return _next_move(request)


_default: OfflineModel | None = None


def offline_model() -> str:
    """The model string of the shared offline model: ``Agent(..., model=offline_model())``.

    It serves every run that names it (examples, the demo, ``Swarm.dry_run``)
    for the life of the process, so it records no requests: build an
    :class:`OfflineModel` of your own to inspect what a run sent.
    """
    global _default
    if _default is None:
        _default = OfflineModel(name="offline", record=False)
    return _default.model


# --- the offline model's behaviour ---------------------------------------------------

_READING_TOOLS = ("get_context", "expand_context")
_LISTED = re.compile(r"^- (\S+) \(", re.MULTILINE)
_PUSHED = re.compile(r'^<output agent="([^"]+)"( kind="summary")? id="[0-9a-f]+">$', re.MULTILINE)


def _next_move(request: RecordedRequest) -> Reply:
    offered = request.tool_names
    called = request.called_tools
    if not called:
        first = [
            _first_call(t["function"]["name"], t["function"]["parameters"], request.user)
            for t in request.tools
            if t["function"]["name"] not in _READING_TOOLS
        ]
        if "expand_context" in offered:
            first += [Call("expand_context", {"agent_name": n}) for n in _to_expand(request)]
        if first:
            return Reply(tool_calls=first)
    if "get_context" in offered and "get_context" not in called:
        listed = _LISTED.findall(_tool_output(request, "list_context"))
        if listed:
            return Reply(tool_calls=[Call("get_context", {"agent_name": n}) for n in listed[-2:]])
    if "read_context" in offered and _reads(request) == 1:  # auto mode: it has listed them
        listed = _LISTED.findall(_tool_output(request, "read_context"))
        if listed:
            return Reply(tool_calls=[Call("read_context", {"agent_name": n}) for n in listed[-2:]])
    schema = _wanted_schema(request)
    if schema is not None:  # structured output: a value that fits the schema
        return Reply(text=json.dumps(_example(schema, schema.get("$defs", {}), "")))
    return Reply(text=_answer(request))


def _wanted_schema(request: RecordedRequest) -> dict[str, Any] | None:
    """The JSON schema the answer must match: a native response format, or the prompt's."""
    wanted: Any = request.params.get("response_format")
    schema: Any = None
    if isinstance(wanted, dict):
        schema = typing.cast(dict[str, Any], wanted).get("json_schema", {}).get("schema")
    else:
        start = request.system.find(SCHEMA_PROMPT)
        if start < 0:
            return None
        line = request.system[start + len(SCHEMA_PROMPT) :].strip().split("\n", 1)[0]
        try:
            schema = json.loads(line)
        except json.JSONDecodeError:
            return None
    return typing.cast(dict[str, Any], schema) if isinstance(schema, dict) else None


def _reads(request: RecordedRequest) -> int:
    """How many read_context calls the conversation holds."""
    return sum(
        1
        for m in request.messages
        for c in tool_calls_of(m)
        if c["function"]["name"] == "read_context"
    )


def _first_call(name: str, parameters: Mapping[str, Any], task: str) -> Call:
    if name == "read_context":  # auto mode's one tool: with no arguments, it lists
        return Call(name, {})
    if name == "search_context":  # search for something the task is about
        words = sorted((w.strip(".,:;!?\"'") for w in task.split()), key=len, reverse=True)
        return Call(name, {"query": words[0] if words else "summary"})
    return Call(name, example_arguments(parameters))


def _to_expand(request: RecordedRequest) -> list[str]:
    return [name for name, summarised in _PUSHED.findall(request.system) if summarised][-1:]


def _tool_output(request: RecordedRequest, name: str) -> str:
    ids = {
        c["id"] for m in request.messages for c in tool_calls_of(m) if c["function"]["name"] == name
    }
    return "\n".join(str(m["content"]) for m in request.tool_results if m["tool_call_id"] in ids)


def _answer(request: RecordedRequest) -> str:
    role = request.system.strip().splitlines()[0] if request.system.strip() else "assistant"
    task = " ".join(request.user.split())[:160]
    lines = [f"Offline answer ({_short(role, 80)}) to: {task}"]
    calls = {c["id"]: c["function"] for m in request.messages for c in tool_calls_of(m)}
    for result in request.tool_results:
        fn: dict[str, Any] = calls.get(result["tool_call_id"], {})
        lines.append(
            f"- {fn.get('name', '?')}({fn.get('arguments', '')}) -> "
            f"{_short(str(result['content']), 160)}"
        )
    pushed = _PUSHED.findall(request.system)
    if pushed:
        lines.append("Context in prompt: " + ", ".join(n + (s and " (summary)") for n, s in pushed))
    used = len(request.tool_results)
    lines.append(f"<summary>{_short(role, 60)}: answered with {used} tool results.</summary>")
    return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a tool's JSON schema: every property, with a plausible value."""
    defs: Mapping[str, Any] = schema.get("$defs", {})
    value: dict[str, Any] | None = _example(schema, defs, "")
    return value or {}


def _example(schema: Mapping[str, Any], defs: Mapping[str, Any], name: str) -> Any:  # noqa: C901 -- one case per JSON-schema form
    if "$ref" in schema:
        return _example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, name)
    if schema.get("examples"):
        return schema["examples"][0]
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return _example(options[0], defs, name)
    match schema.get("type"):
        case "string":
            return "example " + name if name else "example"
        case "integer":
            return max(int(schema.get("minimum", 1)), int(schema.get("exclusiveMinimum", 0)) + 1)
        case "number":
            return float(schema.get("minimum", 1.0))
        case "boolean":
            return True
        case "array":
            item = schema.get("items", {"type": "string"})
            count = max(1, int(schema.get("minItems", 1)))
            return [_example(item, defs, name) for _ in range(count)]
        case "object":
            props: Mapping[str, Any] = schema.get("properties", {})
            if not props and isinstance(schema.get("additionalProperties"), dict):
                return {"key": _example(schema["additionalProperties"], defs, "key")}
            return {k: _example(v, defs, k) for k, v in props.items()}
        case _:
            return None
