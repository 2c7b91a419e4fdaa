"""swarmcore against its floors: plain ``litellm.acompletion`` or ``openai`` + ``asyncio.gather``.

    uv run python benchmarks/run.py [--quick] [--latency 0.2] [--reps 7] [--profile]
        [--only w1,w2,w3,responses,alone,settings,tokens,import,bursts,context] [--fan-outs 500]
        [--concurrency 200]

A full run takes ~15 minutes; ``--quick`` (~2 minutes) runs W1, W3 at K=50 only, W2 at
N=100 only (one fan-out a measurement), the stubbed rows at those sizes, short chains,
the imports and the first calls, with two repetitions on two sets of workers: a smoke
run that prints the same table, not a verdict.

A local OpenAI-compatible server (``benchmarks/_server.py``, its own process, on
127.0.0.1) answers every chat request after a fixed latency L. Each workload runs
through four sides (``SIDES``):

* ``native``: swarmcore as it comes: ``openai/...`` models on its native backend
  (the protocol spoken over aiohttp), never importing litellm or the openai SDK;
* ``litellm``: swarmcore with every call on LiteLLM (``SWARMCORE_MODEL_BACKEND=litellm``
  in a worker; ``Agent(backend="litellm")`` in this process);
* ``floor``: the LiteLLM floor, plain ``litellm.acompletion``;
* ``openai``: the openai floor, one ``openai.AsyncOpenAI(base_url=..., api_key=...,
  max_retries=0, http_client=openai.DefaultAioHttpClient())`` reused (aiohttp's
  pool, as the native backend's), plain ``await client.chat.completions.create(...)``.

Both floors send byte-identical requests (the server records swarmcore's payloads once,
untimed, and the floors replay them: same messages, same tools, the same timeout, and
for LiteLLM the same kwargs) with nothing around the calls but ``asyncio.gather`` (they
keep their responses until the workload ends, as swarmcore keeps every agent's result).
Each comparison (``COMPARISONS``) is a ratio of two sides: native / LiteLLM floor (what
the native backend saves against what swarmcore stood on), native / openai floor (what
swarmcore adds on its own floor), and on LiteLLM / LiteLLM floor (what swarmcore adds on
LiteLLM: the old row).

* W1: the diamond ``a >> (b | c) >> d``; floor: a, gather(b, c), d. Ideal 3 x L.
* W2: ``parallel(*N agents) >> merge``; floor: gather N calls, then one. Ideal 2 x L.
  Measured in W3's worker processes, after W3 (so W3's peak RSS stays its own).
  At 100 <= N < 500 a measurement runs ``W2_ROUNDS`` fan-outs in a row (wall per
  fan-out), so its CPU row reads ~400 calls (N=500's ~500), not ~100 (one fan-out
  with ``--quick``).
* W3: K concurrent W1 runs (gather of K ``swarm.run``): wall, runs/s, CPU per
  model call and peak RSS. Below K=10 the batch runs ``W3_ROUNDS`` times in a row
  per measurement (wall reported per batch), so there is enough CPU to read.
  Each side runs in long-lived worker processes of its own, a fresh set of four
  (one a side) for each repetition (up to ``W3_PROCESSES``; see the W3 section), so
  peak RSS is separable, all start equally fresh, and no one process's luck decides
  a side. The native and openai workers never import litellm.
  A full run also reads W3 K=50's CPU per call with all sides in this process
  over 30 rounds: no verdict, a check of how far the noise of W3's rows goes.
  So does a control at W3's largest K, with two or more sets of workers: the
  LiteLLM floor against itself (each set's floor worker against the next set's,
  after W2), measured as the W3 rows are: what it reads beside 1.00 is this run's noise.
* Responses API: CPU per call of the native backend speaking OpenAI's Responses API
  (the diamond's agents choosing ``api="responses"``; the server answers
  ``POST /responses`` with the same reply, in that API's shape) against the native
  side's own diamond on chat completions, W3 K=50 batches taking turns in this
  process (20 rounds each, 4 with ``--quick``); target 1.2x (issue 43).
* Cold ``import swarmcore`` (names load on first use) and the import a program
  really does (``from swarmcore import Agent, Swarm, ...``) against its own
  dependencies' import (asyncio, pydantic): medians of 5 fresh interpreters,
  with the package byte-compiled as an installed wheel is; and whether either
  imported litellm.
* First call (with ``import``): a fresh process imports and makes one model call
  against the server (``benchmarks/_first_call.py``): swarmcore native, swarmcore on
  LiteLLM (one agent run of ``Swarm(agent)``), plain openai, plain litellm. The
  import and the call are timed inside the child (``time.perf_counter``), the whole
  process from outside; medians of 5 fresh processes (2 with ``--quick``).
* swarmcore alone: CPU per agent run of W3 at its largest K (200; 50 with
  ``--quick``) and W2 at its largest N (500; 100) with litellm's ``acompletion``
  replaced by an instant stub, in a process of its own: what swarmcore itself
  spends around each call, garbage collection included, without litellm's cost
  or the network's noise (medians of 15 repetitions), beside the LiteLLM floor's
  CPU per call at the same size. That process forces the LiteLLM backend
  (``SWARMCORE_MODEL_BACKEND=litellm``), or the stub would not be called: these rows
  measure swarmcore's own work on its LiteLLM path. The native path has no stub
  here: short of patching the backend's private client pool, its calls reach the
  SDK, and its own work is read from native / openai floor instead.
* Below the floor: the floor's W3 (K=50) in fresh processes, per round once with
  litellm's defaults, once more with them (a control) and once per global setting
  that could spare per-call work (message logging, token counting, the httpx
  transport instead of aiohttp): CPU per call and the ratio to the defaults of the
  same round. Not with ``--quick``.
* Prompt tokens of the k-th agent of 5-, 20- and 50-agent chains in pull and
  push mode, on the in-process FunctionModel (no server), read from
  ``ModelCallFinished`` events; and the prompt tokens of whole runs in each
  mode, of the three flows of ``examples/pull_vs_push.py`` (ratio push / pull).
* Context (``benchmarks/context.py``, its own process, offline): what reaches each
  agent and what it costs in each context mode, on flows with facts planted in
  agents' outputs, read by ``swarmcore.testing.ReaderModel``: facts delivered, input
  tokens, calls, the largest prompt and the cacheable-prefix share, printed as its
  own tables after this one.

Fairness rules: each side is warmed up (for LiteLLM: a plain call and a call with
tools; for the openai floor the same; then untimed runs of each side's workload)
before anything is timed, then the surviving heap is frozen out of the GC
(``settle_gc``) in every process, and a worker process leaves the collector running
between measurements, as a long-running program does (see ``measure``); all sides run
on the same event loop policy (asyncio's default) with the same litellm settings
(none beyond what swarmcore's loader sets); the sides take turns, the order rotated
every repetition. Two ratios are shown: best of ``--reps`` on each side, and the
median of the per-repetition ratios (``paired``: repetition i of every side ran back
to back, so slow spells of a shared machine fall on both halves of a pair); the
verdict reads the paired one, and its ``90% CI`` (a seeded bootstrap of the
per-repetition ratios) says how far this machine's noise could move it. The spread
of the repetitions is shown too. ``--profile`` adds a cProfile comparison of
swarmcore native and the openai floor at W3 K=50 after the table. Progress goes to
stderr; stdout gets only the final table (and the profile).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import gc
import http.client
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar, cast

if TYPE_CHECKING:  # imported lazily below: the floor's W3 worker never imports swarmcore
    from swarmcore import Agent, Swarm
    from swarmcore.llm.choice import ApiName
    from swarmcore.testing import RecordedRequest

# As swarmcore does before importing litellm: the bundled price map, no fetch at import.
# Set here, once, for this process and every child, so both sides share it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

HERE = Path(__file__).resolve().parent
MODEL = "openai/gpt-4o-mini"
"""A model litellm knows, as a user's would be: an unknown name sends litellm's cost
lookup through its fallbacks on every call (~10 % more CPU per call, measured), which
would inflate the floor and flatter the ratio. The server answers for any name."""
API_KEY = "sk-bench-dummy"
CALL_TIMEOUT = 120.0
"""swarmcore's default call_timeout, which it passes on to litellm as ``timeout=``."""
TASK = "Benchmark task: do your step and report briefly."
SETTLE = 0.1
"""Seconds idled after a workload before reading CPU time, so the work litellm
schedules after a call returns (its logging worker) is charged to the side that
caused it rather than to whichever side runs next."""
W3_ROUNDS = 16
"""How many times in a row W3 runs a batch of fewer than 10 diamonds within one measurement."""
W2_ROUNDS = 4
"""How many fan-outs in a row W2 runs per measurement at 100 <= N < 500: one of 101 calls
is ~0.3 s of CPU, the smallest sample behind any CPU row (wall is reported per fan-out)."""
W3_PROCESSES = 7
"""At most this many worker processes per side, one per W3 repetition (see the W3 section)."""
ONE_PROCESS_K = 50
"""The K of the W3 check with both sides in the driver's process (``Config.one_process_pairs``)."""
BOOTSTRAP = 2000
"""Resamples of the per-repetition ratios behind each paired row's 90 % interval."""
SETTLE_MAX = 3.0
"""The longest wait for that backlog to drain."""
BACKEND_ENV = "SWARMCORE_MODEL_BACKEND"
"""The environment variable that sends every swarmcore call through LiteLLM when set so."""

