"""Plain lines: the text of each notable event, and the least verbosity that shows it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from swarmcore.console._rows import RunState
from swarmcore.errors import SwarmError
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    ElicitationAnswered,
    ElicitationRequested,
    Event,
    LoopFinished,
    LoopIteration,
    MCPTaskStatus,
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

if TYPE_CHECKING:  # annotations only: the console never imports pydantic itself
    from swarmcore.results import SwarmResult

Verbosity: TypeAlias = Literal["minimal", "summary", "detailed", "debug"]
"""How much to show: see :class:`~swarmcore.console.ConsoleProgress`."""

LEVELS: dict[str, int] = {"minimal": 0, "summary": 1, "detailed": 2, "debug": 3}
"""Each verbosity's rank: a line shows at its level and above."""
MINIMAL, SUMMARY, DETAILED, DEBUG = range(4)

_ERROR_CHARS = 160


@dataclass(frozen=True, slots=True)
class Line:
    """A plain line: shown from ``level`` up; ``in_tree`` when the live tree already shows it."""

    level: int
    text: str
    in_tree: bool = False


def plain_line(state: RunState, event: Event) -> Line | None:
    """The plain line for ``event`` and the least verbosity that shows it, or None."""
    match event:
        case RunStarted():
            return Line(MINIMAL, f"run {state.short_id} started: {event.flow}")
        case StepStarted():
            if not event.parallel:
                return Line(DEBUG, f"step {event.step} started", in_tree=True)
            policy = event.policy or "all"
            return Line(SUMMARY, f"{event.step} started (parallel, {policy})", in_tree=True)
        case StepFinished():
            return _step_line(event)
        case AgentStarted():
            again = f", attempt {event.attempt}" if event.attempt > 1 else ""
            return Line(SUMMARY, f"{event.agent_name} started ({event.model}{again})", True)
        case AgentFinished():
            return _agent_line(event)
        case RouteChosen() | LoopIteration() | LoopFinished() | PlanMade():
            return _decision_line(event)
        case _:
            return _call_line(event)


def _decision_line(event: Event) -> Line | None:
    """Routes, loops and plans: what was chosen, at summary level."""
    match event:
        case RouteChosen():
            why = f": {short(event.reason, 80)}" if event.reason else ""
            return Line(SUMMARY, f"{event.route} chose {event.branch} (by {event.by}){why}", True)
        case LoopIteration():
            text = f"{event.loop} iteration {event.iteration} of at most {event.max_iterations}"
            return Line(SUMMARY, text, in_tree=True)
        case LoopFinished():
            text = f"{event.loop} ended after {event.iterations} ({event.reason})"
            return Line(SUMMARY, text, in_tree=True)
        case PlanMade():
            tries = f", {event.attempts} attempts" if event.attempts > 1 else ""
            return Line(MINIMAL, f"{event.plan}: {event.expression}{tries}", in_tree=True)
        case _:
            return None


def _step_line(event: StepFinished) -> Line:
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        why = f"{', '.join(event.failed)} failed" if event.failed else describe(event.error)
        text = f"{event.step} FAILED after {took}: {why}"
        return Line(SUMMARY if "|" in event.step else DEBUG, text, in_tree=True)
    if event.failed:
        text = f"{event.step} done in {took}; did not finish: {', '.join(event.failed)}"
        return Line(SUMMARY, text, in_tree=True)
    level = SUMMARY if "|" in event.step else DEBUG
    return Line(level, f"{event.step} done in {took}", in_tree=True)


def _agent_line(event: AgentFinished) -> Line:
    # The result's own time, as the usage table shows it.
    seconds = event.duration_seconds if event.result is None else event.result.duration_seconds
    name, took = event.agent_name, f"{seconds:.1f}s"
    if event.error is None:
        result = event.result
        if result is None:
            return Line(SUMMARY, f"{name} done: {took}", in_tree=True)
        parts = [f"{result.token_usage.total_tokens:,} tokens", money(result.cost), took]
        if result.tool_calls:
            parts.append(f"{len(result.tool_calls)} tool calls")
        return Line(SUMMARY, f"{name} done: {', '.join(parts)}", in_tree=True)
    if isinstance(event.error, asyncio.CancelledError):
        return Line(SUMMARY, f"{name} cancelled after {took}", in_tree=True)
    attempt = f" (attempt {event.attempt})" if event.attempt > 1 else ""
    return Line(MINIMAL, f"{name} FAILED{attempt}: {describe(event.error)}", in_tree=True)


