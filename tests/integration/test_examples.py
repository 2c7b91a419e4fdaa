"""The examples run offline from a fresh process, as the README says they do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def _run(name: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("SWARMCORE_MODEL", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("capabilities.py", ["verdict: publish", "  > researcher", "save_draft: approval=edited"]),
        ("pull_vs_push.py", ["short chain: push sent", "fan-in of parts: pull sent"]),
    ],
)
def test_example_runs_offline(name: str, expected: list[str]) -> None:
    out = _run(name)
    assert "Running offline" in out
    for text in expected:
        assert text in out
