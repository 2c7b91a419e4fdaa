"""The settings an agent run needs that a Swarm can default: one type, resolved once per run."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Protocol

from swarmcore._checks import DEFAULT, Default, check_number, no_limit
from swarmcore._policies import RetryPolicy
from swarmcore.llm._types import ApiName, BackendName
from swarmcore.llm.choice import api_named, backend_named


@dataclass(frozen=True, slots=True)
class AgentDefaults:
    """Settings for agents that leave them unset: pass one to ``Swarm(defaults=...)``.

    An Agent's own setting always wins. For the timeouts and
    ``max_tool_result_chars``, None means no limit (``math.inf``, an older
    spelling, warns). A run's settings are the same type, with the agent's
    own values filled in (:meth:`resolve`).

    Args:
        retry: How model calls retry transient failures; an int is a number of retries.
        call_timeout: Seconds for one model call attempt; None for no limit.
        timeout: Seconds for an agent's whole run (every turn and tool); None for no limit.
        tool_timeout: Seconds for one tool call; None for no limit.
        max_tool_result_chars: Longer tool results are cut to this many
            characters, with a marker; None keeps them whole.
        max_parallel_tools: The most tool calls of one reply run at once.
        backend: Which backend makes model calls: ``"native"`` (the OpenAI
            protocol, spoken by swarmcore), ``"litellm"``, or ``"auto"`` (native
            for OpenAI-protocol models, else LiteLLM). None: the process
            default, ``$SWARMCORE_MODEL_BACKEND``, else auto.
        api: Which OpenAI API the native backend speaks: ``"chat_completions"``
            or ``"responses"`` (reasoning items carried between turns, for
            OpenAI's reasoning models with tools). None: the Responses API for an
            OpenAI reasoning model offered tools, chat completions for every other.

    Raises:
        UserError: A setting that is not a positive number (whole for counts and
            sizes), or None where allowed; NaN, bools and ints beyond float
            range never are.
    """

    retry: RetryPolicy | int = field(default_factory=RetryPolicy)
    call_timeout: float | None = 120.0
    timeout: float | None = None
    tool_timeout: float | None = 120.0
    max_tool_result_chars: int | None = 50_000
    max_parallel_tools: int = 8
    backend: BackendName | None = None
    api: ApiName | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "retry", RetryPolicy.of(self.retry))
        check_settings("AgentDefaults", self)
        for name in LIMIT_NAMES:
            object.__setattr__(self, name, no_limit("AgentDefaults", name, getattr(self, name)))
        check_number("AgentDefaults", "max_parallel_tools", self.max_parallel_tools, whole=True)
        if self.backend is not None:
            backend = backend_named(self.backend, "AgentDefaults: backend")
            object.__setattr__(self, "backend", backend)
        if self.api is not None:
            api = api_named(self.api, "AgentDefaults: api", self.backend)
            object.__setattr__(self, "api", api)

    @property
    def retry_policy(self) -> RetryPolicy:
        """``retry`` as the RetryPolicy it always is once built."""
        assert isinstance(self.retry, RetryPolicy)  # __post_init__ converts ints
        return self.retry

    def resolve(self, own: _HasSettings) -> AgentDefaults:
        """These defaults under an agent's own settings (those it sets win)."""
        return _resolved(self, tuple(getattr(own, name) for name in SETTING_NAMES))


SETTING_NAMES = tuple(f.name for f in dataclasses.fields(AgentDefaults))
"""The settings an Agent can set itself or leave to the Swarm's defaults."""
LIMIT_NAMES = ("call_timeout", "timeout", "tool_timeout", "max_tool_result_chars")
"""The settings whose None means no limit; an Agent leaves them to the Swarm with DEFAULT
(for the others, ``retry``, ``max_parallel_tools``, ``backend`` and ``api``, None is the
Swarm's)."""


@functools.lru_cache(maxsize=1024)
def _resolved(defaults: AgentDefaults, own: tuple[Any, ...]) -> AgentDefaults:
    # Keyed by value (the settings themselves): every run of an agent asks again, and
    # building and validating a settings object each time showed in W3's CPU per call.
    values: dict[str, Any] = {}
    for name, value in zip(SETTING_NAMES, own, strict=True):
        unset = value is DEFAULT or (value is None and name not in LIMIT_NAMES)
        values[name] = getattr(defaults, name) if unset else value
    return dataclasses.replace(defaults, **values)


class _HasSettings(Protocol):
    @property
    def retry(self) -> RetryPolicy | int | None: ...
    @property
    def call_timeout(self) -> float | Default | None: ...
    @property
    def timeout(self) -> float | Default | None: ...
    @property
    def tool_timeout(self) -> float | Default | None: ...
    @property
    def max_tool_result_chars(self) -> int | Default | None: ...
    @property
    def max_parallel_tools(self) -> int | None: ...
    @property
    def backend(self) -> BackendName | None: ...
    @property
    def api(self) -> ApiName | None: ...


def check_settings(owner: str, settings: _HasSettings) -> None:
    """Check the timeouts and the result size of ``settings`` (DEFAULT, unset, passes).

    Raises:
        UserError: A value that is not a positive number (a whole one for the
            size), or None for no limit.
    """
    for name in LIMIT_NAMES:
        value = getattr(settings, name)
        if value is not DEFAULT:
            whole = name == "max_tool_result_chars"
            check_number(owner, name, value, whole=whole, unlimited=True, none="no limit")