Side = Literal["native", "litellm", "floor", "openai"]
_V = TypeVar("_V")
SIDES: tuple[Side, ...] = ("native", "litellm", "floor", "openai")
"""swarmcore native, swarmcore on LiteLLM, the LiteLLM floor, the openai floor."""
SWARMCORE_SIDES: frozenset[Side] = frozenset({"native", "litellm"})


@dataclass(frozen=True, slots=True)
class Comparison:
    """One ratio of the table: ``side`` over ``floor``, with the CPU/call target."""

    side: Side
    floor: Side
    label: str
    cpu_limit: float
    rss_limit: float | None = None


COMPARISONS = (
    # What the native backend saves: its CPU against what swarmcore used to stand on.
    Comparison("native", "floor", "native / LiteLLM floor", 0.75, rss_limit=0.6),
    # What swarmcore adds on its own floor.
    Comparison("native", "openai", "native / openai floor", 1.10),
    # What swarmcore adds on LiteLLM (the row this benchmark always had).
    Comparison("litellm", "floor", "on LiteLLM / LiteLLM floor", 1.05),
)
WALL_COMPARISONS = (COMPARISONS[1], COMPARISONS[2])
"""Wall rows compare each swarmcore side with its own floor (the latency dominates)."""


async def settle() -> None:
    """Idle until the work a workload left behind (litellm's per-call logging) is done.

    A side whose run ends sooner leaves more of that work for after the clock
    stops; a fixed pause would then charge it less CPU than a side whose calls
    interleave with it. So wait, in short slices, until a slice passes in which
    the process spent next to no CPU (at most ``SETTLE_MAX``), then ``SETTLE`` more.
    """
    deadline = time.perf_counter() + SETTLE_MAX
    while time.perf_counter() < deadline:
        cpu = time.process_time()
        await asyncio.sleep(0.02)
        if time.process_time() - cpu < 0.0005:
            break
    await asyncio.sleep(SETTLE)


CHAIN_TASK = "the history of tea"
TOKEN_POSITIONS = (2, 5, 20, 50)
PROTOCOL = "@@bench "
"""Prefix of the worker's protocol lines on stdout (anything else there is ignored)."""

Payloads = dict[str, dict[str, Any]]
"""Captured requests: first line of the system prompt -> {"messages", "tools"}."""


_T0 = time.perf_counter()


def progress(message: str) -> None:
    print(f"[bench {time.perf_counter() - _T0:5.1f}s] {message}", file=sys.stderr, flush=True)


def load_litellm() -> ModuleType:
    """Import litellm with the settings swarmcore's own loader applies, for both sides."""
    import litellm

    litellm.suppress_debug_info = True  # swarmcore.llm.load_litellm sets the same
    return litellm


# --- the server ----------------------------------------------------------------------


class ServerProcess:
    """``benchmarks/_server.py`` in a child process, stopped on exit whatever happens."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> ServerProcess:
        self._proc = subprocess.Popen(
            [sys.executable, str(HERE / "_server.py"), "--latency", str(self.latency)],
            stdin=subprocess.PIPE,  # closed when this process ends: the server then exits
            stdout=subprocess.PIPE,
            text=True,
            process_group=0,  # Ctrl-C reaches only this process, which stops the server last
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"benchmark server did not start (said {line!r})")
        self.port = int(line.split()[1])
        return self

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def call(self, method: str, path: str) -> Any:
        """A side route (capture, stats); http.client, so no proxy setting can interfere."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path)
            return json.loads(conn.getresponse().read() or b"null")
        finally:
            conn.close()

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None


# --- the sides ---------------------------------------------------------------------------


