"""swarmcore against its peers: CPU per model call, memory and import time, one run.

Every client runs the same three workloads against one local OpenAI-compatible
server (``benchmarks/_server.py``, its own process, 50 ms latency by default),
each in the idiomatic way for its library, each in its own virtual environment:

* **diamond**: ``a``, then ``b`` and ``c`` at the same time, then ``d``; five
  diamonds one after another per measurement (20 calls, so one measurement is
  not a handful of milliseconds);
* **fan-out**: 50 calls at the same time, then one merge call;
* **50 diamonds**: 50 diamonds at once (200 calls).

The clients: swarmcore on its native backend (the default for ``openai/...``
models) and forced onto LiteLLM (``SWARMCORE_MODEL_BACKEND=litellm``), both in
the project's own venv; the plain ``openai`` SDK, latest and at the version in
``uv.lock`` (that one twice: on httpx, its default, and on aiohttp, its
``DefaultAioHttpClient``); plain ``litellm.acompletion`` (the project's pinned
version); LangGraph (a ``StateGraph`` with fan-out/fan-in edges, ``Send`` for the
fan-out, on ``langchain-openai``); the OpenAI Agents SDK (``Runner.run`` per
agent, ``asyncio.gather`` for the parallel steps, chat-completions model,
tracing off as it has no key to export with); PydanticAI (``agent.run``
likewise). Retries are off wherever the library has the knob. Each peer's venv
is made with ``uv venv -p 3.11`` and ``uv pip install`` under a cache directory
outside the repository (``~/.cache/swarmcore-bench-peers/<peer>``), on first
use, and reused while its requirements are unchanged: the first run needs PyPI.

Each client is a process of its own (the script ``CLIENT`` below, run by that
venv's python). It times its import, warms up with one untimed diamond, then
waits for the driver. The driver runs the repetitions in rounds, one client at
a time, in a rotating order, so a slow patch of the shared machine does not
fall on one client. A measurement is process CPU time (``time.process_time``,
every thread) around one workload plus 0.1 s of idle for work a library defers
past the call's return, divided by the model calls the server served meanwhile
(its ``GET /stats``); a client whose served count is not the workload's call
count fails the run rather than report a rate over failed calls.

Reported per client: the median CPU per call of each workload over the
repetitions, the median of those three as the headline, its ratio to swarmcore
native, RSS after import, peak RSS (``ru_maxrss``), the import time of the
library and the wall time from the start of the import to the end of the first
diamond (a fresh script's import and first calls; swarmcore imports its model
library lazily, on the first call). Each environment's principal package
versions follow the table; ``--json`` writes everything, full freezes included.

Not part of the test suite or CI (it installs from PyPI on first use)::

    uv run python benchmarks/peers.py            # 5 repetitions, ~3 min after setup
    uv run python benchmarks/peers.py --quick    # 1 repetition, a smoke run
    uv run python benchmarks/peers.py --only swarmcore-native,langgraph --reps 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKLOADS = ("diamond", "fan_out", "diamonds")
HEADERS = {"diamond": "diamond", "fan_out": "fan-out 50", "diamonds": "50 diamonds"}
PRINCIPAL = (
    "swarmcore",
    "openai",
    "litellm",
    "langgraph",
    "langchain-openai",
    "langchain-core",
    "openai-agents",
    "pydantic-ai-slim",
    "httpx",
    "httpx2",
    "httpx-aiohttp",
    "aiohttp",
    "pydantic",
)
"""The packages named under the table for each environment, where installed."""


@dataclass(frozen=True)
class Peer:
    """One client: the library it measures, and where its environment comes from."""

    name: str
    package: str
    """The distribution whose version the table shows."""
    requirements: tuple[str, ...] = ()
    """What ``uv pip install`` puts in its own venv; empty: the project's venv."""
    env: dict[str, str] = field(default_factory=dict[str, str])
    kind: str = ""
    """The client code it runs (``CLIENT``'s ``KIND``); its name when empty."""


