"""swarmcore's A2A server, driven over loopback HTTP by the a2a-sdk's own client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from pydantic import BaseModel

from swarmcore import Agent, Swarm
from swarmcore._tools import function_tool
from swarmcore.a2a import RemoteAgent
from swarmcore.events import AgentStarted, Event, RemoteStatus, RunFinished
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.serving import serve

SECRET = "zq-very-secret-value-4417"


@asynccontextmanager
async def a2a_client(
    url: str, *, streaming: bool = False, token: str | None = None
) -> AsyncGenerator[tuple[Client, AgentCard]]:
    """The SDK's client for the agent at ``url``, built from the card it publishes."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        yield client, card


def user_message(text: str, *, task: Task | None = None) -> SendMessageRequest:
    message = Message(
        role=Role.ROLE_USER, message_id=f"m-{id(text)}-{text[:8]}", parts=[Part(text=text)]
    )
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return SendMessageRequest(message=message)


async def send(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def final_task(responses: Sequence[StreamResponse]) -> Task:
    tasks = [r.task for r in responses if r.HasField("task")]
    assert tasks, responses
    return tasks[-1]


def output_artifact(task: Task) -> Any:
    [artifact] = [a for a in task.artifacts if a.artifact_id == "output"]
    return artifact


def echo_flow() -> tuple[Swarm, FunctionModel]:
    def answer(request: RecordedRequest) -> str:
        return f"{request.system.split('.')[0]} says: {request.messages[-1]['content'][:40]}"

    model = FunctionModel(answer)
    a = Agent("drafter", "Drafter. Draft it.", model=model.model)
    b = Agent("editor", "Editor. Edit it.", model=model.model)
    return Swarm(a >> b), model


async def test_the_card_names_the_flow_and_its_skill_and_streams() -> None:
    swarm, _model = echo_flow()  # the model must live while the server runs
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (_, card):
            assert card.name == "drafter >> editor"
            assert card.capabilities.streaming
            assert card.supported_interfaces[0].url == f"{url}/"
            [skill] = card.skills
            assert skill.id == "run"
            assert "drafter >> editor" in skill.description
            assert not card.security_schemes
    app = swarm.to_a2a(
        name="writers",
        description="Drafts and edits.",
        skills=[{"id": "write", "name": "Write", "description": "Writes.", "tags": ["text"]}],
        url="https://agents.example/writers/",
    )
    with serve(app) as url:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, url).get_agent_card()
    assert (card.name, card.description) == ("writers", "Drafts and edits.")
    assert [(s.id, s.name, list(s.tags)) for s in card.skills] == [("write", "Write", ["text"])]
    assert card.supported_interfaces[0].url == "https://agents.example/writers/"


async def test_a_send_returns_the_completed_task_with_the_flows_output() -> None:
    swarm, model = echo_flow()
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            task = final_task(await send(client, user_message("write a haiku")))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(output_artifact(task).parts) == ["Editor says: write a haiku"]
    assert [a.artifact_id for a in task.artifacts] == [
        "output"
    ]  # no text chunks when not streaming
    assert len(model.requests) == 2