class Replay:
    """A floor: the captured payloads sent with nothing around them but ``asyncio.gather``."""

    def __init__(self, payloads: Payloads) -> None:
        self.payloads = payloads

    async def call(self, key: str) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close what the floor opened (the openai floor's aiohttp session)."""

    # Like swarmcore's run, which returns every agent's result, the floor keeps the
    # responses it got until its workload ends: a program keeps what it asked for.
    async def diamond(self) -> list[Any]:
        first = await self.call(instructions("a"))
        middle = await asyncio.gather(self.call(instructions("b")), self.call(instructions("c")))
        return [first, *middle, await self.call(instructions("d"))]

    async def fan_out(self, workers: Sequence[str]) -> list[Any]:
        answers = await asyncio.gather(*(self.call(instructions(w)) for w in workers))
        return [*answers, await self.call(instructions("merge"))]


class Floor(Replay):
    """The LiteLLM floor: ``litellm.acompletion`` with the kwargs swarmcore passes, nothing else."""

    def __init__(self, lit: ModuleType, api_base: str, payloads: Payloads) -> None:
        super().__init__(payloads)
        self._lit = lit
        self._api_base = api_base

    async def call(self, key: str) -> Any:
        payload = self.payloads[key]
        kwargs: dict[str, Any] = {
            "model": MODEL,
            # Fresh message dicts per call, as each swarmcore agent run builds its own.
            "messages": [dict(m) for m in payload["messages"]],
            "num_retries": 0,
            "max_retries": 0,
            "api_base": self._api_base,
            "api_key": API_KEY,
            "timeout": CALL_TIMEOUT,
        }
        if payload["tools"]:
            kwargs["tools"] = list(payload["tools"])
        return await self._lit.acompletion(**kwargs)


class OpenAIFloor(Replay):
    """The openai floor: one ``AsyncOpenAI`` client, ``chat.completions.create``, nothing else.

    The body is what swarmcore's native backend sends (the model's name without
    LiteLLM's ``openai/`` prefix, the messages, the tools) and the same per-call
    timeout; the client is the SDK at its fastest: no SDK retries, and the SDK's
    ``DefaultAioHttpClient`` (aiohttp's pool, as the native backend's, not httpx's,
    whose pool costs several times the CPU per call at a hundred calls in flight).
    """

    def __init__(self, api_base: str, payloads: Payloads) -> None:
        super().__init__(payloads)
        import openai

        self._client: Any = openai.AsyncOpenAI(
            base_url=api_base,
            api_key=API_KEY,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(),
        )

    async def call(self, key: str) -> Any:
        payload = self.payloads[key]
        kwargs: dict[str, Any] = {
            "model": MODEL.removeprefix("openai/"),
            "messages": [dict(m) for m in payload["messages"]],
            "timeout": CALL_TIMEOUT,
        }
        if payload["tools"]:
            kwargs["tools"] = list(payload["tools"])
        return await self._client.chat.completions.create(**kwargs)

    async def aclose(self) -> None:
        await self._client.close()


def instructions(name: str) -> str:
    """Each agent's instructions; their first line keys the captured payloads."""
    return f"You are {name}, one step of a benchmark flow."


def bench_agent(
    name: str, api_base: str, backend: str | None = None, api: ApiName | None = None
) -> Agent:
    """An agent of the workloads; ``backend`` (``"litellm"``) forces one, else swarmcore picks
    (native for this model, or what ``SWARMCORE_MODEL_BACKEND`` says); ``api`` (``"responses"``)
    has the native backend speak OpenAI's Responses API instead of chat completions."""
    from swarmcore import Agent

    return Agent(
        name,
        instructions(name),
        model=MODEL,
        api_base=api_base,
        api_key=API_KEY,
        backend="litellm" if backend == "litellm" else None,
        api=api,
    )


def diamond_swarm(api_base: str, backend: str | None = None, api: ApiName | None = None) -> Swarm:
    from swarmcore import Swarm

    a, b, c, d = (bench_agent(n, api_base, backend, api) for n in "abcd")
    return Swarm(a >> (b | c) >> d)


def replay(side: Side, api_base: str, payloads: Payloads) -> Replay:
    """A floor side (``floor`` or ``openai``) replaying ``payloads``."""
    if side == "openai":
        return OpenAIFloor(api_base, payloads)
    return Floor(load_litellm(), api_base, payloads)


def worker_names(n: int) -> list[str]:
    return [f"worker_{i:03d}" for i in range(1, n + 1)]


def fan_out_swarm(api_base: str, n: int, backend: str | None = None) -> Swarm:
    from swarmcore import Swarm, parallel

    members = [bench_agent(w, api_base, backend) for w in worker_names(n)]
    return Swarm(parallel(*members) >> bench_agent("merge", api_base, backend))


async def capture(server: ServerProcess, run: Callable[[], Awaitable[object]]) -> Payloads:
    """Run swarmcore once (untimed) while the server records every request's payload."""
    server.call("POST", "/capture/on")
    try:
        await run()
    finally:
        server.call("POST", "/capture/off")
    captured: Payloads = server.call("GET", "/captured")
    return captured


async def warm_up(side: Side, api_base: str) -> None:
    """One plain call and one with tools through a floor (``floor``: litellm, which imports
    mcp on its first tools= call; ``openai``: the SDK, whose first call builds its types)."""
    tool: dict[str, Any] = {
        "type": "function",
        "function": {"name": "noop", "description": "Nothing.", "parameters": {"type": "object"}},
    }
    messages = [{"role": "system", "content": "warm up"}, {"role": "user", "content": "hi"}]
    payloads: Payloads = {
        "plain": {"messages": messages, "tools": []},
        "tools": {"messages": messages, "tools": [tool]},
    }
    floor = replay(side, api_base, payloads)
    await floor.call("plain")
    await floor.call("tools")
    await floor.aclose()


# --- measuring ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    wall: float
    cpu: float
    calls: int
    maxrss_kb: int = 0
    gc_cpu: float = 0.0
    """CPU seconds the cyclic garbage collector took, out of ``cpu``."""

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu / self.calls * 1000

    @property
    def gc_ms_per_call(self) -> float:
        return self.gc_cpu / self.calls * 1000


class GCClock:
    """CPU time spent in the cyclic GC (through ``gc.callbacks``), since ``reset``.

    Both sides pay for collections their allocations trigger, and at high concurrency
    that is a visible share of a call's CPU: the row shows how much.
    """

    def __init__(self) -> None:
        self.total = 0.0
        self._started = 0.0
        gc.callbacks.append(self._phase)

    def _phase(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.total += time.process_time() - self._started


GC_CLOCK = GCClock()


def settle_gc() -> None:
    """Collect, then freeze what survives (litellm's ~2,600 modules) out of the GC's sight.

    Applied in every process after the warm-up, and again once a workload is set up
    (a W2 fan-out, the one-process row), to both sides alike: a full collection over
    litellm's heap costs ~0.2 s, and one landing inside a single measurement would
    swamp a 0.6 s workload. Objects the workloads create while timed are collected as
    usual.
    """
    gc.collect()
    gc.freeze()


async def measure(
    work: Callable[[], Awaitable[object]], calls: int, *, collect: bool = True
) -> Sample:
    """One timed run of ``work``: its wall time, and the CPU (and GC) time per call.

    ``collect`` runs a full collection first, untimed, so that one side's garbage is
    not collected on the other's clock: for two sides in one process. A worker
    process runs one side only and passes ``collect=False``: there, a collection
    before each measurement would take one full collection off the clock and
    restart the collector's schedule, so a batch would get its full collections at
    fixed points of its own allocations, one or two depending on which side of
    such a point it ends, where a long-running process pays them in proportion to
    what it allocates. (W3 K=200, 14 batches a side: 1.6 full collections a batch
    for swarmcore against 1.2 for the floor with a collection first, 2.0 against
    1.9 without; each costs ~1.5 % of the batch's CPU.)
    """
    if collect:
        gc.collect()
    cpu0, t0, gc0 = time.process_time(), time.perf_counter(), GC_CLOCK.total
    await work()
    wall = time.perf_counter() - t0
    await settle()
    cpu = time.process_time() - cpu0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return Sample(wall, cpu, calls, rss, GC_CLOCK.total - gc0)


@dataclass(slots=True)
class Best:
    """Best of several repetitions: lowest wall and lowest CPU, each on its own."""

    wall: float = float("inf")
    cpu_ms_per_call: float = float("inf")
    maxrss_kb: int = 0
    walls: list[float] = field(default_factory=list[float])
    cpus: list[float] = field(default_factory=list[float])
    gcs: list[float] = field(default_factory=list[float])

    @property
    def gc_ms_per_call(self) -> float:
        """Median over the repetitions: collections land in some and not others."""
        return statistics.median(self.gcs)

    def add(self, sample: Sample) -> None:
        self.walls.append(sample.wall)
        self.cpus.append(sample.cpu_ms_per_call)
        self.gcs.append(sample.gc_ms_per_call)
        self.wall = min(self.wall, sample.wall)
        self.cpu_ms_per_call = min(self.cpu_ms_per_call, sample.cpu_ms_per_call)
        self.maxrss_kb = max(self.maxrss_kb, sample.maxrss_kb)


def spread(*series: Sequence[float]) -> float:
    """How far the repetitions of a side scattered: (max - min) / min, the worse side's."""
    return max((max(s) - min(s)) / min(s) for s in series if s)


def by_side(values: Sequence[_V]) -> dict[Side, _V]:
    """Values listed in the order of ``SIDES``, by side."""
    return dict(zip(SIDES, values, strict=True))


def turn_order(shift: int, count: int) -> list[int]:
    """The order ``count`` sides take their turns in: rotated by ``shift`` (the repetition),
    so each side goes first as often as the others (two sides: they alternate)."""
    first = shift % count
    return [*range(first, count), *range(first)]


async def interleaved(
    reps: int, works: Sequence[Callable[[], Awaitable[object]]], calls: int
) -> list[Best]:
    """Each side's repetitions (by place in ``works``), the sides taking turns."""
    bests = [Best() for _ in works]
    for rep in range(reps):
        for place in turn_order(rep, len(works)):
            bests[place].add(await measure(works[place], calls))
    return bests


# --- the table ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    workload: str
    swarmcore: str
    floor: str = "-"
    ideal: str = "-"
    ratio: str = "-"
    paired: str = "-"
    interval: str = "-"
    spread: str = "-"
    target: str = "-"
    ok: str = "-"

    def cells(self) -> list[str]:
        return [
            self.workload,
            self.swarmcore,
            self.floor,
            self.ideal,
            self.ratio,
            self.paired,
            self.interval,
            self.spread,
            self.target,
            self.ok,
        ]


def ratio_row(
    workload: str,
    sc: float,
    fl: float,
    unit: str,
    *,
    ideal: str = "-",
    limit: float | None = 1.05,
    digits: int = 2,
    series: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Row:
    """A side-by-side row; with the repetitions' ``series`` (swarmcore's, the floor's, in
    the order they ran) the verdict reads the paired median, else the best-of ratio."""
    ratio = sc / fl if fl else float("inf")
    pair = paired(*series) if series else None
    low, high = paired_interval(*series) if series else (None, None)
    verdict = pair if pair is not None else ratio
    target = f"≤{limit:.2f}" if limit is not None else "-"
    ok = "-" if limit is None else ("yes" if verdict <= limit else "NO")
    return Row(
        workload,
        f"{sc:.{digits}f} {unit}",
        f"{fl:.{digits}f} {unit}",
        ideal,
        f"{ratio:.2f}",
        f"{pair:.3f}" if pair is not None else "-",  # the verdict's own number, not rounded past it
        f"{low:.2f}-{high:.2f}" if low is not None and high is not None else "-",
        f"{spread(*series):.0%}" if series else "-",
        target,
        ok,
    )


def wall_row(workload: str, sc: Best, fl: Best, ideal: float) -> Row:
    """Best wall time of each side against the ideal (the latency the workload must wait)."""
    series = (sc.walls, fl.walls)
    return ratio_row(workload, sc.wall, fl.wall, "s", ideal=f"{ideal:.2f} s", series=series)


def gc_row(workload: str, sc: Best, fl: Best) -> Row:
    """CPU per call the cyclic GC took (median repetition): part of the CPU/call row above."""
    return ratio_row(workload, sc.gc_ms_per_call, fl.gc_ms_per_call, "ms", limit=None)


def wall_rows(label: str, best: Mapping[Side, Best], ideal: float) -> list[Row]:
    """Wall rows of each swarmcore side against its own floor."""
    return [
        wall_row(f"{label}, {c.label}", best[c.side], best[c.floor], ideal)
        for c in WALL_COMPARISONS
    ]


def cpu_rows(label: str, best: Mapping[Side, Best]) -> list[Row]:
    """CPU per call, one row a comparison (``COMPARISONS``), each with its target."""
    return [
        ratio_row(
            f"{label}, {c.label}",
            best[c.side].cpu_ms_per_call,
            best[c.floor].cpu_ms_per_call,
            "ms",
            limit=c.cpu_limit,
            series=(best[c.side].cpus, best[c.floor].cpus),
        )
        for c in COMPARISONS
    ]


def gc_rows(label: str, best: Mapping[Side, Best]) -> list[Row]:
    return [gc_row(f"{label}, {c.label}", best[c.side], best[c.floor]) for c in WALL_COMPARISONS]


def paired(swarmcore: Sequence[float], floor: Sequence[float]) -> float:
    """Median of the per-repetition ratios: repetition i of each side ran back to back, so
    a machine that slows down for a while slows both halves of a pair alike."""
    return statistics.median(s / f for s, f in zip(swarmcore, floor, strict=True) if f)


def paired_interval(
    swarmcore: Sequence[float], floor: Sequence[float], level: float = 0.9
) -> tuple[float, float]:
    """A bootstrap interval of the paired median (``level`` of it; seeded, so reruns of
    one table agree): how far the verdict could move on this machine's noise."""
    ratios = [s / f for s, f in zip(swarmcore, floor, strict=True) if f]
    rng = random.Random(0)
    medians = sorted(
        statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(BOOTSTRAP)
    )
    tail = int(BOOTSTRAP * (1 - level) / 2)
    return medians[tail], medians[-tail - 1]


def render(rows: Sequence[Row]) -> str:
    header = Row(
        "workload",
        "swarmcore",
        "floor",
        "ideal",
        "ratio",
        "paired",
        "90% CI",
        "spread",
        "target",
        "ok",
    )
    cells = [r.cells() for r in (header, *rows)]
    columns = len(cells[0])
    widths = [max(len(c[i]) for c in cells) for i in range(columns)]
    lines: list[str] = []
    for index, c in enumerate(cells):
        parts = [c[0].ljust(widths[0])] + [c[i].rjust(widths[i]) for i in range(1, columns)]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


# --- workloads in this process: W1, W2, prompt tokens -----------------------------------


WORKLOADS = frozenset(
    {
        "w1",
        "w2",
        "w3",
        "responses",
        "alone",
        "settings",
        "tokens",
        "import",
        "bursts",
        "context",
    }
)
RESPONSES_CPU_LIMIT = 1.20
"""The native backend's CPU per call on the Responses API, at most this times chat completions'."""


@dataclass(slots=True)
class Config:
    latency: float
    reps: int
    fan_outs: tuple[int, ...]
    concurrency: tuple[int, ...]
    chains: tuple[int, ...]
    profile: bool
    only: frozenset[str] = WORKLOADS
    """The workloads to run (``--only``); all of them by default."""
    floor_cpu: dict[str, float] = field(default_factory=dict[str, float])
    """The floor's CPU ms per call of the shapes ``alone_rows`` measures, once they ran."""
    loop: str = "?"
    """The event loop class both sides ran on (asyncio.run's default, here and in workers)."""
    one_process_pairs: int = 0
    """Pairs of W3 K=50 batches run with both sides in the driver's process (0: none)."""
    w2_rounds: int = W2_ROUNDS
    """Fan-outs per W2 measurement at 100 <= N < 500 (1 with ``--quick``)."""
    responses_rounds: int = 20
    """W3 K=50 batches of each API in the Responses row (4 with ``--quick``)."""


async def in_process(
    server: ServerProcess, cfg: Config
) -> tuple[list[Row], Payloads, dict[str, Payloads], str]:
    """W1, chain tokens (and the profile), on one loop; returns the rows and the payloads
    swarmcore sent in the diamond and in each W2 fan-out (by N), for the floors to replay.
    The litellm side forces its backend per agent here (``model_settings``), as this
    process runs all four sides."""
    cfg.loop = type(asyncio.get_running_loop()).__name__
    lit = load_litellm()
    from swarmcore import llm

    assert llm.load_litellm() is lit  # one litellm module, configured once, for both sides
    api = server.api_base
    await warm_up("floor", api)
    await warm_up("openai", api)
    settle_gc()
    L = cfg.latency
    rows: list[Row] = []
    fan_outs: dict[str, Payloads] = {}

    native, on_litellm = diamond_swarm(api), diamond_swarm(api, "litellm")
    payloads = await capture(server, lambda: native.run(TASK))
    floor, openai_floor = Floor(lit, api, payloads), OpenAIFloor(api, payloads)
    diamonds: dict[Side, Callable[[], Awaitable[object]]] = {
        "native": lambda: native.run(TASK),
        "litellm": lambda: on_litellm.run(TASK),
        "floor": floor.diamond,
        "openai": openai_floor.diamond,
    }
    for diamond in diamonds.values():
        await diamond()  # each side's own untimed first run
    if "w1" in cfg.only:
        progress("W1 diamond")
        bests = await interleaved(cfg.reps, [diamonds[s] for s in SIDES], 4)
        rows += wall_rows(f"W1 diamond wall (L={L:.2f}s)", by_side(bests), 3 * L)

    for n in cfg.fan_outs if "w2" in cfg.only else ():  # W2 runs in the workers, with W3
        swarm = fan_out_swarm(api, n)
        fan_outs[str(n)] = await capture(server, lambda s=swarm: s.run(TASK))

    if "w3" in cfg.only and cfg.one_process_pairs:
        # The W3 CPU question with the least noise: all sides in one process (no
        # process's luck in it), many back-to-back rounds. No verdict: W3's rows below
        # are the benchmark's; these rows say how far their noise can be trusted.
        k, pairs = ONE_PROCESS_K, cfg.one_process_pairs
        progress(f"W3 K={k} in this process, {pairs} rounds")
        settle_gc()  # the swarms and payloads set up since the first freeze, as in a worker
        bests = await interleaved(pairs, [batch(diamonds[s], k) for s in SIDES], 4 * k)
        label = f"W3 K={k} CPU/call, one process, {pairs} rounds"
        cpu = cpu_rows(label, by_side(bests))
        rows += [replace(row, target="-", ok="-") for row in cpu]

    if "responses" in cfg.only:
        rows.append(await responses_row(server, cfg, diamonds["native"]))

    if "tokens" in cfg.only:
        progress("prompt tokens of chains (offline FunctionModel)")
        rows.extend(await chain_token_rows(cfg.chains))
        progress("whole runs in each mode (examples/pull_vs_push.py)")
        rows.extend(await whole_run_token_rows())
        progress("chains done")
    profile = await profile_w3(server, payloads, 50) if cfg.profile else ""
    await openai_floor.aclose()
    return rows, payloads, fan_outs, profile


def batch(diamond: Callable[[], Awaitable[object]], k: int) -> Callable[[], Awaitable[object]]:
    """W3's work: ``k`` diamond runs at once."""

    async def run() -> None:
        await asyncio.gather(*(diamond() for _ in range(k)))

    return run


async def responses_row(
    server: ServerProcess, cfg: Config, chat: Callable[[], Awaitable[object]]
) -> Row:
    """CPU per call of the native backend on OpenAI's Responses API against chat completions.

    The same diamond, its agents choosing ``api="responses"``, against the native side's
    own diamond (chat completions), both in this process as W3 K=50 batches taking turns
    (``cfg.responses_rounds`` of each); the server answers both APIs with the same reply.
    The issue's target: within 1.2x of chat completions.
    """
    on_responses = diamond_swarm(server.api_base, api="responses")
    before = server.call("GET", "/stats")["served_responses"]
    await on_responses.run(TASK)  # its own untimed first run
    sent = server.call("GET", "/stats")["served_responses"] - before
    if sent != 4:  # a row about the Responses API must have spoken it
        raise RuntimeError(f"the Responses diamond sent {sent} requests to /responses, not 4")
    k, rounds = ONE_PROCESS_K, cfg.responses_rounds
    progress(f"W3 K={k} on the Responses API against chat completions, {rounds} rounds")
    settle_gc()
    chat_best, responses_best = await interleaved(
        rounds, [batch(chat, k), batch(lambda: on_responses.run(TASK), k)], 4 * k
    )
    return ratio_row(
        f"W3 K={k} CPU/call, native Responses API / chat completions ({rounds} rounds)",
        responses_best.cpu_ms_per_call,
        chat_best.cpu_ms_per_call,
        "ms",
        limit=RESPONSES_CPU_LIMIT,
        series=(responses_best.cpus, chat_best.cpus),
    )


def chain_answer(request: RecordedRequest) -> str:
    """~1,500 characters of text and a summary, never a tool call."""
    name = request.system.split()[0] if request.system.strip() else "agent"
    sentences: list[str] = []
    index = 0
    while sum(len(s) + 1 for s in sentences) < 1450:
        index += 1
        sentences.append(
            f"{name} fact {index}: tea moved along trade route {index} and shaped the customs, "
            f"prices and rituals of the towns it reached."
        )
    body = " ".join(sentences)
    return f"{body}\n<summary>{name} added {index} facts about tea trade routes.</summary>"


async def chain_tokens(length: int, mode: Literal["pull", "push"]) -> dict[int, int]:
    """Prompt tokens of the first model call of agents 2, 5, 20, 50 (those that exist)."""
    from swarmcore import Agent, Swarm, chain
    from swarmcore.events import Event, ModelCallFinished
    from swarmcore.testing import FunctionModel

    model = FunctionModel(chain_answer)
    names = [f"agent_{i:02d}" for i in range(1, length + 1)]
    flow = chain(
        *(Agent(n, f"{n} adds one fact about the topic.", model=model.model) for n in names)
    )
    first: dict[str, int] = {}

    def record(event: Event) -> None:
        if isinstance(event, ModelCallFinished) and event.turn == 1 and event.usage is not None:
            first.setdefault(event.agent_name, event.usage.prompt_tokens)

    swarm = Swarm(flow, context_mode=mode, hooks=[record])
    await swarm.run(CHAIN_TASK)
    return {k: first[names[k - 1]] for k in TOKEN_POSITIONS if k <= length}


async def chain_token_rows(chains: Sequence[int]) -> list[Row]:
    rows: list[Row] = []
    modes: tuple[Literal["pull", "push"], ...] = ("pull", "push")
    for mode in modes:
        for length in chains:
            tokens = await chain_tokens(length, mode)
            shown = "  ".join(f"k{k}={t}" for k, t in tokens.items())
            last = max(tokens)
            ratio = tokens[last] / tokens[2]
            # The target (≤1.5) is for pull at the longest chain; push is shown for contrast.
            gated = mode == "pull" and length == max(chains)
            rows.append(
                Row(
                    f"prompt tokens {mode} chain={length}",
                    shown,
                    ratio=f"{ratio:.2f}",
                    target="≤1.50" if gated else "-",
                    ok=("yes" if ratio <= 1.5 else "NO") if gated else "-",
                )
            )
    return rows


async def whole_run_token_rows() -> list[Row]:
    """Prompt tokens of whole runs, pull and push: the flows of examples/pull_vs_push.py.

    The example is loaded from its file, so this row and the example (and the
    context-modes page that quotes it) measure the same flows on the same offline
    models. ``ratio`` is push / pull: over 1 where pull sent fewer prompt tokens.
    """
    from swarmcore.testing import offline_model

    path = HERE.parent / "examples" / "pull_vs_push.py"
    spec = importlib.util.spec_from_file_location("pull_vs_push", path)
    assert spec is not None
    assert spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # its dataclasses look their module up
    spec.loader.exec_module(example)
    rows: list[Row] = []
    for label, build, needs in example.FLOWS:
        measured = await example.run_both(build, offline_model(), needs)
        pull, push = measured["pull"], measured["push"]
        rows.append(
            Row(
                f"prompt tokens in all, {label}",
                f"pull={pull.prompt:,}/{pull.calls} calls  push={push.prompt:,}/{push.calls} calls",
                ratio=f"{push.prompt / pull.prompt:.2f}",
            )
        )
    return rows


# --- W3 and W2: K concurrent diamonds, N-wide fan-outs, in worker processes of each side ----
#
# Each side runs in long-lived worker processes (this script with --worker), and the driver
# alternates the sides command by command. Why: ru_maxrss is a per-process high-water mark,
# so only separate processes give each side its own peak; all workers start equally fresh
# (same imports, same warm-up), and K rises monotonically, so the peak read after a K is that
# K's peak. Idle workers wait on their stdin and use no CPU while another one measures.
# Each repetition runs on a pair of workers of its own (the repetitions rotate over the pairs
# only beyond W3_PROCESSES): two processes running the same code differ by a few per cent of
# CPU per call, from where their memory landed and their hash seed (measured: 1-4 % for one
# side; the swarmcore/floor ratio at K=200, both sides in one process, read 1.03-1.08 across
# 8 processes), so a pair of processes is a sample, as pyperf treats them, and the paired
# median is taken over as many pairs as there are repetitions.


def w3_pairs(cfg: Config) -> int:
    """How many sets of worker processes (one a side) W3 starts: one per repetition, up to
    W3_PROCESSES."""
    return min(cfg.reps, W3_PROCESSES)


class Worker:
    """A W3 worker: started early so its imports overlap this process's; timed only later."""

    def __init__(self, side: Side, api_base: str) -> None:
        self.side = side
        env = dict(os.environ)
        env.pop(BACKEND_ENV, None)  # native: swarmcore's default choice, as a user gets it
        if side == "litellm":
            env[BACKEND_ENV] = "litellm"
        self._proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                side,
                "--api-base",
                api_base,
            ],
            stdin=subprocess.PIPE,  # a worker exits when its stdin closes
            stdout=subprocess.PIPE,
            text=True,
            process_group=0,  # Ctrl-C reaches only the driver, which stops the workers
            env=env,
        )

    def start(self, payloads: Payloads, fan_outs: Mapping[str, Payloads]) -> None:
        """Hand over the diamond's and the fan-outs' payloads; the worker warms up (``ready``)."""
        self.send({"payloads": payloads, "fan_outs": fan_outs})

    def ready(self) -> int:
        """Wait for the warm-up to end; returns the RSS (KB) before the workload first ran."""
        return int(self.receive()["rss_kb"])

    def send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message) + "\n")
        self._proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(PROTOCOL):
                answer: dict[str, Any] = json.loads(line[len(PROTOCOL) :])
                return answer
        raise RuntimeError(f"W3 {self.side} worker exited (code {self._proc.wait()})")

    def run(self, workload: Mapping[str, int]) -> Sample:
        """One measurement: ``{"k": K}`` (W3) or ``{"n": N, "rounds": R}`` (W2)."""
        self.send(dict(workload))
        return Sample(**self.receive())

    def stop(self) -> None:
        if self._proc.poll() is None:
            try:
                self.send({"quit": True})
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()


