"""A small streamable-HTTP MCP server for tests: ``python _mcp_http_server.py TOKEN``.

It listens on a free port of 127.0.0.1 and prints that port as its first line
of output. Every HTTP request must carry ``Authorization: Bearer TOKEN``
(others get 401); the ``authorization`` tool returns the header it was called
with, so a test can see what reached the server, and the ``refuse`` tool fails
with an error that quotes it.

With ``--echo-rejected`` after the token, a request with a wrong token gets a
JSON-RPC error that quotes the ``Authorization`` header it carried, as a
careless server might: for tests that such an echo never leaves swarmcore.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

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


@server.tool(structured_output=False)
def refuse() -> str:
    """Always fails, quoting the Authorization header it was called with (as careless tools do)."""
    raise ToolError(f"{_seen[-1] if _seen else 'no credential'} may not call this tool")


class RequireBearer:
    """ASGI middleware: 401 unless the request carries the expected bearer token."""

    def __init__(self, app: Any, token: str, *, echo_rejected: bool = False) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.echo_rejected = echo_rejected

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"")
            if given != self.expected and self.echo_rejected:
                await _echo_rejection(receive, send, given.decode())
                return
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


async def _echo_rejection(receive: Any, send: Any, given: str) -> None:
    """Answer the JSON-RPC request with an error that quotes the credential it carried."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request_id = json.loads(body or b"{}").get("id", 0)
    error = {"code": -32001, "message": f"credential {given!r} is not allowed on this server"}
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def main() -> None:
    token = sys.argv[1]
    echo_rejected = "--echo-rejected" in sys.argv[2:]
    from _loopback import serve  # beside this script, which runs as one

    serve(RequireBearer(server.streamable_http_app(), token, echo_rejected=echo_rejected))


if __name__ == "__main__":
    main()
