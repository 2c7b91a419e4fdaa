"""The one rule for numeric settings (budgets, timeouts, retries, limits, sizes), tasks and run ids.

Every setting a user gives as a number is checked here when it is defined (an
Agent, a Swarm, a RetryPolicy, a ModelLimit, a Tool...), so a bad value fails
before anything is spent. NaN compares false with everything, so a ``value <= 0``
test lets it through and it then silently disables a budget or a timeout; a bool
is an int to Python; an int beyond float range breaks the first timer or rate
computed from it. None of them is ever a usable setting.

"No limit" is spelled None everywhere. ``math.inf``, its older spelling where
a limit could be lifted, is still taken, with a DeprecationWarning
(:func:`no_limit`). A setting that takes its value from the level above (an
Agent's from the Swarm's ``AgentDefaults``, a tool's timeout from its agent's
``tool_timeout``) is left unset with :data:`DEFAULT`, its default.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Final, TypeVar, cast

from swarmcore._deprecation import warn_deprecated
from swarmcore.errors import UserError

_T = TypeVar("_T")


class Default(enum.Enum):
    """The type of :data:`DEFAULT`, a setting left unset."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = Default.DEFAULT
"""A setting left unset, to take its default from the level above: an Agent's timeouts
and result size from the Swarm's ``AgentDefaults``, a tool's timeout from its agent's
``tool_timeout``. None, by contrast, means no limit."""


def no_limit(owner: str, name: str, value: _T) -> _T | None:
    """``value``, with ``math.inf`` (the older spelling of no limit) as None, warning.

    Args:
        owner: Who has the setting, for the message: ``"Agent 'writer'"``.
        name: The setting, as the user spells it.
        value: What the user passed.
    """
    if isinstance(value, float) and value == math.inf:
        prefix = f"{owner}: " if owner else ""
        warn_deprecated(
            f"{prefix}{name}=math.inf is deprecated; pass {name}=None for no limit "
            "(None means no limit everywhere)."
        )
        return None
    return value


MAX_RUN_ID = 256
"""The most characters in a run id. Ids are keys in the run store and in the durable
engine's database (whose index entries are bounded), and are shown in logs and pages;
a longer key can be shortened to its hash."""


def check_number(
    owner: str,
    name: str,
    value: object,
    *,
    whole: bool = False,
    zero: bool = False,
    unlimited: bool = False,
    none: str | None = None,
    hint: str = "",
) -> None:
    """Fail unless ``value`` is a usable value for the numeric setting ``name``.

    Usable: an int or a float (never a bool), not NaN, within float range, above
    0 (or 0 itself if ``zero``), an int if ``whole``; ``math.inf`` only if
    ``unlimited`` (where it is the older spelling of no limit: see :func:`no_limit`);
    None only if ``none`` says what it means.

    Args:
        owner: Who has the setting, for the message: ``"Agent 'writer'"``, ``"RetryPolicy"``.
        name: The setting, as the user spells it.
        value: What the user passed.
        whole: Only ints are allowed.
        zero: 0 is allowed.
        unlimited: ``math.inf`` is allowed (and left to :func:`no_limit`).
        none: What None means where it is allowed (``"no limit"``); None: not allowed.
        hint: Added to the message, e.g. an example value.

    Raises:
        UserError: Naming the owner, the setting, the value and what is allowed.
    """
    if value is None and none is not None:
        return
    if _usable(value, whole=whole, zero=zero, unlimited=unlimited):
        return
    choices = [_kind(whole=whole, zero=zero, unlimited=unlimited)]
    choices += [f"None for {none}"] if none is not None else []
    allowed = choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])}, or {choices[-1]}"
    prefix = f"{owner}: " if owner else ""
    raise UserError(f"{prefix}{name} must be {allowed}; got {_shown(value)}.{hint}")


def check_task(task: object) -> None:
    """Refuse a task that is not a non-empty string.

    Raises:
        UserError: It is not.
    """
    if not isinstance(task, str) or not task.strip():
        raise UserError("Swarm.run() needs a non-empty task string.")


def check_run_id(run_id: object, *, name: str = "run_id", lookup: bool = False) -> None:
    """Refuse what cannot be a run id: a non-empty string without '/', of ``MAX_RUN_ID`` at most.

    Args:
        run_id: What the user passed.
        name: Where it was passed, for the message: ``"run_id"``, ``"key, for task 3"``.
        lookup: It names a stored run (its whole id or a prefix of it): only its
            type and length are checked.

    Raises:
        UserError: It is no string, is too long (saying the limit), or, unless
            ``lookup``, is empty or holds a '/'.
    """
    if not isinstance(run_id, str) or (not lookup and (not run_id or "/" in run_id)):
        what = "a string" if lookup else "a non-empty string without '/'"
        raise UserError(f"{name}: {_shown(run_id)} is no run id; a run id is {what}.")
    if len(run_id) > MAX_RUN_ID:
        raise UserError(
            f"{name}: the run id is too long: {len(run_id):,} characters, and a run id has at "
            f"most {MAX_RUN_ID} (this one starts {run_id[:24]!r}). Give a shorter one; for a "
            "long key, its hash: hashlib.sha256(key.encode()).hexdigest() has 64 characters."
        )


def check_same_run(
    run_id: str, *, task: str, variables: object, stored_task: object, stored_variables: object
) -> None:
    """Refuse to run ``task`` under the id of a stored run of another task or other variables.

    A run id names one run: given again, the durable engine returns that run's
    recorded outcome (another task's answer), and a run store would file this
    run's results under that run's task.

    Args:
        run_id: The id given.
        task: The task given with it.
        variables: The prompt variables given with it.
        stored_task: The task of the run already stored under ``run_id``.
        stored_variables: That run's variables (None: none).

    Raises:
        UserError: The stored run is of another task, or of this task with
            other variables; saying how to run anew.
    """
    if stored_task == task and _as_text(stored_variables) == _as_text(variables):
        return
    held = (
        f"another task's run (its task: {_shown(stored_task)})"
        if stored_task != task
        else "a run of this task with other variables"
    )
    raise UserError(
        f"Run id {run_id!r} already holds {held}; this task was not run: a run id names one "
        "run, so its answer and its record would be that run's. To run this task, give it a "
        "new run id (swarm.run(task) makes one when run_id is not given)."
    )


def _as_text(variables: object) -> dict[str, str] | str:
    """Variables as they are rendered (names and values as text), to compare two runs'."""
    if variables is None:
        return {}
    if isinstance(variables, Mapping):
        stored = cast("Mapping[object, object]", variables)
        return {str(k): str(v) for k, v in stored.items()}
    return repr(variables)


def _usable(value: object, *, whole: bool, zero: bool, unlimited: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if value == math.inf:
        return unlimited
    if isinstance(value, float) and (whole or math.isnan(value)):
        return False
    try:
        float(value)  # an int beyond float range overflows the first timer or rate using it
    except OverflowError:
        return False
    return value > 0 or (zero and value == 0)


def _kind(*, whole: bool, zero: bool, unlimited: bool) -> str:
    if whole:
        return "0 or more (a whole number)" if zero else "a positive whole number"
    if zero:
        return "0 or more (a finite number)"
    return "a positive number" if unlimited else "a positive finite number"


def _shown(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 1024:
        # Beyond float range; and repr() of an int over 4,300 digits raises ValueError.
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"an int of about {digits} digits (beyond float range)"
    if isinstance(value, int | float):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."
