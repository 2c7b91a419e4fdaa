"""Agent2Agent (A2A), on the official a2a-sdk: serve a flow as an A2A agent
(:func:`to_a2a`), and use remote A2A agents as flow steps and tools (:class:`RemoteAgent`).

Needs the extra: ``pip install 'swarmcore[a2a]'``. Importing ``swarmcore`` does
not import this package (nor the SDK).
"""

from swarmcore.a2a.client import RemoteAgent, RemoteAgentError
from swarmcore.a2a.server import to_a2a

__all__ = ["RemoteAgent", "RemoteAgentError", "to_a2a"]
