"""Agent2Agent (A2A), on the official a2a-sdk: serving flows, and using remote agents.

:func:`to_a2a` serves a flow as an A2A agent; :class:`RemoteAgent` makes a
remote A2A agent a flow step or a tool.

Needs the extra: ``pip install 'swarmcore[a2a]'``. Importing ``swarmcore`` does
not import this package (nor the SDK).
"""

from swarmcore.a2a._client import RemoteAgent, RemoteAgentError
from swarmcore.a2a._server import to_a2a

__all__ = ["RemoteAgent", "RemoteAgentError", "to_a2a"]
