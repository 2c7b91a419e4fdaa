"""A small streamable-HTTP MCP server for tests: ``python _mcp_http_server.py TOKEN``.

It listens on a free port of 127.0.0.1 and prints that port as its first line
of output. Every HTTP request must carry ``Authorization: Bearer TOKEN``
(others get 401); the ``authorization`` tool returns the header it was called
with, so a test can see what reached the server.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("web", log_level="ERROR")
_seen: list[str] = []


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool(structured_output=False)
def authorization() -> str:
    """The Authorization header of the request that called this tool."""
    return _seen[-1] if _seen else "none"


class RequireBearer:
    """ASGI middleware: 401 unless the request carries the expected bearer token."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"")
            if given != self.expected:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong token"})
                return
            _seen.append(given.decode())
        await self.app(scope, receive, send)


def main() -> None:
    token = sys.argv[1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    app = RequireBearer(server.streamable_http_app(), token)
    config = uvicorn.Config(app, log_level="error", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
