"""A flow for the command line.

    uv run swarmcore graph examples/flows.py:flow
    uv run swarmcore run examples/flows.py:flow "Is green tea healthy?"

It runs on $SWARMCORE_MODEL when that is set, else on the offline model.
"""

from __future__ import annotations

import os

from swarmcore import Agent
from swarmcore.testing import offline_model

MODEL = os.environ.get("SWARMCORE_MODEL") or offline_model()

researcher = Agent("researcher", "You gather the key facts about the task.", model=MODEL)
analyst = Agent("analyst", "You weigh the evidence the researcher found.", model=MODEL)
critic = Agent("critic", "You point out gaps and weak evidence.", model=MODEL)
writer = Agent("writer", "You write a short, balanced answer.", model=MODEL)

flow = researcher >> (analyst | critic) >> writer
