"""``swarmcore serve TARGET --ag-ui``: a real process, answering the official AG-UI client."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmcore.cli import main
from swarmcore.store import SQLiteStore
from tests.ag_ui.conftest import drive
from tests.serving import serving_command

ROOT = Path(__file__).parents[2]


async def test_serve_ag_ui_runs_the_flow_for_the_client_and_stores_the_run(
    node: str, tmp_path: Path
) -> None:
    store = tmp_path / "runs.db"
    with serving_command(
        "serve",
        "tests/a2a/flows.py:flow",
        "--ag-ui",
        "--port",
        "0",
        "--store",
        str(store),
        "--token",
        "t0ken",
        cwd=ROOT,
    ) as line:
        assert line.startswith(
            "swarmcore serve: AG-UI agent tests/a2a/flows.py:flow at http://127.0.0.1:"
        )
        url = line.split(" at ")[1].split(",")[0].strip().rstrip("/")
        driven = await drive(node, url, "Summarize AG-UI.", token="t0ken")
    [run] = driven["runs"]
    finished = run["events"][-1]
    assert finished["type"] == "RUN_FINISHED"
    assert set(driven["state"]["context"]) == {"summarizer", "critic"}
    runs = SQLiteStore(store)
    try:
        record = runs.get_run(finished["runId"])  # the AG-UI run id is the stored run's
    finally:
        runs.close()
    assert record is not None
    assert record.status == "succeeded"
    assert record.task == "Summarize AG-UI."


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--ag-ui", "--host", "0.0.0.0"], "--allow-remote"),
        (["--ag-ui", "--host", "0.0.0.0", "--allow-remote"], "SWARMCORE_AG_UI_TOKEN"),
        (["--ag-ui", "--keep-tasks", "5"], "--keep-tasks is an A2A option"),
        (["--ag-ui", "--answer-within", "0"], "answer_within"),
        (["--a2a", "--answer-within", "5"], "--answer-within is an AG-UI option"),
    ],
)
def test_serve_ag_ui_listens_by_the_same_rules(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWARMCORE_AG_UI_TOKEN", raising=False)
    assert main(["serve", "tests/a2a/flows.py:flow", *extra]) == 2
    assert says in capsys.readouterr().err


def test_serve_takes_one_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "tests/a2a/flows.py:flow", "--ag-ui", "--a2a"])
    assert "not allowed with" in capsys.readouterr().err
