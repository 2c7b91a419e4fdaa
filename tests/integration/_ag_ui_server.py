"""An AG-UI server of ``_dbos_flow.py``'s flow on the DBOS engine, for the test that kills it.

``python _ag_ui_server.py DATABASE_URL PORT``: launches the engine as worker
``agui`` (recovering the runs a killed process with that id left waiting),
serves ``swarm.to_ag_ui()`` on 127.0.0.1:PORT, and prints ``ready`` once it listens.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import uvicorn
from _dbos_flow import flow  # pyright: ignore[reportMissingImports] -- run as a script beside it

from swarmcore import Swarm
from swarmcore.engines.dbos import DBOSEngine


async def main(url: str, port: str) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("swarmcore.ag_ui").setLevel(logging.INFO)  # a failed run's traceback
    engine = DBOSEngine(url, worker_id="agui")
    swarm = Swarm(flow, engine=engine)  # pyright: ignore[reportUnknownArgumentType]
    app = swarm.to_ag_ui()  # before the launch: the runs it recovers stream to the app
    await engine.launch()  # recovers the runs this worker id left in flight
    config = uvicorn.Config(app, host="127.0.0.1", port=int(port), log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 -- uvicorn's Server has no event to await
        await asyncio.sleep(0.02)
    print("ready", flush=True)
    try:
        await serving
    finally:
        await engine.shutdown()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
