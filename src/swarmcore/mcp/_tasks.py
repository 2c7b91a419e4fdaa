"""Tool calls a server answers with a task (the ``io.modelcontextprotocol/tasks`` extension).

A server that speaks the extension may answer ``tools/call`` with a task handle
(``resultType: "task"``) instead of a result, and the result comes later. The
``mcp`` SDK (2.3) carries the extension's result claim and its wire types but no
client for it, so this module is that client, on the SDK's public extension API
(``ClientExtension``, ``ResultClaim``) and its session's request API:

* the client declares the extension, so servers may answer with a task;
* a task is followed by polling ``tasks/get`` at the server's ``pollIntervalMs``
  (bounded), until it completes (its result is the call's), fails or is cancelled;
* a question the task asks (``input_required``) is answered like any elicitation,
  once per key, through ``tasks/update``;
* a call stopped while it waits (the tool's timeout, the run cancelled) sends
  ``tasks/cancel``;
* each change is published as :class:`~swarmcore.events.MCPTaskStatus`.

Under a durable engine the handle is recorded first: the recorded call stops
with :class:`~swarmcore._tools.TaskPending` once the server made the task, and
the agent's loop makes the call again as "follow that task", so a worker killed
while it waits resumes polling the same task instead of calling the tool again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from swarmcore import events
from swarmcore._tools import ToolReportedError
from swarmcore.mcp._elicit import Asker
from swarmcore.scope import CallInProgress

logger = logging.getLogger("swarmcore.mcp")

EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension's identifier."""

_POLL_MIN, _POLL_MAX, _POLL_DEFAULT = 0.01, 5.0, 0.5
"""Bounds (seconds) on the polling interval a server suggests, and the one used without."""

_CANCEL_WAIT = 5.0
"""Seconds given to ``tasks/cancel`` when a call is stopped (it must not hold up the stop)."""


@dataclass(slots=True)
class TaskFollower:
    """One tool call's dealings with the task its server made for it.

    Args:
        server: The server's name.
        tool_name: The tool, as the model knows it.
        call: The tool call in progress; None outside a run.
        asker: Answers the questions the task asks.
    """

    server: str
    tool_name: str
    call: CallInProgress | None
    asker: Asker
    pending: str | None = None
    """Under a durable engine: the task made for the call, to follow in a call of its own."""
    _seen: tuple[str, str] = ("", "")
    _answered: set[str] = field(default_factory=set[str])

    @property
    def records_first(self) -> bool:
        """Whether the task's handle is recorded before it is followed (a durable engine)."""
        return self.call is not None and self.call.scope.runner is not None

    async def follow(self, session: Any, task_id: str, first: Any | None = None) -> Any:
        """Poll the task until it ends; its ``CallToolResult``.

        Args:
            session: The SDK's ``ClientSession``.
            task_id: The task.
            first: The task as the server created it, if this call created it.

        Raises:
            ToolReportedError: The task failed or was cancelled by the server.
        """
        from mcp_types import CallToolResult

        task = first if first is not None else await _get(session, task_id)
        try:
            while True:
                self._publish(task)
                match task.status:
                    case "completed":
                        return CallToolResult.model_validate(task.result or {})
                    case "failed":
                        error: dict[str, Any] = dict(task.error or {})
                        raise ToolReportedError(
                            f"Tool {self.tool_name!r}: the task {task_id} on MCP server "
                            f"{self.server!r} failed: {error.get('message') or task.status_message}"
                        )
                    case "cancelled":
                        why = f": {task.status_message}" if task.status_message else ""
                        raise ToolReportedError(
                            f"Tool {self.tool_name!r}: MCP server {self.server!r} cancelled the "
                            f"task {task_id}{why}"
                        )
                    case "input_required":
                        await self._answer(session, task_id, task.input_requests or {})
                    case _:
                        pass
                await asyncio.sleep(_interval(task.poll_interval_ms))
                task = await _get(session, task_id)
        except asyncio.CancelledError:  # the tool's timeout, or the run cancelled
            await _cancel(session, task_id)
            raise

    async def _answer(self, session: Any, task_id: str, requests: dict[str, Any]) -> None:
        """Answer each new question of the task once (``tasks/update``)."""
        from mcp_types import ElicitRequest

        responses: dict[str, Any] = {}
        for key, request in requests.items():
            if key in self._answered:
                continue
            self._answered.add(key)
            if isinstance(request, ElicitRequest):
                responses[key] = await self.asker.answer(request.params)
            else:  # sampling and roots: swarmcore offers neither
                logger.warning("MCP task %s asked for %s; not answered", task_id, request.method)
        responses = {k: v for k, v in responses.items() if not _is_error(v)}
        if responses:
            wire = _wire()
            params = wire.update_params(task_id=task_id, input_responses=responses)
            await session.send_request(wire.update(params=params), wire.ack)

    def _publish(self, task: Any) -> None:
        seen = (str(task.status), str(task.status_message or ""))
        if seen == self._seen or self.call is None:
            return
        self._seen = seen
        caller = self.call.caller
        self.call.scope.emit(
            events.MCPTaskStatus,
            agent_name="" if caller is None else caller.agent_name,
            tool_name=self.tool_name,
            call_id=self.call.call_id,
            server=self.server,
            task_id=str(task.task_id),
            status=seen[0],
            message=self.asker.redact(seen[1]),
        )


