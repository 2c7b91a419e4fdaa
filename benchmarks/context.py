"""What reaches each agent, and what it costs: the context modes on flows with planted facts.

    uv run python benchmarks/context.py [--modes pull,push,auto] [--model NAME]

Each agent's instructions say in words which facts it states and which facts of
earlier agents it needs (the convention of ``swarmcore.testing.ReaderModel``);
every answer places its facts among paragraphs of filler. The shapes:

* chain of 8: agent k needs a fact of agent k-1 and, from agent 4 on, one of k-3;
* diamond ``a >> (b | c) >> d``: b and c need a fact of a, d one of each of a, b, c;
* fan-in: 10 parallel branches into a merger that needs a fact of 3 of them;
* relay of 20: each agent needs only its predecessor's fact;
* loop: a brief, then a writer and a judge for three rounds (``loop(writer >> judge)``);
  the writer needs two facts of the brief, the judge the writer's and one of the brief.

Each shape runs in every mode (``--modes``; a mode this swarmcore does not accept
is skipped with a note) on the offline ``ReaderModel``, in two variants: summaries
that name their facts (ids and topics) with searches by fact id, and summaries that
name only the topic of the work (the task's words, nothing of who holds which fact)
with searches in plain words, as real models write them. Per
shape and mode it prints: facts delivered (needed facts the answers stated, of all
needed), input tokens (cl100k_base, ``swarmcore._tokens.count_tokens``, over each
request's tool schemas and messages as serialized below), model calls, the largest
single prompt, the cacheable-prefix share: each request is serialized
canonically (its tools' JSON, then its messages in order, as Anthropic and OpenAI
order their cache prefix); its longest prefix shared byte for byte with any earlier
request of the run counts where it is at least 1,024 tokens (the smallest prefix
either provider caches); the share is those prefixes' tokens over all input tokens;
and the input tokens as billed if every cacheable token were read from a cache at
0.1x the price (Anthropic's cache reads; OpenAI's are 0.5x or less), so modes
compare on what a cache would save them. Then the largest prompt of the last
agent of relay chains of 2, 5, 10, 20 and 50.

``--model NAME`` runs the same shapes on a real model when its provider's key is
set (the runs are stored in ``--store``; answers scored the same way; tokens as the
provider reports them, and the cached share it reports); without a key it says so
and skips.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmcore import Agent, Flow, Swarm, SwarmResult, UserError, chain, loop, parallel
from swarmcore._tokens import count_tokens
from swarmcore.testing import FactScore, ReaderModel, RecordedRequest, score_facts

CACHE_MIN_TOKENS = 1024
"""The smallest prefix OpenAI's and Anthropic's prompt caches keep."""
CACHED_PRICE = 0.1
"""What a cached input token costs against an uncached one (Anthropic's cache reads;
OpenAI charges 0.5 or less, so this is the price most favourable to caching)."""
MODES = ("pull", "push", "auto")
CHAIN_LENGTHS = (2, 5, 10, 20, 50)
TASK = "Prepare the rollout of the new customer portal and report what you know."

_PLACES = ("north", "south", "east", "west", "harbour", "river", "upland", "coastal")
_THINGS = (
    "warehouse",
    "budget ceiling",
    "launch window",
    "pilot city",
    "server region",
    "ticket price",
    "code name",
    "warranty term",
)
_VALUES = ("Kestrel", "Juniper", "Orion", "Basalt", "Marlow", "Quill", "Tamsin", "Vega", "Cobalt")


# --- facts and agents ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    topic: str
    value: str

    @property
    def state(self) -> str:
        return f"State fact {self.id}: the {self.topic} is {self.value}."

    @property
    def need(self) -> str:
        return f"the {self.topic} (fact {self.id})"


def facts() -> Iterator[Fact]:
    """Facts with distinct topics (64 of them) and values, the same every run."""
    topics = [f"{p} {t}" for t in _THINGS for p in _PLACES]
    for index, topic in enumerate(topics, start=1):
        yield Fact(f"F{index:02d}", topic, f"{_VALUES[index % len(_VALUES)]} {10 + index * 7}")


def instructions(name: str, role: str, states: Sequence[Fact], needs: Sequence[Fact]) -> str:
    lines = [f"You are {name}, {role}."]
    lines += [f.state for f in states]
    if needs:
        wanted = [f.need for f in needs]
        listed = wanted[0] if len(wanted) == 1 else ", ".join(wanted[:-1]) + " and " + wanted[-1]
        lines.append(f"You need {listed}.")
    lines.append("Report on your part of the rollout for the agents after you.")
    return "\n".join(lines)


Build = Callable[[str], Flow]


def chain_of_8(model: str) -> Flow:
    made = facts()
    own = [[next(made), next(made)] for _ in range(8)]
    agents: list[Agent] = []
    for k in range(8):
        needs = ([own[k - 3][0]] if k >= 3 else []) + ([own[k - 1][1]] if k >= 1 else [])
        name = f"step_{k + 1}"
        agents.append(Agent(name, instructions(name, "a planner", own[k], needs), model=model))
    return chain(*agents)


def diamond(model: str) -> Flow:
    made = facts()
    a, b, c = ([next(made), next(made)] for _ in range(3))

    def make(name: str, states: list[Fact], needs: list[Fact]) -> Agent:
        return Agent(name, instructions(name, "an analyst", states, needs), model=model)

    return (
        make("scope", a, [])
        >> (make("costs", b, [a[0]]) | make("risks", c, [a[1]]))
        >> make("decision", [], [a[1], b[0], c[1]])
    )


def fan_in(model: str) -> Flow:
    made = facts()
    own = [[next(made), next(made)] for _ in range(10)]
    branches = [
        Agent(
            f"branch_{i + 1}",
            instructions(f"branch_{i + 1}", "a researcher", own[i], []),
            model=model,
        )
        for i in range(10)
    ]
    needs = [own[1][0], own[4][1], own[8][0]]
    merger = Agent("merger", instructions("merger", "the editor", [], needs), model=model)
    return parallel(*branches) >> merger


def relay(length: int) -> Build:
    def build(model: str) -> Flow:
        made = facts()
        own = [next(made) for _ in range(length)]
        agents = [
            Agent(
                f"relay_{k + 1}",
                instructions(f"relay_{k + 1}", "a runner", [own[k]], [own[k - 1]] if k else []),
                model=model,
            )
            for k in range(length)
        ]
        return chain(*agents)

    return build


def writer_and_judge(model: str) -> Flow:
    made = facts()
    brief_facts = [next(made), next(made), next(made)]
    draft, note = next(made), next(made)
    brief = Agent("brief", instructions("brief", "the client", brief_facts, []), model=model)
    writer = Agent(
        "writer", instructions("writer", "the writer", [draft], brief_facts[:2]), model=model
    )
    judge = Agent(
        "judge", instructions("judge", "the judge", [note], [draft, brief_facts[2]]), model=model
    )
    return brief >> loop(writer >> judge, until=None, max_iterations=3)


SHAPES: dict[str, Build] = {
    "chain of 8": chain_of_8,
    "diamond": diamond,
    "fan-in of 10": fan_in,
    "relay of 20": relay(20),
    "loop x3": writer_and_judge,
}


# --- measuring ------------------------------------------------------------------------------


def serialize(request: RecordedRequest) -> str:
    """The request as a provider's cache sees it: tools first, then the messages in order."""
    parts = [json.dumps(request.tools, ensure_ascii=False)]
    parts += [json.dumps(m, ensure_ascii=False) for m in request.messages]
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share from their start (binary search on slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def prefix_share(
    texts: Sequence[str],
    *,
    minimum: int = CACHE_MIN_TOKENS,
    count: Callable[[str], int] = count_tokens,
) -> tuple[int, int]:
    """Cacheable tokens and total tokens of ``texts``, requests in the order sent.

    A request's cacheable part is its longest prefix shared with any earlier
    request, counted where it is at least ``minimum`` tokens.
    """
    cacheable = total = 0
    for index, text in enumerate(texts):
        total += count(text)
        shared = max((common_prefix(text, earlier) for earlier in texts[:index]), default=0)
        tokens = count(text[:shared]) if shared else 0
        if tokens >= minimum:
            cacheable += tokens
    return cacheable, total


@dataclass(frozen=True, slots=True)
class Measured:
    score: FactScore
    input_tokens: int
    calls: int
    largest: int
    cacheable: int

    @property
    def share(self) -> float:
        return self.cacheable / self.input_tokens if self.input_tokens else 0.0

    @property
    def billed(self) -> int:
        """Input tokens as billed when every cacheable token is read from the cache."""
        return round(self.input_tokens - (1 - CACHED_PRICE) * self.cacheable)


def measure(requests: Sequence[RecordedRequest], score: FactScore) -> Measured:
    texts = [serialize(r) for r in requests]
    cacheable, total = prefix_share(texts)
    largest = max((count_tokens(t) for t in texts), default=0)
    return Measured(score, total, len(texts), largest, cacheable)


def agent_sizes(requests: Sequence[RecordedRequest], name: str) -> int:
    """The largest prompt (tokens) of the agent whose instructions start ``You are NAME,``."""
    mine = [serialize(r) for r in requests if r.system.startswith(f"You are {name},")]
    return max((count_tokens(t) for t in mine), default=0)


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    summaries: str
    search: str

    def model(self) -> ReaderModel:
        return ReaderModel(
            summaries="facts" if self.summaries == "facts" else "topic",
            search="id" if self.search == "id" else "words",
        )


VARIANTS = (
    Variant("summaries name their facts, searches by fact id", "facts", "id"),
    Variant("summaries name only the topic of the work, searches in plain words", "topic", "words"),
)


def swarm_for(flow: Flow, mode: str, **settings: Any) -> Swarm:
    """A Swarm in ``mode``: a mode name, or ``auto:N`` for auto mode with a budget of N tokens."""
    name, _, budget = mode.partition(":")
    if budget:
        settings["context_budget"] = int(budget)
    return Swarm(flow, context_mode=name, **settings)  # pyright: ignore[reportArgumentType]


def accepted(flow: Flow, mode: str) -> bool:
    try:
        swarm_for(flow, mode)
    except (UserError, ValueError):
        return False
    return True


async def run_offline(build: Build, mode: str, variant: Variant) -> tuple[Measured, ReaderModel]:
    model = variant.model()
    flow = build(model.model)
    result = await swarm_for(flow, mode).run(TASK)
    score = score_facts(_agents(flow), result.context)
    return measure(model.requests, score), model


def _agents(flow: Flow) -> list[Agent]:
    return [a for a in flow.agents if isinstance(a, Agent)]


# --- tables -------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 2) -> str:
    """Columns aligned: the first ``left`` to the left, numbers to the right."""
    cells = [list(header), *[list(r) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines: list[str] = []
    for index, row in enumerate(cells):
        parts = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


HEADER = (
    "shape",
    "mode",
    "facts delivered",
    "input tokens",
    "calls",
    "largest prompt",
    "cacheable",
    "billed, cached at 0.1x",
)


def row(shape: str, mode: str, m: Measured) -> list[str]:
    s = m.score
    return [
        shape,
        mode,
        f"{100 * s.rate:.0f} % ({s.delivered}/{s.needed})",
        f"{m.input_tokens:,}",
        str(m.calls),
        f"{m.largest:,}",
        f"{100 * m.share:.0f} %",
        f"{m.billed:,}",
    ]


async def offline_tables(modes: Sequence[str], lengths: Sequence[int]) -> str:
    out: list[str] = []
    for variant in VARIANTS:
        rows: list[list[str]] = []
        for shape, build in SHAPES.items():
            for mode in modes:
                progress(f"{variant.summaries}: {shape}, {mode}")
                measured, _ = await run_offline(build, mode, variant)
                rows.append(row(shape, mode, measured))
        out += [f"## {variant.label}", "", table(HEADER, rows), ""]
    out += [await chain_length_table(modes, lengths)]
    return "\n".join(out)


async def chain_length_table(modes: Sequence[str], lengths: Sequence[int]) -> str:
    """The largest prompt of the last agent of a relay chain, per length and mode."""
    rows: list[list[str]] = []
    for mode in modes:
        sizes: dict[int, int] = {}
        for length in lengths:
            progress(f"relay chain of {length}, {mode}")
            _, model = await run_offline(relay(length), mode, VARIANTS[0])
            sizes[length] = agent_sizes(model.requests, f"relay_{length}")
        ratio = f"{sizes[50] / sizes[10]:.2f}" if {10, 50} <= sizes.keys() else "-"
        rows.append([mode, *(f"{sizes[n]:,}" for n in lengths), ratio])
    header = ["mode", *(f"agent {n}" for n in lengths), "50 / 10"]
    title = "## Largest prompt of the last agent of a relay chain of N (tokens)"
    return f"{title}\n\n{table(header, rows, left=1)}\n"


# --- a real model ---------------------------------------------------------------------------


def key_missing(model: str) -> list[str]:
    from swarmcore.llm._prechecks import missing_keys

    try:
        return missing_keys(model)
    except Exception:  # an unknown provider: let the run say what is wrong
        return []


async def real_tables(model: str, modes: Sequence[str], store: Path) -> str:
    rows: list[list[str]] = []
    for shape, build in SHAPES.items():
        for mode in modes:
            progress(f"{model}: {shape}, {mode}")
            flow = build(model)
            swarm = swarm_for(flow, mode, store=store)
            result = await swarm.run(TASK)
            rows.append(
                row(shape, mode, reported(result, score_facts(_agents(flow), result.context)))
            )
    header = (*HEADER[:-2], "cached (reported)", HEADER[-1])
    return f"## {model} (runs stored in {store})\n\n{table(header, rows)}\n"


def reported(result: SwarmResult, score: FactScore) -> Measured:
    """A real run's numbers as its provider reported them (prompt tokens, cached tokens)."""
    usages = [c.token_usage for r in result.history for c in r.llm_calls]
    prompts = [u.prompt_tokens for u in usages]
    cached = sum(u.cached_tokens for u in usages)
    return Measured(score, sum(prompts), len(usages), max(prompts, default=0), cached)


# --- main -----------------------------------------------------------------------------------


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def usable_modes(wanted: Sequence[str]) -> list[str]:
    probe = relay(2)(ReaderModel().model)
    modes: list[str] = []
    for mode in wanted:
        if accepted(probe, mode):
            modes.append(mode)
        else:
            print(f"context_mode={mode!r} is not accepted by this swarmcore; skipped.")
    return modes


def _modes(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    if not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: name modes, comma-separated, e.g. pull,push")
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "--modes",
        type=_modes,
        default=MODES,
        help="comma-separated (default pull,push,auto); auto:N sets context_budget=N",
    )
    parser.add_argument("--model", help="also run the shapes on this real model (needs its key)")
    parser.add_argument(
        "--store", type=Path, default=Path("context-benchmark-runs.db"), help="--model's run store"
    )
    parser.add_argument(
        "--lengths",
        type=lambda t: tuple(int(p) for p in t.split(",")),
        default=CHAIN_LENGTHS,
        help="relay chain lengths for the largest-prompt table (default 2,5,10,20,50)",
    )
    args = parser.parse_args(argv)
    modes = usable_modes(args.modes)
    print(
        "Context benchmark: offline ReaderModel (a careful deterministic reader, not a real "
        f"model); tokens by cl100k_base; cacheable = shared prefixes of >= {CACHE_MIN_TOKENS} "
        "tokens over input tokens.\n"
    )
    print(asyncio.run(offline_tables(modes, args.lengths)))
    if args.model:
        missing = key_missing(args.model)
        if missing:
            print(f"--model {args.model}: {', '.join(missing)} is not set; real-model run skipped.")
        else:
            print(asyncio.run(real_tables(args.model, modes, args.store)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
