"""A run's trace: what an eval compares, made the same way from a stored run and a replay.

A trace keeps what a run did and leaves out what changes between two runs that
did the same thing (ids, timestamps): the final output, the agents that ran
step by step (a parallel group's as a set), the decisions at routes, loops and
plans, and per agent its model, calls, tokens, cost, tool calls, a digest of its
prompt and which other agents' outputs it was given. The stored run's trace is
a case's expectation; the replay's is what the evaluators check.

Wall time is a duration (seconds, to the millisecond), never a timestamp: the
recorded run's comes from its record, and a live run's is measured
(``swarmcore eval run --live``). An offline replay has none: its answers come
from a cassette, so its durations are not a model's, and leaving them out keeps
its reports the same bytes on every rerun.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, computed_field

from swarmcore._flow.shape import (
    AgentShape,
    FlowShape,
    GroupShape,
    LoopShape,
    PlanShape,
    RouteShape,
    StepShape,
)
from swarmcore.results import AgentFailure, AgentKey, AgentResult, Decision, sum_cost
from swarmcore.testing._replay import request_key, unmarked

_FROZEN = ConfigDict(frozen=True, defer_build=True)

_MIN_GIVEN = 16
"""Outputs shorter than this are not looked for in other agents' prompts (too common)."""


class ToolUse(BaseModel):
    """One tool call an agent made: the tool and its arguments."""

    model_config = _FROZEN

    tool: str
    """The tool's name."""
    arguments: Any
    """The arguments as JSON data (the model's raw text when it was not JSON)."""


class DecisionTrace(BaseModel):
    """A choice made at a control step: a route's branch, a loop's rounds, a plan."""

    model_config = _FROZEN

    kind: str
    """``route``, ``loop`` or ``plan``."""
    step: str
    """The control step's name."""
    value: str
    """The branch taken, the rounds run, or the planned flow."""


class AgentTrace(BaseModel):
    """What one agent did, without its ids and times."""

    model_config = _FROZEN

    model: str
    """The model the agent runs on (in a replay: the one the current flow gives it)."""
    calls: int = 0
    """Model calls, delegations included."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    """USD; None when a call was unpriced."""
    tool_calls: list[ToolUse] = Field(default_factory=list[ToolUse])
    """Every tool call, in the order the model asked for them."""
    prompt_digest: str = ""
    """SHA-256 (first 16 hex digits) of the messages the agent started from."""
    given: list[str] = Field(default_factory=list[str])
    """Other agents whose output (or summary) appears in what this agent was given."""
    wall_seconds: float | None = None
    """The agent's wall time in seconds (its last attempt): as recorded, or as a live
    run measured it; None in an offline replay."""

    @computed_field
    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


class Trace(BaseModel):
    """A run as an eval sees it; the same data from a stored run and from its replay."""

    model_config = _FROZEN

    output: str = ""
    """The final output: the last step's exits, joined as a run joins them."""
    steps: list[list[str]] = Field(default_factory=list[list[str]])
    """The agents that ran (finished or failed), step by step; a parallel group's
    members sorted (a set)."""
    decisions: list[DecisionTrace] = Field(default_factory=list[DecisionTrace])
    """Decisions at routes, loops and plans, sorted by step."""
    agents: dict[str, AgentTrace] = Field(default_factory=dict[str, AgentTrace])
    """Each agent that finished, by its key (``writer``, ``writer#2``), in step order."""
    wall_seconds: float | None = None
    """The run's wall time in seconds, from its start to its end: as recorded (None for
    a run that was resumed: its time spans the pause), or as a live run measured it;
    None in an offline replay."""

    @computed_field
    @property
    def tokens(self) -> int:
        """Tokens of every agent."""
        return sum(a.tokens for a in self.agents.values())

    @computed_field
    @property
    def calls(self) -> int:
        """Model calls of every agent."""
        return sum(a.calls for a in self.agents.values())

    @computed_field
    @property
    def cost(self) -> float | None:
        """USD of every agent; None when any is unpriced."""
        return sum_cost([a.cost for a in self.agents.values()])


@dataclass(frozen=True, slots=True)
class WallTimes:
    """A run's wall time and its agents', in seconds (durations, never timestamps)."""

    run: float | None
    """From the run's start to its end; None when unknown."""
    agents: Mapping[str, float] = field(default_factory=dict[str, float])
    """By agent key (``writer#2`` in a loop); an agent missing has no time."""


def trace_of(
    shape: FlowShape,
    results: Sequence[AgentResult],
    decisions: Sequence[Decision],
    *,
    failures: Sequence[AgentFailure] = (),
    models: Mapping[str, str] | None = None,
    wall: WallTimes | None = None,
) -> Trace:
    """The trace of a run of a flow of ``shape`` that finished ``results``.

    Args:
        shape: The flow's shape.
        results: The agents that finished, in any order.
        decisions: The run's decisions.
        failures: The agents that failed: they ran, so they are in the steps
            (those cancelled or never run are not).
        models: Each agent's model by name, to report instead of the model that
            answered (a replay runs every agent on its cassette).
        wall: The run's and its agents' wall times; None for a replay (no times).
    """
    ran = {r.agent_name: r for r in results}
    started = set(ran) | {f.agent_name for f in failures if not f.cancelled}
    steps = _steps(shape.steps, started)
    placed = {key for step in steps for key in step}
    rest = sorted(key for key in started if key not in placed)
    if rest:  # agents the shape does not name (a plan's): one last step
        steps.append(rest)
    order = [key for step in steps for key in step if key in ran]
    agents = {key: _agent_trace(ran[key], ran, models, wall) for key in order}
    chosen = sorted(
        (DecisionTrace(kind=d.kind, step=d.step, value=d.value) for d in decisions),
        key=lambda d: (d.step, d.kind),
    )
    return Trace(
        output=_output(shape, ran, decisions),
        steps=steps,
        decisions=chosen,
        agents=agents,
        wall_seconds=_seconds(wall.run if wall else None),
    )


