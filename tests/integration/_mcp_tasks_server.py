"""An MCP server that answers ``crunch`` with a task (the tasks extension), for tests.

``python _mcp_tasks_server.py stdio`` serves over stdio; ``... http`` listens on a
free port of 127.0.0.1 and prints it as its first line. Built with the official
SDK's ``MCPServer`` and its extension API: the SDK has no tasks server, so this
one keeps its tasks in memory and serves ``tasks/get`` and ``tasks/cancel`` as
the extension's specification says. ``crunch(seconds)`` returns a task at once,
says "half way" in its status message, and completes after ``seconds`` with a
structured result. Every start, completion and cancellation appends a line to
the file named by ``MCP_TEST_RUNS`` (when set), so a test counts them on the
server's side.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
import uuid
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp_types import RequestParams

TASKS: dict[str, dict[str, Any]] = {}
JOBS: dict[str, asyncio.Task[None]] = {}


class TaskParams(RequestParams):
    task_id: str


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def note(line: str) -> None:
    runs = os.environ.get("MCP_TEST_RUNS")
    if runs:
        with open(runs, "a", encoding="utf-8") as f:
            f.write(line + "\n")


async def crunching(task: dict[str, Any], seconds: float) -> None:
    await asyncio.sleep(seconds / 2)
    task.update(statusMessage="half way", lastUpdatedAt=now())
    await asyncio.sleep(seconds / 2)
    total = int(seconds * 1000)
    task.update(
        status="completed",
        statusMessage="",
        lastUpdatedAt=now(),
        result={
            "content": [{"type": "text", "text": f"crunched {total}"}],
            "structuredContent": {"crunched": total},
            "isError": False,
        },
    )
    note(f"done {task['taskId']}")


class Tasks(Extension):
    identifier = "io.modelcontextprotocol/tasks"

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name != "crunch":
            return await call_next(ctx)
        task_id = uuid.uuid4().hex
        task: dict[str, Any] = {
            "taskId": task_id,
            "status": "working",
            "createdAt": now(),
            "lastUpdatedAt": now(),
            "ttlMs": None,
            "pollIntervalMs": 50,
        }
        TASKS[task_id] = task
        note(f"start {task_id}")
        seconds = float((params.arguments or {}).get("seconds", 0.2))
        JOBS[task_id] = asyncio.get_running_loop().create_task(crunching(task, seconds))
        return {"resultType": "task", **task}

    def methods(self) -> list[MethodBinding]:
        async def get(ctx: Any, params: TaskParams) -> dict[str, Any]:
            return {"resultType": "complete", **TASKS[params.task_id]}

        async def cancel(ctx: Any, params: TaskParams) -> dict[str, Any]:
            JOBS[params.task_id].cancel()
            TASKS[params.task_id].update(status="cancelled", lastUpdatedAt=now())
            note(f"cancelled {params.task_id}")
            return {"resultType": "complete"}

        return [
            MethodBinding("tasks/get", TaskParams, get),
            MethodBinding("tasks/cancel", TaskParams, cancel),
        ]


server = MCPServer("works", log_level="ERROR", extensions=[Tasks()])


@server.tool()
def crunch(seconds: float) -> dict[str, int]:
    """Crunch numbers for a while (runs as a task)."""
    raise AssertionError("crunch runs as a task")


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio")
        return
    from _loopback import serve  # beside this script, which runs as one

    serve(server.streamable_http_app())


if __name__ == "__main__":
    main()
