"""The exception hierarchy.

```
SwarmError                 base of everything swarmcore raises; .partial: finished results, if any
├── UserError              misuse found at construction: bad flow, tool signature, context_mode
└── AgentError             an agent failed during a run; .agent_name
    ├── ModelError         the provider call failed; .model, .status_code, .retryable
    └── MaxTurnsExceeded   no final answer within max_turns; .max_turns
```

Every message says what happened, the offending value, and what to do next.
Constructors have no side effects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmcore.models import SwarmResult

__all__ = [
    "AgentError",
    "MaxTurnsExceeded",
    "ModelError",
    "SwarmError",
    "UserError",
]


class SwarmError(Exception):
    """Base of every error swarmcore raises.

    Attributes:
        partial: The results that finished before the failure, when the error
            ended a Swarm run; None otherwise. Nothing that finished is lost.
    """

    partial: SwarmResult | None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.partial = None


class UserError(SwarmError, ValueError):
    """swarmcore was used in a way that cannot work; found before any model call."""


class AgentError(SwarmError):
    """An agent failed while running.

    Attributes:
        agent_name: The name of the agent that failed.
    """

    def __init__(self, message: str, *, agent_name: str) -> None:
        super().__init__(message)
        self.agent_name = agent_name


class ModelError(AgentError):
    """The model provider call failed (after any retries).

    Attributes:
        model: The LiteLLM model string that was called.
        status_code: The HTTP status the provider answered with, if any.
        retryable: Whether the failure is transient (rate limit, timeout,
            connection, 5xx) rather than a problem to fix (key, model name,
            request).
    """

    def __init__(
        self,
        message: str,
        *,
        agent_name: str,
        model: str,
        status_code: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message, agent_name=agent_name)
        self.model = model
        self.status_code = status_code
        self.retryable = retryable


class MaxTurnsExceeded(AgentError):
    """The agent made ``max_turns`` model calls without a final text answer.

    Attributes:
        max_turns: The limit that was reached.
    """

    def __init__(self, message: str, *, agent_name: str, max_turns: int) -> None:
        super().__init__(message, agent_name=agent_name)
        self.max_turns = max_turns
