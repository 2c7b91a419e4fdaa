"""The in-process engine: a run's walk here, with its scope (budget, MCP connections, events)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from swarmcore import events
from swarmcore._walk import AgentRunner, AgentStep, FlowSetup, Run, Walk, run_in_process
from swarmcore.agent import Agent
from swarmcore.engines._base import Budget, Engine, Subscriber
from swarmcore.events import EventBus, Hook
from swarmcore.llm._limits import SharedLimits
from swarmcore.scope import ConnectionScope, RunScope

if TYPE_CHECKING:
    from swarmcore.models import AgentResult, SwarmResult


class LocalEngine(Engine):
    """Runs flows in this process; each agent through ``runner`` (the walk's seam).

    Args:
        runner: How one agent of a flow runs; :func:`~swarmcore._walk.run_in_process`
            by default.
        shared_limits: Where the model limits of its runs are held across
            processes (a durable engine's, while it is up); None: per process.
    """

    def __init__(
        self,
        runner: AgentRunner = run_in_process,
        shared_limits: Callable[[], SharedLimits | None] | None = None,
    ) -> None:
        self.runner = runner
        self.shared_limits = shared_limits

    async def execute(
        self,
        setup: FlowSetup,
        run: Run,
        subscribers: Sequence[Subscriber],
        *,
        limits: Budget,
        text_deltas: bool = False,
        checkpoint: Callable[[], None] | None = None,
    ) -> SwarmResult:
        """Walk ``run`` with its scope: its budget meter, MCP connections and event bus.

        Args:
            setup: What every run of the Swarm shares.
            run: This run's state.
            subscribers: Who receives the run's events.
            limits: What the run may spend.
            text_deltas: Stream model text as events.
            checkpoint: Called before each agent starts; what it raises stops
                the run there (the run store's failed write, say).

        Raises:
            SwarmError: Whatever stopped the run; ``error.partial`` holds what finished.
        """
        # A meter of its own, or none: an outer run's budget does not reach into this one.
        shared = self.shared_limits() if self.shared_limits is not None else None
        scope = RunScope(meter=limits.meter(), shared_limits=shared)
        agents = [a for a in setup.flow.agents if isinstance(a, Agent)]
        if any(a.toolsets for a in agents):  # MCP servers stay open for the whole run
            scope = replace(scope, connections=ConnectionScope())
        try:
            return await self._observed(setup, run, scope, subscribers, text_deltas, checkpoint)
        finally:
            if scope.connections is not None:
                await scope.connections.close()

    async def _observed(
        self,
        setup: FlowSetup,
        run: Run,
        scope: RunScope,
        subscribers: Sequence[Subscriber],
        text_deltas: bool,
        checkpoint: Callable[[], None] | None,
    ) -> SwarmResult:
        """The walk, inside the run's span when anything listens."""
        runner = self.runner if checkpoint is None else _checked(self.runner, checkpoint)
        if not subscribers:
            return await Walk(setup, run, runner, scope).result()
        bus = EventBus(run.run_id, subscribers, text_deltas=text_deltas)
        scope = replace(scope, bus=bus)
        try:
            with scope.span(
                events.RunStarted,
                events.RunFinished,
                started={
                    "task": run.task,
                    "flow": setup.flow.expression(),
                    "agents": setup.flow.names,
                    "context_mode": setup.mode.name,
                    "context_budget": setup.mode.budget,
                    "resumed": run.resumed,
                    "shape": setup.flow.shape(),
                },
            ) as span:
                result = await Walk(setup, run, runner, scope.within(span)).result()
                span.set(result=result)
            return result
        finally:
            await bus.drain()


def _checked(runner: AgentRunner, checkpoint: Callable[[], None]) -> AgentRunner:
    """``runner``, calling ``checkpoint`` before each agent: raising there stops the run."""

    async def run_checked(step: AgentStep) -> AgentResult:
        checkpoint()
        return await runner(step)

    return run_checked


async def stream_events(
    start: Callable[[Hook], Awaitable[SwarmResult]],
) -> AsyncGenerator[events.Event]:
    """Run ``start(hook)`` and yield every event its hook receives, as it happens.

    The last event is RunFinished; the run's failure, if any, is raised after it.
    Stopping the iteration early cancels the run.
    """
    queue: asyncio.Queue[events.Event] = asyncio.Queue()
    runner = asyncio.ensure_future(start(queue.put_nowait))
    try:
        while True:
            if queue.empty() and runner.done():
                break
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, runner}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                continue
            event = getter.result()
            yield event
            if isinstance(event, events.RunFinished):
                break
        await runner  # the result is in RunFinished; a failure is raised here
    finally:
        if not runner.done():
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
