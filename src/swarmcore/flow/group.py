"""A parallel group: a tuple of members with the policy it needs to succeed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

from swarmcore.policies import GroupPolicy

if TYPE_CHECKING:
    from swarmcore.flow.model import Flow, FlowNode

__all__ = ["Group", "Member"]


Member: TypeAlias = "FlowNode | Flow"
"""A member of a parallel group: a node, or a branch (a multi-step Flow)."""


class Group(tuple[Member, ...]):
    """A parallel group: its members (a tuple), and what it needs to succeed.

    Build one with ``|`` or :func:`parallel`; set a policy with
    ``parallel(..., policy=...)`` or :meth:`Flow.with_policy`.

    Attributes:
        policy: ``"all"``, ``"best_effort"`` or ``Quorum(k)``.
        retries: How many times a member agent that failed transiently is run again.
    """

    policy: GroupPolicy
    retries: int | None

    def __new__(
        cls, members: Iterable[Member], policy: GroupPolicy = "all", retries: int | None = None
    ) -> Group:
        """A group of ``members``; use :func:`parallel`, which validates the policy."""
        group = super().__new__(cls, members)
        group.policy = policy
        group.retries = retries
        return group

    @property
    def is_default(self) -> bool:
        """True for a plain ``a | b`` group, which merges into an enclosing group."""
        return self.policy == "all" and self.retries is None

    def __eq__(self, other: object) -> bool:
        same_members = super().__eq__(other)
        if isinstance(other, Group):
            return same_members and (self.policy, self.retries) == (other.policy, other.retries)
        return same_members

    def __hash__(self) -> int:
        return hash((tuple(self), self.policy, self.retries))

    def __repr__(self) -> str:
        return f"Group({list(self)!r}, policy={self.policy!r}, retries={self.retries!r})"