def worker_rows(
    cfg: Config, workers: Sequence[Worker], payloads: Payloads, fan_outs: Mapping[str, Payloads]
) -> tuple[list[Row], list[Row]]:
    """W2's and W3's rows, measured in ``workers`` (sets of one worker a side): repetition
    i of every workload runs on set i mod their number. W3 goes first, so its peak RSS
    rows are its own, not a fan-out's; the floor's control (a W3 row) goes last."""
    try:
        for w in workers:  # all warm up at once: untimed
            w.start(payloads, fan_outs)
        baseline = {id(w): w.ready() for w in workers}
        sets = list(zip(*([w for w in workers if w.side == s] for s in SIDES), strict=True))

        def measure_on(
            workload: Mapping[str, int], on: Sequence[Sequence[Worker]] = sets
        ) -> tuple[list[Best], list[int]]:
            """Each place's repetitions (a side, by its place in the sets), and the
            largest rise of a worker's peak RSS, by place."""
            count = len(on[0])
            best = [Best() for _ in range(count)]
            growth = [0] * count
            for rep in range(cfg.reps):
                group = on[rep % len(on)]
                # The sides take turns going first, and a revisited set shifts too.
                for place in turn_order(rep + rep // len(on), count):
                    sample = group[place].run(workload)
                    best[place].add(sample)
                    rise = sample.maxrss_kb - baseline[id(group[place])]
                    growth[place] = max(growth[place], rise)
            return best, growth

        w3: list[Row] = []
        for k in cfg.concurrency if "w3" in cfg.only else ():
            progress(f"W3 K={k}")
            best, growth = measure_on({"k": k})
            w3 += w3_rows(cfg, k, by_side(best), by_side(growth))
        w2: list[Row] = []
        for n in cfg.fan_outs if "w2" in cfg.only else ():
            progress(f"W2 fan-out N={n}")
            rounds = cfg.w2_rounds if 100 <= n < 500 else 1  # only its CPU row needs them
            best, _ = measure_on({"n": n, "rounds": rounds})
            w2 += w2_rows(cfg, n, by_side(best))
        if "w3" in cfg.only and len(sets) > 1:
            # The LiteLLM floor against itself, last (so W2's floor workers ran what the
            # others did): each set's floor worker against the next set's, measured as
            # W3's rows are. What it reads beside 1.00 is this run's noise.
            k = max(cfg.concurrency)
            progress(f"W3 K={k}, the floor against itself (a control)")
            floors = [group[SIDES.index("floor")] for group in sets]
            against = list(zip(floors, floors[1:] + floors[:1], strict=True))
            (a, b), _ = measure_on({"k": k}, against)
            w3.append(control_row(k, a, b))
        return w2, w3
    finally:
        for w in workers:
            w.stop()


def w2_rows(cfg: Config, n: int, best: Mapping[Side, Best]) -> list[Row]:
    rows = wall_rows(f"W2 N={n} wall", best, 2 * cfg.latency)
    if n >= 100:  # a smaller fan-out spends too little CPU to measure it well
        rows += cpu_rows(f"W2 N={n} CPU/call", best)
        if n == stub_shapes(cfg)["fan_out"]:
            cfg.floor_cpu["fan_out"] = best["floor"].cpu_ms_per_call
        rows += gc_rows(f"W2 N={n} of which GC", best)
    return rows


def w3_rows(
    cfg: Config, k: int, best: Mapping[Side, Best], growth: Mapping[Side, int]
) -> list[Row]:
    L = cfg.latency
    rows = wall_rows(f"W3 K={k} wall", best, 3 * L)
    native, openai_floor = best["native"], best["openai"]
    rows.append(
        ratio_row(
            f"W3 K={k} runs/s, native / openai floor",
            k / native.wall,
            k / openai_floor.wall,
            "/s",
            ideal=f"{k / (3 * L):.1f} /s",
            limit=None,
            digits=1,
        )
    )
    rows += cpu_rows(f"W3 K={k} CPU/call", best)
    rows += gc_rows(f"W3 K={k} of which GC", best)
    if k == stub_shapes(cfg)["diamond"]:
        cfg.floor_cpu["diamond"] = best["floor"].cpu_ms_per_call
    for c in COMPARISONS:
        sc_mb, fl_mb = best[c.side].maxrss_kb / 1024, best[c.floor].maxrss_kb / 1024
        row = ratio_row(
            f"W3 K={k} peak RSS, {c.label}", sc_mb, fl_mb, "MB", limit=c.rss_limit, digits=0
        )
        # A peak is one number a side (the largest over its workers): no pairs, no interval.
        rows.append(
            replace(
                row,
                swarmcore=f"{row.swarmcore} (+{growth[c.side] / 1024:.0f})",
                floor=f"{row.floor} (+{growth[c.floor] / 1024:.0f})",
            )
        )
    return rows


def control_row(k: int, a: Best, b: Best) -> Row:
    """W3's CPU row with the LiteLLM floor on both sides, in different processes: no target,
    as its ratio is 1 but for the noise the other rows' verdicts read through."""
    label = f"W3 K={k} CPU/call, the floor against itself (a control)"
    series = (a.cpus, b.cpus)
    return ratio_row(label, a.cpu_ms_per_call, b.cpu_ms_per_call, "ms", limit=None, series=series)


def worker_main(side: Side, api_base: str) -> None:
    asyncio.run(_worker(side, api_base, sys.stdin, sys.stdout))


async def _worker(side: Side, api_base: str, stdin: IO[str], stdout: IO[str]) -> None:
    def reply(message: dict[str, Any]) -> None:
        stdout.write(PROTOCOL + json.dumps(message) + "\n")
        stdout.flush()

    async def command() -> dict[str, Any]:
        line = await asyncio.to_thread(stdin.readline)  # the loop stays free for litellm's tasks
        return json.loads(line) if line else {"quit": True}

    # Each side imports what it runs on, and nothing more: its memory is its own.
    if side in ("litellm", "floor"):
        load_litellm()
    if side in SWARMCORE_SIDES:
        importlib.import_module("swarmcore")
    if side == "openai":
        importlib.import_module("openai")
    reply({"loaded": True})
    message = await command()
    if message.get("quit"):
        return
    loads = _WorkerLoads(side, api_base, message["payloads"], message["fan_outs"])
    if side == "native":
        await loads.diamond()  # its warm-up: the first run imports the SDK and builds a client
    else:
        await warm_up("openai" if side == "openai" else "floor", api_base)
    settle_gc()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(2):  # untimed runs of the workload itself
        await loads.diamond()
    if side in ("native", "openai") and "litellm" in sys.modules:
        raise RuntimeError(f"the {side} worker imported litellm: it would measure LiteLLM")
    reply({"rss_kb": baseline})
    while not (message := await command()).get("quit"):
        sample, rounds = await loads.measure(message)
        reply(
            {
                "wall": sample.wall / rounds,
                "cpu": sample.cpu,
                "calls": sample.calls,
                "maxrss_kb": sample.maxrss_kb,
                "gc_cpu": sample.gc_cpu,
            }
        )
    for floor in loads.floors:
        await floor.aclose()


class _WorkerLoads:
    """A worker's workloads: the W3 diamond, and W2's fan-outs built on first use."""

    def __init__(
        self, side: Side, api_base: str, payloads: Payloads, fan_out_payloads: dict[str, Payloads]
    ) -> None:
        self._side: Side = side
        self._api = api_base
        self._fan_out_payloads = fan_out_payloads
        self._fan_outs: dict[int, Callable[[], Awaitable[object]]] = {}
        self.floors: list[Replay] = []
        """The floors this worker opened, to close when it quits."""
        if side in SWARMCORE_SIDES:
            swarm = diamond_swarm(api_base)  # its backend: the worker's environment's
            self.diamond: Callable[[], Awaitable[object]] = lambda: swarm.run(TASK)
        else:
            floor = replay(side, api_base, payloads)
            self.floors.append(floor)
            self.diamond = floor.diamond

    async def measure(self, message: Mapping[str, Any]) -> tuple[Sample, int]:
        """One measurement, ``{"k": K}`` (W3) or ``{"n": N, "rounds": R}`` (W2), and the
        rounds it ran."""
        if "n" in message:  # W2: a fan-out of n agents and its merge
            n = int(message["n"])
            fan_out = await self._fan_out(n)
            rounds = int(message["rounds"])

            async def fan_outs() -> None:
                for _ in range(rounds):
                    await fan_out()

            return await measure(fan_outs, (n + 1) * rounds, collect=False), rounds
        k = int(message["k"])
        # A lone diamond is 4 calls, too little CPU to read against the noise: at small K
        # the batch runs several times in a row, and wall is reported per batch.
        rounds = W3_ROUNDS if k < 10 else 1

        async def batches() -> None:
            for _ in range(rounds):
                await asyncio.gather(*(self.diamond() for _ in range(k)))

        return await measure(batches, 4 * k * rounds, collect=False), rounds

    async def _fan_out(self, n: int) -> Callable[[], Awaitable[object]]:
        """W2's workload of width n, run once untimed on first use: after W3, whose peak
        RSS it would otherwise raise. What it set up is then frozen out of the collector's
        sight, as W3's diamond was before W3 (a Swarm of 101 agents is thousands of
        objects each full collection would walk, where a program's collections also walk
        litellm's ~300,000)."""
        if n not in self._fan_outs:
            if self._side in SWARMCORE_SIDES:
                wide = fan_out_swarm(self._api, n)
                self._fan_outs[n] = lambda: wide.run(TASK)
            else:
                floor = replay(self._side, self._api, self._fan_out_payloads[str(n)])
                self.floors.append(floor)
                names = worker_names(n)
                self._fan_outs[n] = lambda: floor.fan_out(names)
            await self._fan_outs[n]()
            settle_gc()
        return self._fan_outs[n]


# --- below the floor: litellm's own settings ---------------------------------------------

LITELLM_SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("defaults", {}),
    # The defaults in a process of their own, measured like a setting: how far these rows
    # move when nothing changes. (``litellm.logging = False``, once a row here, is read
    # nowhere in litellm 1.106: it was such a control, reading 0.82-0.97.)
    ("defaults again (a control)", {}),
    ("turn_off_message_logging=True", {"turn_off_message_logging": True}),
    (
        "token counter, end-user cost off",
        {"disable_token_counter": True, "disable_end_user_cost_tracking": True},
    ),
    ("httpx, not aiohttp", {"disable_aiohttp_transport": True}),
)
SETTINGS_K = 50
SETTINGS_ROUNDS = 4
"""Rounds of one fresh process per setting; each round starts at a different setting."""


