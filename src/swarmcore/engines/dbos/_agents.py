"""The DBOS engine's agents: each agent run is a DBOS workflow of its own.

Why agents are workflows of their own, started outside the run's workflow: a
workflow's operations are keyed by the order they happen in, and the branches
of a parallel group happen in whatever order the model answers. Each agent's
own calls happen in a fixed order, so each agent gets its own workflow, named
by where it is in the flow (``<run>/<agent>/<attempt>``), whose model calls
and tool calls are DBOS steps (through :mod:`swarmcore.durable`).

An agent workflow runs the step its run's walk registered in this process
(:class:`AgentWorkflows`). One that DBOS recovered in a process where no walk
reaches it ends as :class:`AgentMisplaced` after ``agent_wait``, and the walk
runs the agent again under the next id.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

from dbos import DBOS, DBOSClient, SetWorkflowID, WorkflowHandleAsync

from swarmcore import durable
from swarmcore._tools import Approval
from swarmcore._walk import AgentStep, run_in_process
from swarmcore.engines._results import plain, reparsed
from swarmcore.engines.dbos._approvals import await_decision
from swarmcore.engines.dbos._resume import agent_workflow_id
from swarmcore.errors import AgentError, UserError
from swarmcore.models import AgentResult

T = TypeVar("T")

AGENT_WORKFLOW = "swarmcore.agent"
RUN_WORKFLOW = "swarmcore.run"
"""The run workflow's name (the workflow itself is in the package's ``__init__``)."""

_served: AgentWorkflows | None = None
"""This process's agent workflows (one engine per process, so one of these)."""


class AgentMisplaced(AgentError):
    """An agent's workflow ran in a process that does not walk its run; it is run again."""


@dataclass(slots=True)
class _Pending:
    """An agent step waiting for its workflow, with the swarmcore context it runs in."""

    step: AgentStep
    carried: tuple[tuple[contextvars.ContextVar[Any], Any], ...]
    ran: bool = False
    """Whether its workflow ran here (its model calls charged the budget as they replayed)."""


class AgentWorkflows:
    """Runs the agent steps of the runs walked in this process, each as a DBOS workflow.

    Args:
        worker_id: This process's DBOS executor id (for messages).
        agent_wait: Seconds a recovered agent workflow waits for its run's walk.
        approval_timeout: Seconds a call waits for an approval decision.
        client: The engine's DBOS client, for looking up a resumed run's records.
        handing_back: Set while the engine shuts down: a wait cancelled then leaves
            its workflow PENDING (see :func:`outcome`).
    """

    def __init__(
        self,
        worker_id: str,
        agent_wait: float,
        approval_timeout: float,
        client: Callable[[], Awaitable[DBOSClient]],
        handing_back: threading.Event,
    ) -> None:
        global _served
        self.worker_id = worker_id
        self.agent_wait = agent_wait
        self.approval_timeout = approval_timeout
        self.handing_back = handing_back
        self._client = client
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._generations: dict[str, int] = {}
        """How many times each run walked here was resumed (see engines/dbos/_resume.py)."""
        _served = self

    @contextlib.contextmanager
    def walking(self, run_id: str, generation: int) -> Generator[None]:
        """While run ``run_id``'s walk goes on here: its agents belong to ``generation``."""
        self._generations[run_id] = generation
        try:
            yield
        finally:
            self._generations.pop(run_id, None)

    async def run(self, step: AgentStep) -> AgentResult:
        """Run ``step`` as the agent workflow ``<run>/<agent>/<attempt>`` and wait for it.

        A workflow that another process took and ended as misplaced is run
        again here under the next id (``.../<attempt>.2``, ...), the same ids
        in the same order whenever the run is walked again.
        """
        base = f"{step.run_id}/{step.agent.name}/{step.attempt}"
        if resumed := self._generations.get(step.run_id, 0):  # finished agents keep their record
            base = await agent_workflow_id(await self._client(), base, resumed)
        for tries in range(1, 6):
            try:
                return await self._run_as(step, base if tries == 1 else f"{base}.{tries}")
            except AgentMisplaced:
                if tries == 5:
                    raise
        raise AssertionError("unreachable: the last try returns or raises")

    async def _run_as(self, step: AgentStep, workflow_id: str) -> AgentResult:
        carried = tuple(
            (var, value)
            for var, value in contextvars.copy_context().items()
            if var.name.startswith("swarmcore")
        )
        pending = _Pending(step, carried)
        with self._lock:
            self._pending[workflow_id] = pending
        try:
            # An empty context: started from the run's workflow it would be its child,
            # recorded in the run's (timing-dependent) order of operations.
            handle = await asyncio.get_running_loop().create_task(
                _start_agent(workflow_id), context=contextvars.Context()
            )
            result = reparsed(await outcome(handle, self.handing_back), step.agent)
            meter = step.scope.meter
            if not pending.ran and meter is not None:
                # Finished before (another worker, or before a crash): DBOS handed back its
                # result without running it, so the run's budget is charged with it here.
                meter.charge(result.token_usage.total_tokens, result.cost)
            return result
        finally:
            with self._lock:
                self._pending.pop(workflow_id, None)

    async def step_for(self, workflow_id: str) -> _Pending:
        """The step an agent workflow runs: registered by its run's walk, now or soon."""
        deadline = time.monotonic() + self.agent_wait
        while True:
            with self._lock:
                pending = self._pending.get(workflow_id)
            if pending is not None:
                return pending
            if time.monotonic() > deadline:
                raise AgentMisplaced(
                    f"Agent workflow {workflow_id} was recovered in worker {self.worker_id!r}, "
                    f"which does not walk its run (no step within {self.agent_wait:g} s); the "
                    "run's walk runs the agent again.",
                    agent_name=workflow_id.split("/")[1],
                    retryable=True,
                )
            await asyncio.sleep(0.05)


