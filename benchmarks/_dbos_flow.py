"""The flow benchmarks/workers.py measures: a diamond on the offline model with a fixed latency.

Its database and model latency come from the environment, so the benchmark's worker
processes (``swarmcore worker benchmarks/_dbos_flow.py:swarm``) serve the same flow.
"""

from __future__ import annotations

import os

from swarmcore import Agent, Swarm
from swarmcore.engines.dbos import DBOSEngine
from swarmcore.testing import OfflineModel

LATENCY = float(os.environ.get("BENCH_LATENCY", "0.2"))
model = OfflineModel(latency=LATENCY, record=False)
a = Agent("a", "You research.", model=model.model)
b = Agent("b", "You analyse.", model=model.model)
c = Agent("c", "You criticise.", model=model.model)
d = Agent("d", "You write.", model=model.model)
flow = a >> (b | c) >> d
local = Swarm(flow)
swarm = Swarm(flow, engine=DBOSEngine(os.environ["SWARMCORE_DATABASE_URL"]))
