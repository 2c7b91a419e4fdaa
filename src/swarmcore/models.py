"""The result records' former home: they live in :mod:`swarmcore.results`.

Kept so that ``from swarmcore.models import AgentResult`` still works.
"""

from swarmcore.results import (
    AgentFailure,
    AgentResult,
    Decision,
    LLMCallRecord,
    SwarmResult,
    TokenUsage,
    ToolCallRecord,
    failure_status,
    format_cost,
    sum_cost,
    sum_usage,
)

__all__ = [
    "AgentFailure",
    "AgentResult",
    "Decision",
    "LLMCallRecord",
    "SwarmResult",
    "TokenUsage",
    "ToolCallRecord",
    "failure_status",
    "format_cost",
    "sum_cost",
    "sum_usage",
]