def _interval(milliseconds: int | None) -> float:
    if milliseconds is None:
        return _POLL_DEFAULT
    return min(max(milliseconds / 1000, _POLL_MIN), _POLL_MAX)


def _is_error(value: Any) -> bool:
    from mcp_types import ErrorData

    return isinstance(value, ErrorData)


async def _get(session: Any, task_id: str) -> Any:
    wire = _wire()
    return await session.send_request(
        wire.get(params=wire.task_params(task_id=task_id)), wire.detailed
    )


async def _cancel(session: Any, task_id: str) -> None:
    """Tell the server to stop the task, briefly: the caller is stopping."""

    async def send() -> None:
        wire = _wire()
        request = wire.cancel(params=wire.task_params(task_id=task_id))
        await session.send_request(request, wire.ack)

    with contextlib.suppress(Exception):
        async with asyncio.timeout(_CANCEL_WAIT):
            await asyncio.shield(send())


# --- the wire shapes, built on the SDK's models at first use (the SDK is optional) --------


@dataclass(frozen=True, slots=True)
class _Wire:
    created: Any
    detailed: Any
    task_params: Any
    update_params: Any
    get: Any
    cancel: Any
    update: Any
    ack: Any


@functools.cache
def _wire() -> _Wire:
    from mcp_types import InputResponse, Request, RequestParams, Result

    class Task(Result):
        task_id: str
        status: str
        status_message: str | None = None
        created_at: str | None = None
        last_updated_at: str | None = None
        ttl_ms: int | None = None
        poll_interval_ms: int | None = None

    class CreatedTask(Task):
        result_type: Literal["task"] = "task"

    class DetailedTask(Task):
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        input_requests: dict[str, Any] | None = None

    class TaskParams(RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, InputResponse]

    # name_param: the task id goes in the Mcp-Name header over streamable HTTP (the spec's rule).
    class GetTask(Request[TaskParams, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        params: TaskParams
        name_param = "taskId"

    class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        params: TaskParams
        name_param = "taskId"

    class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
        method: Literal["tasks/update"] = "tasks/update"
        params: UpdateParams
        name_param = "taskId"

    return _Wire(
        CreatedTask, DetailedTask, TaskParams, UpdateParams, GetTask, CancelTask, UpdateTask, Result
    )


def extension(follower: Callable[[], TaskFollower | None]) -> Any:
    """The SDK client extension that declares tasks and follows the ones servers make.

    Args:
        follower: The call in progress's :class:`TaskFollower` (None outside one).

    Returns:
        A ``ClientExtension`` for ``Client(extensions=[...])``.
    """
    from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
    from mcp_types import CallToolResult, TextContent

    async def resolve(created: Any, context: ClaimContext) -> CallToolResult:
        following = follower()
        if following is None:  # made outside any call of ours: nobody to wait for it
            await _cancel(context.session, created.task_id)
            text = "a task was made outside a tool call"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        if following.records_first:  # a durable engine records the handle, then follows it
            following.pending = str(created.task_id)
            text = f"task {created.task_id} is followed in a call of its own"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await following.follow(context.session, str(created.task_id), first=created)

    class Tasks(ClientExtension):
        identifier: ClassVar[str] = EXTENSION  # pyright: ignore[reportIncompatibleVariableOverride] -- a constant

        def claims(self) -> Sequence[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=_wire().created, resolve=resolve)]

    return Tasks()
