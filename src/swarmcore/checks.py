"""The one rule for numeric settings (budgets, timeouts, retries, limits, sizes), and for tasks.

Every setting a user gives as a number is checked here when it is defined (an
Agent, a Swarm, a RetryPolicy, a ModelLimit, a Tool...), so a bad value fails
before anything is spent. NaN compares false with everything, so a ``value <= 0``
test lets it through and it then silently disables a budget or a timeout; a bool
is an int to Python; an int beyond float range breaks the first timer or rate
computed from it. None of them is ever a usable setting.
"""

from __future__ import annotations

import math

from swarmcore.errors import UserError

__all__ = ["check_number", "check_task"]


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
    ``unlimited`` (where it means no limit); None only if ``none`` says what it means.

    Args:
        owner: Who has the setting, for the message: ``"Agent 'writer'"``, ``"RetryPolicy"``.
        name: The setting, as the user spells it.
        value: What the user passed.
        whole: Only ints are allowed.
        zero: 0 is allowed.
        unlimited: ``math.inf`` is allowed and means no limit.
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
    if unlimited and none == "no limit":
        choices.append("math.inf or None for no limit")
    else:
        choices += ["math.inf for no limit"] if unlimited else []
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
