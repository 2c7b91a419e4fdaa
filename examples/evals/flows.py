"""The flow the example suite checks: a researcher with a tool, two reviewers, a route.

    uv run swarmcore run examples/evals/flows.py:flow "Is green tea healthy?"

It runs on $SWARMCORE_MODEL when that is set, else on the offline model (as the
suite in ``suite/`` was recorded).
"""

from __future__ import annotations

import os

from swarmcore import Agent
from swarmcore.control import route
from swarmcore.testing import offline_model

MODEL = os.environ.get("SWARMCORE_MODEL") or offline_model()


def search_notes(topic: str) -> str:
    """Search the team's notes on a topic.

    Args:
        topic: What to look for.
    """
    return f"3 notes mention {topic}: two favourable, one cautious."


def pick_writer(context: object) -> str:
    """The short writer for every task (a route a later change might break)."""
    return "brief"


researcher = Agent(
    "researcher", "You gather the key facts about the task.", model=MODEL, tools=[search_notes]
)
analyst = Agent("analyst", "You weigh the evidence the researcher found.", model=MODEL)
critic = Agent("critic", "You point out gaps and weak evidence.", model=MODEL)
brief = Agent("brief", "You write a three-sentence answer.", model=MODEL)
report = Agent("report", "You write a one-page report.", model=MODEL)

flow = researcher >> (analyst | critic) >> route({"brief": brief, "report": report}, by=pick_writer)
