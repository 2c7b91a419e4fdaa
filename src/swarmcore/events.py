"""One typed event stream for everything that watches a run.

The console, OpenTelemetry tracing, logging, the run store, ``Swarm.stream`` and
user hooks all consume these events; none of them is a special case inside the
walk or the agent loop. Code that does something worth watching wraps it in a
:class:`span` (a start/finish pair of events) or calls :func:`emit` (a point
event); both cost one context-variable read when nobody is listening.

Events form a tree through ``span_id`` / ``parent_id``: a run contains steps, a
step contains agents (and, for a branch, nested steps), an agent contains model
calls and tool calls. Parenting rides on ``contextvars``, which asyncio copies
into every task, so parallel branches are labelled correctly without any
bookkeeping in the flow walker. Point events (retries, fallbacks, text deltas)
carry the span they happened in.

```python
from swarmcore.events import ToolCallFinished

@swarm.on(ToolCallFinished)
def log_tool(event: ToolCallFinished) -> None:
    print(event.agent_name, event.tool_name, event.duration_seconds)
```
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict

from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore.flow import FlowShape
    from swarmcore.models import AgentResult, SwarmResult, TokenUsage

__all__ = [
    "AgentFinished",
    "AgentStarted",
    "Event",
    "EventBus",
    "Hook",
    "LoopFinished",
    "LoopIteration",
    "ModelCallFinished",
    "ModelCallStarted",
    "ModelFallback",
    "PlanMade",
    "RemoteStatus",
    "RetryScheduled",
    "RouteChosen",
    "RunFinished",
    "RunStarted",
    "Span",
    "SpanIds",
    "StepFinished",
    "StepStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "emit",
    "span",
]

logger = logging.getLogger("swarmcore.events")

_ids = itertools.count(1)


def new_span_id() -> int:
    """A process-unique span id."""
    return next(_ids)


Hook: TypeAlias = Callable[["Event"], "Awaitable[None] | None"]
"""A callback for events: sync, or async (awaited before the run returns)."""


class EventBus:
    """Delivers one run's events to its subscribers.

    A subscriber is called with each event of the types it asked for (all
    events when none). A sync subscriber runs inline, in order; an async one
    is scheduled and awaited by :meth:`drain` before the run returns. A
    subscriber that raises is logged and never breaks the run.
    """

    def __init__(
        self,
        run_id: str,
        subscribers: Sequence[tuple[Hook, tuple[type[Event], ...]]] = (),
        *,
        text_deltas: bool = False,
    ) -> None:
        self.run_id = run_id
        self.text_deltas = text_deltas
        """Whether model calls should stream and publish ``TextDelta`` events."""
        self._subscribers = list(subscribers)
        self._pending: set[asyncio.Task[None]] = set()

    def subscribe(self, hook: Hook, *types: type[Event]) -> None:
        """Call ``hook`` for events of ``types`` (every event when none are given)."""
        self._subscribers.append((hook, types))

    def publish(self, event: Event) -> None:
        """Hand ``event`` to every interested subscriber."""
        for hook, types in self._subscribers:
            if types and not isinstance(event, types):
                continue
            try:
                outcome = hook(event)
            except Exception:
                logger.exception("event hook %s failed on %s", _name(hook), type(event).__name__)
                continue
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(_guarded(outcome, hook, event))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        """Wait for the async hooks still running."""
        while self._pending:
            await asyncio.gather(*list(self._pending))


async def _guarded(outcome: Awaitable[object], hook: Hook, event: Event) -> None:
    try:
        await outcome
    except Exception:
        logger.exception("event hook %s failed on %s", _name(hook), type(event).__name__)


def _name(hook: object) -> str:
    return getattr(hook, "__qualname__", None) or repr(hook)


@dataclass(frozen=True, slots=True)
class _Scope:
    bus: EventBus
    span_id: int


_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "swarmcore_event_scope", default=None
)


def emit(kind: Callable[..., Event], **fields: object) -> None:
    """Publish a point event ``kind(**fields)`` inside the current span, if anyone listens."""
    scope = _scope.get()
    if scope is not None:
        bus = scope.bus
        bus.publish(
            kind(run_id=bus.run_id, span_id=new_span_id(), parent_id=scope.span_id, **fields)
        )


class SpanIds(TypedDict):
    """The fields every event of one span shares; unpack them into the event: ``**span.ids``."""

    run_id: str
    span_id: int
    parent_id: int | None


def span(
    start: Callable[..., Event],
    finish: Callable[..., Event],
    *,
    bus: EventBus | None = None,
    started: dict[str, Any] | None = None,
    **fields: Any,
) -> Span:
    """One start/finish pair of events around a block: ``with events.span(...) as s:``.

    Publishes ``start(**fields, **started)`` on entry and ``finish(**fields,
    duration_seconds=..., error=..., **s.outcome)`` on exit, where ``outcome``
    is what the block :meth:`Span.set` (it overrides the defaults). Events
    emitted inside the block nest under this span. With nobody listening it
    publishes nothing and costs one context-variable read.

    ```python
    with events.span(AgentStarted, AgentFinished, agent_name=name, model=model) as s:
        result = await work()
        s.set(result=result)
    ```

    Args:
        start: The event class that opens the span.
        finish: The event class that closes it.
        bus: Open a root span on this bus (a run); by default the span nests
            in the current one, and is inert when there is none.
        started: Fields only the start event takes.
        **fields: Fields both events take.
    """
    parent: int | None = None
    if bus is None:
        scope = _scope.get()
        if scope is None:
            return _INERT  # nobody listens: one shared object that does nothing
        bus, parent = scope.bus, scope.span_id
    extra = started or {}
    return Span(bus, parent, lambda ids: start(**ids, **fields, **extra), finish, fields)


class Span:
    """A span that publishes: see :func:`span`."""

    def __init__(
        self,
        bus: EventBus | None,
        parent: int | None,
        opened: Callable[[SpanIds], Event] | None = None,
        finish: Callable[..., Event] | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        self.bus = bus
        self.outcome: dict[str, Any] = {}
        self._finish = finish
        self._fields = fields or {}
        self._token: contextvars.Token[_Scope | None] | None = None
        self._started = time.perf_counter()
        self.ids: SpanIds = {"run_id": "", "span_id": 0, "parent_id": parent}
        if bus is not None and opened is not None:
            self.ids = {"run_id": bus.run_id, "span_id": new_span_id(), "parent_id": parent}
            bus.publish(opened(self.ids))

    def set(self, **outcome: Any) -> None:
        """Fields for the finish event (overriding its defaults)."""
        if self.bus is not None:
            self.outcome.update(outcome)

    def __enter__(self) -> Span:
        if self.bus is not None:
            self._token = _scope.set(_Scope(self.bus, self.ids["span_id"]))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.bus is None or self._finish is None:
            return
        if self._token is not None:
            _scope.reset(self._token)
        finish: dict[str, Any] = {
            **self._fields,
            "duration_seconds": time.perf_counter() - self._started,
            "error": error,
            **self.outcome,
        }
        self.bus.publish(self._finish(**self.ids, **finish))


_INERT = Span(None, None)
"""The span of a run nobody listens to: publishes nothing, holds nothing."""


def listening() -> EventBus | None:
    """The bus of the current span, or None when nobody listens."""
    scope = _scope.get()
    return None if scope is None else scope.bus


def bind(hook: Hook | None, *types: type[Event]) -> tuple[Hook, tuple[type[Event], ...]]:
    """Pair a hook with the event types it wants, checking both."""
    if not callable(hook):
        raise UserError(f"A hook must be a function taking an event, got {hook!r}.")
    return hook, check_types(types)


def check_types(types: tuple[object, ...]) -> tuple[type[Event], ...]:
    """``types`` if every one is an event class.

    Raises:
        UserError: Something else was passed.
    """
    for kind in types:
        if not (isinstance(kind, type) and issubclass(kind, Event)):
            raise UserError(
                f"on() takes event classes from swarmcore.events (e.g. ToolCallFinished), "
                f"got {kind!r}."
            )
    return types  # pyright: ignore[reportReturnType] -- checked just above


# --- the events ----------------------------------------------------------------------


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
class RemoteStatus(Event):
    """A remote A2A agent's task changed state (``working``, ``completed``...)."""

    agent_name: str
    url: str
    state: str
    """The A2A task state: ``submitted``, ``working``, ``completed``, ``failed``,
    ``input-required``..."""
    message: str = ""
    """The text the remote sent with the state, if any."""
