"""Agent2Agent (A2A): remote A2A agents as flow steps and tools, on the official a2a-sdk.

Needs the extra: ``pip install 'swarmcore[a2a]'``. Importing ``swarmcore`` does
not import this package (nor the SDK).
"""

from swarmcore.a2a.client import RemoteAgent, RemoteAgentError

__all__ = ["RemoteAgent", "RemoteAgentError"]