def settings_rows(api_base: str, payloads: Payloads) -> list[Row]:
    """The floor under each litellm setting, each in a fresh process (clients are cached).

    Each round runs every setting once, in an order rotated by one per round
    (``settings_order``): with the defaults always first, ``logging=False``, which
    changes nothing, read 0.82-0.97 of them in three runs, so whatever running first
    costs is spread over all settings. Rows: ``settings_table``.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(payloads, f)
    try:
        rounds: dict[str, list[list[float]]] = {label: [] for label, _ in LITELLM_SETTINGS}
        for r in range(SETTINGS_ROUNDS):
            for index in settings_order(r, len(LITELLM_SETTINGS)):
                label = LITELLM_SETTINGS[index][0]
                progress(f"floor under litellm setting: {label}")
                out = subprocess.run(
                    [
                        sys.executable,
                        str(Path(__file__).resolve()),
                        "--settings-worker",
                        str(index),
                        "--api-base",
                        api_base,
                        "--payloads",
                        f.name,
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                rounds[label].append(json.loads(out.split(PROTOCOL, 1)[1]))
    finally:
        os.unlink(f.name)
    return settings_table(rounds)


def settings_order(round_index: int, count: int) -> list[int]:
    """The settings' indexes in the order round ``round_index`` runs them: rotated by one
    a round, so no setting always runs first."""
    shift = round_index % count
    return [*range(shift, count), *range(shift)]


def settings_table(rounds: Mapping[str, Sequence[Sequence[float]]]) -> list[Row]:
    """One row per setting from its CPU ms per call (``rounds[label][r]``: round r's
    samples). ``paired`` is the median over rounds of the setting's median over the
    defaults' median in the same round; ``ratio`` compares medians of all samples."""
    defaults = [statistics.median(samples) for samples in rounds["defaults"]]
    base = statistics.median(ms for samples in rounds["defaults"] for ms in samples)
    rows: list[Row] = []
    for label, per_round in rounds.items():
        medians = [statistics.median(samples) for samples in per_round]
        ms = statistics.median(x for samples in per_round for x in samples)
        control = label == "defaults"
        low, high = paired_interval(medians, defaults)
        rows.append(
            Row(
                f"floor K={SETTINGS_K}, litellm {label}",
                f"{ms:.2f} ms/call",
                f"{base:.2f} ms/call",
                ratio=f"{ms / base:.2f}",
                paired="-" if control else f"{paired(medians, defaults):.3f}",
                interval="-" if control else f"{low:.2f}-{high:.2f}",
                spread=f"{spread([x for samples in per_round for x in samples]):.0%}",
            )
        )
    return rows


