"""Quickstart: a research flow, researcher >> (analyst | critic) >> writer.

Run it with ``uv run python examples/quickstart.py``. With no provider key set
it runs on swarmcore's offline model and says so; set OPENAI_API_KEY (and
optionally SWARMCORE_MODEL, any LiteLLM model string) to run it for real.
"""

from __future__ import annotations

import asyncio
import sys

from swarmcore import Agent, Swarm
from swarmcore.console import ConsoleProgress
from swarmcore.testing import choose_model

NOTES = {
    "caffeine": "Caffeine blocks adenosine receptors; effects peak 30-60 minutes after intake.",
    "sleep": "Caffeine within six hours of bedtime measurably shortens total sleep time.",
    "heart": "Moderate coffee intake (3-4 cups a day) is not linked to higher heart risk.",
    "tea": "Tea has about half the caffeine of coffee per cup and adds L-theanine.",
}


def search_notes(query: str, limit: int = 3) -> list[str]:
    """Search the team's research notes for lines about a topic.

    Args:
        query: Words to look for, e.g. "caffeine sleep".
        limit: The most notes to return.
    """
    words = {w.lower() for w in query.split()}
    hits = [
        text for key, text in NOTES.items() if key in words or words & set(text.lower().split())
    ]
    return hits[:limit] or ["No notes match; try a broader query."]


def build_flow(model: str) -> Swarm:
    researcher = Agent(
        "researcher",
        "You gather facts. Use search_notes, then list the relevant facts.",
        model=model,
        tools=[search_notes],
    )
    analyst = Agent("analyst", "You weigh the evidence the researcher found.", model=model)
    critic = Agent("critic", "You point out gaps and weak evidence in the research.", model=model)
    writer = Agent(
        "writer", "You write a short, balanced answer for a general reader.", model=model
    )
    return Swarm(researcher >> (analyst | critic) >> writer, context_mode="pull")


async def main(task: str) -> None:
    model, notice = choose_model()
    print(notice)
    swarm = build_flow(model)
    # Live progress on stderr (a tree in a terminal, plain lines otherwise),
    # ending with the usage and cost table.
    swarm.add_hook(ConsoleProgress(verbosity="summary"))
    result = await swarm.run(task)
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Is coffee good for you?"))
