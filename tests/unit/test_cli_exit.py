"""``python -m swarmcore.cli`` ends its process without a shutdown collection."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_the_command_freezes_the_heap_before_it_exits_with_its_status(tmp_path: Path) -> None:
    # Frozen objects are left out of the interpreter's last collections: a worker that
    # loaded LiteLLM and DBOS otherwise spends seconds after its last line collecting them.
    script = textwrap.dedent(
        """
        import atexit, gc, runpy, sys
        atexit.register(lambda: print("frozen:", gc.get_freeze_count() > 0))
        sys.argv = ["swarmcore", *sys.argv[1:]]
        runpy.run_module("swarmcore.cli", run_name="__main__")
        """
    )
    store = str(tmp_path / "runs.db")
    listed = subprocess.run(
        [sys.executable, "-c", script, "runs", "list", "--store", store],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == "frozen: True"

    refused = subprocess.run(
        [sys.executable, "-c", script, "runs", "show", "nosuchrun", "--store", store],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr  # main's status is the process's
    assert refused.stdout.splitlines()[-1] == "frozen: True"
