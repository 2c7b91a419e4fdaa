"""Dry runs: what a flow would send, counted before any money is spent.

``await swarm.dry_run(task)`` walks the flow on the offline model (tools are
not called; each returns a placeholder), counts every model call and the prompt
tokens each agent would send, and prices those tokens with each agent's real
model from LiteLLM's price map. Completion tokens depend on the real model's
answers, so they are not estimated.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from swarmcore._table import text_table
from swarmcore.models import format_cost, sum_cost

__all__ = ["AgentEstimate", "DryRunReport"]


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
