"""The step seam: where an engine that makes runs durable records each model and tool call.

The agent loop makes every model call and every tool call as a step of the
run's :class:`~swarmcore.scope.RunScope` (``scope.step``). In process, a step
is just the call. An engine that makes runs durable gives the agent's
run a scope with a :data:`StepRunner` (``scope.recording(runner)``):
each call is then checkpointed as it finishes, and after a crash the run is
replayed from the checkpoints, so at most the call that was in flight is made
again. The runner must see the calls of one agent run in the same order on
replay, which holds: one agent's calls are made in a fixed order (a reply's
tool calls start in call order, after its approvals, asked one by one).

The engine may also give the scope a :data:`Decider`: a tool that requires
approval in a run with no approval callback then waits for a person's
decision through it (durably: the wait survives the worker), instead of failing.
So does an MCP server's question asked during a call: the recorded call stops
(:class:`~swarmcore._tools.AnswerNeeded`), the decision is waited for outside it,
and the call is made again with the answer ready. A call its server answers with
a task stops once the task exists (:class:`~swarmcore._tools.TaskPending`), and
is followed in a recorded call of its own. A reply's calls that go on like this
go on one at a time in call order, after each made its first attempt, so a
replay sees their steps in the same order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TypeVar

from swarmcore.scope import CallInProgress, Decider, StepRunner, current_call, in_call

__all__ = ["Decider", "StepRunner", "idempotency_key", "with_key"]

T = TypeVar("T")


def idempotency_key() -> str | None:
    """The key of the recorded call in progress, for a tool to pass to a side-effecting service.

    Under a durable engine a tool call is recorded when it finishes, so a
    crash while it runs makes it run again on recovery. The key is the same
    both times (``<run>/<agent>/<attempt>/<step>``): a payment or an email
    service that deduplicates by it acts once. Outside a durable engine (or
    outside a tool call) it is None.

    ```python
    from swarmcore.durable import idempotency_key

    def send_invoice(customer: str) -> str:
        \"\"\"Send the invoice.\"\"\"
        return billing.send(customer, idempotency_key=idempotency_key())
    ```
    """
    call = current_call()
    return None if call is None else call.key


async def with_key(key: str, call: Callable[[], Awaitable[T]]) -> T:
    """Make ``call`` with :func:`idempotency_key` returning ``key`` (for step runners)."""
    running = current_call() or CallInProgress()
    return await in_call(dataclasses.replace(running, key=key), call)
