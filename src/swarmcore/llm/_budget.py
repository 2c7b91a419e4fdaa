"""Budgets: one meter per run, shared by every branch, checked before each model call.

``Swarm(flow, max_cost=0.50, max_tokens=200_000)`` gives the run one meter, which
its :class:`~swarmcore.scope.RunScope` carries down to every model call. The
model seam asks it before every call (``check``) and tells it what each reply
cost (``charge``). A call that would start once the budget is spent is refused
with :class:`~swarmcore.errors.BudgetExceeded`, which stops the run and carries
the finished results. Under a cost budget, a model whose price LiteLLM does not
know is refused too (fail closed) unless ``allow_unpriced=True``, since its
calls could not be counted; so is every call after a reply that came back
without a price after all (a priced model whose reply reported no usage).
Calls already in flight when the budget runs out finish; the budget bounds
what starts, not what is already paid for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from swarmcore._checks import check_number
from swarmcore.errors import BudgetExceeded

_USD = " It is in USD, e.g. max_cost=0.50."


class Meter:
    """What one run has spent, against its limits. Safe to share across tasks and threads."""

    def __init__(
        self,
        *,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        allow_unpriced: bool = False,
    ) -> None:
        # NaN here once meant no budget at all (every `spent >= nan` is false).
        check_number("Swarm", "max_cost", max_cost, none="no cost budget", hint=_USD)
        check_number("Swarm", "max_tokens", max_tokens, whole=True, none="no token budget")
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.allow_unpriced = allow_unpriced
        self.spent_cost = 0.0
        self.spent_tokens = 0
        self.uncounted: str | None = None
        """The model of the first model call under ``max_cost`` whose cost was unknown."""
        self._lock = threading.Lock()

    def check(self, agent_name: str, model: str, is_priced: Callable[[str], bool]) -> None:
        """Refuse a call that would start with the budget spent, or unpriced under a cost cap.

        Raises:
            BudgetExceeded: The budget is spent, or ``model`` is unpriced (or an
                earlier call's cost was unknown) and a cost budget is set without
                ``allow_unpriced``.
        """
        with self._lock:
            cost, tokens, uncounted = self.spent_cost, self.spent_tokens, self.uncounted
        over: list[str] = []
        if self.max_cost is not None and cost >= self.max_cost:
            over.append(f"${cost:.4f} of max_cost=${self.max_cost:g} spent")
        if self.max_tokens is not None and tokens >= self.max_tokens:
            over.append(f"{tokens:,} of max_tokens={self.max_tokens:,} spent")
        if over:
            raise self._error(
                f"Budget exhausted ({'; '.join(over)}): agent {agent_name!r} was not allowed "
                f"to call {model}. Raise the budget or shorten the flow.",
                agent_name,
            )
        if self.max_cost is not None and not self.allow_unpriced and not is_priced(model):
            raise self._error(
                f"Agent {agent_name!r}: LiteLLM has no price for {model}, so its calls cannot "
                "count against max_cost and the call was refused. Pass allow_unpriced=True to "
                "the Swarm to run unpriced models under a cost budget (their cost is not "
                "counted), or register the model's price with litellm.register_model().",
                agent_name,
            )
        if uncounted is not None and self.max_cost is not None and not self.allow_unpriced:
            raise self._error(
                f"Agent {agent_name!r}: an earlier call to {uncounted} came back without a "
                "price (no token usage and no gateway cost in the reply), so what the run "
                f"has spent is unknown and the call to {model} was refused under max_cost. "
                "Pass allow_unpriced=True to the Swarm to go on without counting such calls.",
                agent_name,
            )

    def charge(self, tokens: int, cost: float | None, *, model: str | None = None) -> None:
        """Add one reply's tokens and cost (None: unpriced, counted as nothing).

        Args:
            tokens: The reply's tokens.
            cost: Its cost in USD; None when unknown.
            model: For one model call: the model. An unknown cost then fails the
                budget closed (``check`` refuses later calls) unless ``allow_unpriced``.
        """
        with self._lock:
            self.spent_tokens += tokens
            if cost is not None:
                self.spent_cost += cost
            elif model is not None and self.uncounted is None:
                self.uncounted = model

    def _error(self, message: str, agent_name: str) -> BudgetExceeded:
        return BudgetExceeded(
            message,
            agent_name=agent_name,
            spent_cost=self.spent_cost,
            spent_tokens=self.spent_tokens,
            max_cost=self.max_cost,
            max_tokens=self.max_tokens,
        )
