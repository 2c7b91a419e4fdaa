"""OpenTelemetry tracing: a hook that turns a run's events into spans.

```python
from swarmcore import Swarm
from swarmcore.tracing import OpenTelemetryTracer

swarm = Swarm(a >> (b | c) >> d, hooks=[OpenTelemetryTracer()])
```

Each run becomes one trace (or a subtree of the span that is current when the
run starts), named after the GenAI semantic conventions::

    invoke_workflow a >> (b | c) >> d
    ├── step a
    │   └── invoke_agent a
    │       ├── chat gpt-4o
    │       └── execute_tool search
    ├── step b | c
    │   ├── invoke_agent b
    │   └── invoke_agent c
    └── step d
        └── invoke_agent d

Retries and model fallbacks are span events on the span they happened in.
Prompts, tool arguments and streamed text are left out unless
``capture_content=True``. The attribute names and values are our own
constants, taken from the (still "Development") ``gen_ai.*`` semantic
conventions: ``gen_ai.provider.name`` takes the conventions' well-known values
(``semconv.PROVIDER_NAMES``), ``gen_ai.request.model`` the model's name at its provider
(no routing prefix), ``gen_ai.response.model`` the name the provider's reply
gives, and model calls carry ``server.address``/``server.port``. A remote (A2A)
agent's ``invoke_agent`` span is a CLIENT span. There is no dependency on the
semantic-conventions package.

With ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (read when
the tracer is made, as the conventions prescribe) the run span follows the
conventions' first standalone release (v0.1.0) instead: ``invoke_agent {flow}``
with ``gen_ai.agent.name``, where the default is ``invoke_workflow {flow}``
with ``gen_ai.workflow.name``.

Needs ``opentelemetry-api`` (``pip install 'swarmcore[otel]'``); importing this
module does not.
"""

from __future__ import annotations

import asyncio
import logging
import os
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, TypeAlias
from urllib.parse import urlsplit

from swarmcore._semconv import (
    AGENT_NAME,
    AGENTS,
    ATTEMPT,
    ATTEMPTS,
    CANCELLED,
    CONTEXT_BUDGET,
    CONTEXT_MODE,
    COST_USD,
    ERROR_TYPE,
    EVENT_FALLBACK,
    EVENT_REASONING_DELTA,
    EVENT_RETRY,
    EVENT_TEXT_DELTA,
    EVENT_TOOL_CALL_DELTA,
    LATEST_EXPERIMENTAL,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OP_INVOKE_WORKFLOW,
    OPENAI_API_TYPE,
    OPERATION_NAME,
    OPT_IN_VARIABLE,
    PROVIDER_NAME,
    PROVIDER_NAMES,
    REQUEST_MODEL,
    RESPONSE_FINISH_REASONS,
    RESPONSE_MODEL,
    RUN_CACHE_READ_TOKENS,
    RUN_FAILURES,
    RUN_ID,
    RUN_INPUT_TOKENS,
    RUN_OUTPUT_TOKENS,
    RUN_REASONING_TOKENS,
    SERVER_ADDRESS,
    SERVER_PORT,
    STEP_FAILED,
    STEP_PARALLEL,
    STEP_POLICY,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_RESULT_CHARS,
    TOOL_TRUNCATED_FROM,
    TOOL_TYPE,
    TURN,
    USAGE_CACHE_READ_TOKENS,
    USAGE_INPUT_TOKENS,
    USAGE_OUTPUT_TOKENS,
    USAGE_REASONING_TOKENS,
    WORKFLOW_NAME,
)
from swarmcore.errors import UserError
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    LoopFinished,
    LoopIteration,
    ModelCallFinished,
    ModelCallStarted,
    ModelFallback,
    PlanMade,
    ReasoningDelta,
    RetryScheduled,
    RouteChosen,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from swarmcore.llm._target import model_target
from swarmcore.results import SwarmResult, TokenUsage

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue

__all__ = ["OpenTelemetryTracer"]

logger = logging.getLogger("swarmcore.tracing")

