"""A small MCP server over stdio, for tests: run as ``python _mcp_stdio_server.py``.

Every start appends this process's pid to the file named by the environment
variable ``MCP_TEST_PID_FILE`` (when set), so a test can check that each
server process it caused is gone afterwards. With ``MCP_TEST_MAX_STARTS=n`` as
well, a start that finds n pids in the file already exits at once (status 2)
instead of serving: a server that cannot be restarted.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("calc", log_level="ERROR")


class Point(BaseModel):
    x: int
    y: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Send the text back."""
    return text


@server.tool()
def point(x: int) -> Point:
    """A point on the line y = 2x."""
    return Point(x=x, y=2 * x)


@server.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails with ``reason``."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(structured_output=False)
def block(seconds: float) -> str:
    """Block this server (a synchronous sleep, which no cancellation interrupts), then say so."""
    time.sleep(seconds)
    return f"blocked {seconds}"


@server.tool(structured_output=False)
async def hog(seconds: float) -> str:
    """Hold this server's event loop (a synchronous sleep in an async tool): nothing else runs."""
    time.sleep(seconds)  # noqa: ASYNC251 - blocking the loop is this tool's point
    return f"hogged {seconds}"


@server.tool(structured_output=False)
def crash() -> str:
    """Kill this server process at once."""
    os._exit(1)


@server.tool(structured_output=False)
def pid() -> str:
    """This server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        max_starts = int(os.environ.get("MCP_TEST_MAX_STARTS", "0"))
        if max_starts and os.path.exists(pid_file):
            with open(pid_file, encoding="utf-8") as f:
                if len(f.read().split()) >= max_starts:
                    raise SystemExit(2)
        with open(pid_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    server.run("stdio")
    gc.freeze()  # exits at once when stdin closes, not after seconds of collection
