"""Policies for when things fail: how model calls retry, and what a parallel group needs.

Both are small frozen values, set where the user declares intent (on an Agent,
as a Swarm default, on a parallel group) and read by the code that acts on
them (``llm.complete``, ``Swarm``). Pure data: no I/O, no litellm.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal, TypeAlias

from swarmcore._checks import check_number
from swarmcore.errors import UserError


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a model call retries transient failures (429, timeouts, connection errors, 5xx).

    The n-th retry waits ``initial_delay * 2**(n-1)`` seconds, capped at
    ``max_delay``, plus up to ``jitter`` seconds at random so parallel agents
    do not retry in lockstep. A provider's ``Retry-After`` replaces that wait
    when it is longer; one beyond ``max_retry_after`` ends the retries at once,
    since waiting that long is rarely what a run wants.

    Errors that retrying cannot fix (a bad key, an unknown model, an invalid
    request, a prompt over the context window, a content-policy refusal) are
    never retried.

    Args:
        max_retries: Extra attempts after the first; 0 never retries.
        initial_delay: Seconds before the first retry.
        max_delay: The longest computed wait between attempts.
        jitter: Up to this many random seconds added to each wait.
        max_retry_after: The longest ``Retry-After`` honoured, in seconds.

    Raises:
        UserError: A count that is not a whole number of 0 or more, or a
            delay that is not a finite number of 0 or more.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 20.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        check_number("RetryPolicy", "max_retries", self.max_retries, whole=True, zero=True)
        # Seconds: NaN or inf would make every wait unbounded or undefined.
        for name in ("initial_delay", "max_delay", "jitter", "max_retry_after"):
            check_number("RetryPolicy", name, getattr(self, name), zero=True)

    @classmethod
    def of(cls, value: RetryPolicy | int) -> RetryPolicy:
        """``value`` as a policy: an int is ``RetryPolicy(max_retries=value)``.

        Raises:
            UserError: ``value`` is neither a RetryPolicy nor a non-negative int.
        """
        if isinstance(value, RetryPolicy):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(
                f"retry must be a RetryPolicy or a number of retries, got {value!r}; "
                "e.g. retry=3 or retry=RetryPolicy(max_retries=3, initial_delay=1.0)."
            )
        return cls(max_retries=value)

    def delay(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based).

        Args:
            retry_number: Which retry is next: 1 for the first.
            retry_after: The provider's ``Retry-After``, in seconds, if it sent one.
        """
        backoff = min(self.initial_delay * 2 ** (retry_number - 1), self.max_delay)
        backoff += random.uniform(0, self.jitter)  # jitter, not cryptography
        if retry_after is not None and retry_after > backoff:
            return retry_after
        return backoff


@dataclass(frozen=True, slots=True)
class Quorum:
    """A parallel group that continues once ``k`` of its members succeeded.

    The members still running then are cancelled (and reported as cancelled);
    the group fails as soon as so many members failed that ``k`` successes
    are out of reach.
    """

    k: int

    def __post_init__(self) -> None:
        check_number("Quorum", "k", self.k, whole=True)


BEST_EFFORT = "best_effort"
"""The group policy that runs every member and collects failures instead of stopping."""

GroupPolicy: TypeAlias = Literal["all", "best_effort"] | Quorum
"""What a parallel group needs to succeed.

* ``"all"`` (default): every member; the first failure cancels its siblings
  and ends the run.
* ``"best_effort"``: members that fail are recorded in ``SwarmResult.failures``
  and shown to later agents as failed; the run goes on.
* ``Quorum(k)``: k members; see :class:`Quorum`.
"""


def check_group_policy(policy: object, members: int) -> GroupPolicy:
    """Validate ``policy`` for a group of ``members`` members.

    Raises:
        UserError: An unknown policy, or a quorum larger than the group.
    """
    if isinstance(policy, Quorum):
        if policy.k > members:
            raise UserError(
                f"Quorum({policy.k}) cannot be met by a group of {members} members; "
                f"use a k between 1 and {members}."
            )
        return policy
    if policy == "all":
        return "all"
    if policy == BEST_EFFORT:
        return "best_effort"
    raise UserError(f"Unknown group policy {policy!r}; use 'all', 'best_effort' or Quorum(k).")
