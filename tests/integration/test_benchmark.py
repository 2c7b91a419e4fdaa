"""The benchmark still runs: ``benchmarks/run.py --quick`` prints its table.

A smoke test, marked ``benchmark`` and left out of the default ``uv run pytest``
(run it with ``uv run pytest -m benchmark``). It checks that every row of the quick
run is there and holds numbers, never what the numbers are: speed is measured by
the benchmark and read in ``benchmarks/README.md``, not asserted by a test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "benchmarks" / "run.py"

pytestmark = pytest.mark.benchmark


@pytest.mark.timeout(900)  # ~2 minutes alone; far longer on a busy machine
def test_quick_benchmark_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=890,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "(--quick)" in done.stdout
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    two_times = r"\d+\.\d\d s +\d+\.\d\d s +\d\.\d\d s"
    two_cpus = r"\d+\.\d\d ms +\d+\.\d\d ms"
    two_peaks = r"\d+ MB \(\+\d+\) +\d+ MB \(\+\d+\)"
    # Each swarmcore side against its own floor, and native against the LiteLLM floor.
    walls = ("native / openai floor", "on LiteLLM / LiteLLM floor")
    all_three = ("native / LiteLLM floor", *walls)
    first_calls = ("swarmcore native", "swarmcore on LiteLLM", "plain openai", "plain litellm")
    first_call = r"\d+\.\d\d s = import \d+\.\d\d \+ call \d+\.\d\d +process \d+\.\d\d s"
    expected = {
        **{f"W1 diamond wall (L=0.20s), {c}": two_times for c in walls},
        **{f"W2 N=100 wall, {c}": two_times for c in walls},
        **{f"W2 N=100 CPU/call, {c}": two_cpus for c in all_three},
        **{f"W3 K=50 wall, {c}": two_times for c in walls},
        **{f"W3 K=50 CPU/call, {c}": two_cpus for c in all_three},
        **{f"W3 K=50 peak RSS, {c}": two_peaks for c in all_three},
        "W3 K=50 CPU/call, the floor against itself (a control)": two_cpus,
        "W3 K=50 CPU/call, native Responses API / chat completions (4 rounds)": two_cpus,
        "swarmcore alone, W3 diamond x50": r"\d+ µs/run +\d+\.\d\d ms/call .*% of floor",
        "prompt tokens pull chain=20": r"k2=\d+ +k5=\d+ +k20=\d+",
        "prompt tokens in all, fan-in of parts": r"pull=[\d,]+/\d+ calls +push=[\d,]+/\d+ calls",
        "cold import swarmcore (median of 5)": r"\d+ ms",
        **{f"first call, {side} (median of 2)": first_call for side in first_calls},
        "RSS after 3 bursts of 100 diamond runs": r"\d+ -> \d+, \d+, \d+ MB",
    }
    for name, cells in expected.items():
        assert name in rows, done.stdout
        assert re.search(cells, rows[name]), rows[name]
    # The context benchmark's tables follow (benchmarks/context.py): a row per shape and mode.
    context = r"\d+ % \(\d+/\d+\) +[\d,]+ +\d+ +[\d,]+ +\d+ %"
    for shape in ("chain of 8", "diamond", "fan-in of 10", "relay of 20", "loop x3"):
        for mode in ("pull", "push"):
            assert re.search(rf"^{shape} +{mode} +{context}$", done.stdout, re.MULTILINE), shape
    # The native side's first call never loads litellm; LiteLLM's sides always do.
    assert "litellm loaded" not in rows["first call, swarmcore native (median of 2)"]
    assert "litellm loaded" in rows["first call, swarmcore on LiteLLM (median of 2)"]
