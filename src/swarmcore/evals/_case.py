"""A case: one stored run as a readable JSON file that replays offline and says what to expect.

A case holds the run's task and variables, its flow's version (expression and
shape), a model cassette (each request's content key to its reply, per agent),
a tool cassette (tool name and canonical arguments to the result, each tool
replayed or run live), each agent's recorded conversation (to say where a
replay departs from it), and the expectations: the stored run's
:class:`~swarmcore.evals.Trace`. Nothing in it changes between two ``add``
commands for one run: ids and timestamps are left out, wall times are the
record's durations (seconds, to the millisecond), and every collection is
written in a fixed order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarmcore._flow.shape import FlowShape
from swarmcore.errors import UserError
from swarmcore.evals._trace import Trace, WallTimes, arguments_key, digest, trace_of
from swarmcore.modes import CONTEXT_TOOL_NAMES, ContextMode
from swarmcore.results import AgentKey, AgentResult, TokenUsage
from swarmcore.testing._replay import request_key, unmarked

if TYPE_CHECKING:
    from swarmcore._flow import Flow
    from swarmcore.agent import Agent
    from swarmcore.store import RunReader, RunRecord, RunStore

CASE_FORMAT = 1
"""The version of the case file format written now."""

ToolMode = Literal["replay", "live"]
"""How a tool runs in a replay: from the tool cassette, or for real."""

ToolMatch = Literal["strict", "unordered", "subset", "superset"]
"""How tool calls are matched against the recorded ones (:class:`~swarmcore.evals.ToolCalls`)."""

_FROZEN = ConfigDict(frozen=True, defer_build=True)
_MODES: dict[str, ContextMode] = {"pull": "pull", "push": "push", "auto": "auto"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class RecordedCall(BaseModel):
    """A tool call in a recorded model reply."""

    model_config = _FROZEN

    id: str
    name: str
    arguments: str
    """The arguments as the model sent them (JSON text)."""


class CassetteReply(BaseModel):
    """A recorded model reply: its text or tool calls, and what it cost."""

    model_config = _FROZEN

    text: str | None = None
    tool_calls: list[RecordedCall] = Field(default_factory=list[RecordedCall])
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost: float | None = None
    """USD as recorded; None when the call was unpriced."""


class CassetteEntry(BaseModel):
    """One model request of the run: the agent, the request's content key and the reply."""

    model_config = _FROZEN

    agent: str
    """The agent's key (``writer``, or ``writer#2`` in a loop)."""
    key: str
    """Digest of the request's messages (the text tool protocol's marker left out)."""
    reply: CassetteReply


class ToolEntry(BaseModel):
    """One tool call of the run: tool, canonical arguments and the result the model read.

    A call made again with the same arguments that gave another result has an
    entry of its own, after the first: a replay serves them in order, the last
    one again for any later call.
    """

    model_config = _FROZEN

    tool: str
    arguments: str
    """The arguments as canonical JSON (keys sorted, no spaces)."""
    result: str
    error: str | None = None
    """Why the call failed, when it did (``result`` holds the same text)."""


class JudgeOptions(BaseModel):
    """A judge for a case: an agent that reads the task and the final output and rules on it."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    criteria: str = Field(min_length=1)
    """What a good answer does, in words (``cites a source; under 100 words``)."""
    model: str = Field(min_length=1)
    """The judge's model (any model string an Agent takes)."""


class CheckOptions(BaseModel):
    """How a case's default evaluators judge a replay; edit them in the case file."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    tool_calls: ToolMatch = "strict"
    """How tool calls are matched: in order, in any order, as a subset or a superset."""
    ignore_arguments: list[str] = Field(default_factory=list[str])
    """Argument names left out of the match (``query``, or ``search.query`` for one tool)."""
    tolerance: float = Field(default=1.1, gt=0)
    """Tokens, cost and calls may reach the expectation times this before ``budget`` fails
    (a replay spends exactly what was recorded; live runs vary)."""
    wall_tolerance: float = Field(default=2.0, gt=0)
    """Under ``--live``, an agent's and the run's wall time may reach the recorded one
    times this, plus ``wall_grace``, before ``budget`` fails (an offline replay has no
    times and is not checked on them)."""
    wall_grace: float = Field(default=1.0, ge=0)
    """Seconds added to the wall-time limit, so that the jitter of a fast call (a few
    milliseconds recorded) is not taken for a regression."""
    output_contains: list[str] = Field(default_factory=list[str])
    """Text the final output must contain (beside equalling the recorded one)."""
    output_regex: str | None = None
    """A regular expression the final output must match (``re.search``)."""
    facts: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Per agent, text it must have been given (in its prompt or the tool results it read)."""
    exact_output: bool = True
    """Whether the final output must equal the recorded one."""
    judge: JudgeOptions | None = None
    """A judge agent's ruling on the output (:class:`~swarmcore.evals.Judge`); none when None."""


