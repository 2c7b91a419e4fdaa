"""The viewer's eval pages: a suite's cases with the last report, and a case's first divergence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from swarmcore import Agent, Swarm
from swarmcore._ui.app import create_app
from swarmcore._ui.evals import EvalSource
from swarmcore.evals import Suite, case_from_run
from swarmcore.store import SQLiteStore
from swarmcore.testing import OfflineModel

LOCAL = "http://127.0.0.1"
MODEL = OfflineModel(name="ui-evals")


def _flow(researcher_says: str = "Research the task.") -> object:
    return Agent("researcher", researcher_says, model=MODEL.model) >> Agent(
        "writer", "Write <b>it</b>.", model=MODEL.model
    )


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    store = tmp_path / "runs.db"
    for name, task in (("tea", "Is tea good?"), ("coffee", "Is <script>coffee</script> good?")):
        run_id = Swarm(_flow(), store=store).run_sync(task).run_id
        case_from_run(store, run_id, name=name).save(tmp_path / "suite")
    return tmp_path


@pytest.fixture
def client(suite_dir: Path) -> Iterator[TestClient]:
    store = SQLiteStore(suite_dir / "runs.db")
    source = EvalSource(suite_dir / "suite", suite_dir / "report.json")
    with TestClient(base_url=LOCAL, app=create_app(store, evals=source)) as c:
        yield c
    store.close()


def test_the_evals_page_lists_the_cases_and_their_last_results(
    client: TestClient, suite_dir: Path
) -> None:
    page = client.get("/evals")
    assert page.status_code == 200
    assert page.text.count('data-result="not run"') == 2  # no report yet
    assert "no report yet" in page.text
    assert "<script>coffee" not in page.text  # a task is text, escaped
    assert 'href="/evals"' in client.get("/").text  # beside the runs

    suite = Suite.from_dir(suite_dir / "suite")
    report = suite.run_sync(_flow("Research the task twice."))
    report.save(suite_dir / "report.json")
    page = client.get("/evals")
    assert page.text.count('data-result="fail"') == 2
    assert "last report: 0 passed, 2 failed" in page.text


def test_a_case_page_shows_its_checks_and_the_first_divergence(
    client: TestClient, suite_dir: Path
) -> None:
    report = Suite.from_dir(suite_dir / "suite").run_sync(_flow("Research the task twice."))
    report.save(suite_dir / "report.json")
    page = client.get("/evals/tea")
    assert page.status_code == 200
    assert "First divergence" in page.text
    assert "agent &#39;researcher&#39;: message 1 (system) differs at character" in page.text
    assert 'data-check="path"' in page.text
    assert client.get("/evals/nope").status_code == 404


def test_without_a_suite_there_are_no_eval_pages(suite_dir: Path) -> None:
    store = SQLiteStore(suite_dir / "runs.db")
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        assert c.get("/evals").status_code == 404
        assert 'href="/evals"' not in c.get("/").text
    store.close()


def test_the_ui_command_needs_the_suite_of_a_report(
    suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from swarmcore.cli import main

    store = str(suite_dir / "runs.db")
    assert main(["ui", "--store", store, "--port", "0", "--eval-report", "r.json"]) == 2
    assert "--eval-report needs --suite DIR" in capsys.readouterr().err
    assert main(["ui", "--store", store, "--port", "0", "--suite", "missing"]) == 2
    assert "no suite directory missing" in capsys.readouterr().err