def _seconds(value: float | None) -> float | None:
    """Seconds to the millisecond: a case file shows no clock noise below that."""
    return None if value is None else round(value, 3)


def digest(text: str) -> str:
    """The first 16 hex digits of ``text``'s SHA-256."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def canonical_arguments(arguments: str) -> Any:
    """A tool call's JSON arguments as data (empty text is ``{}``); the raw text if not JSON."""
    try:
        return pydantic_core.from_json(arguments.strip() or "{}")
    except ValueError:
        return arguments


def arguments_key(arguments: str) -> str:
    """A tool call's arguments as canonical JSON text: keys sorted, no spaces."""
    return json.dumps(canonical_arguments(arguments), sort_keys=True, separators=(",", ":"))


def _keys(name: str, ran: Collection[str]) -> list[str]:
    """The keys ``name`` finished under: itself, or its loop iterations in order."""
    if name in ran:
        return [name]
    found = [AgentKey.parse(k) for k in ran]
    return [str(k) for k in sorted((k for k in found if k.base == name), key=_iteration)]


def _iteration(key: AgentKey) -> int:
    return key.iteration or 0


def _steps(steps: Sequence[StepShape], ran: Collection[str]) -> list[list[str]]:
    out: list[list[str]] = []
    for step in steps:
        match step:
            case AgentShape():
                out += [[key] for key in _keys(step.name, ran)]
            case GroupShape():
                members = sorted(key for name in step.names() for key in _keys(name, ran))
                if members:
                    out.append(members)
            case RouteShape():
                if step.router is not None:
                    out += [[key] for key in _keys(step.router, ran)]
                for _, branch in step.branches:
                    out += _steps(branch.steps, ran)
            case LoopShape():
                out += _loop_steps(step, ran)
            case PlanShape():
                out += [[key] for key in _keys(step.planner, ran)]
                planned = sorted(key for name in step.agents for key in _keys(name, ran))
                if planned:
                    out.append(planned)
    return out


def _loop_steps(step: LoopShape, ran: Collection[str]) -> list[list[str]]:
    """A loop's iterations in order, each its body's agents then its judge."""
    out: list[list[str]] = []
    names = step.names()
    rounds = max(
        (_iteration(AgentKey.parse(k)) for k in ran if AgentKey.parse(k).base in names), default=0
    )
    for k in range(1, rounds + 1):
        out += [[f"{name}#{k}"] for name in names if f"{name}#{k}" in ran]
    return out


def _exits(step: StepShape | FlowShape, decisions: Sequence[Decision]) -> list[str]:
    """The names whose outputs end ``step`` (a route: its branch taken)."""
    match step:
        case FlowShape():
            return _exits(step.steps[-1], decisions) if step.steps else []
        case AgentShape():
            return [step.name]
        case GroupShape():
            return [name for member in step.members for name in _exits(member, decisions)]
        case RouteShape():
            taken = [d.value for d in decisions if d.kind == "route" and d.step == step.name]
            branches = dict(step.branches)
            chosen = [branches[t] for t in taken[-1:] if t in branches]
            return [n for branch in chosen or branches.values() for n in _exits(branch, decisions)]
        case LoopShape():
            return _exits(step.body, decisions)
        case PlanShape():
            return list(step.agents)


def _output(shape: FlowShape, ran: Mapping[str, AgentResult], decisions: Sequence[Decision]) -> str:
    last = [_keys(name, ran)[-1:] for name in _exits(shape, decisions)]
    results = [ran[key] for keys in last for key in keys]
    if not results:
        return ""
    if len(results) == 1:
        return results[0].output
    return "\n\n".join(f"## {r.agent_name}\n\n{r.output}" for r in results)


def _calls(result: AgentResult) -> int:
    return len(result.llm_calls) + sum(_calls(d) for d in result.delegations)


def _agent_trace(
    result: AgentResult,
    ran: Mapping[str, AgentResult],
    models: Mapping[str, str] | None,
    wall: WallTimes | None,
) -> AgentTrace:
    messages = unmarked(result.messages)
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    read = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant")
    given = sorted(
        key for key, other in ran.items() if key != result.agent_name and _was_given(other, read)
    )
    base = AgentKey.parse(result.agent_name).base
    return AgentTrace(
        model=(models or {}).get(base, result.model),
        calls=_calls(result),
        prompt_tokens=result.token_usage.prompt_tokens,
        completion_tokens=result.token_usage.completion_tokens,
        cost=result.cost,
        tool_calls=[
            ToolUse(tool=c.tool_name, arguments=canonical_arguments(c.arguments))
            for c in result.tool_calls
        ],
        prompt_digest=digest(request_key(messages[:first])),
        given=given,
        wall_seconds=_seconds(wall.agents.get(result.agent_name) if wall else None),
    )


def _was_given(other: AgentResult, read: str) -> bool:
    texts = {other.output.strip(), other.summary.strip()}
    return any(len(t) >= _MIN_GIVEN and t in read for t in texts)
