"""What the viewer's pages show, computed from stored runs: plain data for the templates.

Nothing here knows about HTTP or HTML; every value is text or numbers that the
templates escape. Records come from a store and are untrusted: a shape that
does not parse is reported, not raised, and every model- or tool-written
string stays a string.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmcore._flow.shape import FlowShape
from swarmcore._ui.graph import flow_svg
from swarmcore._ui.timeline import timeline_svg
from swarmcore.cli._format import duration, local_time, run_metadata, run_origin, shorten
from swarmcore.results import AgentFailure, AgentResult, format_cost, sum_cost
from swarmcore.store._base import EarlierAttempt, RunRecord, RunSummary

RESUMABLE = frozenset({"failed", "cancelled", "running"})
"""Statuses whose run ``swarmcore runs resume`` continues (``running``: its process died)."""


@dataclass(frozen=True, slots=True)
class SummaryView:
    """One row of the runs page."""

    run_id: str
    short_id: str
    status: str
    flow: str
    task: str
    started: str
    duration: str
    agents: str
    tokens: str
    cost: str
    error: str


def summary_view(run: RunSummary) -> SummaryView:
    """``run`` as the runs page shows it."""
    return SummaryView(
        run_id=run.run_id,
        short_id=run.run_id[:12],
        status=run.status,
        flow=shorten(run.flow, 80),
        task=shorten(run.task, 90),
        started=local_time(run.started_at),
        duration=duration(run.started_at, run.ended_at),
        agents=f"{run.agents_done}/{run.agents_total}",
        tokens=f"{run.tokens:,}",
        cost=format_cost(run.cost),
        error=shorten(run.error or "", 120),
    )


@dataclass(frozen=True, slots=True)
class AgentView:
    """One agent of a run page: its result, or its failure, or both (a retried attempt)."""

    name: str
    status: str
    result: AgentResult | None
    failure: AgentFailure | None
    tokens: str
    cost: str
    duration: str
    parsed: str | None
    """The structured output as indented JSON; None for a text agent."""


@dataclass(frozen=True, slots=True)
class EarlierView:
    """How an attempt of a resumed run ended, before it was resumed."""

    status: str
    """The attempt's status class: ``failed``, ``cancelled`` or ``running``."""
    said: str
    """What happened, in words: ``failed, then resumed 2026-11-27 16:30:02``."""
    error: str
    failures: list[AgentFailure]


@dataclass(frozen=True, slots=True)
class RunView:
    """Everything a run page shows."""

    record: RunRecord
    started: str
    duration: str
    graph: str | None
    """The flow as SVG, or None when the stored shape cannot be drawn (``graph_note`` says why)."""
    graph_note: str
    timeline: str
    agents: list[AgentView]
    tokens: str
    cost: str
    model_calls: int
    tool_calls: int
    budget: list[tuple[str, str]]
    """(what, "spent of limit") for each budget the run had."""
    origin: str
    resume: str | None
    """The command that resumes the run; None when it cannot be resumed from the CLI."""
    resume_note: str
    earlier: list[EarlierView] = field(default_factory=list[EarlierView])
    """A resumed run's attempts before each resume, oldest first."""
    fields: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


def agent_statuses(record: RunRecord) -> dict[str, str]:
    """Agent name to the graph's status class: ``succeeded``, ``failed`` or ``skipped``."""
    statuses: dict[str, str] = {}
    for failure in record.failures:
        statuses[failure.agent_name] = "skipped" if failure.cancelled else "failed"
    for result in record.results:
        statuses[result.agent_name] = "succeeded"
    return statuses


def run_view(record: RunRecord, *, store: Path | None = None) -> RunView:
    """``record`` as its page shows it; ``store`` is the file the resume command names."""
    graph, note = _graph(record)
    metadata = run_metadata(record)
    resume, resume_note = _resume(record, metadata, store)
    results = record.results
    tokens = sum(r.token_usage.total_tokens for r in results)
    cost = sum_cost([r.cost for r in results]) if results else 0.0
    return RunView(
        record=record,
        started=local_time(record.started_at),
        duration=duration(record.started_at, record.ended_at),
        graph=graph,
        graph_note=note,
        timeline=timeline_svg(record),
        agents=_agents(record),
        tokens=f"{tokens:,}",
        cost=format_cost(cost),
        model_calls=sum(len(r.llm_calls) for r in results),
        tool_calls=sum(len(r.tool_calls) for r in results),
        budget=_budget(record.settings, tokens, cost),
        origin=run_origin(metadata),
        resume=resume,
        resume_note=resume_note,
        earlier=[_earlier(e) for e in record.earlier],
    )