class Case(BaseModel):
    """One stored run as a regression test: what to send, what comes back, what to expect.

    Make one with :func:`case_from_run`; read one with :meth:`load`, write it
    with :meth:`save`. The file is plain, indented JSON meant to be read and
    edited (``checks`` and ``tool_modes`` in particular).
    """

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    swarmcore_case: int = CASE_FORMAT
    """The case format's version."""
    name: str
    """The case's name (its file is ``NAME.json``)."""
    task: str
    variables: dict[str, Any] = Field(default_factory=dict[str, Any])
    flow: str
    """The recorded flow, in the ``>>``/``|`` language."""
    flow_version: str
    """Digest of the recorded flow's shape: its agents, order, groups and control steps."""
    shape: str
    """The recorded flow's shape (canonical JSON)."""
    context_mode: ContextMode = "pull"
    """The recorded run's context mode (a run stored before modes were recorded: pull)."""
    context_budget: int | None = None
    checks: CheckOptions = Field(default_factory=CheckOptions)
    tool_modes: dict[str, ToolMode] = Field(default_factory=dict[str, ToolMode])
    """Per tool the run called: ``replay`` (from the tool cassette) or ``live``. The
    context tools (``get_context``...) always run: they read the replay's own context."""
    tool_specs: dict[str, dict[str, Any]] | None = None
    """Per agent with tools, its tools' specs (name, description, parameters), when the
    case was made with the flow at hand; None otherwise (tool schemas are then not checked)."""
    models: dict[str, list[str]] | None = None
    """Per agent, the models it was configured with: its model, then its fallback models,
    when the case was made with the flow at hand; None otherwise (the ``models`` check
    then asks that the model that answered is one the agent is configured with)."""
    expect: Trace
    """The stored run's trace: what a replay must reproduce."""
    model_cassette: list[CassetteEntry] = Field(default_factory=list[CassetteEntry])
    tool_cassette: list[ToolEntry] = Field(default_factory=list[ToolEntry])
    judge_cassette: list[CassetteEntry] = Field(default_factory=list[CassetteEntry])
    """The judge's model calls (``checks.judge``), recorded by ``--record``, so a judged
    replay needs no model either."""
    conversations: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict[str, list[dict[str, Any]]]
    )
    """Each agent's recorded conversation, to name the message where a replay departs."""

    def to_json(self) -> str:
        """The case file's text: indented JSON ending in a newline (totals shown, not read)."""
        return self.model_dump_json(indent=2) + "\n"

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the case to ``directory/NAME.json`` (creating the directory); its path."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.json"
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Case:
        """The case in the file at ``path``.

        Raises:
            UserError: The file cannot be read or is not a case (says what is wrong).
        """
        where = Path(path)
        try:
            text = where.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"Cannot read the case file {where}: {exc}.") from exc
        try:
            case = cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise UserError(
                f"{where} is not a swarmcore eval case: {at}: {first['msg']} "
                f"({exc.error_count()} errors). Fix the file or make it again with "
                "`swarmcore eval add`."
            ) from None
        if case.swarmcore_case > CASE_FORMAT:
            raise UserError(
                f"{where} was written by a newer swarmcore (case format {case.swarmcore_case}; "
                f"this one reads {CASE_FORMAT}): upgrade swarmcore to run it."
            )
        return case


def case_from_run(
    store: RunStore | RunReader | str | os.PathLike[str],
    run_id: str,
    *,
    name: str | None = None,
    flow: Flow | None = None,
    tool_modes: Mapping[str, ToolMode] | None = None,
) -> Case:
    """A case from a stored run: its cassettes and its expectations.

    Args:
        store: The run store (a SQLite path or a RunStore), or a durable engine's
            history (any :class:`~swarmcore.store.RunReader`).
        run_id: The run's id, or a unique prefix of it.
        name: The case's name; ``run-`` and the id's first 8 characters by default.
        flow: The flow the run was made with, to record each agent's tool specs
            (then a changed tool schema is flagged); optional.
        tool_modes: ``replay`` or ``live`` per tool name; every tool replays by default.

    Raises:
        UserError: No such run, the run did not succeed, or ``name`` is not a file name.
    """
    from swarmcore.store import RunReader, open_store

    reader = store if isinstance(store, RunReader) else open_store(store)
    record = reader.get_run(run_id)
    if record is None:
        raise UserError(f"No run {run_id!r} in {reader!r}; list them with `swarmcore runs list`.")
    return case_from_record(record, name=name, flow=flow, tool_modes=tool_modes)


