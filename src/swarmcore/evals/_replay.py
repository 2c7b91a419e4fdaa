"""Replaying a case against the current flow, offline: cassettes stand in for models and tools.

Every agent runs on a model of its own that answers from the case's model
cassette by the request's content, so parallel agents may ask in any order; a
request the cassette lacks fails that agent with the agent's name and the first
message that differs from its recorded conversation, and is never sent
anywhere. Each tool marked ``replay`` answers from the tool cassette through
:meth:`Tool.invoke <swarmcore.Tool.invoke>`, the one call every tool goes
through (as an MCP tool overrides it); tools marked ``live`` run. An agent called
as a tool (``agent.as_tool()``) replays as a tool: its recorded result comes back.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from swarmcore import llm
from swarmcore._flow import Flow, FlowNode, chain
from swarmcore._swarm import Swarm
from swarmcore._text_tools import text_tool_marker
from swarmcore._tools import ApprovalRequest, Approver, Tool, ToolReportedError
from swarmcore._walk import RunsItsStep
from swarmcore.agent import Agent
from swarmcore.errors import BudgetExceeded, SwarmError
from swarmcore.evals._case import (
    Case,
    CassetteEntry,
    CassetteReply,
    ToolEntry,
    base_name,
    configured_models,
)
from swarmcore.evals._trace import Trace, WallTimes, arguments_key, digest, trace_of
from swarmcore.events import AgentFinished, AgentStarted, Event, Hook
from swarmcore.results import SwarmResult
from swarmcore.store import RunStore, SQLiteStore
from swarmcore.testing._endpoint import model_string
from swarmcore.testing._replay import MARKER_SLOT, preview, request_key, unmarked
from swarmcore.testing._replies import Call, Fail, RecordedRequest, Reply, Step

_COST_HEADER = "x-litellm-response-cost"
_names = itertools.count(1)


class Miss(BaseModel):
    """A request the case's cassettes do not hold: where the replay departed from the run."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    agent: str
    """The agent that sent it."""
    kind: str
    """``model`` (a model request) or ``tool`` (a tool call)."""
    detail: str
    """What differs: the first message unlike the recorded one, or the tool and arguments."""


class ReplayDiverged(SwarmError):
    """A tool call in a replay that the case's tool cassette does not hold (never run live)."""


@dataclass
class CaseRun:
    """A case replayed against the current flow: what the evaluators read.

    Attributes:
        case: The case.
        trace: The replay's trace.
        result: The replay's result (the partial one when the run failed).
        error: The error that ended the run, if any.
        misses: Requests and tool calls the cassettes did not hold, in order.
        models: Each agent's models in the current flow, by name: its model, then
            its fallback models.
        tool_specs: Each agent's tool specs in the current flow (as ``Case.tool_specs``).
        judge_live: Whether a judge may call its model (a live run, or ``--record``);
            in a replay it answers from the case's judge cassette.
        judged: The judge's model calls made in this run, when it called its model.
    """

    case: Case
    trace: Trace
    result: SwarmResult | None
    error: BaseException | None
    misses: list[Miss]
    models: dict[str, list[str]]
    tool_specs: dict[str, dict[str, Any]]
    judge_live: bool = False
    judged: list[CassetteEntry] = field(default_factory=list[CassetteEntry])

    @property
    def expect(self) -> Trace:
        """The case's expectations: the recorded run's trace."""
        return self.case.expect

    @property
    def budget_error(self) -> BudgetExceeded | None:
        """The run's BudgetExceeded, when its budget stopped it."""
        return self.error if isinstance(self.error, BudgetExceeded) else None


