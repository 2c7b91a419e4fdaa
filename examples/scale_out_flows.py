"""The flow examples/scale_out.py serves from two worker processes.

A worker loads it by path (``swarmcore worker examples/scale_out_flows.py:flow``)
and the enqueueing process imports it, so both have the same flow version: the
same agents, models, instructions and tools. The model is swarmcore's offline
model with 0.2 s of latency per call, a stand-in for a provider.
"""

from __future__ import annotations

from swarmcore import Agent
from swarmcore.testing import OfflineModel

model = OfflineModel(latency=0.2, name="scale-out", record=False)


def lookup(topic: str) -> str:
    """Look up our notes on a topic (read-only, so safe to call again after a crash)."""
    return f"Notes on {topic}: moderate amounts are fine for most adults."


researcher = Agent("researcher", "Find the facts.", model=model.model, tools=[lookup])
analyst = Agent("analyst", "Weigh the evidence.", model=model.model)
critic = Agent("critic", "Find the gaps.", model=model.model)
writer = Agent("writer", "Write a short answer.", model=model.model)
flow = researcher >> (analyst | critic) >> writer
