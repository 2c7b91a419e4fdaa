"""Shared builders for tests."""

from __future__ import annotations

import asyncio

from swarmcore import Agent
from swarmcore.testing import FunctionModel, RecordedRequest, Reply


def echo_model(delays: dict[str, float] | None = None) -> FunctionModel:
    """Answers '<first word of instructions> done' with a summary; optional delay per agent."""

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        delay = (delays or {}).get(who, 0.0)
        return Reply(text=f"{who} output\n<summary>{who} summary</summary>", delay=delay)

    return FunctionModel(answer)


def agents(model: str, *names: str) -> list[Agent]:
    """Agents whose instructions start with their own name (FunctionModels key on it)."""
    return [Agent(n, f"{n} does its part.", model=model) for n in names]


def rendezvous_model(count: int, text: str = "done") -> tuple[FunctionModel, list[str]]:
    """A model that answers only once ``count`` calls are in flight at the same time.

    Calls that ran one after another would wait forever, so the 5 s timeout
    turns "not parallel" into a failure. Returns the model and the list of
    agents (first word of instructions) in arrival order.
    """
    arrived: list[str] = []
    everyone = asyncio.Event()

    async def answer(request: RecordedRequest) -> Reply:
        arrived.append(request.system.split()[0])
        if len(arrived) == count:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return Reply(text=text)

    return FunctionModel(answer), arrived
