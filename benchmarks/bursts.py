"""Memory after bursts: RSS after each of a few bursts of concurrent runs, in a fresh process.

    uv run python benchmarks/bursts.py [--runs 1000] [--bursts 3] [--litellm-callback]

Each burst is a ``gather`` of ``--runs`` diamond runs (``a >> (b | c) >> d``) on an
in-process ``OfflineModel`` whose request log is cleared after every burst; then the
process idles for a second, collects garbage and calls ``malloc_trim``, and reads its
RSS. A service's memory should level off after the first burst (the peak of that many
runs at once, which the allocator keeps), not climb with each one.

``--litellm-callback`` registers a LiteLLM callback that does nothing, as a user who
sends LiteLLM's logs somewhere would, and sends the calls through LiteLLM to a local
``MockOpenAIServer`` answering as the offline model (test models never go through
LiteLLM; without the flag, no LiteLLM is loaded at all): LiteLLM then logs every
call, as it did for every swarmcore call before swarmcore stopped it for calls nobody
listens to (issue 30, point 11). Its background worker falls behind a burst, and
every log waiting holds its call's messages and response.

The last line of stdout is ``@@bench`` followed by JSON: ``start`` (MB, after one warm-up
run), ``after`` (MB after each burst), ``waiting`` (LiteLLM logs still queued at the end
of each burst) and ``seconds`` (wall time of each burst). ``benchmarks/run.py`` runs it
(workload ``bursts``) and prints the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import os
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PROTOCOL = "@@bench "


def rss_mb() -> int:
    """This process's resident set size, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def trim() -> None:
    """Collect garbage and hand freed heap back to the OS, so RSS shows what is still held."""
    gc.collect()
    with contextlib.suppress(OSError):  # not glibc: RSS reads what the allocator kept
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def logs_waiting() -> int:
    """LiteLLM logs queued on its background worker and not yet run (0 if unknown)."""
    from litellm.litellm_core_utils.logging_worker import (  # pyright: ignore[reportMissingTypeStubs] -- read only here
        GLOBAL_LOGGING_WORKER,
    )

    queue: Any = getattr(GLOBAL_LOGGING_WORKER, "_queue", None)
    return int(queue.qsize()) if queue is not None else 0


async def bursts(runs: int, count: int, callback: bool) -> dict[str, Any]:
    from swarmcore import Agent, Swarm
    from swarmcore.llm import load_litellm
    from swarmcore.testing import MockOpenAIServer, OfflineModel

    model = OfflineModel()
    settings: dict[str, Any] = {"model": model.model}
    server = MockOpenAIServer(responder=OfflineModel.reply)
    if callback:
        from litellm.integrations.custom_logger import CustomLogger

        load_litellm().callbacks.append(CustomLogger())
        # Test models never go through LiteLLM: its calls go to the local server.
        server.start()
        settings = {**server.model_kwargs, "backend": "litellm"}
    a, b, c, d = (Agent(n, f"You are {n}.", **settings) for n in "abcd")
    swarm = Swarm(a >> (b | c) >> d)
    await swarm.run("warm up")
    model.requests.clear()
    server.requests.clear()
    await asyncio.sleep(1)
    trim()
    report: dict[str, Any] = {"start": rss_mb(), "after": [], "waiting": [], "seconds": []}
    for _ in range(count):
        started = time.perf_counter()
        await asyncio.gather(*(swarm.run(f"Burst task {i}: report briefly.") for i in range(runs)))
        report["seconds"].append(round(time.perf_counter() - started, 1))
        report["waiting"].append(logs_waiting() if callback else 0)
        model.requests.clear()
        server.requests.clear()
        server.raw_bodies.clear()
        server.headers.clear()
        await asyncio.sleep(1)
        trim()
        report["after"].append(rss_mb())
    server.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description="RSS after bursts of concurrent runs")
    parser.add_argument("--runs", type=int, default=1000, help="concurrent runs per burst")
    parser.add_argument("--bursts", type=int, default=3, help="how many bursts")
    parser.add_argument(
        "--litellm-callback", action="store_true", help="register a (no-op) LiteLLM callback"
    )
    args = parser.parse_args()
    report = asyncio.run(bursts(args.runs, args.bursts, args.litellm_callback))
    print(PROTOCOL + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
