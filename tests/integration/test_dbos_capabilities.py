"""Delegation, prompt variables and budgets on the DBOS engine behave as in process."""

from __future__ import annotations

import pytest
from dbos import DBOSClient

from swarmcore import Agent, Flow, Swarm
from swarmcore.engines.dbos import DBOSEngine, RecordSerializer
from swarmcore.errors import BudgetExceeded
from swarmcore.testing import FunctionModel, RecordedRequest, Reply


def delegating(model: str) -> Flow:
    expert = Agent("expert", "expert answers about {topic}.", model=model)
    lead = Agent(
        "lead", "lead asks the expert about {topic}.", model=model, tools=[expert.as_tool()]
    )
    return lead >> Agent("editor", "editor polishes.", model=model)


def answers() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "lead" and "expert" not in request.called_tools:
            return Reply.tool("expert", task="what matters most?")
        return Reply(text=f"{who} says: {request.system}", prompt_tokens=40, completion_tokens=10)

    return FunctionModel(answer)


async def test_delegation_and_variables_give_what_they_give_in_process(engine: DBOSEngine) -> None:
    here, there = answers(), answers()
    variables = {"topic": "tea"}
    expected = await Swarm(delegating(here.model)).run("go", variables=variables)
    result = await Swarm(delegating(there.model), engine=engine).run(
        "go", variables=variables, run_id="delegated"
    )
    assert result.output == expected.output
    assert result["lead"].delegations[0].agent_name == "expert"
    assert result["lead"].delegations[0].output == expected["lead"].delegations[0].output
    assert "about tea" in result["lead"].delegations[0].output
    assert result.token_usage == expected.token_usage
    assert len(there.requests) == len(here.requests) == 4  # lead twice, expert, editor
    client = DBOSClient(system_database_url=engine.database_url, serializer=RecordSerializer())
    try:
        steps = await client.list_workflow_steps_async("delegated/lead/1")
    finally:
        client.destroy()
    # The delegate runs inside the lead's tool call: one recorded step for all of it.
    assert [s["function_name"] for s in steps] == ["model", "tool:expert", "model"]


async def test_a_budget_stops_the_run_where_it_stops_in_process(engine: DBOSEngine) -> None:
    here, there = answers(), answers()
    with pytest.raises(BudgetExceeded) as in_process:
        await Swarm(delegating(here.model), max_tokens=120).run("go", variables={"topic": "tea"})
    with pytest.raises(BudgetExceeded) as on_engine:
        await Swarm(delegating(there.model), engine=engine, max_tokens=120).run(
            "go", variables={"topic": "tea"}, run_id="capped"
        )
    assert on_engine.value.agent_name == in_process.value.agent_name
    assert len(there.requests) == len(here.requests)
