"""Make the example suite: run the flow on a few tasks and turn each stored run into a case.

    uv run python examples/evals/record.py [DIR]

Writes ``DIR/*.json`` (by default ``suite/`` beside this file: what is committed;
swarmcore's own prompt text is part of every request, so record it again after a
change to it). The same in three commands per run::

    uv run swarmcore run examples/evals/flows.py:flow "Is green tea healthy?" --store runs.db
    uv run swarmcore eval add RUN_ID --store runs.db --suite examples/evals/suite \\
        --target examples/evals/flows.py:flow --name green-tea

Then check the current code against it, offline::

    uv run swarmcore eval run examples/evals/flows.py:flow --suite examples/evals/suite
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from flows import flow  # noqa: E402 -- the flow beside this script

from swarmcore import Swarm  # noqa: E402
from swarmcore.evals import case_from_run  # noqa: E402

TASKS = {
    "green-tea": "Is green tea healthy?",
    "standing-desks": "Do standing desks help?",
    "cold-showers": "Are cold showers worth it?",
}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "suite"
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "runs.db"
        swarm = Swarm(flow, store=store)
        for name, task in TASKS.items():
            result = swarm.run_sync(task)
            path = case_from_run(store, result.run_id, flow=flow, name=name).save(out)
            print(f"{path}: {task}")


if __name__ == "__main__":
    main()
