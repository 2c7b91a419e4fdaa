"""Every SwarmError survives copy.copy and pickle (a process pool, multiprocessing).

Keyword-only constructors defeat the default reduction, so SwarmError keeps its
``__reduce__``. What a durable engine records is JSON, not pickles: test_records.py.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from swarmcore import errors
from swarmcore.errors import (
    AgentError,
    BudgetExceeded,
    DelegationDepthExceeded,
    GroupError,
    MaxTurnsExceeded,
    ModelError,
    OutputValidationError,
    StoreError,
    SwarmError,
    UserError,
)
from swarmcore.results import AgentFailure, AgentResult, SwarmResult

FAILURE = AgentFailure(agent_name="b", error_type="ModelError", message="b broke", retryable=True)


def partial() -> SwarmResult:
    finished = AgentResult(
        agent_name="a", output="a's words", summary="a", model="m/x", duration_seconds=0.5
    )
    return SwarmResult(
        output="a's words",
        context={"a": "a's words"},
        history=[finished],
        failures=[FAILURE],
        run_id="run-1",
    )


EXAMPLES: list[SwarmError] = [
    SwarmError("base"),
    UserError("bad flow"),
    AgentError("agent broke", agent_name="a", retryable=True),
    ModelError(
        "provider said no",
        agent_name="a",
        model="openai/x",
        status_code=429,
        retryable=True,
        retry_after=1.5,
    ),
    MaxTurnsExceeded("too many turns", agent_name="a", max_turns=4),
    OutputValidationError(
        "bad answer", agent_name="a", last_output="{}", feedback="missing field", attempts=3
    ),
    DelegationDepthExceeded("too deep", agent_name="c", chain=["a", "b", "c"], max_depth=2),
    GroupError("group failed", failures=[FAILURE], required=2),
    BudgetExceeded(
        "budget spent",
        agent_name="b",
        spent_cost=0.5,
        spent_tokens=1200,
        max_cost=0.4,
        max_tokens=None,
    ),
    StoreError("store broke", path="/tmp/runs.db"),
]


def test_the_examples_cover_every_swarm_error_class() -> None:
    classes = {
        obj
        for name in errors.__all__
        if isinstance(obj := getattr(errors, name), type) and issubclass(obj, SwarmError)
    }
    assert {type(e) for e in EXAMPLES} == classes


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("with_partial", [False, True], ids=["no-partial", "partial"])
def test_a_swarm_error_survives_pickle(error: SwarmError, with_partial: bool) -> None:
    if with_partial:
        error.partial = partial()
    assert vars(copy.copy(error)) == vars(error)
    copied = pickle.loads(pickle.dumps(error))
    assert type(copied) is type(error)
    assert str(copied) == str(error)
    assert copied.args == error.args
    assert vars(copied) == vars(error)  # every attribute, partial included
    if with_partial:
        assert copied.partial is not None
        assert copied.partial.history[0].output == "a's words"
        assert copied.partial.failures == [FAILURE]
    else:
        assert copied.partial is None
    if isinstance(error, AgentError | BudgetExceeded):
        assert getattr(copied, "agent_name") == getattr(error, "agent_name")  # noqa: B009
