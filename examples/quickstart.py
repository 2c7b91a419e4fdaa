"""Quickstart: a research flow, researcher >> (analyst | critic) >> writer.

Run it with ``uv run python examples/quickstart.py``. With no provider key set
it runs on swarmcore's offline model and says so; set OPENAI_API_KEY (and
optionally SWARMCORE_MODEL, any LiteLLM model string) to run it for real.

The flow itself (its agents, and the ``search_notes`` tool they use) lives in
``swarmcore.demo``; ``swarmcore demo`` runs the same flow from the command line.
The run is stored in the default run store, so ``swarmcore ui`` then shows it
in a browser: the flow as a picture, a timeline of every agent and call.
"""

from __future__ import annotations

import asyncio
import sys

from swarmcore import Swarm
from swarmcore.console import ConsoleProgress
from swarmcore.demo import DEFAULT_TASK, build_flow
from swarmcore.store import default_store_path
from swarmcore.testing import choose_model


async def main(task: str) -> None:
    model, notice = choose_model()
    print(notice)
    demo = build_flow(model)
    # Record the run where `swarmcore ui` and `swarmcore runs` look ($SWARMCORE_STORE,
    # else ~/.local/share/swarmcore/runs.db), with live progress on stderr (a tree
    # in a terminal, plain lines otherwise) ending with the usage and cost table.
    store = default_store_path()
    progress = ConsoleProgress(verbosity="summary")
    swarm = Swarm(demo.flow, context_mode=demo.context_mode, store=store, hooks=[progress])
    result = await swarm.run(task)
    print(result.output)
    print(
        f"\nrun {result.run_id[:12]} stored in {store}; see it with: swarmcore ui", file=sys.stderr
    )


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or DEFAULT_TASK))
