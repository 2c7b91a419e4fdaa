"""An MCP server that asks questions mid-call (elicitation), for tests.

``python _mcp_elicit_server.py stdio`` serves over stdio; ``... http`` listens on
a free port of 127.0.0.1 and prints it as its first line. Built with the
official SDK's ``MCPServer``: ``book`` asks for a form (a ``Resolve`` of an
``Elicit``, which the SDK sends the 2026-07-28 way, inside the call's result),
``login`` asks for a URL to be opened (an ``InputRequiredResult`` it builds
itself). Each tool says what came back, the reason a decline carried included.
Every booking made appends a line to the file named by ``MCP_TEST_BOOKINGS``
(when set), so a test can count them on the server's side.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult
from pydantic import BaseModel

server = MCPServer("desk", log_level="ERROR")
REASON_KEY = "dev.swarmcore/reason"


class Guest(BaseModel):
    name: str
    nights: int


def ask_guest() -> Elicit[Guest]:
    return Elicit("Who is the booking for, and for how many nights?", Guest)


def _reason(ctx: Context[Any]) -> str:
    for answer in (ctx.input_responses or {}).values():
        meta = getattr(answer, "meta", None) or {}
        if REASON_KEY in meta:
            return str(meta[REASON_KEY])
    return ""


@server.tool(structured_output=False)
async def book(
    room: str, guest: Annotated[ElicitationResult[Guest], Resolve(ask_guest)], ctx: Context[Any]
) -> str:
    """Book a room; asks who for."""
    if not isinstance(guest, AcceptedElicitation):
        return f"not booked ({guest.action}): {_reason(ctx)}"
    bookings = os.environ.get("MCP_TEST_BOOKINGS")
    if bookings:
        with open(bookings, "a", encoding="utf-8") as f:  # noqa: ASYNC230 - a line, in a test
            f.write(f"{room} {guest.data.name}\n")
    return f"booked {room} for {guest.data.name}, {guest.data.nights} nights"


@server.tool(structured_output=False)
async def login(ctx: Context[Any]) -> str | InputRequiredResult:
    """Log in to the booking system; asks the user to open a page."""
    answer = (ctx.input_responses or {}).get("login")
    if answer is None:
        params = ElicitRequestURLParams(
            message="Log in to the desk", url="https://desk.example/login", elicitation_id="e1"
        )
        return InputRequiredResult(input_requests={"login": ElicitRequest(params=params)})
    return f"login {answer.action}: {_reason(ctx)}"


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio")
        return
    from _loopback import serve  # beside this script, which runs as one

    serve(server.streamable_http_app())


if __name__ == "__main__":
    main()
