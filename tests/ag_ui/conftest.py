"""The official TypeScript AG-UI client, for the tests that drive swarmcore's AG-UI server.

The client comes from the npm registry into ``tests/ag_ui/js/node_modules``
(``npm ci --prefix tests/ag_ui/js``, which ``.ci/run`` does). Without node or
the client the tests are skipped, saying why, unless ``SWARMCORE_REQUIRE_NODE=1``
(CI), where they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Event
from ag_ui_validate.pytest_plugin import assert_valid_agui
from pydantic import TypeAdapter

JS = Path(__file__).parent / "js"
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@pytest.fixture(scope="session")
def node() -> str:
    """The node binary, with the AG-UI client installed beside the tests."""
    found = shutil.which("node")
    if found is None:
        why = "node is not installed (apt-get install nodejs npm)"
    elif not (JS / "node_modules" / "@ag-ui" / "client").is_dir():
        why = "the AG-UI client is not installed: run npm ci --prefix tests/ag_ui/js"
    else:
        return found
    if os.environ.get("SWARMCORE_REQUIRE_NODE") == "1":
        pytest.fail(f"SWARMCORE_REQUIRE_NODE=1 but {why}")
    pytest.skip(why)


async def drive(node: str, url: str, task: str, **plan: Any) -> dict[str, Any]:
    """Run ``task`` through ``@ag-ui/client``'s ``HttpAgent`` (tests/ag_ui/js/drive.mjs).

    Every run's events are checked three ways: the client's own verifier (it
    rejects a stream that breaks the protocol's rules), the protocol package's
    pydantic models, and ag-ui-validate's conformance rules.

    Returns:
        What the driver printed: ``runs`` (each with its ``events``), and the
        client's ``messages``, ``state`` and ``pendingInterrupts``.
    """
    process = await asyncio.create_subprocess_exec(
        node,
        str(JS / "drive.mjs"),
        json.dumps({"url": f"{url}/", "task": task, **plan}),
        cwd=JS,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    driven: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    for run in driven["runs"]:
        for event in run["events"]:
            EVENTS.validate_python(event)
        if not run.get("aborted"):
            assert_valid_agui(run["events"])
    return driven


def types(events: list[dict[str, Any]]) -> list[str]:
    """The events' types, in order."""
    return [e["type"] for e in events]


def named(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events of one type."""
    return [e for e in events if e["type"] == kind]
