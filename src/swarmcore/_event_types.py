"""The events of a run: one frozen dataclass per thing worth watching.

:mod:`swarmcore.events` publishes them (and re-exports every one); this module
is only their definitions, so each is a plain value a hook can keep.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from swarmcore._flow import FlowShape
    from swarmcore.results import AgentResult, SwarmResult, TokenUsage


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event.

    Attributes:
        run_id: The run this event belongs to.
        span_id: The span the event opens or closes (start/finish events); a
            fresh id for point events (retries, fallbacks, text deltas).
        parent_id: The enclosing span (for a point event, the span it happened
            in); None for the run itself.
        timestamp: Wall-clock time (``time.time()``) of the event.
    """

    run_id: str
    span_id: int
    parent_id: int | None
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    """A Swarm run began."""

    task: str
    flow: str
    """The flow in the ``>>``/``|`` language."""
    agents: tuple[str, ...]
    context_mode: str
    context_budget: int | None = None
    """Auto mode's tokens of context per agent; None under pull and push."""
    resumed: bool = False
    """True when a stored run is being resumed (its finished agents are not run again)."""
    shape: FlowShape | None = None
    """The flow's shape: its steps, groups and control steps, as every consumer reads them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(Event):
    """A Swarm run ended: with ``result``, or with ``error`` (``error.partial`` holds the rest)."""

    duration_seconds: float
    result: SwarmResult | None = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStarted(Event):
    """A step began: one agent, or a parallel group."""

    step: str
    """The step in the ``>>``/``|`` language."""
    agents: tuple[str, ...]
    parallel: bool
    policy: str | None = None
    """A parallel group's policy: ``all``, ``best_effort`` or ``quorum(k)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepFinished(Event):
    """A step ended."""

    step: str
    agents: tuple[str, ...]
    duration_seconds: float
    failed: tuple[str, ...] = ()
    """Agents of the step that did not finish (failed, cancelled or skipped)."""
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStarted(Event):
    """An agent began a run (``attempt`` > 1 for a step-level retry)."""

    agent_name: str
    model: str
    attempt: int = 1
    remote: str | None = None
    """The URL of the remote agent this step calls (an A2A ``RemoteAgent``); None
    for an agent that runs in this process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentFinished(Event):
    """An agent's run ended: with ``result``, or with ``error``."""

    agent_name: str
    model: str
    duration_seconds: float
    attempt: int = 1
    result: AgentResult | None = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted(Event):
    """An agent called its model (one turn of its loop)."""

    agent_name: str
    model: str
    turn: int
    """1 for the first model call of the agent's run."""
    messages: int
    """Messages sent."""
    tools: int
    """Tools offered."""
    provider: str | None = None
    """The provider the call goes to, as LiteLLM names it (``openai``, ``gemini``...);
    None when unknown. Worked out only while someone listens."""
    provider_model: str | None = None
    """The model's name at the provider: without the routing prefix (``gpt-4o-mini``
    for ``openai/gpt-4o-mini``)."""
    endpoint: str | None = None
    """The base URL the call goes to, when the settings say (or the provider has one
    default); None otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFinished(Event):
    """A model call ended (retries and fallbacks included)."""

    agent_name: str
    model: str
    """The model that answered (a fallback, if used); the requested one on failure."""
    turn: int
    duration_seconds: float
    usage: TokenUsage | None = None
    cost: float | None = None
    """USD from LiteLLM's price map; None when unpriced or failed."""
    finish_reason: str | None = None
    attempts: int = 1
    tool_calls: int = 0
    error: BaseException | None = None
    response_model: str | None = None
    """The model the provider's reply names (often a dated version), when it names one."""
    api: str | None = None
    """The OpenAI API the reply came through on the native backend: ``chat_completions``
    or ``responses`` (``api="responses"``); None on LiteLLM, or when the call failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(Event):
    """A tool call began."""

    agent_name: str
    tool_name: str
    call_id: str
    arguments: str
    server: str | None = None
    """The MCP server that runs the tool; None for a Python tool."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished(Event):
    """A tool call ended; ``error`` is the text the model was sent when it failed."""

    agent_name: str
    tool_name: str
    call_id: str
    arguments: str
    duration_seconds: float
    result_chars: int
    error: str | None = None
    truncated_from: int | None = None
    server: str | None = None
    """The MCP server that ran the tool; None for a Python tool."""
    approval: str | None = None
    """``allowed``, ``denied`` or ``edited`` for a tool that requires approval; else None."""
    result: str | None = None
    """The text the model was sent: the tool's result (secrets masked, truncated as the
    model saw it), or ``error``; None when the call was cancelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationRequested(Event):
    """An MCP server asked a question while its tool ran: a form to fill or a URL to open.

    A URL request is for a person to open (to log in, pay, consent): show it.
    """

    agent_name: str
    tool_name: str
    call_id: str
    server: str
    mode: Literal["form", "url"]
    message: str
    url: str | None = None
    """For a URL request: the page to open."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationAnswered(Event):
    """A server's question was answered (see ``ToolCallRecord.elicitations``)."""

    agent_name: str
    tool_name: str
    call_id: str
    server: str
    action: Literal["accept", "decline", "cancel"]
    answered_by: Literal["elicit", "approve", "decide", "nobody"]
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPTaskStatus(Event):
    """An MCP tool call runs as a task on its server, and the task's status changed.

    Published when the server makes the task (``working``), at each change of its
    status or message while it is followed, and when it ends (``completed``,
    ``failed``, ``cancelled``).
    """

    agent_name: str
    tool_name: str
    call_id: str
    server: str
    task_id: str
    status: str
    """``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``."""
    message: str = ""
    """The server's ``statusMessage``, if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryScheduled(Event):
    """A transient failure will be retried after ``delay_seconds``."""

    agent_name: str
    scope: Literal["model_call", "agent"]
    """``model_call``: the LLM seam's retry; ``agent``: a step-level re-run."""
    attempt: int
    """The attempt that failed (1 for the first)."""
    delay_seconds: float
    error: str
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFallback(Event):
    """A model's retries ran out; the next fallback model is tried."""

    agent_name: str
    from_model: str
    to_model: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteChosen(Event):
    """A route chose its branch."""

    route: str
    """The route step's name."""
    branch: str
    by: str
    """``predicate``, or the router agent's name."""
    reason: str = ""
    """The router agent's reason, when it gave one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopIteration(Event):
    """A loop began an iteration; its agents run as ``name#iteration``."""

    loop: str
    iteration: int
    max_iterations: int
    agents: tuple[str, ...]
    """The iteration's agent names (``writer#2``...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopFinished(Event):
    """A loop ended."""

    loop: str
    iterations: int
    reason: str
    """``until`` (the predicate said done), ``judge`` (the judge said done) or
    ``max_iterations``."""
    feedback: str = ""
    """The judge's last feedback."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanMade(Event):
    """A planner's flow was parsed and validated, and is about to run."""

    plan: str
    """The plan step's name."""
    planner: str
    expression: str
    """The flow, in the ``>>``/``|`` language."""
    attempts: int
    """Answers the planner gave (more than 1 when errors went back to it)."""
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(Event):
    """A piece of model text as it streams (``Swarm.stream(..., text=True)``)."""

    agent_name: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(Event):
    """A piece of a reasoning model's summary of its reasoning, as it streams.

    Sent by the Responses API (``api="responses"``) when the agent asks for a
    summary (``model_settings={"reasoning": {"summary": "auto"}}``) and streams
    (``Swarm.stream(..., text=True)``). Show it or ignore it: it is not part of
    the answer, and the model's reasoning itself stays encrypted.
    """

    agent_name: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta(Event):
    """A piece of a tool call's arguments as they stream (``Swarm.stream(..., text=True)``).

    Each piece names its call in full, so a consumer needs no state to show it;
    a call's pieces, joined, are the arguments its ``ToolCallStarted`` carries,
    and they all come before it.
    """

    agent_name: str
    index: int
    """The call's place among the reply's tool calls (0 for the first)."""
    call_id: str
    name: str
    """The tool's name."""
    arguments: str
    """The piece of the arguments' JSON text that arrived."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteStatus(Event):
    """A remote A2A agent's task changed state (``working``, ``completed``...)."""

    agent_name: str
    url: str
    state: str
    """The A2A task state: ``submitted``, ``working``, ``completed``, ``failed``,
    ``input-required``..."""
    message: str = ""
    """The text the remote sent with the state, if any."""
