"""examples/ag_ui_app: its server, driven by the official AG-UI client as its page drives it."""

from __future__ import annotations

import runpy
from pathlib import Path

import httpx

from swarmcore.testing import offline_model
from tests.ag_ui.conftest import drive, named
from tests.serving import serve

EXAMPLE = Path(__file__).parents[2] / "examples" / "ag_ui_app"


async def test_the_example_serves_its_page_and_its_flow_asks_before_publishing(node: str) -> None:
    build_app = runpy.run_path(str(EXAMPLE / "server.py"))["build_app"]
    with serve(build_app(offline_model())) as url:
        async with httpx.AsyncClient() as http:
            page = await http.get(f"{url}/")
        assert page.status_code == 200
        assert "@ag-ui/client" in page.text
        approve = [{"approved": True}]
        driven = await drive(node, f"{url}/agent", "Write about bees.", answers=approve)
    asked, resumed = driven["runs"]
    [interrupt] = asked["events"][-1]["outcome"]["interrupts"]
    assert "writer wants to call publish" in interrupt["message"]
    names = {e["name"] for e in named(asked["events"], "TEXT_MESSAGE_START")}
    assert {"researcher", "critic"} <= names
    [result] = named(resumed["events"], "TOOL_CALL_RESULT")
    assert result["content"].startswith("published")
    assert set(driven["state"]["context"]) == {"researcher", "critic", "writer"}
