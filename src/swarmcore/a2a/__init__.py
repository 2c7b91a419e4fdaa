"""Agent2Agent (A2A): serve a flow as an A2A agent, on the official ``a2a-sdk``.

Needs the ``[a2a]`` extra: ``pip install 'swarmcore[a2a]'``.
"""

from __future__ import annotations

from swarmcore.a2a.server import to_a2a

__all__ = ["to_a2a"]
