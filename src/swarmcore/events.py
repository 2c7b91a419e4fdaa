"""One typed event stream for everything that watches a run.

The console, OpenTelemetry tracing, logging, the run store, ``Swarm.stream`` and
user hooks all consume these events; none of them is a special case inside the
walk or the agent loop. Code that does something worth watching wraps it in a
:class:`span` (a start/finish pair of events) or publishes a point event, both
through the run's :class:`~swarmcore.scope.RunScope`; with nobody listening
neither publishes anything.

Events form a tree through ``span_id`` / ``parent_id``: a run contains steps, a
step contains agents (and, for a branch, nested steps), an agent contains model
calls and tool calls. The parent is passed down: the scope of what runs inside
a span (``scope.within(span)``) carries its id, so parallel branches are
labelled correctly whatever order they run in. Point events (retries,
fallbacks, text deltas) carry the span they happened in.

```python
from swarmcore.events import ToolCallFinished

@swarm.on(ToolCallFinished)
def log_tool(event: ToolCallFinished) -> None:
    print(event.agent_name, event.tool_name, event.duration_seconds)
```
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeAlias, TypedDict

from swarmcore._event_types import (
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
    RemoteStatus,
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
from swarmcore.errors import UserError

__all__ = [
    "AgentFinished",
    "AgentStarted",
    "ElicitationAnswered",
    "ElicitationRequested",
    "Event",
    "EventBus",
    "Hook",
    "LoopFinished",
    "LoopIteration",
    "MCPTaskStatus",
    "ModelCallFinished",
    "ModelCallStarted",
    "ModelFallback",
    "PlanMade",
    "ReasoningDelta",
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
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "publish",
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


def publish(
    bus: EventBus, parent: int | None, kind: Callable[..., Event], **fields: object
) -> None:
    """Publish a point event ``kind(**fields)`` on ``bus``, inside the span ``parent``."""
    bus.publish(kind(run_id=bus.run_id, span_id=new_span_id(), parent_id=parent, **fields))


class SpanIds(TypedDict):
    """The fields every event of one span shares; unpack them into the event: ``**span.ids``."""

    run_id: str
    span_id: int
    parent_id: int | None


def span(
    start: Callable[..., Event],
    finish: Callable[..., Event],
    *,
    bus: EventBus | None,
    parent: int | None = None,
    started: dict[str, Any] | None = None,
    **fields: Any,
) -> Span:
    """One start/finish pair of events around a block: ``with events.span(...) as s:``.

    Publishes ``start(**fields, **started)`` on entry and ``finish(**fields,
    duration_seconds=..., error=..., **s.outcome)`` on exit, where ``outcome``
    is what the block :meth:`Span.set` (it overrides the defaults). With nobody
    listening (``bus`` None) it publishes nothing. The run's code opens spans
    through its scope (:meth:`swarmcore.scope.RunScope.span`), which passes its
    bus and the span the new one nests in.

    ```python
    with scope.span(AgentStarted, AgentFinished, agent_name=name, model=model) as s:
        result = await work(scope.within(s))
        s.set(result=result)
    ```

    Args:
        start: The event class that opens the span.
        finish: The event class that closes it.
        bus: Where its events go; None: nobody listens, and the span is inert.
        parent: The span it nests in (None: a run's root span).
        started: Fields only the start event takes.
        **fields: Fields both events take.
    """
    if bus is None:
        return _INERT  # nobody listens: one shared object that does nothing
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
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.bus is None or self._finish is None:
            return
        finish: dict[str, Any] = {
            **self._fields,
            "duration_seconds": time.perf_counter() - self._started,
            "error": error,
            **self.outcome,
        }
        self.bus.publish(self._finish(**self.ids, **finish))


_INERT = Span(None, None)
"""The span of a run nobody listens to: publishes nothing, holds nothing."""


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
