"""Shared builders for tests."""

from __future__ import annotations

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
