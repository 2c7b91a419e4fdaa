"""The run's MCP connections: opened on first use, shared by its agents, closed when it ends.

A run (``Swarm.run``, or ``agent.run`` alone) opens a ``ConnectionScope``
for its duration and carries it in its :class:`~swarmcore.scope.RunScope`; a
server finds it through the call in progress (listing its tools, or a call).
"""

from __future__ import annotations

from swarmcore.scope import ConnectionScope, current_call


def current_scope() -> ConnectionScope | None:
    """The MCP connections of the run in this context, if any."""
    call = current_call()
    return None if call is None else call.scope.connections