async def test_streaming_sends_agents_progress_text_chunks_then_the_completed_task() -> None:
    swarm, _model = echo_flow()  # the model must live while the server runs
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url, streaming=True) as (client, _):
            responses = await send(client, user_message("write a haiku"))
    said = [
        get_text_parts(r.status_update.status.message.parts)[0]
        for r in responses
        if r.HasField("status_update") and r.status_update.status.message.parts
    ]
    assert (
        said.index("drafter started")
        < said.index("drafter finished")
        < said.index("editor started")
    )
    assert "editor finished" in said
    chunks = [r.artifact_update for r in responses if r.HasField("artifact_update")]
    assert {c.artifact.artifact_id for c in chunks} == {"output"}
    *streamed, final = chunks
    agents = [str(c.artifact.metadata["agent"]) for c in streamed]
    assert agents == sorted(agents)  # drafter's chunks, then editor's
    editor = [c for c in streamed if c.artifact.metadata["agent"] == "editor"]
    assert len(editor) > 1
    assert not editor[0].append  # the editor's text replaces the drafter's
    assert all(c.append for c in editor[1:])
    text = "".join(get_text_parts([p for c in editor for p in c.artifact.parts]))
    assert text == "Editor says: write a haiku"
    assert not final.append
    assert final.last_chunk
    assert get_text_parts(final.artifact.parts) == [text]
    last = responses[-1].status_update.status
    assert last.state == TaskState.TASK_STATE_COMPLETED


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_is_also_a_data_part() -> None:
    model = ScriptedModel(['{"name": "Lyon", "population": 520000}'])
    swarm = Swarm(Agent("city", "You find cities.", model=model.model, output_type=City))
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            task = final_task(await send(client, user_message("a French city")))
    parts = output_artifact(task).parts
    [data] = get_data_parts(parts)
    assert data == {"name": "Lyon", "population": 520000}
    assert "Lyon" in get_text_parts(parts)[0]


async def test_a_failing_flow_fails_the_task_with_its_message_and_no_traceback_or_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PARTNER_API_KEY", SECRET)
    model = ScriptedModel([Fail(400, f"invalid request: key {SECRET} was refused")])
    swarm = Swarm(Agent("a", "Do it.", model=model.model))
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url, streaming=True) as (client, _):
            responses = await send(client, user_message("go"))
            task = await client.get_task(GetTaskRequest(id=responses[0].task.id))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    [message] = get_text_parts(task.status.message.parts)
    assert "invalid request" in message
    assert "was refused" in message
    everything = "".join(str(r) for r in responses) + str(task)
    assert SECRET not in everything
    assert "Traceback" not in everything
    assert "\n" not in message


async def test_cancelling_the_task_cancels_the_run() -> None:
    async def slow(request: RecordedRequest) -> Reply:
        return Reply(text="too late", delay=60)

    model = FunctionModel(slow)
    seen: list[Event] = []
    swarm = Swarm(
        Agent("slow", "Take your time.", model=model.model)
        >> Agent("after", "Never reached.", model=model.model),
        hooks=[seen.append],
    )
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url, streaming=True) as (client, _), a2a_client(url) as (other, _):
            started = asyncio.Event()
            task_ids: list[str] = []

            async def watch() -> None:
                async for response in client.send_message(user_message("go")):
                    if response.HasField("task"):
                        task_ids.append(response.task.id)
                    if "slow started" in str(response.status_update.status.message):
                        started.set()

            watching = asyncio.create_task(watch())
            await asyncio.wait_for(started.wait(), 30)
            canceled = await other.cancel_task(CancelTaskRequest(id=task_ids[0]))
            await asyncio.wait_for(asyncio.gather(watching, return_exceptions=True), 30)
            task = await other.get_task(GetTaskRequest(id=task_ids[0]))
    assert canceled.status.state == task.status.state == TaskState.TASK_STATE_CANCELED
    finished = [e for e in seen if isinstance(e, RunFinished)]
    assert len(finished) == 1
    assert isinstance(finished[0].error, asyncio.CancelledError)
    assert [e.agent_name for e in seen if isinstance(e, AgentStarted)] == ["slow"]
    assert len(model.requests) == 1


def approval_flow() -> tuple[Swarm, list[str], ScriptedModel]:
    wiped: list[str] = []

    def wipe(path: str) -> str:
        """Delete everything under path."""
        wiped.append(path)
        return f"wiped {path}"

    model = ScriptedModel([Reply.tool("wipe", path="/tmp/old"), Reply(text="all clean")])
    agent = Agent(
        "janitor",
        "Tidy up.",
        model=model.model,
        tools=[function_tool(wipe, requires_approval=True)],
    )
    return Swarm(agent), wiped, model


