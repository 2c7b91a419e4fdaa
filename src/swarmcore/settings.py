"""The settings an agent run needs that a Swarm can default: one type, resolved once per run."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from swarmcore.checks import check_number
from swarmcore.llm.choice import backend_named
from swarmcore.llm.types import BackendName
from swarmcore.policies import RetryPolicy

__all__ = ["SETTING_NAMES", "AgentDefaults", "check_settings"]


@dataclass(frozen=True, slots=True)
class AgentDefaults:
    """Settings for agents that leave them unset (None): pass one to ``Swarm(defaults=...)``.

    An Agent's own setting always wins. For the timeouts and
    ``max_tool_result_chars``, ``math.inf`` means no limit. A run's
    settings are the same type, with the agent's own values filled in
    (:meth:`resolve`).

    Args:
        retry: How model calls retry transient failures; an int is a number of retries.
        call_timeout: Seconds for one model call attempt.
        timeout: Seconds for an agent's whole run (every turn and tool); None for no limit.
        tool_timeout: Seconds for one tool call; None for no limit.
        max_tool_result_chars: Longer tool results are cut to this many
            characters, with a marker; None keeps them whole.
        max_parallel_tools: The most tool calls of one reply run at once.
        backend: Which backend makes model calls: ``"native"`` (the OpenAI
            protocol, spoken by swarmcore), ``"litellm"``, or ``"auto"`` (native
            for OpenAI-protocol models, else LiteLLM). None: the process
            default, ``$SWARMCORE_MODEL_BACKEND``, else auto.

    Raises:
        UserError: A setting that is not a positive number (whole for counts and
            sizes), ``math.inf`` where it means no limit, or None where allowed;
            NaN, bools and ints beyond float range never are.
    """

    retry: RetryPolicy | int = field(default_factory=RetryPolicy)
    call_timeout: float | None = 120.0
    timeout: float | None = None
    tool_timeout: float | None = 120.0
    max_tool_result_chars: int | None = 50_000
    max_parallel_tools: int = 8
    backend: BackendName | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "retry", RetryPolicy.of(self.retry))
        check_settings("AgentDefaults", self, none="no limit")
        check_number("AgentDefaults", "max_parallel_tools", self.max_parallel_tools, whole=True)
        if self.backend is not None:
            backend = backend_named(self.backend, "AgentDefaults: backend")
            object.__setattr__(self, "backend", backend)

    @property
    def retry_policy(self) -> RetryPolicy:
        """``retry`` as the RetryPolicy it always is once built."""
        assert isinstance(self.retry, RetryPolicy)  # __post_init__ converts ints
        return self.retry

    def resolve(self, own: _HasSettings) -> AgentDefaults:
        """These defaults under an agent's own settings (those it sets win), ``inf`` as None."""
        return _resolved(self, tuple(getattr(own, name) for name in SETTING_NAMES))


SETTING_NAMES = tuple(f.name for f in dataclasses.fields(AgentDefaults))
"""The settings an Agent can set itself or leave to the Swarm's defaults."""


@functools.lru_cache(maxsize=1024)
def _resolved(defaults: AgentDefaults, own: tuple[Any, ...]) -> AgentDefaults:
    # Keyed by value (the settings themselves): every run of an agent asks again, and
    # building and validating a settings object each time showed in W3's CPU per call.
    values: dict[str, Any] = {}
    for name, value in zip(SETTING_NAMES, own, strict=True):
        value = getattr(defaults, name) if value is None else value
        values[name] = None if value == math.inf else value
    return dataclasses.replace(defaults, **values)


class _HasSettings(Protocol):
    @property
    def retry(self) -> RetryPolicy | int | None: ...
    @property
    def call_timeout(self) -> float | None: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def tool_timeout(self) -> float | None: ...
    @property
    def max_tool_result_chars(self) -> int | None: ...
    @property
    def max_parallel_tools(self) -> int | None: ...
    @property
    def backend(self) -> BackendName | None: ...


def check_settings(owner: str, settings: _HasSettings, *, none: str) -> None:
    """Check the timeouts and the result size of ``settings`` (None there means ``none``).

    Raises:
        UserError: A value that is not a positive number (a whole one for the
            size), ``math.inf`` for no limit, or None.
    """
    for name in ("call_timeout", "timeout", "tool_timeout"):
        check_number(owner, name, getattr(settings, name), unlimited=True, none=none)
    size = settings.max_tool_result_chars
    check_number(owner, "max_tool_result_chars", size, whole=True, unlimited=True, none=none)
