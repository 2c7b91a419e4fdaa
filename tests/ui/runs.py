"""Real stored runs for the viewer's tests, made on in-process models (no key, no network).

``make_store`` runs five flows into one SQLite store: a diamond whose middle
agent calls a tool, a run whose second agent fails (made by ``swarmcore run``,
so it can be resumed), a route, a loop, and a run whose task, outputs and tool
results are hostile HTML. Each run's id is kept
under a name, so tests find the run they mean.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from swarmcore import Agent, Swarm, loop, route
from swarmcore.cli import main
from swarmcore.context import SharedContext
from swarmcore.store import SQLiteStore
from swarmcore.testing import Call, FunctionModel, RecordedRequest, Reply

# Every kind of active content a model could write: none of it may run in the page.
HOSTILE = (
    "<script>window.pwned = 1</script>"
    '<img src=x onerror="window.pwned = 2">'
    "[click me](javascript:window.pwned=3) "
    '"><svg onload="window.pwned=4"></svg>'
    "</pre></td></table><b>bold</b>"
)
FLOWS = Path(__file__).with_name("flows.py")
SECRET_KEY = "sk-test-viewer-secret-0123456789abcdefABCDEF"
"""Set as OPENAI_API_KEY while the runs are made: no page may show it."""


@dataclass(frozen=True)
class StoredRuns:
    path: Path
    diamond: str
    failed: str
    routed: str
    looped: str
    hostile: str


def lookup(topic: str) -> str:
    """Look a topic up."""
    time.sleep(0.01)
    return f"facts about {topic}"


def html_tool(topic: str) -> str:
    """Return a page about a topic."""
    return f"{HOSTILE} about {topic}"


def _answer(request: RecordedRequest) -> Reply:
    who = request.system.split()[0]
    if who in ("b", "evil") and not request.tool_results:
        tool = "lookup" if who == "b" else "html_tool"
        return Reply(tool_calls=(Call(tool, {"topic": "x"}),), delay=0.05)
    if who == "evil":
        return Reply(text=f"{HOSTILE}\n<summary>{HOSTILE}</summary>")
    delay = 0.1 if who in ("b", "c") else 0.02
    return Reply(text=f"{who} output\n<summary>{who} done</summary>", delay=delay)


def _pick(context: object) -> str:
    return "long"


def _enough(context: SharedContext) -> bool:
    return "critic#2" in context.keys()  # noqa: SIM118 (SharedContext is no dict)


async def _make(path: Path, failed: str) -> StoredRuns:
    model = FunctionModel(_answer)

    def agent(name: str, **kwargs: object) -> Agent:
        return Agent(name, f"{name} does its part.", model=model.model, **kwargs)  # type: ignore[arg-type]

    store = SQLiteStore(path)
    try:
        diamond = await Swarm(
            agent("a") >> (agent("b", tools=[lookup]) | agent("c")) >> agent("d"), store=store
        ).run("Is coffee good for you?")
        routed = await Swarm(
            agent("triage")
            >> route({"short": agent("brief"), "long": agent("draft") >> agent("edit")}, by=_pick)
            >> agent("publish"),
            store=store,
        ).run("route this")
        looped = await Swarm(
            loop(agent("writer") >> agent("critic"), until=_enough, max_iterations=3),
            store=store,
        ).run("write and criticise")
        hostile = await Swarm(agent("evil", tools=[html_tool]), store=store).run(HOSTILE)
    finally:
        store.close()
    return StoredRuns(path, diamond.run_id, failed, routed.run_id, looped.run_id, hostile.run_id)


def cli_failed_run(path: Path) -> str:
    """A run of ``tests/ui/flows.py:flaky`` made by ``swarmcore run`` that failed; its id."""
    code = main(["run", f"{FLOWS}:flaky", "a task that fails", "--store", str(path), "--quiet"])
    assert code == 1
    store = SQLiteStore(path)
    try:
        [failed] = [r.run_id for r in store.list_runs(limit=1000) if r.status == "failed"]
    finally:
        store.close()
    return failed


def make_store(path: Path) -> StoredRuns:
    """Five real runs stored at ``path`` (see the module's docstring)."""
    failed = cli_failed_run(path)
    return asyncio.run(_make(path, failed))