def settings_worker_main(index: int, api_base: str, payloads_path: str) -> None:
    payloads: Payloads = json.loads(Path(payloads_path).read_text())
    asyncio.run(_settings_worker(index, api_base, payloads))


async def _settings_worker(index: int, api_base: str, payloads: Payloads) -> None:
    lit = load_litellm()
    for name, value in LITELLM_SETTINGS[index][1].items():
        setattr(lit, name, value)  # before the first call: litellm caches its clients
    await warm_up("floor", api_base)
    floor = Floor(lit, api_base, payloads)

    async def batch() -> None:
        await asyncio.gather(*(floor.diamond() for _ in range(SETTINGS_K)))

    await batch()  # untimed
    settle_gc()
    samples = [
        (await measure(batch, 4 * SETTINGS_K, collect=False)).cpu_ms_per_call for _ in range(4)
    ]
    print(PROTOCOL + json.dumps(samples), flush=True)


# --- swarmcore alone: the model call stubbed out -----------------------------------------

STUB_REPS = 15


def stub_shapes(cfg: Config) -> dict[str, int]:
    """The stubbed shapes and their sizes: W3's largest K and W2's largest N in this run,
    whose floor CPU per call (``Config.floor_cpu``) puts the stubbed figures in proportion."""
    return {"diamond": max(cfg.concurrency), "fan_out": max(cfg.fan_outs)}


def alone_rows(cfg: Config) -> list[Row]:
    """swarmcore's own CPU per agent run, from a subprocess whose litellm answers instantly.

    That subprocess runs swarmcore on its LiteLLM backend (``SWARMCORE_MODEL_BACKEND=litellm``),
    as every swarmcore did before the native backend: on the native path, which ``openai/...``
    models take by default, the stubbed ``acompletion`` would never be called.

    The floor's CPU per call at the same sizes (``cfg.floor_cpu``, from this run's W3/W2
    rows when they ran) puts it in proportion: the share of a real call's CPU that
    swarmcore adds.
    """
    sizes = stub_shapes(cfg)
    # The stub replaces litellm's acompletion: only the LiteLLM backend calls it.
    env = {**os.environ, BACKEND_ENV: "litellm"}
    out = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--stub-worker",
            "--concurrency",
            str(sizes["diamond"]),
            "--fan-outs",
            str(sizes["fan_out"]),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    measured: dict[str, float] = json.loads(out.split(PROTOCOL, 1)[1])
    labels = {
        "diamond": f"W3 diamond x{sizes['diamond']}",
        "fan_out": f"W2 fan-out N={sizes['fan_out']}",
    }
    rows: list[Row] = []
    for shape, label in labels.items():
        us = measured[shape]
        floor_ms = cfg.floor_cpu.get(shape)
        share = f"{us / (floor_ms * 1000):.1%} of floor" if floor_ms else "-"
        rows.append(
            Row(
                f"swarmcore alone, {label}",
                f"{us:.0f} µs/run",
                f"{floor_ms:.2f} ms/call" if floor_ms else "-",
                ratio=share,
            )
        )
    return rows


def stub_worker_main(k: int, n: int) -> None:
    asyncio.run(_stub_worker(k, n))


