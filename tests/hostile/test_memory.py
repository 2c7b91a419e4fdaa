"""Hostile cases for memory: what a run or a dry run leaves behind once it returns.

A service runs flows (and dry-runs them first) for as long as it lives, so once a
run has returned and its result is dropped, nothing may still hold what the run
sent: not the process-wide offline model that dry runs use (issue 30, point 12),
not LiteLLM's queue of per-call logs that nothing reads (point 11). The rows
run on test models, which never go through LiteLLM; its listener's test goes
through the local server. Each row runs
something with a task text nobody else has, drops what it returned, and then
looks for any live container still holding that text. No memory is measured:
the RSS figures are in ``benchmarks/bursts.py``.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast

from swarmcore import Agent, Swarm
from swarmcore.llm import load_litellm
from swarmcore.testing import MockOpenAIServer, OfflineModel, offline_model

REAL = "openai/gpt-4o-mini"  # a dry run prices with it and never calls it


def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    return f"facts about {topic}"


def _diamond(model: str, **agent: Any) -> Any:
    a, b, c, d = (Agent(n, f"You are {n}.", model=model, **agent) for n in "abcd")
    return a >> (b | c) >> d


async def _dry_run(task: str) -> None:
    await Swarm(_diamond(REAL)).dry_run(task)


async def _dry_run_push(task: str) -> None:
    await Swarm(_diamond(REAL), context_mode="push").dry_run(task)


async def _dry_run_with_tools(task: str) -> None:
    await Swarm(_diamond(REAL, tools=[lookup])).dry_run(task)


async def _many_dry_runs(task: str) -> None:
    swarm = Swarm(_diamond(REAL))
    for i in range(5):
        await swarm.dry_run(f"{task} #{i}")


async def _run_on_shared_offline_model(task: str) -> None:
    await Swarm(_diamond(offline_model())).run(task)


async def _run_on_own_offline_model(task: str) -> None:
    model = OfflineModel()
    await Swarm(_diamond(model.model)).run(task)


async def _run_auto(task: str) -> None:
    model = OfflineModel()
    await Swarm(_diamond(model.model), context_mode="auto", context_budget=300).run(task)


async def _agent_run_on_own_offline_model(task: str) -> None:
    model = OfflineModel()
    await Agent("solo", "You answer.", model=model.model, tools=[lookup]).run(task)


def _on_litellm(server: MockOpenAIServer) -> dict[str, Any]:
    """Agent settings that reach the local server through LiteLLM (test models never do)."""
    return {**server.model_kwargs, "backend": "litellm"}


Action = Callable[[str], Awaitable[None]]

# (what runs, once its result is dropped), expected: nothing alive holds its task
ROWS: list[tuple[str, Action]] = [
    ("dry run of a diamond", _dry_run),
    ("dry run, push mode", _dry_run_push),
    ("dry run, agents with tools", _dry_run_with_tools),
    ("five dry runs of one swarm", _many_dry_runs),
    ("run on the shared offline_model()", _run_on_shared_offline_model),
    ("run on its own OfflineModel, dropped", _run_on_own_offline_model),
    ("Agent.run with a tool, own OfflineModel", _agent_run_on_own_offline_model),
    ("run in auto mode (passages ranked and cached)", _run_auto),
]


def _holders(markers: dict[str, str]) -> dict[str, list[str]]:
    """For each case, the live dicts, lists and tuples holding text with its marker.

    One walk of the heap for every case (``markers`` maps a case to its marker): a
    walk costs seconds of CPU in a process that has imported LiteLLM. The collector
    does not track a dict of plain strings (a chat message), so the untracked
    containers reachable from tracked objects are read too.
    """
    gc.collect()
    found: dict[str, list[str]] = {marker: [] for marker in markers.values()}
    ours = {id(markers), id(found), *map(id, found.values())}  # the walk's own bookkeeping
    seen: set[int] = set()
    pending: list[object] = gc.get_objects()
    while pending:
        obj = pending.pop()
        if id(obj) in seen or id(obj) in ours:
            continue
        seen.add(id(obj))
        referents: list[object] = gc.get_referents(obj)
        # Only plain containers go untracked; anything else was in get_objects() already.
        pending.extend(
            r for r in referents if type(r) in (dict, list, tuple) and not gc.is_tracked(r)
        )
        for marker in _mentioned(obj, found):
            found[marker].append(f"{type(obj).__name__}: {obj!r}"[:200])
    return {case: found[marker] for case, marker in markers.items()}


def _mentioned(obj: object, markers: Iterable[str]) -> list[str]:
    values: Iterable[object]
    if isinstance(obj, dict):
        values = cast(dict[object, object], obj).values()
    elif isinstance(obj, list | tuple):
        values = cast(Iterable[object], obj)
    else:
        return []
    try:
        texts = [v for v in values if isinstance(v, str)]
    except RuntimeError:  # changed size under us: a live dict of another thread's
        return []
    return [marker for marker in markers if any(marker in text for text in texts)]


async def test_nothing_outlives_the_run() -> None:
    markers = {case: f"mm{uuid.uuid4().hex[:12]}" for case, _ in ROWS}
    for case, action in ROWS:
        # The offline model searches the context for the task's longest word, and the
        # regex module caches (boundedly) what it compiled: let that word be another.
        await action(f"Write about {markers[case]} and its internationalisation-considerations.")
    outlived = {case: holders for case, holders in _holders(markers).items() if holders}
    assert outlived == {}, "the run's text outlived it"


async def test_a_litellm_callback_still_hears_every_call() -> None:
    """LiteLLM's per-call logging stays on for a user who registered a callback."""
    from litellm.integrations.custom_logger import CustomLogger

    heard: list[str] = []

    class Listener(CustomLogger):
        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            heard.append(str(kwargs.get("model")))

    lit = load_litellm()
    listener = Listener()
    lit.callbacks.append(listener)
    try:
        with MockOpenAIServer(responder=OfflineModel.reply) as server:
            settings = _on_litellm(server)
            await Swarm(_diamond(settings.pop("model"), **settings)).run("Write about tea.")
        for _ in range(500):  # LiteLLM logs in the background, on its own schedule
            if len(heard) >= len(server.requests):
                break
            await asyncio.sleep(0.01)
    finally:
        for name in dir(lit):  # LiteLLM copies it into its per-event registries
            registry: Any = getattr(lit, name, None)
            if name.endswith(("callback", "callbacks")) and isinstance(registry, list):
                while listener in registry:
                    cast(list[object], registry).remove(listener)
    assert len(heard) == len(server.requests) > 0
    assert not any(  # and it is gone, so the rows above run unheard in any order
        listener in getattr(lit, n) for n in dir(lit) if isinstance(getattr(lit, n, None), list)
    )