_INSTALL_HINT = (
    "OpenTelemetryTracer needs the OpenTelemetry API: pip install 'swarmcore[otel]' "
    "(or uv add 'swarmcore[otel]'), plus an SDK and exporter of your choice "
    "(e.g. opentelemetry-sdk)."
)

_Attributes: TypeAlias = "dict[str, AttributeValue]"
_Opening: TypeAlias = StepStarted | AgentStarted | ModelCallStarted | ToolCallStarted
_Closing: TypeAlias = StepFinished | AgentFinished | ModelCallFinished | ToolCallFinished


class OpenTelemetryTracer:
    """A hook that turns a run's events into OpenTelemetry spans (GenAI semantic conventions).

    Pass it to a Swarm as a hook; one instance can serve many swarms and many
    concurrent runs. Spans: ``invoke_workflow {flow}`` for the run, ``step
    {expression}`` for each step, ``invoke_agent {name}`` for each agent
    attempt, ``chat {model}`` for each model call and ``execute_tool {tool}``
    for each tool call, each parented on the span that encloses it (parallel
    branches included). The run span is a child of the span that is current
    when the run starts. Start and end times come from the events.

    ```python
    tracer = OpenTelemetryTracer()  # the global tracer provider
    result = await Swarm(flow, hooks=[tracer]).run("task")
    ```

    Args:
        tracer_provider: Where spans go; the global provider
            (``opentelemetry.trace.get_tracer_provider()``) when None.
        capture_content: Also record content that may be sensitive: tool call
            arguments (``gen_ai.tool.call.arguments``) and streamed model text
            (``swarmcore.text_delta`` span events, with ``Swarm.stream(...,
            text=True)``). Off by default.

    Raises:
        UserError: opentelemetry-api is not installed.
    """

    def __init__(
        self, tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise UserError(_INSTALL_HINT) from exc
        from swarmcore import __version__

        self._tracer: Tracer = trace.get_tracer("swarmcore", __version__, tracer_provider)
        self._capture_content = capture_content
        opted_in = os.environ.get(OPT_IN_VARIABLE, "")
        self._latest = LATEST_EXPERIMENTAL in {v.strip() for v in opted_in.split(",")}
        """The conventions' newest names (v0.1.0): read once, when the tracer is made."""
        self._runs: dict[str, dict[int, Span]] = {}
        """Open spans per run, by span id; dropped when the run finishes."""

    def __call__(self, event: Event) -> None:
        """Record ``event``; never raises (a failure is logged at debug level).

        Args:
            event: Any event of a run.
        """
        try:
            self._handle(event)
        except Exception:
            logger.debug("OpenTelemetryTracer failed on %s", type(event).__name__, exc_info=True)

    # --- dispatch ---------------------------------------------------------------------

    def _handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._run_started(event)
            return
        if isinstance(event, RunFinished):
            self._run_finished(event)
            return
        spans = self._runs.get(event.run_id)
        if spans is None:  # a run that started before this hook saw it
            return
        match event:
            case StepStarted() | AgentStarted() | ModelCallStarted() | ToolCallStarted():
                self._open(spans, event)
            case StepFinished() | AgentFinished() | ModelCallFinished() | ToolCallFinished():
                self._close(spans, event)
            case (
                RetryScheduled()
                | ModelFallback()
                | TextDelta()
                | ReasoningDelta()
                | ToolCallDelta()
                | RouteChosen()
                | LoopIteration()
                | LoopFinished()
                | PlanMade()
            ):
                self._point(spans, event)
            case _:
                pass

    # --- the run ----------------------------------------------------------------------

    def _run_started(self, event: RunStarted) -> None:
        # v0.1.0 merged the workflow span into invoke_agent, named by gen_ai.agent.name.
        operation, name = (
            (OP_INVOKE_AGENT, AGENT_NAME) if self._latest else (OP_INVOKE_WORKFLOW, WORKFLOW_NAME)
        )
        attributes: _Attributes = {
            OPERATION_NAME: operation,
            name: event.flow,
            RUN_ID: event.run_id,
            CONTEXT_MODE: event.context_mode,
            AGENTS: list(event.agents),
        }
        if event.context_budget is not None:  # auto mode's; pull and push have none
            attributes[CONTEXT_BUDGET] = event.context_budget
        # context=None: the span that is current now (a user's own span) is the parent.
        span = self._tracer.start_span(
            f"{operation} {event.flow}",
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )
        self._runs[event.run_id] = {event.span_id: span}

    def _run_finished(self, event: RunFinished) -> None:
        spans = self._runs.pop(event.run_id, None)
        if spans is None:
            return
        run_span = spans.pop(event.span_id, None)
        end = _ns(event.timestamp)
        # Normally empty: every span is closed from a finally block before its run
        # is. Should an event go missing, close what is left, children first.
        for span in reversed(spans.values()):
            span.set_attribute(CANCELLED, True)
            span.end(end_time=end)
        if run_span is None:
            return
        result = event.result if event.result is not None else getattr(event.error, "partial", None)
        if result is not None:
            _set_run_totals(run_span, result)
        if event.error is not None:
            self._fail(run_span, event.error, end)
        run_span.end(end_time=end)

    # --- spans inside the run ---------------------------------------------------------

    def _open(self, spans: dict[int, Span], event: _Opening) -> None:
        from opentelemetry import trace

        name, kind, attributes = self._describe(event)
        parent = spans.get(event.parent_id) if event.parent_id is not None else None
        if parent is None:  # unknown parent: hang it on the run span (always the first)
            parent = next(iter(spans.values()))
        span = self._tracer.start_span(
            name,
            context=trace.set_span_in_context(parent),
            kind=kind,
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )
        spans[event.span_id] = span

    def _describe(self, event: _Opening) -> tuple[str, SpanKind, _Attributes]:
        from opentelemetry.trace import SpanKind

        attributes: _Attributes
        match event:
            case StepStarted():
                attributes = {STEP_PARALLEL: event.parallel}
                if event.policy is not None:
                    attributes[STEP_POLICY] = event.policy
                return f"step {event.step}", SpanKind.INTERNAL, attributes
            case AgentStarted():
                attributes = {
                    OPERATION_NAME: OP_INVOKE_AGENT,
                    AGENT_NAME: event.agent_name,
                    ATTEMPT: event.attempt,
                }
                name = f"{OP_INVOKE_AGENT} {event.agent_name}"
                if event.remote is not None:  # a call to another server: no model of ours
                    _set_server(attributes, event.remote)
                    return name, SpanKind.CLIENT, attributes
                goes = model_target(event.model)
                attributes[REQUEST_MODEL] = goes.model
                _set_provider(attributes, goes.provider)
                return name, SpanKind.INTERNAL, attributes
            case ModelCallStarted():
                model = event.provider_model or model_target(event.model).model
                provider = event.provider or model_target(event.model).provider
                attributes = {
                    OPERATION_NAME: OP_CHAT,
                    AGENT_NAME: event.agent_name,
                    REQUEST_MODEL: model,
                    TURN: event.turn,
                }
                _set_provider(attributes, provider)
                if event.endpoint is not None:
                    _set_server(attributes, event.endpoint)
                return f"{OP_CHAT} {model}", SpanKind.CLIENT, attributes
            case ToolCallStarted():
                attributes = {
                    OPERATION_NAME: OP_EXECUTE_TOOL,
                    AGENT_NAME: event.agent_name,
                    TOOL_NAME: event.tool_name,
                    TOOL_TYPE: "function",
                    TOOL_CALL_ID: event.call_id,
                }
                if self._capture_content:
                    attributes[TOOL_CALL_ARGUMENTS] = event.arguments
                return f"{OP_EXECUTE_TOOL} {event.tool_name}", SpanKind.INTERNAL, attributes

    def _close(self, spans: dict[int, Span], event: _Closing) -> None:
        span = spans.pop(event.span_id, None)
        if span is None:
            return
        end = _ns(event.timestamp)
        match event:
            case StepFinished():
                if event.failed:
                    span.set_attribute(STEP_FAILED, list(event.failed))
                self._outcome(span, event.error, end)
            case AgentFinished():
                self._outcome(span, event.error, end)
            case ModelCallFinished():
                _set_model_call(span, event)
                self._outcome(span, event.error, end)
            case ToolCallFinished():
                _set_tool_call(span, event)
        span.end(end_time=end)

    def _outcome(self, span: Span, error: BaseException | None, end: int) -> None:
        if error is None:
            return
        if isinstance(error, asyncio.CancelledError):  # stopped (a quorum met, a sibling failed)
            span.set_attribute(CANCELLED, True)
            return
        self._fail(span, error, end)

    def _fail(self, span: Span, error: BaseException, end: int) -> None:
        from opentelemetry.trace import Status, StatusCode

        description = str(error) or type(error).__name__
        span.set_attribute(ERROR_TYPE, _type_name(error))
        span.record_exception(error, timestamp=end, escaped=True)
        span.set_status(Status(StatusCode.ERROR, description))

    # --- point events -----------------------------------------------------------------

    def _point(self, spans: dict[int, Span], event: _PointEvent) -> None:
        """Retries, fallbacks, streamed pieces, control-flow choices: span events on their span."""
        span = spans.get(event.parent_id) if event.parent_id is not None else None
        if span is None:
            return
        attributes: _Attributes
        match event:
            case RetryScheduled():
                attributes = {
                    AGENT_NAME: event.agent_name,
                    "swarmcore.retry.scope": event.scope,
                    "swarmcore.retry.attempt": event.attempt,
                    "swarmcore.retry.delay_seconds": event.delay_seconds,
                    "swarmcore.retry.error": event.error,
                }
                if event.model is not None:
                    attributes[REQUEST_MODEL] = event.model
                name = EVENT_RETRY
            case ModelFallback():
                attributes = {
                    AGENT_NAME: event.agent_name,
                    "swarmcore.fallback.from_model": event.from_model,
                    "swarmcore.fallback.to_model": event.to_model,
                    "swarmcore.fallback.error": event.error,
                }
                name = EVENT_FALLBACK
            case TextDelta() | ReasoningDelta() | ToolCallDelta():
                if not self._capture_content:  # content, as sensitive as the answer
                    return
                name, attributes = _delta(event)
            case RouteChosen():
                name = "swarmcore.route"
                attributes = {
                    "swarmcore.route.name": event.route,
                    "swarmcore.route.branch": event.branch,
                    "swarmcore.route.by": event.by,
                    "swarmcore.route.reason": event.reason,
                }
            case LoopIteration():
                name = "swarmcore.loop.iteration"
                attributes = {
                    "swarmcore.loop.name": event.loop,
                    "swarmcore.loop.iteration": event.iteration,
                    "swarmcore.loop.max_iterations": event.max_iterations,
                }
            case LoopFinished():
                name = "swarmcore.loop.finished"
                attributes = {
                    "swarmcore.loop.name": event.loop,
                    "swarmcore.loop.iterations": event.iterations,
                    "swarmcore.loop.reason": event.reason,
                }
            case PlanMade():
                name = "swarmcore.plan"
                attributes = {
                    "swarmcore.plan.name": event.plan,
                    "swarmcore.plan.planner": event.planner,
                    "swarmcore.plan.expression": event.expression,
                    "swarmcore.plan.attempts": event.attempts,
                }
        span.add_event(name, attributes, timestamp=_ns(event.timestamp))


def _delta(event: TextDelta | ReasoningDelta | ToolCallDelta) -> tuple[str, _Attributes]:
    """A streamed piece's span event: its name and attributes.

    A reasoning summary is as sensitive as text, a piece of a call's arguments as the whole.
    """
    match event:
        case ToolCallDelta():
            return EVENT_TOOL_CALL_DELTA, {
                AGENT_NAME: event.agent_name,
                TOOL_NAME: event.name,
                TOOL_CALL_ID: event.call_id,
                "swarmcore.tool_call.index": event.index,
                TOOL_CALL_ARGUMENTS: event.arguments,
            }
        case TextDelta():
            return EVENT_TEXT_DELTA, {AGENT_NAME: event.agent_name, "swarmcore.text": event.text}
        case ReasoningDelta():
            return EVENT_REASONING_DELTA, {
                AGENT_NAME: event.agent_name,
                "swarmcore.text": event.text,
            }


_PointEvent = (
    RetryScheduled
    | ModelFallback
    | TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | RouteChosen
    | LoopIteration
    | LoopFinished
    | PlanMade
)


def _ns(timestamp: float) -> int:
    """``time.time()`` seconds as the nanoseconds OpenTelemetry takes."""
    return int(timestamp * 1_000_000_000)


def _type_name(error: BaseException) -> str:
    """The exception's class as ``error.type`` wants it: ``swarmcore.errors.ModelError``."""
    kind = type(error)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _set_provider(attributes: _Attributes, provider: str | None) -> None:
    """Set ``gen_ai.provider.name``: the conventions' value for LiteLLM's provider, if known."""
    if provider:
        attributes[PROVIDER_NAME] = PROVIDER_NAMES.get(provider, provider)


_DEFAULT_PORTS: Final = MappingProxyType({"https": 443, "http": 80})


def _set_server(attributes: _Attributes, url: str) -> None:
    """Set ``server.address`` and ``server.port`` from a URL (else its scheme's port)."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number: say nothing rather than something wrong
        return
    if parts.hostname:
        attributes[SERVER_ADDRESS] = parts.hostname
        if port is not None:
            attributes[SERVER_PORT] = port


def _set_model_call(span: Span, event: ModelCallFinished) -> None:
    if event.response_model:
        span.set_attribute(RESPONSE_MODEL, event.response_model)
    if event.api is not None:  # which of OpenAI's two APIs answered (a fallback may differ)
        span.set_attribute(OPENAI_API_TYPE, event.api)
    span.set_attribute(ATTEMPTS, event.attempts)
    if event.usage is not None:
        span.set_attribute(USAGE_INPUT_TOKENS, event.usage.prompt_tokens)
        span.set_attribute(USAGE_OUTPUT_TOKENS, event.usage.completion_tokens)
        _set_parts(span, event.usage, USAGE_CACHE_READ_TOKENS, USAGE_REASONING_TOKENS)
    if event.finish_reason is not None:
        span.set_attribute(RESPONSE_FINISH_REASONS, [event.finish_reason])
    if event.cost is not None:
        span.set_attribute(COST_USD, event.cost)


def _set_tool_call(span: Span, event: ToolCallFinished) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute(TOOL_RESULT_CHARS, event.result_chars)
    if event.truncated_from is not None:
        span.set_attribute(TOOL_TRUNCATED_FROM, event.truncated_from)
    if event.error is None:
        return
    if event.error == "cancelled":  # what the agent loop reports when the call never finished
        span.set_attribute(CANCELLED, True)
        return
    # The error is the text the model was sent, not an exception: status only.
    span.set_attribute(ERROR_TYPE, "tool_error")
    span.set_status(Status(StatusCode.ERROR, event.error))


def _set_run_totals(span: Span, result: object) -> None:
    """Usage, cost and failures of the whole run (``result`` is a SwarmResult)."""
    if not isinstance(result, SwarmResult):
        return
    usage = result.token_usage
    span.set_attribute(RUN_INPUT_TOKENS, usage.prompt_tokens)
    span.set_attribute(RUN_OUTPUT_TOKENS, usage.completion_tokens)
    _set_parts(span, usage, RUN_CACHE_READ_TOKENS, RUN_REASONING_TOKENS)
    if result.cost is not None:
        span.set_attribute(COST_USD, result.cost)
    if result.failures:
        span.set_attribute(RUN_FAILURES, [f.agent_name for f in result.failures])


def _set_parts(span: Span, usage: TokenUsage, cached: str, reasoning: str) -> None:
    """Cached and reasoning tokens (parts of input and output), set only when there are any."""
    if usage.cached_tokens:
        span.set_attribute(cached, usage.cached_tokens)
    if usage.reasoning_tokens:
        span.set_attribute(reasoning, usage.reasoning_tokens)
