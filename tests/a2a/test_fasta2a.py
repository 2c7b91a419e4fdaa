"""A2A with another framework: pydantic-ai agents served by FastA2A, and FastA2A's clients.

swarmcore's RemoteAgent against FastA2A 2.1.1 (in process) and 0.6.1 (the A2A
0.3 era, in its own environment), and swarmcore's server against FastA2A's
clients and the a2a-sdk's 0.3 client. The agents run on pydantic-ai's offline
TestModel: no key and no network beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest
from fasta2a.client import A2AClient

from swarmcore import Agent, Swarm, events
from swarmcore._policies import RetryPolicy
from swarmcore.a2a import RemoteAgent, RemoteAgentError
from swarmcore.testing import FunctionModel
from tests.a2a.peers import fasta2a_06_agent, fasta2a_06_send, fasta2a_agent
from tests.a2a.servers import a2a_server
from tests.serving import serve

ANSWER = "The answer is forty-two, as computed."
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.01, jitter=0)


async def streamed(swarm: Swarm, task: str) -> tuple[str, list[str]]:
    """The run's output and the text deltas it streamed."""
    deltas: list[str] = []
    output = None
    async for event in swarm.stream(task, text=True):
        if isinstance(event, events.TextDelta):
            deltas.append(event.text)
        elif isinstance(event, events.RunFinished) and event.result is not None:
            output = event.result.output
    assert output is not None
    return output, deltas


# --- RemoteAgent against FastA2A's server --------------------------------------------


async def test_a_pydantic_ai_agent_served_by_fasta2a_is_a_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # FastA2A writes status timestamps without a UTC offset, which the a2a-sdk's parser
    # refuses: the timestamp is ignored (and said so at debug level), the answer kept.
    caplog.set_level(logging.DEBUG, logger="swarmcore.a2a")
    with fasta2a_agent(ANSWER) as url:
        result = await Swarm(RemoteAgent(url, name="pydantic", retries=0)).run("what is it?")
    assert result.output == ANSWER
    assert result.history[0].model == f"a2a:{url}"
    ignored = [r.getMessage() for r in caplog.records if "ignored a malformed field" in r.message]
    assert ignored
    assert all("status.timestamp" in line for line in ignored)


async def test_text_streamed_from_fasta2a_arrives_once() -> None:
    # FastA2A streams the answer in chunks, then sends the whole artifact again.
    with fasta2a_agent(ANSWER) as url:
        output, deltas = await streamed(Swarm(RemoteAgent(url, name="pydantic")), "go")
    assert output == ANSWER
    assert len(deltas) > 1
    assert "".join(deltas) == ANSWER


async def test_text_streamed_from_a_swarmcore_server_arrives_once() -> None:
    # swarmcore's server replaces the streamed artifact with the run's output at the end.
    model = FunctionModel(lambda _: ANSWER)
    served = Swarm(Agent("writer", "Write.", model=model.model))
    with serve(served.to_a2a()) as url:
        output, deltas = await streamed(Swarm(RemoteAgent(url, name="desk")), "go")
    assert output == ANSWER
    assert len(deltas) > 1
    assert "".join(deltas) == ANSWER


async def test_a_task_answered_before_it_finished_is_polled() -> None:
    # Without streaming, FastA2A answers a message with the task just submitted.
    with fasta2a_agent(ANSWER) as url:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, url).get_agent_card()
        card.capabilities.streaming = False
        swarm = Swarm(RemoteAgent(card, name="pydantic", retries=0, timeout=60))
        statuses: list[events.RemoteStatus] = []
        swarm.on(events.RemoteStatus)(statuses.append)
        result = await swarm.run("what is it?")
    assert result.output == ANSWER
    states = [s.state for s in statuses]
    assert states[0] == "submitted"
    assert states[-1] == "completed"
    assert len(states) == len(set(states))  # each state said once, however often it was polled


async def test_a_fasta2a_0_6_agent_is_a_step(fasta2a_06: Path) -> None:
    # A2A 0.3: FastA2A 0.6.1 refuses (HTTP 500) a message that does not name the output
    # modes it accepts, answers "submitted" (so the task is polled), and writes
    # timestamps without an offset.
    with fasta2a_06_agent(fasta2a_06, ANSWER) as url:
        model = FunctionModel(lambda _: "plan")
        remote = RemoteAgent(url, name="pydantic", retries=0, timeout=60)
        result = await Swarm(Agent("planner", "Plan.", model=model.model) >> remote).run("what?")
    assert result.context["pydantic"] == ANSWER
    assert [h.agent_name for h in result.history] == ["planner", "pydantic"]


async def test_a_deterministic_500_is_not_retried_and_says_what_the_server_said() -> None:
    with a2a_server() as server:
        remote = RemoteAgent(f"{server.url}/broken", name="r", retries=FAST)
        swarm = Swarm(remote)
        retries: list[events.RetryScheduled] = []
        swarm.on(events.RetryScheduled)(retries.append)
        with pytest.raises(RemoteAgentError) as caught:
            await swarm.run("x")
    message = str(caught.value)
    assert "answered HTTP 500: KeyError: 'acceptedOutputModes'" in message
    assert "not retried" in message
    assert "overloaded" not in message
    assert not caught.value.retryable
    assert retries == []
    assert server.seen.broken == 1


# --- swarmcore's server against FastA2A's clients and the a2a-sdk's 0.3 client ----------


def echo_swarm() -> tuple[Swarm, FunctionModel]:
    model = FunctionModel(lambda r: f"echo: {r.user}")
    flow = Agent("a", "Echo.", model=model.model) >> Agent("b", "Echo.", model=model.model)
    return Swarm(flow), model


