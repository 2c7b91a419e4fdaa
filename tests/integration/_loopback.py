"""Serve a test MCP server over streamable HTTP on 127.0.0.1, printing its port first.

The MCP test servers run as scripts (``python _mcp_..._server.py http``): the test
reads the port from their first line of output (``tests.helpers.script_server``).
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn


def serve(app: Any) -> None:
    """Serve the ASGI ``app`` on a free port of 127.0.0.1 until the process is stopped."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
