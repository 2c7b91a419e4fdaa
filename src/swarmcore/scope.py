"""What one run carries down to every call it makes: the run scope, passed as an argument.

An engine makes one :class:`RunScope` per run (the budget meter, the event bus,
the step runner, approval decider and cross-process limits of a durable
engine, the MCP connections, the model limits and the backend choice) and hands
it down the walk, to each agent's loop, to ``llm.complete`` and to the
backend's attempt. Nothing of a run travels beside the calls: two runs in one
task group keep their own budgets, events and connections.

Events nest by the scope too: :meth:`RunScope.within` gives the scope of a span
(a step, an agent, a model or tool call), whose events are its children.

User code reaches the run in one place only: a tool, while it runs, finds the
call in progress with :func:`current_call` (how ``agent.as_tool`` and an A2A
agent's tool find the agent run that called them, and how
:func:`swarmcore.durable.idempotency_key` finds its key). That is the one
context variable a run sets.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from swarmcore import events
from swarmcore._settings import AgentDefaults
from swarmcore.events import EventBus

if TYPE_CHECKING:
    from swarmcore._tools import Approval, Approver
    from swarmcore.llm._budget import Meter
    from swarmcore.llm._limits import Limiter, SharedLimits
    from swarmcore.llm._types import CallSpec, Message
    from swarmcore.llm.backends import Backend
    from swarmcore.results import AgentResult, ElicitationRecord

__all__ = [
    "CallInProgress",
    "Caller",
    "ConnectionScope",
    "Decider",
    "RunOptions",
    "RunScope",
    "StepRunner",
    "current_call",
]

T = TypeVar("T")

StepRunner = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""Runs one named call (``"model"``, ``"tool:<name>"``) and returns what it returned."""

Decider = Callable[[Any], Awaitable[Any]]
"""Waits for a decision on an :class:`~swarmcore.ApprovalRequest`; returns an ``Approval``."""


class _Closes(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closes)