def locked(name: str) -> str:
    """The version of ``name`` in the project's ``uv.lock``."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return next(str(p["version"]) for p in lock["package"] if p["name"] == name)


def peers() -> list[Peer]:
    openai_pin, litellm_pin = locked("openai"), locked("litellm")
    native = {"SWARMCORE_MODEL_BACKEND": "auto"}
    return [
        Peer("swarmcore-native", "swarmcore", env=native, kind="swarmcore"),
        Peer(
            "swarmcore-litellm",
            "swarmcore",
            env={"SWARMCORE_MODEL_BACKEND": "litellm"},
            kind="swarmcore",
        ),
        Peer("openai", "openai", ("openai",)),
        Peer(f"openai=={openai_pin}", "openai", (f"openai=={openai_pin}",), kind="openai"),
        # The same SDK on aiohttp (its DefaultAioHttpClient), not httpx's connection pool.
        Peer(
            f"openai=={openai_pin}+aiohttp",
            "openai",
            (f"openai[aiohttp]=={openai_pin}",),
            kind="openai-aiohttp",
        ),
        # The project's pair: litellm's own resolution could pick another openai 2.x.
        Peer("litellm", "litellm", (f"litellm=={litellm_pin}", f"openai=={openai_pin}")),
        Peer("langgraph", "langgraph", ("langgraph", "langchain-openai")),
        Peer("openai-agents", "openai-agents", ("openai-agents",)),
        Peer("pydantic-ai", "pydantic-ai-slim", ("pydantic-ai-slim[openai]",)),
    ]


def progress(message: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def venv_dir(cache: Path, peer: Peer) -> Path:
    return cache / peer.name.replace("==", "-")


def python_for(cache: Path, peer: Peer) -> str:
    """The peer's interpreter, its venv made (or remade) when its requirements changed."""
    if not peer.requirements:
        return sys.executable
    venv = venv_dir(cache, peer)
    python = venv / "bin" / "python"
    marker = venv / ".bench-requirements"
    wanted = " ".join(peer.requirements) + "\n"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return str(python)
    progress(f"setting up {venv} ({wanted.strip()})")
    subprocess.run(["uv", "venv", "-q", "--clear", "-p", "3.11", str(venv)], check=True)
    install = [
        "uv",
        "pip",
        "install",
        "-q",
        "--compile-bytecode",
        "--python",
        str(python),
        *peer.requirements,
    ]
    subprocess.run(install, check=True)
    marker.write_text(wanted)
    return str(python)


def freeze(python: str) -> list[str]:
    done = subprocess.run(
        ["uv", "pip", "freeze", "--python", python], capture_output=True, text=True, check=True
    )
    return [line for line in done.stdout.splitlines() if line and not line.startswith("-e")]


