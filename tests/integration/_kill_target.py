"""A run for test_durability to kill: ``python _kill_target.py DB CALLS``.

Runs ``a >> b >> (c | d) >> e`` with ``store=DB``: a and b answer at once, the
others block for an hour. Each model call appends its agent's name to CALLS.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from swarmcore import Agent, Swarm
from swarmcore.testing import FunctionModel, RecordedRequest, Reply

FLOW = "a >> b >> (c | d) >> e"


def main() -> None:
    db, calls = sys.argv[1], Path(sys.argv[2])

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        with calls.open("a") as file:
            file.write(f"{who}\n")
        return Reply(text=f"{who} output", delay=0 if who in {"a", "b"} else 3600)

    model = FunctionModel(answer)  # referenced until the process dies
    a, b, c, d, e = (Agent(n, f"{n} does its part.", model=model.model) for n in "abcde")
    asyncio.run(Swarm(a >> b >> (c | d) >> e, store=db).run("a task worth keeping"))


if __name__ == "__main__":
    main()
