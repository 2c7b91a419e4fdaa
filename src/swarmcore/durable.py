"""The step seam: where an engine that makes runs durable records each model and tool call.

The agent loop makes every model call and every tool call through :func:`step`.
In process, a step is just the call. An engine that makes runs durable (the
DBOS engine) installs a :data:`StepRunner` for the agent's run with
:func:`recording`: each call is then checkpointed as it finishes, and after a
crash the run is replayed from the checkpoints, so at most the call that was in
flight is made again. The runner must see the calls of one agent run in the
same order on replay, which holds: one agent's calls are made in a fixed order
(a reply's tool calls start in call order).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["StepRunner", "idempotency_key", "recording", "step", "with_key"]

T = TypeVar("T")

StepRunner = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""Runs one named call (``"model"``, ``"tool:<name>"``) and returns what it returned."""

_runner: contextvars.ContextVar[StepRunner | None] = contextvars.ContextVar(
    "swarmcore_step_runner", default=None
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


@contextlib.contextmanager
def recording(runner: StepRunner) -> Generator[None]:
    """Make the calls of the code inside (and the tasks it starts) through ``runner``."""
    token = _runner.set(runner)
    try:
        yield
    finally:
        _runner.reset(token)