def _call_line(event: Event) -> Line | None:
    match event:
        case ModelCallStarted():
            text = (
                f"{event.agent_name} model call {event.turn} started ({event.model}, "
                f"{event.messages} messages, {event.tools} tools)"
            )
            return Line(DEBUG, text)
        case ModelCallFinished():
            return _model_line(event)
        case ToolCallStarted():
            args = short(event.arguments, 80)
            return Line(DEBUG, f"{event.agent_name} tool {event.tool_name} started: {args}")
        case ToolCallFinished():
            return _tool_line(event)
        case RetryScheduled():
            return _retry_line(event)
        case ModelFallback():
            text = (
                f"{event.agent_name} falls back from {event.from_model} to {event.to_model}: "
                f"{short(event.error, _ERROR_CHARS)}"
            )
            return Line(DETAILED, text)
        case TextDelta():
            return Line(DEBUG, f"{event.agent_name} text: {event.text!r}")
        case ReasoningDelta():
            return Line(DEBUG, f"{event.agent_name} reasoning summary: {event.text!r}")
        case ToolCallDelta():
            return Line(
                DEBUG, f"{event.agent_name} tool {event.name} arguments: {event.arguments!r}"
            )
        case ElicitationRequested() | ElicitationAnswered() | MCPTaskStatus():
            return _mcp_line(event)
        case RunFinished():  # handled by the caller; listed so it is not "unknown"
            return None
        case _:
            return Line(DEBUG, f"{type(event).__name__} (span {event.span_id})")


def _mcp_line(event: Event) -> Line | None:
    """An MCP server's question (a URL to open shows at every verbosity) and its tasks."""
    match event:
        case ElicitationRequested(mode="url"):
            text = (
                f"{event.agent_name} tool {event.tool_name}: {event.server} asks to open "
                f"{event.url}: {short(event.message, _ERROR_CHARS)}"
            )
            return Line(MINIMAL, text)
        case ElicitationRequested():
            text = f"{event.agent_name} tool {event.tool_name}: {event.server} asks: "
            return Line(SUMMARY, text + short(event.message, _ERROR_CHARS))
        case ElicitationAnswered():
            why = f": {short(event.reason, _ERROR_CHARS)}" if event.reason else ""
            text = (
                f"{event.agent_name} tool {event.tool_name}: {event.action} "
                f"({event.answered_by}){why}"
            )
            return Line(DETAILED, text)
        case MCPTaskStatus():
            said = f": {short(event.message, _ERROR_CHARS)}" if event.message else ""
            text = f"{event.agent_name} tool {event.tool_name}: task {event.status}{said}"
            return Line(DETAILED, text)
        case _:
            return None


def _model_line(event: ModelCallFinished) -> Line:
    head = f"{event.agent_name} model call {event.turn}"
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        return Line(DETAILED, f"{head} FAILED after {took}: {describe(event.error)}")
    tokens = event.usage.total_tokens if event.usage is not None else 0
    parts = [event.model, f"{tokens:,} tokens", money(event.cost), took]
    if event.tool_calls:
        parts.append(f"{event.tool_calls} tool calls")
    if event.attempts > 1:
        parts.append(f"{event.attempts} attempts")
    return Line(DETAILED, f"{head}: {', '.join(parts)}")


def _tool_line(event: ToolCallFinished) -> Line:
    head = f"{event.agent_name} tool {event.tool_name}"
    took = f"{event.duration_seconds:.2f}s"
    if event.error is not None:
        return Line(DETAILED, f"{head} FAILED after {took}: {short(event.error, _ERROR_CHARS)}")
    size = f"{event.result_chars:,} chars"
    if event.truncated_from is not None:
        size += f" (cut from {event.truncated_from:,})"
    return Line(DETAILED, f"{head}: {took}, {size}")


def _retry_line(event: RetryScheduled) -> Line:
    why = short(event.error, _ERROR_CHARS)
    if event.scope == "agent":
        text = (
            f"{event.agent_name} runs again (attempt {event.attempt + 1}) "
            f"in {event.delay_seconds:.1f}s: {why}"
        )
    else:
        model = f", {event.model}" if event.model else ""
        text = (
            f"{event.agent_name} retry {event.attempt} (model call{model}) "
            f"in {event.delay_seconds:.1f}s: {why}"
        )
    return Line(DETAILED, text)


def outcome(state: RunState, event: RunFinished) -> str:
    """The run's last line: totals, or the error."""
    head = f"run {state.short_id}"
    took = f"{event.duration_seconds:.1f}s"
    if event.error is not None:
        return f"{head} FAILED after {took}: {describe(event.error)}"
    result = event.result
    if result is None:
        return f"{head} done in {took}"
    agents = len(result.history)
    parts = [
        f"{agents} agent{'' if agents == 1 else 's'}",
        f"{result.token_usage.total_tokens:,} tokens",
        money(result.cost),
    ]
    if result.failures:
        failed = ", ".join(f"{f.agent_name} ({f.error_type})" for f in result.failures)
        parts.append(f"did not finish: {failed}")
    return f"{head} done in {took}: {', '.join(parts)}"


def usage_table_of(event: RunFinished) -> str | None:
    """The usage table of the run's result, or of the partial result its error carries."""
    result: SwarmResult | None = event.result
    if result is None and isinstance(event.error, SwarmError):
        result = event.error.partial
    return None if result is None else result.usage_table()


def describe(error: BaseException) -> str:
    """``Type: message`` on one line, cut to a readable length; ``cancelled`` for a cancel."""
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    text = short(str(error), _ERROR_CHARS)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def money(cost: float | None) -> str:
    """USD: four decimals under a dollar, cents above; ``unpriced`` for None."""
    if cost is None:
        return "unpriced"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"
