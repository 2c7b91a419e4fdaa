"""An MCP server over stdio whose tools fail quoting the credentials in its environment.

Run as ``python _mcp_env_server.py``; ``connect`` fails naming ``DATABASE_URL`` (a URL
with a password) and ``login`` fails naming ``PGPASSWORD``, as careless servers do.
"""

from __future__ import annotations

import gc
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("db", log_level="ERROR")


@server.tool()
def connect() -> str:
    """Connect to the database."""
    raise ToolError(f"could not connect to {os.environ['DATABASE_URL']}: timeout")


@server.tool()
def login() -> str:
    """Log in to the database."""
    raise ToolError(f"password {os.environ['PGPASSWORD']} was rejected for user app")


if __name__ == "__main__":
    server.run("stdio")
    gc.freeze()  # exits at once when stdin closes, not after seconds of collection