@dataclass
class _Cassettes:
    """One replay's cassettes: the recorded replies left and the misses so far."""

    case: Case
    misses: list[Miss] = field(default_factory=list[Miss])
    _replies: dict[tuple[str, str], deque[CassetteReply]] = field(
        default_factory=dict[tuple[str, str], deque[CassetteReply]]
    )
    _tools: dict[tuple[str, str], deque[ToolEntry]] = field(
        default_factory=dict[tuple[str, str], deque[ToolEntry]]
    )
    _models: list[_AgentModel] = field(default_factory=list["_AgentModel"])

    def __post_init__(self) -> None:
        for entry in self.case.model_cassette:
            key = (base_name(entry.agent), entry.key)
            self._replies.setdefault(key, deque()).append(entry.reply)
        for tool in self.case.tool_cassette:
            self._tools.setdefault((tool.tool, tool.arguments), deque()).append(tool)

    def model_for(self, agent: Agent) -> str:
        """A model string answering ``agent``'s requests from the cassette."""
        responder = _AgentModel(self, agent.name)
        self._models.append(responder)  # test models are held weakly: keep each alive
        supports = {
            capability: known
            for capability in ("function_calling", "response_schema")
            if (known := llm.supports(agent.model, capability)) is not None
        }
        name = f"eval-{next(_names)}-{agent.name}"
        return model_string(name, responder, supports or None)

    def reply(self, agent: str, request: RecordedRequest) -> Step:
        messages = unmarked(request.messages)
        found = self._replies.get((agent, digest(request_key(messages))))
        if not found:
            detail = self._explain(agent, messages)
            self.misses.append(Miss(agent=agent, kind="model", detail=detail))
            return Fail(400, f"swarmcore eval: the case holds no reply to this request: {detail}")
        recorded = found.popleft()
        text = recorded.text
        marker = text_tool_marker(request.system)
        if marker is not None and text:
            text = text.replace(MARKER_SLOT, marker)
        cost = {} if recorded.cost is None else {_COST_HEADER: repr(recorded.cost)}
        return Reply(
            text=text,
            tool_calls=[Call(c.name, c.arguments, id=c.id) for c in recorded.tool_calls],
            prompt_tokens=recorded.usage.prompt_tokens,
            completion_tokens=recorded.usage.completion_tokens,
            cached_tokens=recorded.usage.cached_tokens,
            reasoning_tokens=recorded.usage.reasoning_tokens,
            headers=cost,
        )

    def tool_result(self, agent: str, tool: Tool, arguments: str) -> str:
        entries = self._tools.get((tool.name, arguments_key(arguments)))
        if not entries:
            tool.validate_arguments(arguments)  # arguments the tool refuses fail as they would live
            detail = f"tool {tool.name!r} called with {arguments_key(arguments)}, not recorded"
            self.misses.append(Miss(agent=agent, kind="tool", detail=detail))
            raise ReplayDiverged(f"swarmcore eval: agent {agent!r}: {detail}.")
        entry = entries.popleft() if len(entries) > 1 else entries[0]  # the last one repeats
        if entry.error is not None:
            raise ToolReportedError(entry.error)
        return entry.result

    def _explain(self, agent: str, sent: Sequence[Mapping[str, Any]]) -> str:
        recorded = [
            messages for key, messages in self.case.conversations.items() if base_name(key) == agent
        ]
        if not recorded:
            return f"agent {agent!r} did not run in the recorded run"

        def shared(messages: list[dict[str, Any]]) -> int:
            count = 0
            for mine, theirs in zip(sent, messages, strict=False):
                if request_key([mine]) != request_key([theirs]):
                    break
                count += 1
            return count

        nearest = max(recorded, key=shared)
        at = shared(nearest)
        if at < len(sent) and at < len(nearest):
            mine, theirs = sent[at], nearest[at]
            role = mine.get("role")
            return f"agent {agent!r}: message {at + 1} ({role}) differs{_where(mine, theirs)}"
        return (
            f"agent {agent!r}: the request has {len(sent)} messages; the recorded conversation "
            f"agrees with its first {at} and has {len(nearest)}"
        )


