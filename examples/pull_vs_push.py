"""Pull versus push: what each context mode costs, measured on three flows.

Run it with ``uv run python examples/pull_vs_push.py``. Each flow runs twice,
once per context mode, and the table shows what the run sent: model calls,
prompt tokens in all, the largest single prompt, and completion tokens. After
each flow a line says which mode sent fewer prompt tokens, computed from the
numbers above it.

- **short chain**: 8 agents in a chain, each adding about 150 words. Offline it
  runs on swarmcore's offline model, a diligent reader: in pull mode it lists
  the context, searches it and reads the two latest outputs; in push mode it
  expands the latest summarised one.
- **long chain**: 8 agents in a chain, each writing a report of ~900 words
  (~1,300 tokens) that needs only the report just before it.
- **fan-in of parts**: 6 researchers in parallel write one report each (~1,300
  tokens), then 6 writers in parallel each need one of those reports.

Offline, the long-output flows run on a ``FunctionModel`` that writes reports
of that length and reads exactly what an agent needs: in pull mode it calls
``get_context`` for those agents in its first turn; in push mode it answers
from the prompt, calling ``expand_context`` only for a needed agent shown as a
summary. With ``OPENAI_API_KEY`` set, every flow runs on the real model
(``$SWARMCORE_MODEL`` or ``openai/gpt-4o-mini``), which decides for itself what
to read; the wall time of each run is then shown too. That is some 90
model calls, most of them writing ~1,000-word answers: it takes minutes.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from swarmcore import Agent, Flow, Swarm, SwarmResult, chain, parallel
from swarmcore.testing import (
    Call,
    FunctionModel,
    RecordedRequest,
    Reply,
    choose_model,
    offline_model,
)

TASK = "Write a report on tea."
TOPICS = ["history", "chemistry", "health", "economics", "culture", "farming", "trade", "future"]
REPORT_WORDS = 900

_AGENT = re.compile(r"^You are (\w+)\.")
_SUMMARISED = re.compile(r'^<output agent="([^"]+)" kind="summary" id="[0-9a-f]+">$', re.MULTILINE)


@dataclass(frozen=True)
class Measured:
    calls: int
    prompt: int
    largest: int
    completion: int
    seconds: float


def measure(result: SwarmResult, seconds: float) -> Measured:
    calls = [c for r in result.history for c in r.llm_calls]
    return Measured(
        calls=len(calls),
        prompt=result.token_usage.prompt_tokens,
        largest=max(c.token_usage.prompt_tokens for c in calls),
        completion=result.token_usage.completion_tokens,
        seconds=seconds,
    )


def report_writer(needs: dict[str, list[str]]) -> FunctionModel:
    """An offline model that writes ~REPORT_WORDS words and reads exactly what it needs."""

    def respond(request: RecordedRequest) -> Reply:
        found = _AGENT.match(request.system)
        name = found.group(1) if found else "agent"
        wanted = needs.get(name, [])
        if not request.called_tools:
            if "get_context" in request.tool_names and wanted:  # pull: fetch what it needs
                return Reply(tool_calls=[Call("get_context", {"agent_name": n}) for n in wanted])
            cut = [n for n in wanted if n in _SUMMARISED.findall(request.system)]
            if "expand_context" in request.tool_names and cut:  # push: expand what is summarised
                return Reply(tool_calls=[Call("expand_context", {"agent_name": n}) for n in cut])
        return Reply(text=_report(name))

    return FunctionModel(respond)


def _report(name: str) -> str:
    words = [f"{name}'s", "finding", "on", "tea", "is", "that", "the", "leaf", "matters", "here."]
    body = " ".join(
        words[i % len(words)] + ("" if i % 23 else f" ({i})") for i in range(REPORT_WORDS)
    )
    return f"{body}\n<summary>{name}: a {REPORT_WORDS}-word report on its part of tea.</summary>"


def short_chain(model: str) -> Flow:
    return chain(
        *(
            Agent(
                f"{t}_expert",
                f"You are {t}_expert. Add the {t} angle to the report so far, in about 150 words.",
                model=model,
            )
            for t in TOPICS
        )
    )


WRITERS = [f"{t}_writer" for t in TOPICS]
LONG_CHAIN_NEEDS = {name: [before] for before, name in itertools.pairwise(WRITERS)}


def long_chain(model: str) -> Flow:
    return chain(
        *(
            Agent(
                name,
                f"You are {name}. Write the {topic} chapter of the report, about {REPORT_WORDS} "
                "words"
                + (
                    f", continuing from {LONG_CHAIN_NEEDS[name][0]}'s chapter (read it in full)."
                    if name in LONG_CHAIN_NEEDS
                    else "."
                ),
                model=model,
            )
            for name, topic in zip(WRITERS, TOPICS, strict=True)
        )
    )


FAN_IN_TOPICS = TOPICS[:6]
FAN_IN_NEEDS = {f"{t}_writer": [f"{t}_researcher"] for t in FAN_IN_TOPICS}


def fan_in(model: str) -> Flow:
    researchers = [
        Agent(
            f"{t}_researcher",
            f"You are {t}_researcher. Research the {t} of tea; report in about "
            f"{REPORT_WORDS} words.",
            model=model,
        )
        for t in FAN_IN_TOPICS
    ]
    writers = [
        Agent(
            f"{t}_writer",
            f"You are {t}_writer. Write the {t} section, about {REPORT_WORDS} words, from "
            f"{t}_researcher's report only (read it in full; the others are not yours).",
            model=model,
        )
        for t in FAN_IN_TOPICS
    ]
    return parallel(*researchers) >> parallel(*writers)


FLOWS: list[tuple[str, Callable[[str], Flow], dict[str, list[str]] | None]] = [
    ("short chain", short_chain, None),  # offline: the offline model
    ("long chain", long_chain, LONG_CHAIN_NEEDS),  # offline: report_writer(needs)
    ("fan-in of parts", fan_in, FAN_IN_NEEDS),
]


async def run_both(
    build: Callable[[str], Flow], chosen: str, offline_needs: dict[str, list[str]] | None
) -> dict[str, Measured]:
    """Run the flow in each mode, on a fresh model, and measure what it sent."""
    measured: dict[str, Measured] = {}
    for mode in ("pull", "push"):
        writer = report_writer(offline_needs) if offline_needs is not None else None
        flow = build(writer.model if writer else chosen)
        started = time.perf_counter()
        result = await Swarm(flow, context_mode=mode).run(TASK)
        measured[mode] = measure(result, time.perf_counter() - started)
    return measured


def reading(pull: Measured, push: Measured) -> str:
    """Which mode sent fewer prompt tokens, by how much, and at what cost in calls."""
    if pull.prompt == push.prompt:
        return "both modes sent the same prompt tokens"
    (low_name, low), (high_name, high) = sorted(
        (("pull", pull), ("push", push)), key=lambda named: named[1].prompt
    )
    return (
        f"{low_name} sent {high.prompt / low.prompt:.1f}x fewer prompt tokens than {high_name} "
        f"({low.prompt:,} against {high.prompt:,}) in {low.calls} model calls against "
        f"{high.calls}; largest prompt {low.largest:,} against {high.largest:,}"
    )


def line(cells: list[str], widths: list[int]) -> str:
    """A table line: the first two cells left-aligned, the numbers right-aligned."""
    pairs = zip(cells, widths, strict=True)
    return "".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(pairs))


async def main() -> None:
    chosen, notice = choose_model()
    print(notice)
    offline = chosen == offline_model()
    columns = ["flow", "mode", "calls", "prompt tokens", "largest prompt", "completion"]
    widths = [17, 6, 7, 15, 16, 12]
    if not offline:
        columns, widths = [*columns, "seconds"], [*widths, 9]
    print("\n" + line(columns, widths))
    readings: list[str] = []
    for label, build, needs in FLOWS:
        measured = await run_both(build, chosen, needs if offline else None)
        for mode, m in measured.items():
            cells = [label, mode, f"{m.calls}", f"{m.prompt:,}", f"{m.largest:,}"]
            cells.append(f"{m.completion:,}")
            if not offline:
                cells.append(f"{m.seconds:.1f}")
            print(line(cells, widths))
        readings.append(f"{label}: {reading(measured['pull'], measured['push'])}.")
    print()
    print("\n".join(readings))


if __name__ == "__main__":
    asyncio.run(main())
