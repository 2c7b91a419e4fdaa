"""The flow the Temporal engine tests run across processes, and a process to run or recover it.

The flow is ``_dbos_flow``'s (``a >> b`` on the tests' ``MockOpenAIServer``,
``a``'s tool ``mark`` appending to a marker file), for
``swarmcore worker --engine temporal _temporal_flow.py:flow``.

As a script (the repository on ``PYTHONPATH``): ``python _temporal_flow.py
run|recover TARGET RUN_ID`` runs the flow on a ``TemporalEngine`` under
``RUN_ID`` (``run``), or serves the flow and waits for the run ``RUN_ID`` to
end (``recover``: Temporal hands it to this process's worker once the killed one
is silent), then prints each agent's output as JSON on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from swarmcore import Swarm
from swarmcore.engines.temporal import TemporalEngine
from tests.integration._dbos_flow import build

flow = build(
    os.environ.get("SWARMCORE_TEST_API_BASE", "http://127.0.0.1:9/v1"),
    Path(os.environ.get("SWARMCORE_TEST_MARKER", os.devnull)),
)

HEARTBEAT = 1.0
"""Seconds after which a killed worker's call in flight counts as lost (fast recovery)."""


async def main(mode: str, target: str, run_id: str) -> None:
    engine = TemporalEngine(target, step_heartbeat=HEARTBEAT)
    swarm = Swarm(flow, engine=engine)
    try:
        if mode == "run":
            result = await swarm.run("write the answer", run_id=run_id)
        else:
            await engine.launch()  # serves the flow: Temporal hands the run to this worker
            result = await (await engine.handle(run_id)).result()
    finally:
        await engine.shutdown()
    print(json.dumps(result.context), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
    # temporalio's Rust threads may abort the interpreter's shutdown
    # (temporalio/sdk-python#300): the output is flushed, the process ends here.
    sys.stdout.flush()
    os._exit(0)
