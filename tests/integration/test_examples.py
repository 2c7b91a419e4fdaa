"""The examples run offline from a fresh process, as the README says they do."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swarmcore.store import SQLiteStore
from swarmcore.testing import TemporaryPostgres

EXAMPLES = Path(__file__).parents[2] / "examples"


# Runs an example as its own script, then says whether it imported LiteLLM.
_RUN_AND_TELL = (
    "import runpy, sys; path = sys.argv[1]; sys.argv = sys.argv[1:]; "
    "runpy.run_path(path, run_name='__main__'); "
    "print('litellm imported:', 'litellm' in sys.modules)"
)


def _run(name: str, **extra: str) -> str:
    """The example's output; it ran offline, so it never imported LiteLLM (test models don't)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("SWARMCORE_MODEL", None)
    env.update(extra)
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_TELL, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out, _, told = done.stdout.rstrip("\n").rpartition("\n")
    assert told == "litellm imported: False", done.stdout
    return out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("capabilities.py", ["verdict: publish", "  > researcher", "save_draft: approval=edited"]),
        ("pull_vs_push.py", ["short chain: push sent", "fan-in of parts: pull sent"]),
        (
            "a2a_agents.py",
            [
                "1. the desk (researcher >> writer) is served as an A2A agent at http://127.0.0.1:",
                "2. a plain a2a-sdk client asked it; the answer begins: 'Offline answer (You write",
                "4. planner >> desk >> shouter ran; agents: ['planner', 'desk', 'shouter']",
                "   the shouter answered: 'IS TEA GOOD FOR YOU?'",
            ],
        ),
    ],
)
def test_example_runs_offline(name: str, expected: list[str]) -> None:
    out = _run(name)
    assert "Running offline" in out
    for text in expected:
        assert text in out


def test_quickstart_runs_offline_and_stores_its_run_for_the_viewer(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    out = _run("quickstart.py", SWARMCORE_STORE=str(path))
    assert "Running offline" in out
    store = SQLiteStore(path)
    try:
        [run] = store.list_runs()
    finally:
        store.close()
    assert run.status == "succeeded"
    assert run.flow == "researcher >> (analyst | critic) >> writer"
    assert run.agents_done == 4


def test_scale_out_example_runs_on_two_workers(postgres: TemporaryPostgres) -> None:
    url = postgres.new_database("scale_out_example")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["SWARMCORE_DATABASE_URL"] = url
    # Its own session, so the workers it starts are killed with it if it hangs.
    example = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "scale_out.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = example.communicate(timeout=180)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(example.pid, signal.SIGKILL)
        example.wait()
    assert example.returncode == 0, out + err
    assert "Running offline" in out
    ran = [line.split()[:2] for line in out.splitlines() if line.startswith("scale-out-")]
    assert len(ran) == 8  # every run came back with a result
    assert {worker for _, worker in ran} == {"worker-1", "worker-2"}  # both workers served runs
    assert "workers stopped" in out
