from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from swarmcore.cli import main

FLOW_FILE = """
from swarmcore import Agent
from swarmcore.testing import offline_model

m = offline_model()
a, b, c = (Agent(n, f"{n.upper()} works.", model=m) for n in "abc")
flow = a >> (b | c)
not_a_flow = 42
"""


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "flows.py"
    path.write_text(FLOW_FILE)
    return path


def test_graph_prints_mermaid_without_importing_litellm(flow_file: Path) -> None:
    code = (
        "import sys; from swarmcore.cli import main; "
        f"rc = main(['graph', {str(flow_file) + ':flow'!r}]); "
        "print('litellm' in sys.modules, rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "flowchart LR"
    assert "    a --> b" in lines
    assert "    a --> c" in lines
    assert lines[-1] == "False 0"


def test_run_executes_the_flow(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", f"{flow_file}:flow", "what is tea", "--context-mode", "push", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr()
    assert out.out.startswith("## b\n\nOffline answer (B works.) to: what is tea")
    assert "[3 agents," in out.err


def test_run_shows_progress_on_stderr(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "summary"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("## b\n\n")
    for name in "abc":
        assert name in out.err
    assert "\x1b[" not in out.err  # not a terminal: plain lines


def test_dry_run_prints_the_estimate(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["agent", "model", "calls", "prompt", "tokens", "prompt", "cost"]
    assert lines[-1].startswith("total")


def test_budget_flags_stop_the_run(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "tea", "--quiet", "--max-tokens", "10"]) == 2
    assert "Budget exhausted" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nocolon", "expected FILE_OR_MODULE:NAME"),
        ("missing.py:flow", "no such file: missing.py"),
        ("no_such_module_xyz:flow", "cannot import module 'no_such_module_xyz'"),
        ("{file}:nothing", "has no attribute 'nothing'"),
        ("{file}:not_a_flow", "is a int, not a Flow, Agent or Swarm"),
    ],
    ids=["no-colon", "no-file", "no-module", "no-attr", "wrong-type"],
)
def test_user_errors_print_one_line_and_exit_non_zero(
    flow_file: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    assert main(["graph", target.format(file=flow_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("swarmcore: error: ")
    assert message in err
    assert err.count("\n") == 1
