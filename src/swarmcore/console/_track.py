"""Tracking events: each one moves the rows of its run (status, times, tokens, activity)."""

from __future__ import annotations

import asyncio

from swarmcore.console._lines import describe, short
from swarmcore.console._rows import Row, RunState
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ModelFallback,
    RetryScheduled,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)


def track(state: RunState, event: Event) -> None:
    """Update ``state`` with ``event``; events it has no use for change nothing."""
    match event:
        case StepStarted():
            _step_started(state, event)
        case StepFinished():
            _step_finished(state, event)
        case AgentStarted():
            _agent_started(state, event)
        case AgentFinished():
            _agent_finished(state, event)
        case _:
            _track_call(state, event)


def indent_of(state: RunState, event: Event) -> int:
    """How deep ``event``'s plain line is indented: its parent span's depth."""
    if event.parent_id is None:
        return 0
    return state.indent.get(event.parent_id, 0)


def _track_call(state: RunState, event: Event) -> None:
    match event:
        case ModelCallStarted():
            row = _agent_row(state, event.agent_name, event.parent_id)
            state.spans[event.span_id] = row
            state.indent[event.span_id] = indent_of(state, event)
            row.activity = f"model call {event.turn}"
        case ModelCallFinished():
            _model_finished(_agent_row(state, event.agent_name, event.parent_id), event)
        case ToolCallStarted():
            row = _agent_row(state, event.agent_name, event.parent_id)
            state.indent[event.span_id] = indent_of(state, event)
            row.tools[event.span_id] = event.tool_name
            row.activity = "tool " + ", ".join(row.tools.values())
        case ToolCallFinished():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.tools.pop(event.span_id, None)
            row.activity = "tool " + ", ".join(row.tools.values()) if row.tools else ""
        case RetryScheduled():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.activity = f"retry {event.attempt} in {event.delay_seconds:.1f}s: " + short(
                event.error, 60
            )
        case ModelFallback():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.activity = f"fallback to {event.to_model}"
        case TextDelta():
            row = _agent_row(state, event.agent_name, event.parent_id)
            row.text_tail = (row.text_tail + event.text)[-80:]
        case _:
            pass


def _step_started(state: RunState, event: StepStarted) -> None:
    state.indent[event.span_id] = indent_of(state, event) + (1 if event.parallel else 0)
    if not event.parallel and len(event.agents) == 1:
        state.spans[event.span_id] = _agent_row(state, event.agents[0], event.parent_id)
        return
    row = state.groups.get(frozenset(event.agents))
    if row is None:
        row = Row("parallel", "group")
        _container(state, event.parent_id).append(row)
        state.groups[frozenset(event.agents)] = row
    state.spans[event.span_id] = row
    row.status, row.started, row.policy = "running", event.timestamp, event.policy


def _step_finished(state: RunState, event: StepFinished) -> None:
    row = state.spans.get(event.span_id)
    if row is not None and row.kind == "group":
        row.status = "failed" if event.error is not None else "done"
        row.ended, row.duration = event.timestamp, event.duration_seconds
    for name in event.failed:
        agent = state.agents.get(name)
        if agent is not None and agent.status == "waiting":
            agent.status = "skipped"


def _agent_started(state: RunState, event: AgentStarted) -> None:
    row = _agent_row(state, event.agent_name, event.parent_id)
    state.spans[event.span_id] = row
    state.indent[event.span_id] = indent_of(state, event) + 1
    row.status, row.attempt, row.error, row.activity = "running", event.attempt, "", ""
    row.ended = row.duration = None
    if row.started is None:
        row.started = event.timestamp


def _agent_finished(state: RunState, event: AgentFinished) -> None:
    row = _agent_row(state, event.agent_name, event.parent_id)
    row.ended, row.activity = event.timestamp, ""
    # The time the result (or, for a failure, the run's record of it) gives, which the
    # usage table and the run store show too: not the wall time since a first attempt.
    result = event.result
    row.duration = event.duration_seconds if result is None else result.duration_seconds
    row.tools.clear()
    if event.error is None:
        row.status = "done"
        if result is not None and row.calls == 0:  # no model-call events seen: take the total
            row.calls = len(result.llm_calls)
            row.tokens = result.token_usage.total_tokens
            row.cost, row.unpriced = result.cost or 0.0, result.cost is None
    elif isinstance(event.error, asyncio.CancelledError):
        row.status, row.error = "cancelled", "cancelled"
    else:
        row.status, row.error = "failed", describe(event.error)


def _model_finished(row: Row, event: ModelCallFinished) -> None:
    row.activity = ""
    if event.error is not None:
        return
    row.calls += 1
    if event.usage is not None:
        row.tokens += event.usage.total_tokens
    if event.cost is None:
        row.unpriced = True
    else:
        row.cost += event.cost


def _agent_row(state: RunState, name: str, parent_id: int | None) -> Row:
    """The row of agent ``name``; a new one under ``parent_id``'s row if the skeleton lacks it."""
    row = state.agents.get(name)
    if row is None:
        row = state.agents[name] = Row(name, "agent")
        _container(state, parent_id).append(row)
    return row


def _container(state: RunState, parent_id: int | None) -> list[Row]:
    parent = state.spans.get(parent_id) if parent_id is not None else None
    if parent is not None and parent.kind != "agent":
        return parent.children
    return state.steps