def test_fasta2a_s_client_reads_the_card() -> None:
    swarm, _model = echo_swarm()
    skills = [{"id": "echo", "name": "Echo", "description": "Echoes."}]
    with serve(swarm.to_a2a(skills=skills)) as url:
        client = A2AClient(url, fetch_card=True)  # it refuses a card it cannot read
    assert client.agent_card is not None
    [skill] = client.agent_card["skills"]
    assert skill["input_modes"] == ["text/plain", "application/json"]
    assert skill["output_modes"] == ["text/plain", "application/json"]
    assert skill["tags"] == ["swarmcore", "a", "b"]  # required by the protocol


async def test_fasta2a_s_client_sends_and_streams_a_task() -> None:
    # FastA2A 2.x's client calls 0.3's methods and reads results wrapped as 1.0 wraps them.
    swarm, _model = echo_swarm()
    with serve(swarm.to_a2a()) as url:
        async with httpx.AsyncClient(timeout=60) as http:
            client = A2AClient(f"{url}/", http_client=http)
            message: Any = {"role": "user", "parts": [{"text": "ping"}], "message_id": "m1"}
            sent = await client.send_message(message)
            task: Any = sent.get("result", {}).get("task")
            assert task is not None, sent
            while task["status"]["state"] in ("submitted", "working"):
                task = (await client.get_task(task["id"]))["result"]
            message = {**message, "message_id": "m2"}
            stream = [e.get("result", {}) async for e in client.stream_message(message)]
    assert task["status"]["state"] == "completed"
    [artifact] = task["artifacts"]
    assert [p["text"] for p in artifact["parts"]] == ["echo: ping"]
    assert "task" in stream[0]
    updates = [e["status_update"] for e in stream if "status_update" in e]
    assert updates[-1]["status"]["state"] == "completed"
    assert updates[-1]["metadata"]["usage"]["prompt_tokens"] > 0
    chunks = [e["artifact_update"] for e in stream if "artifact_update" in e]
    assert chunks[-1]["artifact"]["parts"] == [{"text": "echo: ping"}]


def test_fasta2a_0_6_s_client_runs_a_task(fasta2a_06: Path) -> None:
    swarm, _model = echo_swarm()
    with serve(swarm.to_a2a()) as url:
        answer = fasta2a_06_send(fasta2a_06, f"{url}/", "ping")
    assert "error" not in answer, answer
    task = answer["result"]
    assert task["status"]["state"] == "completed"
    [artifact] = task["artifacts"]
    assert [p["text"] for p in artifact["parts"]] == ["echo: ping"]


def a03_card(card: AgentCard) -> AgentCard:
    """``card`` naming only its A2A 0.3 interface: what a 0.3 client sees."""
    old = AgentCard()
    old.CopyFrom(card)
    del old.supported_interfaces[:]
    old.supported_interfaces.add(
        url=card.supported_interfaces[0].url, protocol_binding="JSONRPC", protocol_version="0.3"
    )
    return old


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_a2a_0_3_client_runs_a_task(streaming: bool) -> None:
    swarm, _model = echo_swarm()
    with serve(swarm.to_a2a()) as url:
        async with httpx.AsyncClient(timeout=60) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            assert "0.3" in [i.protocol_version for i in card.supported_interfaces]
            config = ClientConfig(httpx_client=http, streaming=streaming)
            client = ClientFactory(config).create(a03_card(card))
            message = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="ping")])
            responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
            task_id = next(r.task.id for r in responses if r.HasField("task"))
            task = await client.get_task(GetTaskRequest(id=task_id))
    [artifact] = task.artifacts
    assert get_text_parts(artifact.parts) == ["echo: ping"]


async def test_the_finished_task_carries_usage_as_integers_and_no_progress_keys() -> None:
    swarm, _model = echo_swarm()
    with serve(swarm.to_a2a()) as url:
        async with httpx.AsyncClient(timeout=60) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
            message = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="ping")])
            responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
            task_id = next(r.task.id for r in responses if r.HasField("task"))
            # What goes over the wire, as any client (in any language) reads it.
            request = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "GetTask",
                "params": {"id": task_id},
            }
            got = await http.post(f"{url}/", json=request, headers={"A2A-Version": "1.0"})
    task = got.json()["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert set(task["metadata"]) == {"usage"}  # no leftover progress keys ("event", "agent")
    usage = task["metadata"]["usage"]
    tokens = {k: v for k, v in usage.items() if k.endswith("tokens")}
    assert set(tokens) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert all(type(v) is int and v > 0 for v in tokens.values()), usage
    assert json.dumps(tokens).count(".") == 0
    # the progress keys are on each status message, where they say what happened
    updates = [r.status_update for r in responses if r.HasField("status_update")]
    started = [u.status.message.metadata for u in updates if u.status.message.metadata]
    assert {"event": "AgentStarted", "agent": "a"} in [dict(m) for m in started]


async def test_a_1_0_request_without_the_version_header_is_told_to_send_it() -> None:
    swarm, _model = echo_swarm()
    message = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "ping"}]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    with serve(swarm.to_a2a()) as url:
        async with httpx.AsyncClient(timeout=60) as http:
            refused = (await http.post(f"{url}/", json=request)).json()
            sent = await http.post(f"{url}/", json=request, headers={"A2A-Version": "1.0"})
    assert refused["error"]["code"] == -32009
    assert "send 'A2A-Version: 1.0'" in refused["error"]["message"]
    assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
