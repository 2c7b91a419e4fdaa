"""One typed event stream for everything that watches a run.

The console, OpenTelemetry tracing, logging, ``Swarm.stream`` and user hooks
all consume these events; none of them is a special case inside the loop. The
loop only calls :func:`emit`, which costs one context-variable read when nobody
is listening.

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
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore._event_types import AgentFinished as AgentFinished
    from swarmcore._event_types import AgentStarted as AgentStarted
    from swarmcore._event_types import Event as Event
    from swarmcore._event_types import LoopFinished as LoopFinished
    from swarmcore._event_types import LoopIteration as LoopIteration
    from swarmcore._event_types import ModelCallFinished as ModelCallFinished
    from swarmcore._event_types import ModelCallStarted as ModelCallStarted
    from swarmcore._event_types import ModelFallback as ModelFallback
    from swarmcore._event_types import PlanMade as PlanMade
    from swarmcore._event_types import RetryScheduled as RetryScheduled
    from swarmcore._event_types import RouteChosen as RouteChosen
    from swarmcore._event_types import RunFinished as RunFinished
    from swarmcore._event_types import RunStarted as RunStarted
    from swarmcore._event_types import StepFinished as StepFinished
    from swarmcore._event_types import StepStarted as StepStarted
    from swarmcore._event_types import TextDelta as TextDelta
    from swarmcore._event_types import ToolCallFinished as ToolCallFinished
    from swarmcore._event_types import ToolCallStarted as ToolCallStarted

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
    "log_event",
]

logger = logging.getLogger("swarmcore.events")
run_logger = logging.getLogger("swarmcore.run")
"""Where :func:`log_event` writes: INFO for runs and agents, DEBUG for calls."""

_ids = itertools.count(1)


def new_span_id() -> int:
    """A process-unique span id."""
    return next(_ids)


def __getattr__(name: str) -> object:
    # The event classes load on first use: an unwatched run never creates one. Every
    # other exported name is defined here, so only an event class can miss.
    if name in __all__:
        from swarmcore import _event_types

        value = getattr(_event_types, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'swarmcore.events' has no attribute {name!r}")


Hook: TypeAlias = Callable[["Event"], "Awaitable[None] | None"]
"""A callback for events: sync, or async (awaited before the run returns)."""


class EventBus:
    """Delivers one run's events to its subscribers.

    A subscriber is called with each event of the types it asked for (all
    events when none). A sync subscriber runs inline, in order; an async one
    is scheduled and awaited by :meth:`drain` before the run returns. A
    subscriber that raises is logged and never breaks the run.
    """

    __slots__ = ("_pending", "_subscribers", "run_id", "text_deltas")

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


class Span:
    """One start/finish pair of events: its ids, its clock, and the error that ended it.

    ```python
    span = Span(bus, parent_id)
    bus.publish(AgentStarted(**span.ids, ...))
    try:
        with span.inside():
            result = await work()
    finally:
        bus.publish(AgentFinished(**span.ids, duration_seconds=span.elapsed, error=span.error))
    ```
    """

    __slots__ = ("bus", "error", "ids", "started")

    def __init__(self, bus: EventBus, parent_id: int | None) -> None:
        self.bus = bus
        self.ids: SpanIds = {"run_id": bus.run_id, "span_id": new_span_id(), "parent_id": parent_id}
        self.started = time.perf_counter()
        self.error: BaseException | None = None

    @classmethod
    def child(cls) -> Span | None:
        """A span inside the current one, or None when nobody listens (the unobserved path)."""
        scope = _scope.get()
        return None if scope is None else cls(scope.bus, scope.span_id)

    @property
    def elapsed(self) -> float:
        """Seconds since the span was made."""
        return time.perf_counter() - self.started

    @contextmanager
    def inside(self) -> Generator[None]:
        """Run the block as this span: its events nest under it; its exception goes to ``error``."""
        token = _scope.set(_Scope(self.bus, self.ids["span_id"]))
        try:
            yield
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            _scope.reset(token)


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
    # From their module: the module __getattr__ that loads the event classes on first
    # use serves `events.Event`, never a global name read inside this module.
    from swarmcore._event_types import Event

    for kind in types:
        if not (isinstance(kind, type) and issubclass(kind, Event)):
            raise UserError(
                f"on() takes event classes from swarmcore.events (e.g. ToolCallFinished), "
                f"got {kind!r}."
            )
    return types  # pyright: ignore[reportReturnType] -- checked just above


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
    from swarmcore._event_types import (  # see check_types
        AgentFinished,
        AgentStarted,
        ModelCallFinished,
        ModelFallback,
        RetryScheduled,
        RunFinished,
        RunStarted,
        ToolCallFinished,
    )

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
