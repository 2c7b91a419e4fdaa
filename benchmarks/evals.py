"""How fast a suite replays: 1,000 cases made from real stored runs, offline.

    uv run python benchmarks/evals.py [--cases 1000] [--shape diamond|chain] [--mode auto|pull|push]

Runs the flow once per distinct task on the offline model with a run store, makes
a case of each run (``case_from_run``, with a tool in the first agent), copies
them up to ``--cases`` cases, and replays the suite against the flow
(``Suite.run``). Prints the time to make the cases, the replay's wall time, cases
per second, model calls replayed per second and whether every case passed. The
issue's target: 1,000 cases in at most 60 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from swarmcore import Agent, Flow, Swarm
from swarmcore.evals import Case, Suite, case_from_run
from swarmcore.modes import ContextMode
from swarmcore.testing import OfflineModel

MODEL = OfflineModel(name="bench-evals", record=False)


def lookup(city: str) -> str:
    """Look up a city's weather.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


def build(shape: str) -> Flow:
    """The flow under test: ``a >> (b | c) >> d`` (diamond) or four agents in a row (chain)."""
    a = Agent("a", "Research the task.", model=MODEL.model, tools=[lookup])
    b = Agent("b", "Analyse it.", model=MODEL.model)
    c = Agent("c", "Criticise it.", model=MODEL.model)
    d = Agent("d", "Write the answer.", model=MODEL.model)
    return a >> (b | c) >> d if shape == "diamond" else a >> b >> c >> d


async def make_cases(flow: Flow, store: Path, distinct: int, mode: ContextMode) -> list[Case]:
    """``distinct`` runs of ``flow`` in context mode ``mode``, each made a case."""
    swarm = Swarm(flow, store=store, context_mode=mode)
    cases: list[Case] = []
    for i in range(distinct):
        result = await swarm.run(f"Question {i}: what is the weather in city {i}?")
        cases.append(case_from_run(store, result.run_id, flow=flow, name=f"case-{i:04d}"))
    return cases


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--distinct", type=int, default=50, help="distinct runs recorded")
    parser.add_argument("--shape", choices=["diamond", "chain"], default="diamond")
    parser.add_argument("--mode", choices=["auto", "pull", "push"], default="auto")
    args = parser.parse_args()
    flow = build(args.shape)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        distinct = min(args.distinct, args.cases)
        made = await make_cases(flow, Path(folder) / "runs.db", distinct, args.mode)
        making = time.perf_counter() - started
    cases = [
        made[i % len(made)].model_copy(update={"name": f"case-{i:05d}"}) for i in range(args.cases)
    ]
    suite = Suite(cases, name="bench")
    started = time.perf_counter()
    report = await suite.run(flow)
    wall = time.perf_counter() - started
    calls = sum(c.calls for c in report.cases)
    rows = [
        ("shape", f"{args.shape}, context mode {args.mode}"),
        ("cases", f"{len(cases):,} ({len(made)} distinct runs)"),
        ("making the cases", f"{making:.2f} s"),
        ("replay wall time", f"{wall:.2f} s"),
        ("cases / s", f"{len(cases) / wall:,.0f}"),
        ("model calls replayed / s", f"{calls / wall:,.0f}"),
        ("all passed", "yes" if report.failed == 0 else f"no ({report.failed} failed)"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
