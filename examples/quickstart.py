"""Quickstart: a research flow, researcher >> (analyst | critic) >> writer.

Run it with ``uv run python examples/quickstart.py``. With no provider key set
it runs on swarmcore's offline model and says so; set OPENAI_API_KEY (and
optionally SWARMCORE_MODEL, any LiteLLM model string) to run it for real.

The flow itself (its agents, and the ``search_notes`` tool they use) lives in
``swarmcore.demo``; ``swarmcore demo`` runs the same flow from the command line.
"""

from __future__ import annotations

import asyncio
import sys

from swarmcore.console import ConsoleProgress
from swarmcore.demo import DEFAULT_TASK, build_flow
from swarmcore.testing import choose_model


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
    asyncio.run(main(" ".join(sys.argv[1:]) or DEFAULT_TASK))