class Server:
    """``benchmarks/_server.py`` in its own process; it stops when our pipe to it closes."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "_server.py"), "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the benchmark server did not start: {line!r}")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


class Client:
    """One peer's client process, driven one line at a time over its stdin/stdout."""

    def __init__(self, peer: Peer, python: str, script: Path, port: int) -> None:
        self.peer = peer
        self.python = python
        env = {**os.environ, **peer.env, "PYTHONUNBUFFERED": "1"}
        env.pop("VIRTUAL_ENV", None)  # each venv's python finds its own packages
        self.process = subprocess.Popen(
            [python, str(script), peer.kind or peer.name, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),  # not the repo: the peers must not see src/
        )
        self.ready = self.receive()
        self.samples: dict[str, list[float]] = {w: [] for w in WORKLOADS}
        self.final: dict[str, Any] = {}

    def receive(self) -> dict[str, Any]:
        """The next reply; anything else a library prints goes to stderr."""
        out: IO[str] | None = self.process.stdout
        assert out is not None
        for line in out:
            if line.startswith("@@ "):
                reply: dict[str, Any] = json.loads(line[3:])
                if "error" in reply:
                    raise RuntimeError(f"{self.peer.name}: {reply['error']}")
                return reply
            sys.stderr.write(f"  {self.peer.name}| {line}")
        raise RuntimeError(f"{self.peer.name}: the client exited ({self.process.wait()})")

    def send(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.receive()

    def repetition(self) -> None:
        reply = self.send("rep")
        for workload in WORKLOADS:
            self.samples[workload].append(reply[workload])

    def finish(self) -> None:
        self.final = self.send("quit")
        self.process.wait(timeout=30)

    def median(self, workload: str) -> float:
        return statistics.median(self.samples[workload])

    def headline(self) -> float:
        return statistics.median(self.median(w) for w in WORKLOADS)


def render(clients: Sequence[Client], reps: int) -> str:
    base = next((c.headline() for c in clients if c.peer.name == "swarmcore-native"), None)
    head = [
        "client",
        "version",
        *(f"{HEADERS[w]} ms" for w in WORKLOADS),
        "headline ms",
        "x native",
        "RSS import MB",
        "peak RSS MB",
        "import s",
        "import+diamond s",
    ]
    rows = [head]
    for c in sorted(clients, key=Client.headline):
        rows.append(
            [
                c.peer.name,
                c.ready["versions"].get(c.peer.package, "?"),
                *(f"{c.median(w) * 1000:.2f}" for w in WORKLOADS),
                f"{c.headline() * 1000:.2f}",
                f"{c.headline() / base:.2f}" if base else "-",
                f"{c.ready['rss_import_mb']:.0f}",
                f"{c.final['peak_rss_mb']:.0f}",
                f"{c.ready['import_s']:.2f}",
                f"{c.ready['first_diamond_s']:.2f}",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(
        f"CPU per model call, median of {reps} repetition(s) per workload; "
        "headline = median of the three workloads; x native = headline / swarmcore-native's"
    )
    lines.append("environments (principal packages):")
    for c in clients:
        versions = c.ready["versions"]
        named = ", ".join(f"{p} {versions[p]}" for p in PRINCIPAL if p in versions)
        litellm = "; litellm imported" if c.final.get("litellm_imported") else ""
        lines.append(f"  {c.peer.name}: python {c.ready['python']}; {named}{litellm}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    all_peers = peers()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="one repetition: a smoke run")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per client (5)")
    parser.add_argument("--latency", type=float, default=0.05, help="server latency, s (0.05)")
    names = ",".join(p.name for p in all_peers)
    parser.add_argument("--only", default="", help=f"a comma-separated subset of: {names}")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path.home() / ".cache" / "swarmcore-bench-peers",
        help="where the peers' venvs live (~/.cache/swarmcore-bench-peers)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure and freeze here")
    parser.add_argument("--setup-only", action="store_true", help="make the venvs, then stop")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    chosen = [p for p in all_peers if not args.only or p.name in args.only.split(",")]
    if not chosen:
        parser.error(f"--only names none of: {names}")

    args.cache_dir.mkdir(parents=True, exist_ok=True)
    pythons = {p.name: python_for(args.cache_dir, p) for p in chosen}
    if args.setup_only:
        return
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    server = Server(args.latency)
    clients: list[Client] = []
    with tempfile.TemporaryDirectory(prefix="swarmcore-peers-") as tmp:
        script = Path(tmp) / "peer_client.py"
        script.write_text(CLIENT)
        try:
            # One at a time, so no import or warm-up competes with another for the CPU.
            for peer in chosen:
                progress(f"starting {peer.name}")
                clients.append(Client(peer, pythons[peer.name], script, server.port))
            for rep in range(reps):
                shift = rep % len(clients)
                for client in clients[shift:] + clients[:shift]:
                    progress(f"repetition {rep + 1}/{reps}: {client.peer.name}")
                    client.repetition()
            for client in clients:
                client.finish()
        finally:
            for client in clients:
                if client.process.poll() is None:
                    client.process.kill()
            server.stop()
    took = time.perf_counter() - started

    print(
        f"swarmcore against its peers, {time.strftime('%Y-%m-%d')}: one server on loopback, "
        f"latency {args.latency * 1000:.0f} ms; {os.cpu_count()} cores, load average "
        f"{load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end; took {took:.0f} s"
    )
    print(render(clients, reps))
    if args.json:
        data = {
            "date": time.strftime("%Y-%m-%d"),
            "latency": args.latency,
            "reps": reps,
            "clients": {
                c.peer.name: {
                    "samples_s_per_call": c.samples,
                    "ready": c.ready,
                    "final": c.final,
                    "freeze": freeze(c.python),
                }
                for c in clients
            },
        }
        args.json.write_text(json.dumps(data, indent=2))
        progress(f"wrote {args.json}")


CLIENT = r'''
"""One peer's client (written and run by benchmarks/peers.py): argv = KIND PORT."""
import time

START = time.perf_counter()

import asyncio
import http.client
import importlib.metadata
import json
import os
import platform
import resource
import sys

KIND, PORT = sys.argv[1], int(sys.argv[2])
BASE = f"http://127.0.0.1:{PORT}/v1"
KEY = "sk-bench-dummy"
MODEL = "gpt-4o-mini"
TASK = "Benchmark task: do your step and report briefly."
FAN_OUT = 50
DIAMONDS_AT_ONCE = 50
DIAMONDS_IN_A_ROW = 5
SETTLE = 0.1
CALLS = {"diamond": 4 * DIAMONDS_IN_A_ROW, "fan_out": FAN_OUT + 1, "diamonds": 4 * DIAMONDS_AT_ONCE}
CLOSERS = []
"""Coroutine functions run at the end: an aiohttp session warns when left open."""
NAMES = ["a", "b", "c", "d", "merge", *(f"worker_{i:03d}" for i in range(1, FAN_OUT + 1))]


def instructions(name):
    return f"You are {name}, one step of a benchmark flow."


def after(task, outputs):
    """The next step's input: the task, then the outputs it depends on."""
    return "\n\n".join([task, *(f"{name}: {text}" for name, text in outputs)])


def served():
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    conn.request("GET", "/stats")
    count = json.loads(conn.getresponse().read())["served"]
    conn.close()
    return count


def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reply(message):
    sys.stdout.write("@@ " + json.dumps(message) + "\n")
    sys.stdout.flush()


def by_calls(call):
    """Diamond and fan-out from one ``call(name, text) -> str``, steps in parallel by gather."""

    async def diamond():
        a = await call("a", TASK)
        b, c = await asyncio.gather(
            call("b", after(TASK, [("a", a)])), call("c", after(TASK, [("a", a)]))
        )
        return await call("d", after(TASK, [("b", b), ("c", c)]))

    async def fan_out():
        names = NAMES[5:]
        outputs = await asyncio.gather(*(call(name, TASK) for name in names))
        return await call("merge", after(TASK, list(zip(names, outputs))))

    return diamond, fan_out


# ---- one set-up per kind: imports timed, then the diamond and fan-out coroutines ----


def openai_client(aiohttp=False):
    t0 = time.perf_counter()
    import openai

    imported = time.perf_counter() - t0
    http = openai.DefaultAioHttpClient() if aiohttp else None
    client = openai.AsyncOpenAI(base_url=BASE, api_key=KEY, max_retries=0, http_client=http)
    CLOSERS.append(client.close)

    async def call(name, text):
        response = await client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": instructions(name)},
                {"role": "user", "content": text},
            ],
        )
        return response.choices[0].message.content or ""

    return imported, *by_calls(call)


def litellm_client():
    # As swarmcore does before importing litellm: the bundled price map, no fetch.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    t0 = time.perf_counter()
    import litellm

    imported = time.perf_counter() - t0

    async def call(name, text):
        response = await litellm.acompletion(
            model="openai/" + MODEL,
            messages=[
                {"role": "system", "content": instructions(name)},
                {"role": "user", "content": text},
            ],
            api_base=BASE,
            api_key=KEY,
            num_retries=0,
            max_retries=0,
        )
        return response.choices[0].message.content or ""

    return imported, *by_calls(call)


def langgraph_client():
    t0 = time.perf_counter()
    import operator
    from typing import Annotated, TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    imported = time.perf_counter() - t0
    llm = ChatOpenAI(model=MODEL, base_url=BASE, api_key=KEY, max_retries=0)

    async def ask(name, text):
        message = await llm.ainvoke([SystemMessage(instructions(name)), HumanMessage(text)])
        return message.content

    def merged(left, right):
        return {**left, **right}

    class Diamond(TypedDict):
        task: str
        outputs: Annotated[dict, merged]

    def step(name, inputs):
        async def node(state):
            text = after(state["task"], [(i, state["outputs"][i]) for i in inputs])
            return {"outputs": {name: await ask(name, text)}}

        return node

    graph = StateGraph(Diamond)
    for name, inputs in [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"])]:
        graph.add_node(name, step(name, inputs))
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("a", "c")
    graph.add_edge(["b", "c"], "d")
    graph.add_edge("d", END)
    diamond_graph = graph.compile()

    class FanOut(TypedDict):
        task: str
        outputs: Annotated[list, operator.add]
        answer: str

    class Work(TypedDict):
        task: str
        name: str

    async def worker(state: Work):
        return {"outputs": [(state["name"], await ask(state["name"], state["task"]))]}

    async def merge(state):
        return {"answer": await ask("merge", after(state["task"], state["outputs"]))}

    def spread(state):
        return [Send("worker", {"task": state["task"], "name": n}) for n in NAMES[5:]]

    graph = StateGraph(FanOut)
    graph.add_node("worker", worker)
    graph.add_node("merge", merge)
    graph.add_conditional_edges(START, spread, ["worker"])
    graph.add_edge("worker", "merge")
    graph.add_edge("merge", END)
    fan_out_graph = graph.compile()

    async def diamond():
        return await diamond_graph.ainvoke({"task": TASK, "outputs": {}})

    async def fan_out():
        return await fan_out_graph.ainvoke({"task": TASK, "outputs": []})

    return imported, diamond, fan_out


def agents_client():
    t0 = time.perf_counter()
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    imported = time.perf_counter() - t0
    set_tracing_disabled(True)  # its exporter would post to api.openai.com with our fake key
    client = AsyncOpenAI(base_url=BASE, api_key=KEY, max_retries=0)
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    agents = {n: Agent(name=n, instructions=instructions(n), model=model) for n in NAMES}

    async def call(name, text):
        return (await Runner.run(agents[name], text)).final_output

    return imported, *by_calls(call)


def pydantic_ai_client():
    t0 = time.perf_counter()
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.providers.openai import OpenAIProvider

    try:
        from pydantic_ai.models.openai import OpenAIChatModel
    except ImportError:  # before 1.0
        from pydantic_ai.models.openai import OpenAIModel as OpenAIChatModel

    imported = time.perf_counter() - t0
    client = AsyncOpenAI(base_url=BASE, api_key=KEY, max_retries=0)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agents = {n: Agent(model, instructions=instructions(n)) for n in NAMES}

    async def call(name, text):
        return (await agents[name].run(text)).output

    return imported, *by_calls(call)


def swarmcore_client():
    t0 = time.perf_counter()
    from swarmcore import Agent, Swarm, parallel

    imported = time.perf_counter() - t0

    def agent(name):
        return Agent(
            name, instructions(name), model="openai/" + MODEL, api_base=BASE, api_key=KEY, retry=0
        )

    a, b, c, d = (agent(n) for n in "abcd")
    diamond_swarm = Swarm(a >> (b | c) >> d)
    fan_out_swarm = Swarm(parallel(*(agent(n) for n in NAMES[5:])) >> agent("merge"))

    async def diamond():
        return await diamond_swarm.run(TASK)

    async def fan_out():
        return await fan_out_swarm.run(TASK)

    return imported, diamond, fan_out


KINDS = {
    "openai": openai_client,
    "openai-aiohttp": lambda: openai_client(aiohttp=True),
    "litellm": litellm_client,
    "langgraph": langgraph_client,
    "openai-agents": agents_client,
    "pydantic-ai": pydantic_ai_client,
    "swarmcore": swarmcore_client,
}


async def measure(workload, run):
    before = served()
    cpu = time.process_time()
    await run()
    await asyncio.sleep(SETTLE)  # work deferred past the return is the library's too
    cpu = time.process_time() - cpu
    calls = served() - before
    if calls != CALLS[workload]:
        raise RuntimeError(f"{workload}: the server served {calls} calls, not {CALLS[workload]}")
    return cpu / calls


async def main():
    imported, diamond, fan_out = KINDS[KIND]()
    rss_import = rss_mb()
    await diamond()  # the untimed warm-up: a fresh script's first calls
    first_diamond = time.perf_counter() - START

    async def diamonds_in_a_row():
        for _ in range(DIAMONDS_IN_A_ROW):
            await diamond()

    async def diamonds_at_once():
        await asyncio.gather(*(diamond() for _ in range(DIAMONDS_AT_ONCE)))

    await fan_out()
    await diamonds_at_once()
    versions = {}
    for dist in importlib.metadata.distributions():
        versions.setdefault(dist.metadata["Name"].lower().replace("_", "-"), dist.version)
    reply(
        {
            "import_s": imported,
            "rss_import_mb": rss_import,
            "first_diamond_s": first_diamond,
            "python": platform.python_version(),
            "versions": versions,
        }
    )
    runs = {"diamond": diamonds_in_a_row, "fan_out": fan_out, "diamonds": diamonds_at_once}
    loop = asyncio.get_running_loop()
    while True:
        command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if command == "rep":
            reply({w: await measure(w, run) for w, run in runs.items()})
        else:
            break
    for close in CLOSERS:
        await close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reply({"peak_rss_mb": peak, "litellm_imported": "litellm" in sys.modules})


try:
    asyncio.run(main())
except Exception as error:
    import traceback

    traceback.print_exc(file=sys.stderr)
    reply({"error": f"{type(error).__name__}: {error}"})
'''


if __name__ == "__main__":
    main()
