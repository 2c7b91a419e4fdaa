"""The step seam: where an engine that makes runs durable records each model and tool call.

The agent loop makes every model call and every tool call through :func:`step`.
In process, a step is just the call. An engine that makes runs durable
installs a :data:`StepRunner` for the agent's run with
:func:`recording`: each call is then checkpointed as it finishes, and after a
crash the run is replayed from the checkpoints, so at most the call that was in
flight is made again. The runner must see the calls of one agent run in the
same order on replay, which holds: one agent's calls are made in a fixed order
(a reply's tool calls start in call order, after its approvals, asked one by one).

The engine may also install a :data:`Decider`: a tool that requires approval in
a run with no approval callback then waits for a person's decision through it
(durably: the wait survives the worker), instead of failing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["Decider", "StepRunner", "decider", "idempotency_key", "recording", "step", "with_key"]

T = TypeVar("T")

StepRunner = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""Runs one named call (``"model"``, ``"tool:<name>"``) and returns what it returned."""

Decider = Callable[[Any], Awaitable[Any]]
"""Waits for a decision on an :class:`~swarmcore.ApprovalRequest`; returns an ``Approval``."""

_runner: contextvars.ContextVar[StepRunner | None] = contextvars.ContextVar(
    "swarmcore_step_runner", default=None
)
_decider: contextvars.ContextVar[Decider | None] = contextvars.ContextVar(
    "swarmcore_decider", default=None
)
_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "swarmcore_idempotency_key", default=None
)


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
    return _key.get()


async def with_key(key: str, call: Callable[[], Awaitable[T]]) -> T:
    """Make ``call`` with :func:`idempotency_key` returning ``key`` (for step runners)."""
    token = _key.set(key)
    try:
        return await call()
    finally:
        _key.reset(token)


async def step(name: str, call: Callable[[], Awaitable[T]]) -> T:
    """Make ``call`` as the step ``name``: recorded when an engine records steps."""
    runner = _runner.get()
    if runner is None:
        return await call()
    result: T = await runner(name, call)
    return result


def decider() -> Decider | None:
    """The engine's durable wait for an approval decision, or None (in process)."""
    return _decider.get()


@contextlib.contextmanager
def recording(runner: StepRunner, decider: Decider | None = None) -> Generator[None]:
    """Make the calls of the code inside (and the tasks it starts) through ``runner``.

    Args:
        runner: Makes each named call and records it.
        decider: Waits for approval decisions when the run has no approval callback.
    """
    token = _runner.set(runner)
    decides = _decider.set(decider)
    try:
        yield
    finally:
        _decider.reset(decides)
        _runner.reset(token)
