"""What the A2A server holds, bounded: the size of a request, and how long finished tasks stay.

* **Request size.** :class:`BodyLimit` refuses a request body over its limit
  with HTTP 413 and a JSON-RPC error (-32600) that names the limit, before the
  body is read whole: at once when ``Content-Length`` declares more, else as
  soon as the bytes received pass it.
* **Retention.** :class:`ExpiringTaskStore` is the SDK's in-memory task store,
  whose finished tasks (completed, failed, canceled, rejected) are dropped a
  set time after they finish; ``GetTask`` then answers task-not-found. The runs
  themselves stay in the Swarm's run store.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


def shown_size(size: int) -> str:
    """A byte count for a message: ``10 MiB``, ``512 KiB``, ``300 bytes``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}" if size % scale else f"{size // scale} {unit}"
    return f"{size} bytes"


class BodyLimit:
    """ASGI middleware: a request body larger than ``limit`` bytes gets a 413 and a JSON-RPC error.

    Args:
        app: The app behind it.
        limit: The most bytes a request body may hold.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app, self._limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self._limit:
            await self._refuse(send)
            return
        body = bytearray()
        message: Message = {"type": "http.request", "body": b"", "more_body": True}
        while message["type"] == "http.request" and message.get("more_body", False):
            message = await receive()
            body.extend(message.get("body", b""))
            if len(body) > self._limit:
                await self._refuse(send)
                return
        if message["type"] != "http.request":  # the client left
            return
        whole: Message = {"type": "http.request", "body": bytes(body), "more_body": False}
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if handed:
                return await receive()
            handed = True
            return whole

        await self._app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        limit = shown_size(self._limit)
        error = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": (
                    f"The request is larger than this agent takes ({limit} at most): send a "
                    "smaller message, or start the agent with a larger limit (swarmcore serve "
                    "--max-request-bytes, to_a2a(max_request_bytes=...))."
                ),
            },
        }
        body = json.dumps(error).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class ExpiringTaskStore(TaskStore):
    """The SDK's in-memory task store, whose finished tasks are dropped ``keep`` seconds later.

    Expired tasks are dropped on the next use of the store (any save, get,
    list or delete), so nothing runs in the background.

    Args:
        keep: Seconds a finished task stays readable.
        clock: Monotonic seconds (a test may pass its own).
    """

    def __init__(self, keep: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._tasks = InMemoryTaskStore()
        self._keep, self._clock = keep, clock
        # task id -> (when it expires, who owns it); in expiry order, as every task keeps as long
        self._expiring: dict[str, tuple[float, ServerCallContext]] = {}

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save ``task``; a finished one starts its time to expire."""
        await self._expire()
        await self._tasks.save(task, context)
        self._expiring.pop(task.id, None)
        if task.status.state in _FINISHED:
            # The owner only (the SDK keys tasks by user): not the request's headers and state.
            owner = ServerCallContext(user=context.user, tenant=context.tenant)
            self._expiring[task.id] = (self._clock() + self._keep, owner)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task, unless it expired."""
        await self._expire()
        return await self._tasks.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks still kept."""
        await self._expire()
        return await self._tasks.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Drop the task."""
        await self._expire()
        self._expiring.pop(task_id, None)
        await self._tasks.delete(task_id, context)

    async def _expire(self) -> None:
        now = self._clock()
        while self._expiring:
            task_id, (at, owner) = next(iter(self._expiring.items()))
            if at > now:
                return
            del self._expiring[task_id]
            await self._tasks.delete(task_id, owner)
