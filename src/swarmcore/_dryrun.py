"""Dry runs: what a flow would send, counted before any money is spent.

``await swarm.dry_run(task)`` walks the flow on the offline model (tools are
not called; each returns a placeholder), counts every model call and the prompt
tokens each agent would send (estimated as the test models count them, four
characters a token: no tokenizer, and no LiteLLM import), and prices those
tokens with each agent's real model from LiteLLM's price map. Completion tokens
depend on the real model's answers, so they are not estimated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, computed_field

from swarmcore import events
from swarmcore._flow import Flow, FlowNode
from swarmcore._table import text_table
from swarmcore._tools import Tool
from swarmcore.agent import Agent
from swarmcore.results import AgentKey, format_cost, sum_cost

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm


async def dry_run(swarm: Swarm, task: str, variables: Mapping[str, object] | None) -> DryRunReport:
    """``swarm.dry_run(task)``: the flow rehearsed on the offline model, its prompts counted."""
    from swarmcore.testing import offline_model  # a face, loaded for dry runs only

    rehearsal = type(swarm)(  # the Swarm's own class: no import of swarm.py here
        rehearsal_of(swarm.flow, offline_model()),
        context_mode=swarm.context_mode,
        context_budget=swarm.context_budget,
        defaults=swarm.defaults,
        approve=lambda _: True,  # placeholders run nothing, so nothing needs a person
    )
    counter = PromptCounter()
    rehearsal.on(events.ModelCallFinished)(counter)
    await rehearsal.run(task, variables=variables)
    return counter.report(swarm.flow)


def rehearsal_of(flow: Flow, model: str) -> Flow:
    """``flow`` with every agent on ``model`` (an offline one) and every tool a placeholder."""
    return flow.map_agents(lambda node: _offline_copy(node, model))


class PromptCounter:
    """An event hook that counts each agent's model calls and the prompt tokens they send."""

    def __init__(self) -> None:
        self._sent: dict[str, list[int]] = {}

    def __call__(self, event: events.Event) -> None:
        """Count a finished model call; a loop's iterations (w#1, w#2) count to their agent."""
        if isinstance(event, events.ModelCallFinished):
            tokens = event.usage.prompt_tokens if event.usage else 0
            self._sent.setdefault(AgentKey.parse(event.agent_name).base, []).append(tokens)

    def report(self, flow: Flow) -> DryRunReport:
        """Per agent of ``flow`` (on its real model), in flow order: calls, tokens and cost."""
        from swarmcore.llm import prompt_cost

        estimates: list[AgentEstimate] = []
        for node in flow.agents:
            calls = self._sent.get(node.name, [])
            model = node.model if isinstance(node, Agent) else ""
            estimates.append(
                AgentEstimate(
                    agent_name=node.name,
                    model=model,
                    model_calls=len(calls),
                    prompt_tokens=sum(calls),
                    prompt_cost=prompt_cost(model, sum(calls)),
                )
            )
        return DryRunReport(agents=estimates)


def _offline_copy(node: FlowNode, model: str) -> FlowNode:
    """``node`` on the offline model, its tools answering a placeholder instead of running."""
    assert isinstance(node, Agent)  # Swarm() checked every node
    return node.clone(
        model=model,
        fallback_models=(),
        tools=[tool.bind(_placeholder(tool.name)) for tool in node.tools if isinstance(tool, Tool)],
        # The offline model calls tools natively, and its made-up values cannot
        # satisfy user validators; the count of calls is the same either way.
        tool_protocol="native",
        output_validators=(),
    )


def _placeholder(name: str) -> Callable[..., Any]:
    async def not_called(*_: object, **__: object) -> str:
        return f"(dry run: {name} was not called)"

    return not_called


class AgentEstimate(BaseModel):
    """What one agent would send."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    agent_name: str
    model: str
    """The agent's real model (the one the prices come from)."""
    model_calls: int
    """Model calls the agent made on the offline model."""
    prompt_tokens: int
    """Prompt tokens over those calls."""
    prompt_cost: float | None
    """USD for those prompt tokens on ``model``; None when LiteLLM has no price for it."""


class DryRunReport(BaseModel):
    """A dry run's count of model calls and prompt tokens, per agent in flow order."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    agents: list[AgentEstimate]

    @computed_field
    @property
    def model_calls(self) -> int:
        """Model calls in all."""
        return sum(a.model_calls for a in self.agents)

    @computed_field
    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens in all."""
        return sum(a.prompt_tokens for a in self.agents)

    @computed_field
    @property
    def prompt_cost(self) -> float | None:
        """USD for every prompt token; None when any agent's model is unpriced."""
        return sum_cost([a.prompt_cost for a in self.agents])

    def table(self) -> str:
        """The report as a plain-text table, with a total row."""
        header = ("agent", "model", "calls", "prompt tokens", "prompt cost")
        rows = [
            (
                a.agent_name,
                a.model,
                str(a.model_calls),
                f"{a.prompt_tokens:,}",
                format_cost(a.prompt_cost),
            )
            for a in self.agents
        ]
        total = ("total", "", str(self.model_calls), f"{self.prompt_tokens:,}")
        rows.append((*total, format_cost(self.prompt_cost)))
        return text_table(header, rows, right={2, 3, 4}, rule_before_last=True)
