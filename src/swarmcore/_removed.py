"""Keywords of swarmcore 0.3.x that are gone: a TypeError that says what to write now.

swarmcore 1.0 replaced an earlier project of the same name (0.3.x on PyPI).
Code written for it passes keywords this version does not take; Python's own
"unexpected keyword argument" names the keyword but not its replacement, so
the constructors that had them say it (docs/migration.md has the whole table).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

_Init = TypeVar("_Init", bound=Callable[..., None])

AGENT_REMOVED: Mapping[str, str] = {
    "max_retries": (
        "write retry=N (retries of a model call on 429, timeouts and 5xx), "
        "or retry=RetryPolicy(max_retries=N, ...)"
    ),
}
"""Agent keywords of 0.3.x, and what to write instead."""

SWARM_REMOVED: Mapping[str, str] = {
    "timeout": (
        "it limited each model call there; write defaults=AgentDefaults(call_timeout=...) "
        "(or AgentDefaults(timeout=...) to limit each agent's whole run)"
    ),
    "max_retries": "write defaults=AgentDefaults(retry=N)",
}
"""Swarm keywords of 0.3.x, and what to write instead.

(``context_budget`` came back in 1.0 with another meaning: tokens of context per
agent under ``context_mode="auto"``. With any other mode it is refused with a
UserError that says so, which is what 0.3.x code passing it now meets.)
"""


def explain_removed(owner: str, removed: Mapping[str, str]) -> Callable[[_Init], _Init]:
    """Wrap an ``__init__`` so a 0.3.x keyword fails with a TypeError naming its replacement.

    Args:
        owner: The class's name, for the message.
        removed: Keyword to what to write instead.

    Returns:
        A decorator for ``__init__``; the wrapped one keeps its signature.
    """

    def wrap(init: _Init) -> _Init:
        @functools.wraps(init)
        def checked(self: object, *args: Any, **kwargs: Any) -> None:
            for name in removed.keys() & kwargs.keys():
                raise TypeError(
                    f"{owner}() got the keyword {name}=, which is from swarmcore 0.3.x and "
                    f"gone in 1.0: {removed[name]}. See the migration guide "
                    "(docs/migration.md)."
                )
            init(self, *args, **kwargs)

        return cast("_Init", checked)

    return wrap
