"""Runs as standard logging records: the ``swarmcore.run`` logger as an event consumer."""

from __future__ import annotations

import logging

from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    ModelCallFinished,
    ModelFallback,
    RetryScheduled,
    RunFinished,
    RunStarted,
    ToolCallFinished,
)

run_logger = logging.getLogger("swarmcore.run")
"""Where :func:`log_event` writes: INFO for runs and agents, DEBUG for calls."""


def log_event(event: Event) -> None:
    """Write ``event`` as a standard logging record on ``swarmcore.run``.

    Runs, agents, failures and retries are INFO (failures WARNING); model and
    tool calls are DEBUG. Every record carries ``run_id`` and, where there is
    one, ``agent_name`` as attributes, for filters and structured handlers.
    A Swarm subscribes this only when the logger is enabled for INFO, so it
    costs nothing by default.
    """
    agent = getattr(event, "agent_name", None)
    extra = {"run_id": event.run_id, "agent_name": agent}
    level, message = _describe(event)
    if message and run_logger.isEnabledFor(level):
        run_logger.log(level, message, extra=extra)


def _describe(event: Event) -> tuple[int, str]:
    match event:
        case RunStarted():
            return logging.INFO, f"run {event.run_id[:8]} started: {event.flow}"
        case RunFinished(error=None):
            return logging.INFO, f"run {event.run_id[:8]} finished in {event.duration_seconds:.1f}s"
        case RunFinished():
            return logging.WARNING, f"run {event.run_id[:8]} failed: {_error(event.error)}"
        case AgentStarted():
            return logging.INFO, f"agent {event.agent_name} started on {event.model}"
        case AgentFinished(error=None, result=result) if result is not None:
            usage = result.token_usage.total_tokens
            return logging.INFO, (
                f"agent {event.agent_name} finished in {event.duration_seconds:.1f}s "
                f"({usage:,} tokens)"
            )
        case AgentFinished():
            return logging.WARNING, f"agent {event.agent_name} failed: {_error(event.error)}"
        case ModelCallFinished(error=None):
            tokens = event.usage.total_tokens if event.usage else 0
            return logging.DEBUG, (
                f"agent {event.agent_name}: {event.model} answered in "
                f"{event.duration_seconds:.2f}s ({tokens:,} tokens, {event.finish_reason})"
            )
        case ToolCallFinished():
            outcome = f"failed: {event.error}" if event.error else "ok"
            return logging.DEBUG, (
                f"agent {event.agent_name}: tool {event.tool_name} {outcome} "
                f"in {event.duration_seconds:.2f}s"
            )
        case RetryScheduled():
            return logging.INFO, (
                f"agent {event.agent_name}: {event.scope} retry after attempt {event.attempt} "
                f"in {event.delay_seconds:.1f}s"
            )
        case ModelFallback():
            return logging.INFO, (
                f"agent {event.agent_name}: {event.from_model} -> {event.to_model}"
            )
        case _:
            return logging.DEBUG, ""


def _error(error: BaseException | None) -> str:
    return "cancelled" if error is None else f"{type(error).__name__}: {error}"