def _where(sent: Mapping[str, Any], recorded: Mapping[str, Any], context: int = 30) -> str:
    """Where two messages' texts part: `` at character N: sent '...', recorded '...'``."""
    mine, theirs = str(sent.get("content") or ""), str(recorded.get("content") or "")
    if mine == theirs:  # the same text: the tool calls or their ids differ
        return f": sent {preview(sent)}, recorded {preview(recorded)}"
    at = next(
        (i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
        min(len(mine), len(theirs)),
    )
    start = max(0, at - context)

    def near(text: str) -> str:
        cut = " ".join(text[start : at + 2 * context].split())
        return repr(
            ("..." if start else "") + cut + ("..." if at + 2 * context < len(text) else "")
        )

    return f" at character {at + 1}: sent {near(mine)}, recorded {near(theirs)}"


@dataclass(eq=False)
class _AgentModel:
    """The model one agent runs on in a replay: its cassette's replies."""

    cassettes: _Cassettes
    agent: str

    async def respond(self, request: RecordedRequest) -> Step:
        return self.cassettes.reply(self.agent, request)


@dataclass(frozen=True, eq=False, kw_only=True)
class _ReplayedTool(Tool):
    """A tool that answers from the tool cassette instead of running."""

    replay: _Cassettes = field(repr=False)
    agent: str = ""
    original: Tool = field(repr=False)

    async def invoke(self, arguments: str) -> str:
        """The recorded result of this call (a recorded failure is raised as it was reported)."""
        return self.replay.tool_result(self.agent, self.original, arguments)


def _never(*_: object, **__: object) -> str:  # pragma: no cover -- invoke never calls fn
    raise AssertionError("a replayed tool is never called")


def _replayed(tool: Tool, agent: str, cassettes: _Cassettes) -> Tool:
    if cassettes.case.tool_modes.get(tool.name, "replay") == "live" and tool.delegate is None:
        return tool
    return _ReplayedTool(
        name=tool.name,
        description=tool.description,
        parameters=tool.parameters,
        fn=_never,
        _args_model=BaseModel,
        timeout=tool.timeout,
        replay=cassettes,
        agent=agent,
        original=tool,
    )


def as_flow(target: Flow | Agent | Swarm) -> Flow:
    """The flow of a Swarm, an Agent as a one-step flow, or the flow itself."""
    if isinstance(target, Swarm):
        return target.flow
    return chain(target) if isinstance(target, Agent) else target


def current_setup(flow: Flow) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    """Each agent's models (its model, then its fallbacks), and its tools' specs, in ``flow``."""
    models: dict[str, list[str]] = {}
    specs: dict[str, dict[str, Any]] = {}

    def look(node: FlowNode) -> FlowNode:
        if isinstance(node, Agent):
            models[node.name] = configured_models(node)
            found = {t.name: t.spec["function"] for t in node.tools if isinstance(t, Tool)}
            if found:
                specs[node.name] = dict(sorted(found.items()))
        return node

    flow.map_agents(look)
    return models, dict(sorted(specs.items()))


def _replay_swarm(case: Case, target: Flow | Agent | Swarm, cassettes: _Cassettes) -> Swarm:
    def swap(node: FlowNode) -> FlowNode:
        if not isinstance(node, Agent) or isinstance(node, RunsItsStep):
            return node
        tools = [
            _replayed(t, node.name, cassettes) if isinstance(t, Tool) else t for t in node.tools
        ]
        return node.clone(
            model=cassettes.model_for(node),
            fallback_models=(),
            backend=None,
            tools=tools,
        )

    # a replayed call costs what it cost when recorded, and was decided when recorded
    return _swarm(case, target, as_flow(target).map_agents(swap), replay=True)


def _swarm(
    case: Case,
    target: Flow | Agent | Swarm,
    flow: Flow,
    *,
    replay: bool,
    store: RunStore | None = None,
    hooks: Sequence[Hook] = (),
) -> Swarm:
    """A Swarm of ``flow`` with the target Swarm's settings, else the case's context mode.

    A replay allows every approval (the recorded calls were decided when recorded)
    and unpriced calls; a live run keeps the target's approval callback and budget.
    ``hooks`` are the eval's own (a live run's stopwatch), not the target's.
    """
    approve: Approver | None = _allow if replay else None
    if isinstance(target, Swarm):
        budget = target.budget
        return Swarm(
            flow,
            context_mode=target.context_mode,
            context_budget=target.context_budget,
            defaults=target.defaults,
            step_retries=target.step_retries,
            max_cost=budget.max_cost,
            max_tokens=budget.max_tokens,
            allow_unpriced=replay or budget.allow_unpriced,
            approve=approve or target.approve,
            store=store,
            hooks=hooks,
        )
    mode = case.context_mode
    return Swarm(
        flow,
        context_mode=mode,
        context_budget=case.context_budget if mode == "auto" else None,
        approve=approve,
        store=store,
        hooks=hooks,
    )


def _allow(_: ApprovalRequest) -> bool:
    return True


async def _run(swarm: Swarm, case: Case) -> tuple[SwarmResult | None, BaseException | None]:
    try:
        return await swarm.run(case.task, variables=case.variables), None
    except SwarmError as exc:
        return (exc.partial if isinstance(exc.partial, SwarmResult) else None), exc


def _case_run(
    case: Case,
    target: Flow | Agent | Swarm,
    result: SwarmResult | None,
    error: BaseException | None,
    misses: list[Miss],
    wall: WallTimes | None = None,
) -> CaseRun:
    flow = as_flow(target)
    models, specs = current_setup(flow)
    trace = trace_of(
        flow.shape(),
        result.history if result else [],
        result.decisions if result else [],
        failures=result.failures if result else [],
        models={name: configured[0] for name, configured in models.items()},
        wall=wall,
    )
    return CaseRun(
        case=case,
        trace=trace,
        result=result,
        error=error,
        misses=misses,
        models=models,
        tool_specs=specs,
    )


Clock = Callable[[], float]
"""Seconds on a monotonic clock (``time.perf_counter``); a test may pass its own."""


@dataclass
class _Stopwatch:
    """Each agent's wall time in a live run: ``clock`` read as its start and end events arrive.

    Events reach a sync hook inline, as they happen, so the times are the
    agents' own; an agent run again (a step retry) is timed on its last attempt,
    as a stored run's ``duration_seconds`` is.
    """

    clock: Clock
    seconds: dict[str, float] = field(default_factory=dict[str, float])
    _started: dict[str, float] = field(default_factory=dict[str, float])

    def __call__(self, event: Event) -> None:
        match event:
            case AgentStarted(agent_name=name):
                self._started[name] = self.clock()
            case AgentFinished(agent_name=name) if name in self._started:
                self.seconds[name] = self.clock() - self._started.pop(name)
            case _:
                pass


async def live_case(
    case: Case, target: Flow | Agent | Swarm, *, clock: Clock = time.perf_counter
) -> CaseRun:
    """Run ``case``'s task against ``target`` for real: its models and tools, no cassette.

    For ``swarmcore eval run --live``: the evaluators then judge a live run,
    its wall times included (the run's and each agent's, measured on ``clock``).
    """
    watch = _Stopwatch(clock)
    swarm = _swarm(case, target, as_flow(target), replay=False, hooks=[watch])
    began = clock()
    result, error = await _run(swarm, case)
    wall = WallTimes(clock() - began, watch.seconds)
    run = _case_run(case, target, result, error, [], wall)
    run.judge_live = True
    return run


def judge_model(case: Case, judge: Agent) -> tuple[str, Callable[[], list[Miss]]]:
    """A model answering ``judge`` from ``case``'s judge cassette, and its misses so far."""
    cassettes = _Cassettes(
        case.model_copy(update={"model_cassette": case.judge_cassette, "conversations": {}})
    )
    return cassettes.model_for(judge), lambda: list(cassettes.misses)


async def record_case(case: Case, target: Flow | Agent | Swarm) -> Case:
    """``case`` recorded again from a live run of ``target``: new cassettes and expectations.

    The case keeps its name, its ``checks`` and its ``tool_modes``.

    Raises:
        SwarmError: The live run failed (a case is made from a run that succeeded).
    """
    from swarmcore.evals._case import case_from_record

    flow = as_flow(target)
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "runs.db")
        try:
            swarm = _swarm(case, target, flow, replay=False, store=store)
            result = await swarm.run(case.task, variables=case.variables)
            record = store.get_run(result.run_id)
        finally:
            store.close()
    assert record is not None  # the run just stored
    fresh = case_from_record(record, name=case.name, flow=flow, tool_modes=case.tool_modes)
    return fresh.model_copy(update={"checks": case.checks})


async def replay_case(case: Case, target: Flow | Agent | Swarm) -> CaseRun:
    """Run ``case`` against ``target`` (a Flow, Agent or Swarm) on its cassettes, offline.

    A Swarm's settings apply (context mode, defaults, budget); a bare flow runs
    with the context mode the case was recorded with.

    Returns:
        What the evaluators read: the replay's trace, result, error and misses.
    """
    cassettes = _Cassettes(case)
    result, error = await _run(_replay_swarm(case, target, cassettes), case)
    return _case_run(case, target, result, error, list(cassettes.misses))
