"""The demo flow: researcher >> (analyst | critic) >> writer, over a small set of notes.

``swarmcore demo`` and ``examples/quickstart.py`` run it; with no provider key
set they run it on the offline model (see
:func:`swarmcore.testing.choose_model`).

```python
from swarmcore.demo import build_flow

swarm = build_flow("openai/gpt-4o-mini")
result = await swarm.run(DEFAULT_TASK)
```

Importing this module does not import litellm.
"""

from __future__ import annotations

from swarmcore._swarm import Swarm
from swarmcore.agent import Agent

__all__ = ["DEFAULT_TASK", "NOTES", "build_flow", "search_notes"]

DEFAULT_TASK = "Is coffee good for you?"
"""The task the demo runs when none is given."""

NOTES: dict[str, str] = {
    "caffeine": "Caffeine blocks adenosine receptors; effects peak 30-60 minutes after intake.",
    "sleep": "Caffeine within six hours of bedtime measurably shortens total sleep time.",
    "heart": "Moderate coffee intake (3-4 cups a day) is not linked to higher heart risk.",
    "tea": "Tea has about half the caffeine of coffee per cup and adds L-theanine.",
}
"""The team's research notes that :func:`search_notes` searches: topic to note."""


def search_notes(query: str, limit: int = 3) -> list[str]:
    """Search the team's research notes for lines about a topic.

    Args:
        query: Words to look for, e.g. "caffeine sleep".
        limit: The most notes to return.

    Returns:
        The matching notes, or one line saying that none matched.
    """
    words = {w.lower() for w in query.split()}
    hits = [
        text for key, text in NOTES.items() if key in words or words & set(text.lower().split())
    ]
    return hits[:limit] or ["No notes match; try a broader query."]


def build_flow(model: str) -> Swarm:
    """The demo research flow, every agent on ``model``, in pull context mode.

    ``researcher`` gathers facts with :func:`search_notes`; ``analyst`` and
    ``critic`` weigh them in parallel; ``writer`` writes the answer.

    Args:
        model: A LiteLLM model string (or a test model's, e.g. the offline model).

    Returns:
        A Swarm running ``researcher >> (analyst | critic) >> writer``.
    """
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