def case_from_record(
    record: RunRecord,
    *,
    name: str | None = None,
    flow: Flow | None = None,
    tool_modes: Mapping[str, ToolMode] | None = None,
) -> Case:
    """A case from a stored run's record (see :func:`case_from_run`)."""
    if record.status != "succeeded":
        raise UserError(
            f"Run {record.run_id} {record.status}: a case is made from a run that succeeded "
            "(its replay is what the flow must keep doing)."
        )
    case_name = name or f"run-{record.run_id[:8]}"
    if not _NAME.fullmatch(case_name):
        raise UserError(
            f"Case name {case_name!r} must be a file name: letters, digits, '_', '.', '-'."
        )
    shape = FlowShape.from_json(record.shape)
    results = list(_every(record.results))
    tools = _tool_cassette(results)
    modes: dict[str, ToolMode] = {t.tool: "replay" for t in tools}
    modes |= tool_modes or {}
    budget = record.settings.get("context_budget")
    return Case(
        name=case_name,
        task=record.task,
        variables=dict(record.settings.get("variables") or {}),
        flow=record.flow,
        flow_version=digest(record.shape),
        shape=record.shape,
        context_mode=_MODES.get(str(record.settings.get("context_mode")), "pull"),
        context_budget=budget if isinstance(budget, int) else None,
        tool_modes=dict(sorted(modes.items())),
        tool_specs=_tool_specs(flow) if flow is not None else None,
        models=_models(flow) if flow is not None else None,
        expect=trace_of(
            shape,
            record.results,
            record.decisions,
            failures=record.failures,
            wall=_wall_times(record),
        ),
        model_cassette=[e for r in sorted(results, key=_by_name) for e in _entries(r)],
        tool_cassette=tools,
        conversations={r.agent_name: unmarked(r.messages) for r in sorted(results, key=_by_name)},
    )


def _wall_times(record: RunRecord) -> WallTimes:
    """The stored run's wall time and each agent's (their last attempt's), as durations."""
    ended = record.ended_at
    # a resumed run's start and end span the time it lay stopped: no run time then
    run = ended - record.started_at if ended is not None and not record.earlier else None
    return WallTimes(run, {r.agent_name: r.duration_seconds for r in record.results})


def _by_name(result: AgentResult) -> str:
    return result.agent_name


def _every(results: Iterable[AgentResult]) -> Iterable[AgentResult]:
    """The results and, depth first, the results of agents they called as tools."""
    for result in results:
        yield result
        yield from _every(result.delegations)


def cassette_entries(result: AgentResult) -> list[CassetteEntry]:
    """Every model call of ``result`` as cassette entries: request key to reply."""
    return _entries(result)


def _entries(result: AgentResult) -> list[CassetteEntry]:
    messages = unmarked(result.messages)
    calls = iter(result.llm_calls)
    entries: list[CassetteEntry] = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        call = next(calls, None)
        raw: list[Mapping[str, Any]] = message.get("tool_calls") or []
        reply = CassetteReply(
            text=message.get("content"),
            tool_calls=[
                RecordedCall(
                    id=str(c["id"]),
                    name=str(c["function"]["name"]),
                    arguments=str(c["function"].get("arguments") or "{}"),
                )
                for c in raw
            ],
            usage=call.token_usage if call else TokenUsage(),
            cost=call.cost if call else None,
        )
        key = digest(request_key(messages[:index]))
        entries.append(CassetteEntry(agent=result.agent_name, key=key, reply=reply))
    return entries


def _tool_cassette(results: Iterable[AgentResult]) -> list[ToolEntry]:
    """Every distinct call and result; one call that gave two results keeps both, in order."""
    seen: dict[tuple[str, str], list[ToolEntry]] = {}
    for result in results:
        for call in result.tool_calls:
            if call.tool_name in CONTEXT_TOOL_NAMES:  # the Swarm's own: they run, on the context
                continue
            key = (call.tool_name, arguments_key(call.arguments))
            entry = ToolEntry(tool=key[0], arguments=key[1], result=call.result, error=call.error)
            if entry not in seen.setdefault(key, []):
                seen[key].append(entry)
    return [entry for key in sorted(seen) for entry in seen[key]]


def _tool_specs(flow: Flow) -> dict[str, dict[str, Any]]:
    from swarmcore._tools import Tool
    from swarmcore.agent import Agent

    specs: dict[str, dict[str, Any]] = {}
    for node in flow.agents:
        if isinstance(node, Agent):
            found = {t.name: t.spec["function"] for t in node.tools if isinstance(t, Tool)}
            if found:
                specs[node.name] = dict(sorted(found.items()))
    return dict(sorted(specs.items()))


def _models(flow: Flow) -> dict[str, list[str]]:
    from swarmcore.agent import Agent

    found = {n.name: configured_models(n) for n in flow.agents if isinstance(n, Agent)}
    return dict(sorted(found.items()))


def configured_models(agent: Agent) -> list[str]:
    """The models ``agent`` may answer on: its model, then its fallback models, in order."""
    return [agent.model, *agent.fallback_models]


def base_name(key: str) -> str:
    """The agent's name in the flow for a result key (``writer`` for ``writer#2``)."""
    return AgentKey.parse(key).base