def pretty_json(value: object) -> str:
    """``value`` as indented JSON; a string holding JSON is parsed first, other text kept."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _graph(record: RunRecord) -> tuple[str | None, str]:
    if not record.shape:
        return None, "The store keeps no flow shape for this run."
    try:
        shape = FlowShape.from_json(record.shape)
    except ValueError as exc:
        return None, f"The stored flow shape cannot be drawn ({shorten(str(exc), 200)})."
    statuses = agent_statuses(record)
    if record.status in ("succeeded", "failed", "cancelled"):  # over, and fully recorded:
        for name in shape.names():  # an agent with no record never ran (a branch not taken)
            if name not in statuses and not any(k.startswith(f"{name}#") for k in statuses):
                statuses[name] = "skipped"
    return flow_svg(shape, statuses), ""


_ENDED = {"failed": "failed", "cancelled": "was cancelled", "running": "was interrupted"}


def _earlier(attempt: EarlierAttempt) -> EarlierView:
    ended = _ENDED.get(attempt.status, attempt.status)
    when = "" if attempt.resumed_at is None else f" {local_time(attempt.resumed_at)}"
    return EarlierView(
        status=attempt.status,
        said=f"{ended}, then resumed{when}",
        error=attempt.error or "",
        failures=attempt.failures,
    )


def _agents(record: RunRecord) -> list[AgentView]:
    failures = {f.agent_name: f for f in record.failures}
    results = {r.agent_name: r for r in record.results}
    for attempt in record.earlier:  # an agent finished on a resume keeps its earlier failure
        for f in attempt.failures:
            if f.agent_name in results and f.agent_name not in failures:
                failures[f.agent_name] = f
    names = list(dict.fromkeys([*results, *failures]))
    timed = {n: _start(results.get(n), failures.get(n)) for n in names}
    views: list[AgentView] = []
    for name in sorted(names, key=lambda n: timed[n]):
        result, failure = results.get(name), failures.get(name)
        if result is not None:
            status, ran = "succeeded", result.duration_seconds
        else:
            assert failure is not None  # every name has a result or a failure
            status, ran = ("skipped" if failure.cancelled else "failed"), failure.duration_seconds
        views.append(
            AgentView(
                name=name,
                status=status,
                result=result,
                failure=failure,
                tokens="-" if result is None else f"{result.token_usage.total_tokens:,}",
                cost="-" if result is None else format_cost(result.cost),
                duration="-" if ran is None else f"{ran:.2f}s",
                parsed=None
                if result is None or result.parsed is None
                else pretty_json(result.parsed),
            )
        )
    return views


def _start(result: AgentResult | None, failure: AgentFailure | None) -> float:
    starts = [a.started_at for a in (result, failure) if a is not None and a.started_at is not None]
    return min(starts, default=float("inf"))


def _budget(settings: Mapping[str, Any], tokens: int, cost: float | None) -> list[tuple[str, str]]:
    budget: list[tuple[str, str]] = []
    max_cost, max_tokens = settings.get("max_cost"), settings.get("max_tokens")
    if isinstance(max_cost, int | float) and not isinstance(max_cost, bool):
        budget.append(("cost", f"{format_cost(cost)} of ${max_cost:g}"))
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        budget.append(("tokens", f"{tokens:,} of {max_tokens:,}"))
    return budget


def _resume(
    record: RunRecord, metadata: Mapping[str, Any], store: Path | None
) -> tuple[str | None, str]:
    if record.settings.get("durable") is True:  # hand it back to the engine's workers
        if record.status not in ("failed", "cancelled"):
            return None, ""
        command = shlex.join(["swarmcore", "runs", "resume", record.run_id, "--database-url"])
        return f'{command} "$SWARMCORE_DATABASE_URL"', ""
    if record.status not in RESUMABLE:
        return None, ""
    if not (metadata.get("demo") or isinstance(metadata.get("target"), str)):
        return None, (
            "This run was not started by the swarmcore command: resume it from Python with "
            f"Swarm(flow, store=...).resume({record.run_id[:12]!r})."
        )
    command = ["swarmcore", "runs", "resume", record.run_id]
    if store is not None:
        command += ["--store", str(store)]
    return shlex.join(command), ""
