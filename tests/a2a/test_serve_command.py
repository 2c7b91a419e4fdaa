"""``swarmcore serve TARGET --a2a``: a real process, answering the a2a-sdk's client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState

from swarmcore.cli import main
from swarmcore.store import SQLiteStore
from tests.serving import serving_command

ROOT = Path(__file__).parents[2]


async def ask(url: str) -> Task:
    """The agent's card, then one message through the SDK's client; the task it ends as."""
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        assert card.name == "summarizer"
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        message = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="Summarize A2A.")])
        [response] = [r async for r in client.send_message(SendMessageRequest(message=message))]
    return response.task


def test_serve_answers_a_message_and_stores_the_run_under_the_task_id(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    with serving_command(
        "serve",
        "tests/a2a/flows.py:flow",
        "--a2a",
        "--port",
        "0",
        "--store",
        str(store),
        "--name",
        "summarizer",
        cwd=ROOT,
    ) as line:
        assert line.startswith(
            "swarmcore serve: A2A agent tests/a2a/flows.py:flow at http://127.0.0.1:"
        )
        url = line.split(" at ")[1].split(",")[0].strip()
        task = asyncio.run(ask(url))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.artifact_id for a in task.artifacts] == ["output"]
    runs = SQLiteStore(store)
    try:
        record = runs.get_run(task.id)
    finally:
        runs.close()
    assert record is not None
    assert record.status == "succeeded"
    assert record.task == "Summarize A2A."


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "name the protocol to serve: --a2a"),
        (["--a2a", "--host", "0.0.0.0"], "--allow-remote"),
        (["--a2a", "--host", "0.0.0.0", "--allow-remote"], "needs a token"),
    ],
)
def test_serve_refuses_what_it_should(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWARMCORE_A2A_TOKEN", raising=False)
    assert main(["serve", "tests/a2a/flows.py:flow", *extra]) == 2
    assert says in capsys.readouterr().err