def _current() -> AgentWorkflows:
    if _served is None:
        raise UserError("No DBOSEngine in this process: Swarm(flow, engine=DBOSEngine(url)).")
    return _served


async def _start_agent(workflow_id: str) -> WorkflowHandleAsync[AgentResult]:
    with SetWorkflowID(workflow_id):
        return await DBOS.start_workflow_async(_agent_workflow, workflow_id)


async def outcome(handle: WorkflowHandleAsync[T], handing_back: threading.Event) -> T:
    """The workflow's result; cancelling the wait cancels the workflow, here and in DBOS.

    Except while the process hands its work back (``handing_back`` set: the
    engine shuts down, a worker stops, and DBOS cancels every task it runs):
    then the workflow is left PENDING, for a restart with this worker id or an
    adopter to finish, and a cancellation is never recorded as its outcome.
    """
    try:
        return await handle.get_result()
    except asyncio.CancelledError:
        if handing_back.is_set():
            raise
        await asyncio.shield(DBOS.cancel_workflow_async(handle.get_workflow_id()))
        task: object = getattr(handle, "task", None)  # running in this process: stop it now
        if isinstance(task, asyncio.Future):
            running = cast("asyncio.Future[object]", task)
            running.cancel()
            await asyncio.shield(asyncio.gather(running, return_exceptions=True))
        raise


async def _dbos_step(name: str, call: Callable[[], Awaitable[Any]]) -> Any:
    async def made() -> Any:  # a coroutine function, so DBOS awaits it and records its value
        # The same key on a replay after a crash: the step's place in its agent's workflow.
        return await durable.with_key(f"{DBOS.workflow_id}/{DBOS.step_id}", call)

    return await DBOS.run_step_async({"name": name}, made)


@DBOS.workflow(name=AGENT_WORKFLOW)
async def _agent_workflow(workflow_id: str) -> AgentResult:
    """One agent run: its model calls and tool calls are steps."""
    pending = await _current().step_for(workflow_id)
    pending.ran = True
    for var, value in pending.carried:
        var.set(value)
    step = pending.step
    recorded = replace(step, scope=step.scope.recording(_dbos_step, decider=_decide))
    return plain(await run_in_process(recorded))


async def _decide(request: Any) -> Approval:
    """A run with no approval callback waits for a decision (``swarm.decide``), durably."""
    return await await_decision(request, wait=_current().approval_timeout)
