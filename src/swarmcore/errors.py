"""The exception hierarchy.

```
SwarmError                 base of everything swarmcore raises; .partial: finished results, if any
├── UserError              misuse found at construction: bad flow, tool signature, context_mode
├── AgentError             an agent failed during a run; .agent_name, .retryable
│   ├── ModelError         the provider call failed; .model, .status_code, .retry_after
│   ├── MaxTurnsExceeded   no final answer within max_turns; .max_turns
│   ├── OutputValidationError  the answer failed output_type/validators on every try; .last_output
│   └── DelegationDepthExceeded  agents called agents deeper than the limit; .chain
├── GroupError             a parallel group's failure policy was not met; .failures
├── BudgetExceeded         the run's max_cost / max_tokens was spent; .spent_cost, .spent_tokens
└── StoreError             the run store could not be opened, read or written; .path
```

Every message says what happened, the offending value, and what to do next.
Constructors have no side effects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmcore.results import AgentFailure, SwarmResult

__all__ = [
    "AgentError",
    "BudgetExceeded",
    "DelegationDepthExceeded",
    "GroupError",
    "MaxTurnsExceeded",
    "ModelError",
    "OutputValidationError",
    "StoreError",
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

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructors defeat the default (cls(*args)) that copy.copy and
        # pickle (multiprocessing, a process pool) use: rebuild from message and attributes.
        return (_rebuild, (type(self), self.args, self.__dict__))


class UserError(SwarmError, ValueError):
    """swarmcore was used in a way that cannot work; found before any model call."""


class AgentError(SwarmError):
    """An agent failed while running.

    Attributes:
        agent_name: The name of the agent that failed.
        retryable: Whether running the agent again may succeed (a transient
            model failure, or the agent's own timeout), so a step-level retry
            is worth it.
    """

    def __init__(self, message: str, *, agent_name: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.agent_name = agent_name
        self.retryable = retryable


class ModelError(AgentError):
    """The model provider call failed (after any retries).

    Attributes:
        model: The LiteLLM model string that was called.
        status_code: The HTTP status the provider answered with, if any.
        retryable: Whether the failure is transient (rate limit, timeout,
            connection, 5xx) rather than a problem to fix (key, model name,
            request).
        retry_after: Seconds the provider asked to wait (its ``Retry-After``
            header), if it said.
    """

    def __init__(
        self,
        message: str,
        *,
        agent_name: str,
        model: str,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, agent_name=agent_name, retryable=retryable)
        self.model = model
        self.status_code = status_code
        self.retry_after = retry_after


class MaxTurnsExceeded(AgentError):
    """The agent made ``max_turns`` model calls without a final text answer.

    Attributes:
        max_turns: The limit that was reached.
    """

    def __init__(self, message: str, *, agent_name: str, max_turns: int) -> None:
        super().__init__(message, agent_name=agent_name)
        self.max_turns = max_turns


class OutputValidationError(AgentError):
    """The agent's answer still failed its ``output_type`` or validators after every retry.

    Attributes:
        last_output: The last answer the model gave, as text.
        feedback: Why it was rejected (the validation error or the validator's text).
        attempts: Answers the model gave.
    """

    def __init__(
        self, message: str, *, agent_name: str, last_output: str, feedback: str, attempts: int
    ) -> None:
        super().__init__(message, agent_name=agent_name)
        self.last_output = last_output
        self.feedback = feedback
        self.attempts = attempts


class DelegationDepthExceeded(AgentError):
    """Agents called agents (``as_tool``) deeper than the limit: runaway delegation.

    Attributes:
        chain: The agent names from the outermost caller to the refused call.
        max_depth: The limit that was reached.
    """

    def __init__(self, message: str, *, agent_name: str, chain: list[str], max_depth: int) -> None:
        super().__init__(message, agent_name=agent_name)
        self.chain = chain
        self.max_depth = max_depth


class GroupError(SwarmError):
    """A parallel group could not meet its failure policy (too few members succeeded).

    Attributes:
        failures: Why each failed member failed, in flow order.
        required: How many members had to succeed.
    """

    def __init__(self, message: str, *, failures: list[AgentFailure], required: int) -> None:
        super().__init__(message)
        self.failures = failures
        self.required = required


class BudgetExceeded(SwarmError):
    """A model call was refused because the run's budget is spent (or the model is unpriced).

    It stops the whole run, whatever a parallel group's policy, and carries the
    finished results as ``partial``.

    Attributes:
        agent_name: The agent whose call was refused.
        spent_cost: USD spent by the run when the call was refused.
        spent_tokens: Tokens spent by the run when the call was refused.
        max_cost: The run's cost limit, if any.
        max_tokens: The run's token limit, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        agent_name: str,
        spent_cost: float,
        spent_tokens: int,
        max_cost: float | None,
        max_tokens: int | None,
    ) -> None:
        super().__init__(message)
        self.agent_name = agent_name
        self.spent_cost = spent_cost
        self.spent_tokens = spent_tokens
        self.max_cost = max_cost
        self.max_tokens = max_tokens


class StoreError(SwarmError):
    """The run store could not be opened, read or written.

    Raised when a store file cannot be used (a folder, an unwritable place, an
    empty or damaged file, a damaged row), and when a write fails during a run:
    then the run stops before its next agent starts, and ``partial`` holds every
    result that finished, in memory, including any the store could not record.

    Attributes:
        path: The store's file (for other backends, the store's repr), when known.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


def _rebuild(
    cls: type[SwarmError], args: tuple[object, ...], state: dict[str, object]
) -> SwarmError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first real failure in a (possibly nested) exception group, for re-raising alone.

    Re-raise it as ``raise error from error.__cause__``: ``from None`` would wipe the
    cause it already has (a user's own exception behind an AgentError, say).
    """
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return first_error(exc)  # pyright: ignore[reportUnknownArgumentType]
        return exc
    return group