async def test_a_tool_needing_approval_waits_for_the_clients_approve() -> None:
    swarm, wiped, _model = approval_flow()
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            asked = final_task(await send(client, user_message("tidy /tmp")))
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert wiped == []
            [request] = get_data_parts(asked.status.message.parts)
            assert request["tool"] == "wipe"
            assert request["arguments"] == {"path": "/tmp/old"}
            assert request["agent"] == "janitor"
            assert request["call_id"]
            assert "approve" in get_text_parts(asked.status.message.parts)[0]
            done = final_task(await send(client, user_message("approve", task=asked)))
    assert done.id == asked.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert wiped == ["/tmp/old"]
    assert get_text_parts(output_artifact(done).parts) == ["all clean"]


async def test_a_denied_tool_never_runs_and_the_model_hears_why() -> None:
    swarm, wiped, model = approval_flow()
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url, streaming=True) as (client, _):
            responses = await send(client, user_message("tidy /tmp"))
            assert responses[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            asked = await client.get_task(GetTaskRequest(id=responses[0].task.id))
            unclear = await send(client, user_message("hmm, maybe?", task=asked))
            assert unclear[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "neither approve nor deny" in str(unclear[-1].status_update.status.message)
            done = await send(client, user_message("deny: not on a Friday", task=asked))
    assert done[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert wiped == []
    assert "not on a Friday" in str(model.requests[1].tool_results)


async def test_a_token_guards_everything_but_the_card() -> None:
    swarm, _model = echo_flow()  # the model must live while the server runs
    with serve(swarm.to_a2a(token="s3cret-token-value")) as url:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            assert "bearer" in card.security_schemes
            assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
            refused = await http.post(f"{url}/", json={"jsonrpc": "2.0", "id": 1, "method": "x"})
            assert refused.status_code == 401
            wrong = await http.post(
                f"{url}/", json={}, headers={"Authorization": "Bearer wrong-token-value"}
            )
            assert wrong.status_code == 401
        async with a2a_client(url, token="s3cret-token-value") as (client, _):
            task = final_task(await send(client, user_message("hello")))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_task_id_is_the_stored_run_id(tmp_path: Path) -> None:
    model = FunctionModel(lambda _: "noted")
    swarm = Swarm(Agent("a", "Note it.", model=model.model), store=tmp_path / "runs.db")
    with serve(swarm.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            task = final_task(await send(client, user_message("remember this")))
    assert swarm.store is not None
    record = swarm.store.get_run(task.id)
    assert record is not None
    assert record.run_id == task.id
    assert record.task == "remember this"
    assert record.status == "succeeded"


async def test_a_swarms_own_approval_callback_decides_without_asking_the_client() -> None:
    swarm, wiped, _model = approval_flow()
    decided = Swarm(swarm.flow, approve=lambda request: request.tool_name == "wipe")
    with serve(decided.to_a2a()) as url:
        async with a2a_client(url) as (client, _):
            task = final_task(await send(client, user_message("tidy /tmp")))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert wiped == ["/tmp/old"]


async def test_swarmcore_talks_to_itself_through_a_token() -> None:
    inner_model = FunctionModel(
        lambda request: f"inner answer to: {request.messages[-1]['content']}"
    )
    inner = Swarm(Agent("inner", "Answer.", model=inner_model.model))
    outer_model = FunctionModel(lambda _: "outer done")
    seen: list[Event] = []
    with serve(inner.to_a2a(token="loopback-token-1")) as url:
        remote = RemoteAgent(
            url, name="remote", headers={"Authorization": "Bearer loopback-token-1"}
        )
        outer = Swarm(
            remote >> Agent("outer", "Finish.", model=outer_model.model), hooks=[seen.append]
        )
        result = await outer.run("what is A2A?")
    assert result["remote"].output == "inner answer to: what is A2A?"
    # The served run's usage reaches the caller's record (the completed task's metadata).
    assert result["remote"].token_usage.prompt_tokens > 0
    assert result["remote"].token_usage.completion_tokens > 0
    assert result.output == "outer done"
    said = [e.message for e in seen if isinstance(e, RemoteStatus)]
    assert "inner started" in said
    assert "inner finished" in said