class ConnectionScope:
    """The MCP connections of one run: opened on first use, closed together at the end."""

    def __init__(self) -> None:
        self._connections: dict[Hashable, _Closes] = {}
        self._opening: dict[Hashable, asyncio.Lock] = {}

    async def get(self, server: Hashable, open: Callable[[], Awaitable[C]]) -> C:
        """The run's connection to ``server``, opened with ``open()`` the first time.

        Args:
            server: The server (one key per connection).
            open: Opens a new connection to it.

        Returns:
            The connection every agent of the run shares.
        """
        lock = self._opening.setdefault(server, asyncio.Lock())
        async with lock:  # parallel agents needing one server open it once
            if server not in self._connections:
                self._connections[server] = await open()
            return cast("C", self._connections[server])  # one server, one kind of connection

    async def close(self) -> None:
        """Close every connection of the run (errors while closing are dropped)."""
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class RunScope:
    """What one run carries down to every call it makes (see the module's docs).

    A field left None is what a run without it gets: no budget, nobody
    listening, calls made directly, approvals only by callback, no MCP
    connections of the run's own, the process's limits and backend choice.
    """

    meter: Meter | None = None
    """The run's budget: checked before each model call, charged after."""
    bus: EventBus | None = None
    """Who listens to the run's events; None: nobody, and nothing is published."""
    span_id: int | None = None
    """The span the events published through this scope nest under."""
    runner: StepRunner | None = None
    """A durable engine's step runner: each model and tool call recorded as a step."""
    decider: Decider | None = None
    """A durable engine's wait for an approval decision, when the run has no callback."""
    connections: ConnectionScope | None = None
    """The run's MCP connections, closed when it ends."""
    limiter: Callable[[str], Limiter | None] | None = None
    """The model limits' lookup; None: the process's (``limit_model``)."""
    shared_limits: SharedLimits | None = None
    """Where model limits are held across processes (a durable engine's); None: per process."""
    backend: Callable[[CallSpec, str], Backend] | None = None
    """Which backend makes a call's attempts at a model; None: the process's choice."""

    @property
    def text_deltas(self) -> bool:
        """Whether model calls should stream and publish ``TextDelta`` events."""
        return self.bus is not None and self.bus.text_deltas

    def span(
        self,
        start: Callable[..., events.Event],
        finish: Callable[..., events.Event],
        *,
        started: dict[str, Any] | None = None,
        **fields: Any,
    ) -> events.Span:
        """A span nested in this scope's (see :func:`swarmcore.events.span`).

        Inert when nobody listens. Pass it to :meth:`within` for the scope of
        what runs inside it.
        """
        return events.span(
            start, finish, bus=self.bus, parent=self.span_id, started=started, **fields
        )

    def within(self, span: events.Span) -> RunScope:
        """The scope of the calls made inside ``span``: their events nest under it."""
        if span.bus is None:
            return self
        return dataclasses.replace(self, span_id=span.ids["span_id"])

    def emit(self, kind: Callable[..., events.Event], **fields: object) -> None:
        """Publish a point event ``kind(**fields)`` in this scope's span, if anyone listens."""
        if self.bus is not None:
            events.publish(self.bus, self.span_id, kind, **fields)

    async def step(self, name: str, call: Callable[[], Awaitable[T]]) -> T:
        """Make ``call`` as the step ``name``: recorded when the engine records steps."""
        if self.runner is None:
            return await call()
        result: T = await self.runner(name, call)
        return result

    def recording(self, runner: StepRunner, decider: Decider | None = None) -> RunScope:
        """This scope, with each call made through ``runner`` (and approvals waited by ``decider``).

        Args:
            runner: Makes each named call and records it.
            decider: Waits for approval decisions when the run has no approval callback.
        """
        return dataclasses.replace(self, runner=runner, decider=decider)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a caller passes to one agent run beyond the task: shared with its delegates.

    A Swarm makes one for all the agent runs of a flow run.
    """

    defaults: AgentDefaults = field(default_factory=AgentDefaults)
    variables: Mapping[str, object] = field(default_factory=dict[str, object])
    approve: Approver | None = None
    history: Sequence[Message] | None = None
    chain: tuple[str, ...] = ()
    """Agent names from the outermost caller down to this run (delegation depth)."""
    spent: list[AgentResult] | None = None
    """Where a delegated run that fails leaves its partial result (what it spent)."""


class Caller(Protocol):
    """The agent run whose tool is in progress, as the tool sees it."""

    @property
    def agent_name(self) -> str:
        """The calling agent's name."""
        ...

    @property
    def chain(self) -> tuple[str, ...]:
        """Agent names from the outermost caller down to this run."""
        ...

    @property
    def options(self) -> RunOptions:
        """The run's options, for a delegate's own."""
        ...

    def delegated(self, position: int, result: AgentResult) -> None:
        """Count ``result`` (a delegate's run) in this run's, at tool call ``position``."""
        ...


@dataclass(frozen=True, slots=True)
class CallInProgress:
    """The tool call (or recorded step) running now: what user code may read of its run."""

    scope: RunScope = field(default_factory=RunScope)
    """The run's scope, nested in the call's span."""
    caller: Caller | None = None
    """The agent run whose tool this is; None outside an agent's tool call."""
    position: int = 0
    """The call's place in its agent's run, so delegations keep call order."""
    key: str | None = None
    """The recorded step's idempotency key (under a durable engine)."""
    call_id: str = ""
    """The provider's ``tool_call_id`` of the call; empty outside an agent's tool call."""
    elicitations: list[ElicitationRecord] | None = None
    """Where an MCP tool leaves the questions its server asked during the call (the
    call's record takes them); None outside an agent's tool call."""
    answered: Mapping[str, Approval] = field(default_factory=dict[str, "Approval"])
    """Decisions already made on the call's questions (by ``ApprovalRequest.call_id``),
    when a durable engine makes the call again after waiting for them."""
    task_id: str | None = None
    """A task the server already made for this call (an MCP tool's), to follow rather
    than call the tool again: how a durable engine resumes it."""


_call: contextvars.ContextVar[CallInProgress | None] = contextvars.ContextVar(
    "swarmcore_call", default=None
)


def current_call() -> CallInProgress | None:
    """The tool call in progress in this task (and the run it belongs to), or None.

    A tool reads its run here: ``agent.as_tool`` finds its caller, an MCP
    server the run's connections, :func:`swarmcore.durable.idempotency_key`
    its key.
    """
    return _call.get()


async def in_call(call: CallInProgress, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with ``call`` as the call in progress (for it and the tasks it starts)."""
    token = _call.set(call)
    try:
        return await work()
    finally:
        _call.reset(token)
