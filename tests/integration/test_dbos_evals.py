"""`swarmcore eval add RUN_ID --database-url URL`: a run the DBOS engine stored becomes a case."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from swarmcore import Agent, Swarm
from swarmcore.cli import main
from swarmcore.engines.dbos import DBOSEngine, DBOSHistory
from swarmcore.evals import Case, Suite, case_from_run
from swarmcore.testing import OfflineModel

MODEL = OfflineModel(name="dbos-evals")
TASK = "What is the weather in Paris?"
TARGET = f"{__name__}:flow"
lookups: list[str] = []


def lookup(city: str) -> str:
    """Look up a city's weather.

    Args:
        city: The city.
    """
    lookups.append(city)
    return f"sunny in {city}"


researcher = Agent("researcher", "Research the task.", model=MODEL.model, tools=[lookup])
flow = researcher >> (
    Agent("critic", "Criticise.", model=MODEL.model) | Agent("checker", "Check.", model=MODEL.model)
)


async def test_eval_add_makes_a_case_of_an_engine_run_that_replays_offline(
    engine: DBOSEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await Swarm(flow, engine=engine).run(TASK, run_id="evals-run")
    url, suite = engine.database_url, tmp_path / "suite"
    add = ["eval", "add", "evals-run", "--database-url", url, "--suite", str(suite)]
    added = await asyncio.to_thread(main, [*add, "--name", "engine", "--target", TARGET])
    assert added == 0, capsys.readouterr().err
    calls = sum(len(r.llm_calls) for r in result.history)  # the researcher's tool turn too
    assert f"engine.json: {calls} model calls, 1 tool results recorded" in capsys.readouterr().out

    case = Case.load(suite / "engine.json")
    assert case.task == TASK
    assert case.context_mode == "auto"  # the Swarm's, as the engine's workflow input keeps it
    assert case.expect.steps == [["researcher"], ["checker", "critic"]]
    assert case.expect.output == result.output
    assert case.tool_cassette[0].result == "sunny in example city"
    assert case.tool_specs is not None  # made with the flow: its tool schemas are checked
    history = DBOSHistory(url)
    try:  # the CLI wrote what the Python API makes of the same record
        assert case_from_run(history, "evals-run", name="engine", flow=flow) == case
    finally:
        history.close()

    lookups.clear()
    report = await Suite.from_dir(suite).run(flow)
    assert report.failed == 0, report.details()
    assert lookups == []  # the tool answered from the cassette
    replayed = await asyncio.to_thread(main, ["eval", "run", TARGET, "--suite", str(suite)])
    assert replayed == 0, capsys.readouterr().out
    assert "1/1" in capsys.readouterr().out

    missing = await asyncio.to_thread(
        main, ["eval", "add", "nope", "--database-url", url, "--suite", str(suite)]
    )
    assert missing == 2
    assert "no run 'nope' in the engine's database" in capsys.readouterr().err