async def _stub_worker(k: int, n: int) -> None:
    if os.environ.get(BACKEND_ENV) != "litellm":
        raise RuntimeError(f"the stub worker needs {BACKEND_ENV}=litellm: the stub is litellm's")
    lit = load_litellm()
    reply = lit.ModelResponse(
        model=MODEL,
        choices=[
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Done."},
            }
        ],
        usage={"prompt_tokens": 60, "completion_tokens": 3, "total_tokens": 63},
    )
    # As on a real reply: litellm prices it before returning (swarmcore reads that price).
    reply._hidden_params = {"response_cost": lit.completion_cost(completion_response=reply)}

    # Real calls yield to the loop at least once and finish in no set order: a parallel
    # group's members here finish shuffled (seeded, so every run shuffles alike).
    jitter = random.Random(0)

    async def instant(**kwargs: Any) -> Any:
        for _ in range(1 + jitter.randrange(3)):
            await asyncio.sleep(0)
        return reply

    cast(Any, lit).acompletion = instant  # this process only: nothing else runs here
    api = "http://127.0.0.1:9"  # never contacted: the stub answers
    diamond = diamond_swarm(api)
    wide = fan_out_swarm(api, n)

    async def diamonds() -> None:
        await asyncio.gather(*(diamond.run(TASK) for _ in range(k)))

    async def fan_out() -> None:
        await wide.run(TASK)

    results: dict[str, float] = {}
    for shape, work, runs in (("diamond", diamonds, 4 * k), ("fan_out", fan_out, n + 1)):
        for _ in range(3):  # untimed
            await work()
        settle_gc()
        samples: list[float] = []
        for _ in range(STUB_REPS):
            gc.collect()
            cpu = time.process_time()
            await work()
            samples.append((time.process_time() - cpu) / runs * 1e6)
        results[shape] = statistics.median(samples)
    print(PROTOCOL + json.dumps(results), flush=True)


# --- cold import ---------------------------------------------------------------------------


def _import_ms(statement: str, runs: int) -> tuple[float, bool]:
    """Median wall time of ``statement`` in fresh interpreters, and whether litellm got loaded."""
    code = (
        f"import sys, time; t = time.perf_counter(); {statement}; "
        "d = time.perf_counter() - t; print(d, 'litellm' in sys.modules)"
    )
    times: list[float] = []
    leaked = False
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        times.append(float(out[0]))
        leaked = leaked or out[1] == "True"
    return statistics.median(times) * 1000, leaked


def cold_import_rows(runs: int = 5) -> list[Row]:
    # An installed wheel carries bytecode; an editable checkout under
    # PYTHONDONTWRITEBYTECODE would recompile every module on every start.
    package = Path(__file__).resolve().parents[1] / "src" / "swarmcore"
    compileall.compile_dir(str(package), quiet=1)
    bare, leaked = _import_ms("import swarmcore", runs)
    used, used_leaked = _import_ms("from swarmcore import Agent, Swarm, chain, parallel", runs)
    deps, _ = _import_ms("import asyncio; from pydantic import BaseModel, TypeAdapter", runs)
    return [
        Row(
            f"cold import swarmcore (median of {runs})",
            f"{bare:.0f} ms",
            target="<150 ms",
            ok="yes" if bare < 150 else "NO",
        ),
        Row(
            # What a program imports, beside its dependencies' own import (the floor): for
            # reading, not a verdict; the target is the bare import's (the row above).
            "  ...from swarmcore import Agent, Swarm, ...",
            f"{used:.0f} ms (+{used - deps:.0f})",
            floor=f"{deps:.0f} ms",
            ratio=f"{used / deps:.2f}",
        ),
        Row(
            "  ...imports litellm",
            "yes" if leaked or used_leaked else "no",
            target="no",
            ok="NO" if leaked or used_leaked else "yes",
        ),
    ]


FIRST_CALLS: tuple[tuple[str, str, str | None], ...] = (
    ("swarmcore native", "swarmcore", None),
    ("swarmcore on LiteLLM", "swarmcore", "litellm"),
    ("plain openai", "openai", None),
    ("plain litellm", "litellm", None),
)
"""(label, variant of ``_first_call.py``, ``SWARMCORE_MODEL_BACKEND``) of each first-call row."""
FIRST_CALL_TARGET = 1.0
"""Seconds: swarmcore native's import and first call, together."""


def first_call_rows(api_base: str, runs: int = 5) -> list[Row]:
    """A fresh process's import and first model call, medians of ``runs`` processes each.

    The variants take turns, run by run, so a slow spell of the machine falls on all.
    ``import + call`` is timed inside the child; ``process`` is the child's whole life
    seen from here (interpreter start and exit included).
    """
    package = Path(__file__).resolve().parents[1] / "src" / "swarmcore"
    compileall.compile_dir(str(package), quiet=1)  # as an installed wheel: byte-compiled
    measured: dict[str, list[tuple[float, float, float, bool]]] = {}
    for run in range(runs):
        for place in turn_order(run, len(FIRST_CALLS)):
            label, variant, backend = FIRST_CALLS[place]
            env = dict(os.environ)
            env.pop(BACKEND_ENV, None)
            if backend:
                env[BACKEND_ENV] = backend
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, str(HERE / "_first_call.py"), variant, api_base],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
            process = time.perf_counter() - started
            got: dict[str, Any] = json.loads(out.split(PROTOCOL, 1)[1])
            sample = (float(got["import"]), float(got["call"]), process, bool(got["litellm"]))
            measured.setdefault(label, []).append(sample)
    rows: list[Row] = []
    for label, _, _ in FIRST_CALLS:
        samples = measured[label]
        imp = statistics.median(s[0] for s in samples)
        call = statistics.median(s[1] for s in samples)
        both = statistics.median(s[0] + s[1] for s in samples)
        process = statistics.median(s[2] for s in samples)
        lit = any(s[3] for s in samples)
        gated = label == "swarmcore native"
        rows.append(
            Row(
                f"first call, {label} (median of {runs})",
                f"{both:.2f} s = import {imp:.2f} + call {call:.2f}",
                f"process {process:.2f} s{', litellm loaded' if lit else ''}",
                target=f"<{FIRST_CALL_TARGET:.2f} s" if gated else "-",
                ok=("yes" if both < FIRST_CALL_TARGET and not lit else "NO") if gated else "-",
            )
        )
    return rows


# --- profile (optional) --------------------------------------------------------------------


ProfileKey = tuple[str, int, str]
"""(file, line, function), as pstats keys its entries."""


def _where(key: ProfileKey) -> str:
    path, line, name = key
    if path == "~":
        return name  # a builtin
    return f"{name} ({'/'.join(Path(path).parts[-2:])}:{line})"


def _package(key: ProfileKey) -> str:
    """Who owns a profiled function: a site-packages package, swarmcore, stdlib or builtins."""
    parts = Path(key[0]).parts
    if key[0] == "~":
        return "builtins"
    if _is_swarmcore(key):
        return "swarmcore"
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    return "stdlib" if "benchmarks" not in parts else "benchmark"


def _is_swarmcore(key: ProfileKey) -> bool:
    return f"{os.sep}swarmcore{os.sep}" in key[0]


async def profile_w3(server: ServerProcess, payloads: Payloads, k: int) -> str:
    """cProfile (CPU-time clock) of W3 at K=k, swarmcore native and the openai floor, each
    once; numbers per model call, in µs."""
    swarm = diamond_swarm(server.api_base)
    floor = OpenAIFloor(server.api_base, payloads)

    async def swarmcore_side() -> None:
        await asyncio.gather(*(swarm.run(TASK) for _ in range(k)))

    async def floor_side() -> None:
        await asyncio.gather(*(floor.diamond() for _ in range(k)))

    try:
        return await profile_sides(f"W3 K={k}", swarmcore_side, floor_side, 4 * k)
    finally:
        await floor.aclose()


