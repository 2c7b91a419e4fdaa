"""Pull versus push: the prompt each agent sends as a chain grows.

Run it with ``uv run python examples/pull_vs_push.py``. Both modes run the same
8-agent chain; the table shows the prompt tokens of each agent's first model
call. In push mode the previous output is pasted into the prompt; in pull
mode the prompt carries a bounded hint and the agent fetches what it needs.
"""

from __future__ import annotations

import asyncio

from swarmcore import Agent, Swarm, SwarmResult, chain
from swarmcore.testing import choose_model

TOPICS = ["history", "chemistry", "health", "economics", "culture", "farming", "trade", "future"]


def build_chain(model: str) -> list[Agent]:
    return [
        Agent(
            f"{topic}_expert",
            f"You add the {topic} angle to the report so far, in about 150 words.",
            model=model,
        )
        for topic in TOPICS
    ]


def first_prompt_tokens(result: SwarmResult) -> list[int]:
    return [r.llm_calls[0].token_usage.prompt_tokens for r in result.history]


async def main() -> None:
    model, notice = choose_model()
    print(notice)
    agents = build_chain(model)
    task = "Write a report on tea."
    pull = await Swarm(chain(*agents), context_mode="pull").run(task)
    push = await Swarm(chain(*agents), context_mode="push").run(task)
    print(f"\n{'agent':<20}{'pull prompt':>12}{'push prompt':>12}")
    for name, a, b in zip(
        [a.name for a in agents], first_prompt_tokens(pull), first_prompt_tokens(push), strict=True
    ):
        print(f"{name:<20}{a:>12}{b:>12}")
    for label, result in (("pull", pull), ("push", push)):
        print(
            f"{label}: {result.token_usage.prompt_tokens} prompt tokens in all, "
            f"{sum(len(r.llm_calls) for r in result.history)} model calls"
        )


if __name__ == "__main__":
    asyncio.run(main())
