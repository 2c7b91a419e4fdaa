"""Flows the A2A command tests serve: offline, so no key or network is needed."""

from __future__ import annotations

from swarmcore import Agent
from swarmcore.testing import offline_model

model = offline_model()
flow = Agent("summarizer", "Summarize the task in a sentence.", model=model) >> Agent(
    "critic", "Say what the summary misses.", model=model
)