async def profile_sides(
    label: str,
    swarmcore: Callable[[], Awaitable[object]],
    floor: Callable[[], Awaitable[object]],
    calls: int,
) -> str:
    """Profile one run of each side (after two untimed ones); what swarmcore adds, per call."""
    import cProfile
    import pstats

    sides = {"swarmcore": swarmcore, "floor": floor}
    for _ in range(2):
        for work in sides.values():
            await work()
    raw: dict[str, dict[ProfileKey, tuple[int, int, float, float, Any]]] = {}
    for side, work in sides.items():
        # process_time, not wall time: waiting in epoll is not cost.
        prof = cProfile.Profile(time.process_time)
        gc.collect()
        prof.enable()
        await work()
        await asyncio.sleep(SETTLE)
        prof.disable()
        raw[side] = pstats.Stats(prof).stats  # type: ignore[attr-defined]

    def per_call(seconds: float) -> str:
        return f"{seconds / calls * 1e6:8.0f}"

    sc, fl = raw["swarmcore"], raw["floor"]
    total = {side: sum(v[2] for v in stats.values()) for side, stats in raw.items()}
    own = {key: v for key, v in sc.items() if _is_swarmcore(key)}
    out = [
        f"cProfile of {label} ({calls} model calls), CPU-time clock, µs per model call "
        "(the profiler inflates everything; compare within the listing)",
        f"total CPU: swarmcore {per_call(total['swarmcore']).strip()}, "
        f"floor {per_call(total['floor']).strip()}; "
        f"self time in swarmcore's own code: {per_call(sum(v[2] for v in own.values())).strip()}",
        "",
    ]
    # The functions that wrap the model call carry litellm's whole cost in their cumulative
    # time; name them on one line, then rank the rest (swarmcore's own work around the call).
    call_once = max((v[3] for key, v in own.items() if key[2] == "_call_once"), default=0.0)
    ranked = sorted(own.items(), key=lambda kv: -kv[1][3])
    wrapping = [(key, v) for key, v in ranked if v[3] >= call_once]
    out.append(
        f"swarmcore functions around the model call (cumul {per_call(call_once).strip()} "
        f"and up): {', '.join(key[2] for key, _ in wrapping)}"
    )
    out += [
        "",
        "top 10 other swarmcore functions by cumulative time",
        f"{'ncalls':>8} {'self':>8} {'cumul':>8}  function",
    ]
    for key, (_, nc, tt, ct, _) in [kv for kv in ranked if kv[1][3] < call_once][:10]:
        out.append(f"{nc:>8} {per_call(tt)} {per_call(ct)}  {_where(key)}")
    out += [
        "",
        "top 10 functions by extra self time, swarmcore minus floor (where the overhead goes)",
        f"{'ncalls':>8} {'extra':>8} {'floor':>8}  function",
    ]
    extra = {key: v[2] - (fl[key][2] if key in fl else 0.0) for key, v in sc.items()}
    for key, v in fl.items():
        extra.setdefault(key, -v[2])
    by_package: dict[str, float] = {}
    for key, delta in extra.items():
        by_package[_package(key)] = by_package.get(_package(key), 0.0) + delta
    shares = sorted(by_package.items(), key=lambda kv: -kv[1])
    out.insert(
        2,
        "extra self time over the floor by owner: "
        + ", ".join(f"{name} {per_call(delta).strip()}" for name, delta in shares[:6]),
    )
    for key, delta in sorted(extra.items(), key=lambda kv: -kv[1])[:10]:
        floor_self = fl[key][2] if key in fl else 0.0
        ncalls = sc[key][1] if key in sc else 0
        out.append(f"{ncalls:>8} {per_call(delta)} {per_call(floor_self)}  {_where(key)}")
    return "\n".join(out)


# --- memory after bursts (benchmarks/bursts.py) ----------------------------------------


def burst_rows(quick: bool) -> list[Row]:
    """RSS after each of 3 bursts of concurrent diamond runs, each setting in a fresh process.

    A full run: 1,000 runs a burst, with LiteLLM's per-call logging off (swarmcore's
    default while no LiteLLM callback is registered) and on (a callback registered).
    ``--quick``: 100 runs a burst, logging off only.
    """
    runs = 100 if quick else 1000
    settings: list[tuple[str, list[str]]] = [("", [])]
    if not quick:
        settings.append(("with a LiteLLM callback", ["--litellm-callback"]))
    rows: list[Row] = []
    for label, flags in settings:
        progress(f"bursts of {runs} runs {label or 'with no LiteLLM callback'}")
        out = subprocess.run(
            [sys.executable, str(HERE / "bursts.py"), "--runs", str(runs), *flags],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        got: dict[str, Any] = json.loads(out.split(PROTOCOL, 1)[1])
        after = ", ".join(str(mb) for mb in got["after"])
        cell = f"{got['start']} -> {after} MB"
        if got["waiting"][-1]:
            cell += f" ({got['waiting'][-1]} logs queued)"
        name = f"RSS after 3 bursts of {runs} diamond runs"
        rows.append(Row(f"  ...{label}" if label else name, cell))
    return rows


# --- what reaches each agent (benchmarks/context.py) ------------------------------------


def context_tables() -> str:
    """The context benchmark's tables (offline, ~2 s), from its own process."""
    progress("context modes on flows with planted facts (benchmarks/context.py)")
    return subprocess.run(
        [sys.executable, str(HERE / "context.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# --- main --------------------------------------------------------------------------------


@contextmanager
def running_server(latency: float) -> Generator[ServerProcess]:
    server = ServerProcess(latency).start()
    try:
        yield server
    finally:
        server.stop()


def header(cfg: Config, quick: bool, load: tuple[float, float]) -> list[str]:
    fresh = cfg.reps <= w3_pairs(cfg)
    rotation = "a fresh set per repetition" if fresh else "the repetitions rotating over them"
    return [
        f"swarmcore {importlib.metadata.version('swarmcore')} (native backend and on LiteLLM) vs "
        "plain litellm.acompletion and plain openai chat.completions.create + gather"
        f" ({'--quick' if quick else 'full run'})",
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"litellm {importlib.metadata.version('litellm')}, "
        f"openai {importlib.metadata.version('openai')}, cores {os.cpu_count()}, "
        f"load average {load[0]:.2f} at start, {load[1]:.2f} at end; "
        f"event loop {cfg.loop} from asyncio.run (both sides)",
        f"server latency L={cfg.latency:.2f}s; best of {cfg.reps} interleaved repetitions per "
        f"side (W2's and W3's on {w3_pairs(cfg)} sets of worker processes, one a side, "
        f"{rotation}); each row compares two sides (A / B: A in the swarmcore column, B in "
        "the floor column); ratio = A / B of the best repetitions; paired = median of the "
        "per-repetition ratios (the verdict), with a bootstrap 90% interval; "
        "spread = (max - min) / min over one side's repetitions (the noisier side); "
        "CPU/call = process CPU time / model calls",
    ]


def _workloads(text: str) -> frozenset[str]:
    chosen = frozenset(part.strip().lower() for part in text.split(",") if part.strip())
    if not chosen or not chosen <= WORKLOADS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: name workloads from {', '.join(sorted(WORKLOADS))}, comma-separated"
        )
    return chosen


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive whole numbers, e.g. 10,100")
    return sizes


def main() -> int:
    try:
        return _main()
    except KeyboardInterrupt:
        progress("interrupted; server and workers stopped")
        return 130


def _main() -> int:
    parser = argparse.ArgumentParser(description="swarmcore overhead against plain litellm")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: W3 K=50, W2 N=100, ~2 minutes"
    )
    parser.add_argument("--latency", type=float, default=0.2, help="server latency in seconds")
    parser.add_argument(
        "--reps", type=int, help="interleaved repetitions per side (default 2 quick, 7 full)"
    )
    parser.add_argument("--profile", action="store_true", help="also cProfile W3 at K=50")
    parser.add_argument(
        "--only",
        type=_workloads,
        default=WORKLOADS,
        help=f"comma-separated workloads to run, of {','.join(sorted(WORKLOADS))} (default all)",
    )
    parser.add_argument("--fan-outs", type=_sizes, help="W2 sizes, e.g. 500 or 10,100")
    parser.add_argument("--concurrency", type=_sizes, help="W3 sizes K, e.g. 200")
    parser.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--api-base", help=argparse.SUPPRESS)
    parser.add_argument("--stub-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--settings-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--payloads", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker, args.api_base)
        return 0
    if args.stub_worker:
        stub_worker_main(args.concurrency[-1], args.fan_outs[-1])
        return 0
    if args.settings_worker is not None:
        settings_worker_main(args.settings_worker, args.api_base, args.payloads)
        return 0
    cfg = Config(
        latency=args.latency,
        reps=args.reps or (2 if args.quick else 7),
        one_process_pairs=0 if args.quick else 30,
        w2_rounds=1 if args.quick else W2_ROUNDS,
        responses_rounds=4 if args.quick else 20,
        fan_outs=args.fan_outs or ((100,) if args.quick else (10, 100, 500)),
        concurrency=args.concurrency or ((50,) if args.quick else (1, 50, 200)),
        chains=(5, 20) if args.quick else (5, 20, 50),
        profile=args.profile,
        only=args.only,
    )
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    rows: list[Row] = []
    if "import" in cfg.only:
        progress("cold import")
        rows = cold_import_rows()
    with running_server(cfg.latency) as server:
        if "import" in cfg.only:  # before any worker starts: a first call on a quiet machine
            progress("first calls in fresh processes")
            rows += first_call_rows(server.api_base, 2 if args.quick else 5)
        progress(f"server on {server.api_base}; importing litellm here and in the workers")
        in_workers = "w2" in cfg.only or "w3" in cfg.only
        sides = SIDES if in_workers else ()
        workers = [Worker(side, server.api_base) for _ in range(w3_pairs(cfg)) for side in sides]
        try:
            load_litellm()
            for w in workers:  # nothing is timed until every import is done
                w.receive()
            process_rows, payloads, fan_outs, profile = asyncio.run(in_process(server, cfg))
            w2, w3 = worker_rows(cfg, workers, payloads, fan_outs) if in_workers else ([], [])
            w1 = [r for r in process_rows if r.workload.startswith("W1 ")]
            others = [r for r in process_rows if r not in w1]
            rows = w1 + w2 + others + w3 + rows
            if "settings" in cfg.only and not args.quick:
                rows += settings_rows(server.api_base, payloads)
        finally:
            for w in workers:
                w.stop()
        stats = server.call("GET", "/stats")
    if "alone" in cfg.only:  # after the server stopped: this measures CPU alone
        progress("swarmcore alone (model call stubbed)")
        rows += alone_rows(cfg)
    if "bursts" in cfg.only:
        rows += burst_rows(args.quick)
    context = context_tables() if "context" in cfg.only else ""
    lines = header(cfg, args.quick, (load_start, os.getloadavg()[0]))
    lines.append(
        f"server: {stats['served']} requests, {stats['cpu_seconds']:.1f} s CPU in total; "
        f"benchmark took {time.perf_counter() - started:.0f} s"
    )
    print("\n".join(lines))
    print()
    print("\n\n".join(part for part in (render(rows), context.rstrip(), profile) if part))
    return 0


if __name__ == "__main__":
    sys.exit(main())
