"""The walk's one seam: every agent of a flow runs through one runner, at one position."""

from __future__ import annotations

import pytest

from swarmcore import AgentDefaults, AgentError, SharedContext, chain, parallel
from swarmcore._flow import Flow
from swarmcore._loop import RunOptions
from swarmcore._walk import AgentStep, FlowSetup, Position, Run, Walk, run_in_process
from swarmcore.modes import mode_named
from swarmcore.results import AgentResult
from tests.helpers import agents, echo_model


def _walk(flow: Flow, runner: object, *, step_retries: int = 0) -> Walk:
    setup = FlowSetup(
        flow=flow,
        mode=mode_named("pull"),
        defaults=AgentDefaults(retry=0),
        step_retries=step_retries,
        positions={name: i for i, name in enumerate(flow.names)},
    )
    run = Run(task="go", context=SharedContext(flow.names), options=RunOptions(), run_id="r1")
    return Walk(setup, run, runner)  # pyright: ignore[reportArgumentType]


async def test_every_agent_runs_through_the_runner_with_the_view_its_position_gives() -> None:
    model = echo_model()
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    calls: list[tuple[str, tuple[str, ...], int, bool]] = []

    async def runner(step: AgentStep) -> AgentResult:
        tools = {t.name for t in step.prepared.tools}
        calls.append(
            (step.agent.name, tuple(step.view.keys()), step.attempt, "get_context" in tools)
        )
        return await run_in_process(step)

    result = await _walk(chain(a, parallel(b, c), d), runner).result()
    assert sorted(calls) == [
        ("a", (), 1, False),
        ("b", ("a",), 1, True),
        ("c", ("a",), 1, True),
        ("d", ("a", "b", "c"), 1, True),
    ]
    assert [r.agent_name for r in result.history] == ["a", "b", "c", "d"]
    assert result.output == "d output"


async def test_a_runner_that_fails_transiently_is_called_again_as_step_retries_allow() -> None:
    model = echo_model()
    (a,) = agents(model.model, "a")
    attempts: list[int] = []

    async def flaky(step: AgentStep) -> AgentResult:
        attempts.append(step.attempt)
        if step.attempt == 1:
            raise AgentError("outage", agent_name=step.agent.name, retryable=True)
        return await run_in_process(step)

    result = await _walk(chain(a), flaky, step_retries=1).result()
    assert attempts == [1, 2]
    assert result.history[0].attempts == 2


async def test_a_runner_that_fails_for_good_leaves_the_finished_agents_in_partial() -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")

    async def broken_b(step: AgentStep) -> AgentResult:
        if step.agent.name == "b":
            raise RuntimeError("engine lost")
        return await run_in_process(step)

    with pytest.raises(AgentError, match="engine lost") as caught:
        await _walk(a >> b, broken_b).result()
    partial = caught.value.partial
    assert partial is not None
    assert [r.agent_name for r in partial.history] == ["a"]
    assert [f.agent_name for f in partial.failures] == ["b"]


def test_a_position_after_a_step_sees_it_and_names_it_the_previous_step() -> None:
    at = Position(("a",), ("a",), 2).after("b", "c")
    assert at == Position(("a", "b", "c"), ("b", "c"), 2)
    assert at.seeing("r") == Position(("a", "b", "c", "r"), ("b", "c"), 2)
