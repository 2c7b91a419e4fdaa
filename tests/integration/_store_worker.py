"""One of several processes writing runs to one store: ``python _store_worker.py DB DIR N RUNS``.

Warms up (imports LiteLLM) without a store, writes ``DIR/ready-N``, waits for
``DIR/go``, then runs RUNS concurrent runs of ``a >> (b | c)``, each Swarm with
its own connection to DB, and prints their run ids, one per line.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

from swarmcore import Agent, Swarm
from swarmcore.testing import FunctionModel, RecordedRequest, Reply


async def main() -> None:
    db, folder, index, runs = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        return Reply(text=f"{who} of worker {index} on {request.user}", delay=0.01)

    model = FunctionModel(answer)
    a, b, c = (Agent(n, f"{n} does its part.", model=model.model) for n in "abc")
    await Swarm(a >> (b | c)).run("warm up")  # the first call imports LiteLLM
    (folder / f"ready-{index}").touch()
    deadline = time.monotonic() + 120
    while not (folder / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to go")
        await asyncio.sleep(0.01)
    results = await asyncio.gather(
        *(Swarm(a >> (b | c), store=db).run(f"task {index}-{i}") for i in range(runs))
    )
    for result in results:
        print(result.run_id)


if __name__ == "__main__":
    asyncio.run(main())
    gc.freeze()  # spares the exit a collection of every module's objects (seconds)
