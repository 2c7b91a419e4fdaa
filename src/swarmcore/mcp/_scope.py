"""The run's MCP connections: opened on first use, shared by its agents, closed when it ends.

A run (``Swarm.run``, or ``agent.run`` alone) enters a :class:`ConnectionScope`
for its duration; servers look the scope up in the current context.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Hashable

from swarmcore.mcp._connection import Connection


class ConnectionScope:
    """The MCP connections of one run: opened on first use, closed together at the end."""

    def __init__(self) -> None:
        self._connections: dict[Hashable, Connection] = {}
        self._opening: dict[Hashable, asyncio.Lock] = {}

    async def get(self, server: Hashable, open: Callable[[], Awaitable[Connection]]) -> Connection:
        """The run's connection to ``server``, opened with ``open()`` the first time.

        Args:
            server: The server (one key per connection).
            open: Opens a new connection to it.

        Returns:
            The connection every agent of the run shares.
        """
        lock = self._opening.setdefault(server, asyncio.Lock())
        async with lock:  # parallel agents needing one server open it once
            if server not in self._connections:
                self._connections[server] = await open()
            return self._connections[server]

    async def close(self) -> None:
        """Close every connection of the run (errors while closing are dropped)."""
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


_scope: contextvars.ContextVar[ConnectionScope | None] = contextvars.ContextVar(
    "swarmcore_mcp_scope", default=None
)


def current_scope() -> ConnectionScope | None:
    """The MCP connections of the run in this context, if any."""
    return _scope.get()


def enter_scope(scope: ConnectionScope) -> contextvars.Token[ConnectionScope | None]:
    """Make ``scope`` the run's connection scope; undo with :func:`exit_scope`.

    Args:
        scope: The run's connections.

    Returns:
        The token :func:`exit_scope` takes.
    """
    return _scope.set(scope)


def exit_scope(token: contextvars.Token[ConnectionScope | None]) -> None:
    """Undo :func:`enter_scope`.

    Args:
        token: What :func:`enter_scope` returned.
    """
    _scope.reset(token)
