"""swarmcore's AG-UI server, driven over loopback HTTP by the official ``@ag-ui/client``."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from swarmcore import Agent, ApprovalRequest, Swarm
from swarmcore._tools import function_tool
from swarmcore.events import AgentStarted, Event, RunFinished
from swarmcore.testing import (
    Fail,
    FunctionModel,
    MockOpenAIServer,
    RecordedRequest,
    Reply,
    ScriptedModel,
)
from tests.ag_ui.conftest import drive, named, types
from tests.serving import serve

SECRET = "zq-very-secret-value-5521"


def speaker(request: RecordedRequest) -> str:
    """The agent a request is from: the first word of its instructions."""
    return request.system.split(".")[0]


async def test_a_diamond_with_a_tool_streams_steps_messages_tool_calls_state_and_usage(
    node: str,
) -> None:
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"found {topic}"

    def answer(request: RecordedRequest) -> Reply | str:
        if speaker(request) == "Researcher" and not request.tool_results:
            return Reply(text="Looking.", tool_calls=Reply.tool("lookup", topic="bees").tool_calls)
        return f"{speaker(request)} done."

    model = FunctionModel(answer)
    flow = (
        Agent("planner", "Planner. Plan.", model=model.model)
        >> (
            Agent(
                "researcher",
                "Researcher. Research.",
                model=model.model,
                tools=[function_tool(lookup)],
            )
            | Agent("writer", "Writer. Write.", model=model.model)
        )
        >> Agent("editor", "Editor. Edit.", model=model.model)
    )
    with serve(Swarm(flow).to_ag_ui()) as url:
        driven = await drive(node, url, "Tell me about bees.")
    [run] = driven["runs"]
    events = run["events"]
    assert "error" not in run
    assert "failed" not in run
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[1]["snapshot"] == {
        "task": "Tell me about bees.",
        "variables": {},
        "context": {},
        "failures": {},
    }
    started = [e["stepName"] for e in named(events, "STEP_STARTED")]
    assert started == [
        "step: planner",
        "planner",
        "step: researcher | writer",
        "researcher",
        "writer",
        "step: editor",
        "editor",
    ]
    assert sorted(e["stepName"] for e in named(events, "STEP_FINISHED")) == sorted(started)
    # The tool call, whole: start, arguments, end, result, attached to the reply that made it.
    [start] = named(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "lookup"
    args = [e["delta"] for e in named(events, "TOOL_CALL_ARGS")]
    assert len(args) > 1  # in pieces, as the model streamed them
    assert "".join(args) == '{"topic": "bees"}'
    [result] = named(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (start["toolCallId"], "found bees")
    starts = {e["messageId"]: e["name"] for e in named(events, "TEXT_MESSAGE_START")}
    assert starts[start["parentMessageId"]] == "researcher"
    # State: a delta per agent as it finishes; the client's state is the whole shared context.
    paths = [op["path"] for e in named(events, "STATE_DELTA") for op in e["delta"]]
    agents = ("planner", "researcher", "writer", "editor")
    assert sorted(paths) == sorted(f"/context/{agent}" for agent in agents)
    assert driven["state"]["context"]["editor"]["output"] == "Editor done."
    # Usage: one custom event per model call, then the run's totals; and on RUN_FINISHED.
    usage = [e["value"] for e in named(events, "CUSTOM") if e["name"] == "swarmcore.usage"]
    assert len(usage) == len(model.requests) == 5
    [total] = [e["value"] for e in named(events, "CUSTOM") if e["name"] == "swarmcore.run_usage"]
    assert total["total_tokens"] == sum(u["total_tokens"] for u in usage) > 0
    assert events[-1]["result"] == {"output": "Editor done."}
    assert events[-1]["outcome"] == {"type": "success"}
    assert events[-1]["usage"][0]["totalTokens"] == total["total_tokens"]
    # The client's messages: the user's, one per model reply (named), the tool's result.
    assistant = [m for m in driven["messages"] if m["role"] == "assistant"]
    assert {m.get("name") for m in assistant} >= {"planner", "researcher", "writer", "editor"}
    assert [m["content"] for m in driven["messages"] if m["role"] == "tool"] == ["found bees"]


async def test_parallel_agents_stream_as_separate_named_messages_at_once(node: str) -> None:
    met = asyncio.Barrier(2)

    async def meet(name: str) -> str:
        """Wait for the other agent."""
        await asyncio.wait_for(met.wait(), 30)
        return f"{name} met"

    def answer(request: RecordedRequest) -> Reply | str:
        who = speaker(request)
        if not request.tool_results:
            return Reply(text=f"{who} begins.", tool_calls=Reply.tool("meet", name=who).tool_calls)
        return f"{who} ends."

    model = FunctionModel(answer)
    flow = Agent("left", "Left. Go.", model=model.model, tools=[function_tool(meet)]) | Agent(
        "right", "Right. Go.", model=model.model, tools=[function_tool(meet)]
    )
    with serve(Swarm(flow).to_ag_ui()) as url:
        driven = await drive(node, url, "go")
    events = driven["runs"][0]["events"]
    said = [
        (e["name"], e["messageId"]) for e in named(events, "TEXT_MESSAGE_START")
    ]  # one message per reply, each named after its agent
    assert sorted(name for name, _ in said) == ["left", "left", "right", "right"]
    assert len({message for _, message in said}) == 4
    # Both agents' steps are open at once, and each one's first words come before the
    # other's last: neither waited for the other to finish.
    order = [e.get("stepName") or e.get("name") for e in events if e["type"] != "CUSTOM"]
    assert order.index("right") < order.index("left", order.index("left") + 1)
    assert order.index("left") < order.index("right", order.index("right") + 1)
    texts = {m["name"]: m["content"] for m in driven["messages"] if m.get("name")}
    assert set(texts) == {"left", "right"}


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_is_the_runs_result_and_in_the_state(node: str) -> None:
    model = ScriptedModel(['{"name": "Lyon", "population": 520000}'])
    swarm = Swarm(
        Agent("city", "You find cities in {country}.", model=model.model, output_type=City)
    )
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(
            node, url, "a big city", forwardedProps={"variables": {"country": "France"}}
        )
    events = driven["runs"][0]["events"]
    data = {"name": "Lyon", "population": 520000}
    assert events[-1]["result"]["data"] == data
    assert driven["state"]["context"]["city"]["data"] == data
    assert driven["state"]["variables"] == {"country": "France"}
    assert "France" in model.requests[0].system


def approval_flow() -> tuple[Swarm, list[str], ScriptedModel]:
    wiped: list[str] = []

    def wipe(path: str) -> str:
        """Delete everything under path."""
        wiped.append(path)
        return f"wiped {path}"

    model = ScriptedModel(
        [
            Reply(text="Wiping.", tool_calls=Reply.tool("wipe", path="/tmp/old").tool_calls),
            Reply(text="all clean"),
        ]
    )
    agent = Agent(
        "janitor",
        "Tidy up.",
        model=model.model,
        tools=[function_tool(wipe, requires_approval=True)],
    )
    return Swarm(agent), wiped, model


async def test_an_approval_is_an_interrupt_and_the_clients_resume_runs_the_tool(
    node: str,
) -> None:
    swarm, wiped, _model = approval_flow()
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(node, url, "tidy /tmp", answers=[{"approved": True}])
    asked, resumed = driven["runs"]
    finished = asked["events"][-1]
    assert finished["type"] == "RUN_FINISHED"
    [interrupt] = finished["outcome"]["interrupts"]
    assert finished["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert "janitor wants to call wipe" in interrupt["message"]
    # Everything the run did before it asked comes first, in the paused run: its steps,
    # the words of the reply that made the call; the steps go on in the run that resumes.
    kinds = types(asked["events"])
    assert kinds.index("STEP_STARTED") < kinds.index("TEXT_MESSAGE_CONTENT")
    assert kinds.index("TEXT_MESSAGE_CONTENT") < kinds.index("TOOL_CALL_START")
    assert kinds.count("TOOL_CALL_ARGS") > 1  # the arguments as the model streamed them
    assert [e["delta"] for e in named(asked["events"], "TEXT_MESSAGE_CONTENT")] == ["Wiping."]
    assert [e["stepName"] for e in named(resumed["events"], "STEP_STARTED")] == [
        "step: janitor",
        "janitor",
    ]
    # The call is in the paused run, its result in the one that resumed it.
    [start] = named(asked["events"], "TOOL_CALL_START")
    assert start["toolCallId"] == interrupt["toolCallId"] == interrupt["id"]
    assert named(asked["events"], "TOOL_CALL_RESULT") == []
    [result] = named(resumed["events"], "TOOL_CALL_RESULT")
    assert result["content"] == "wiped /tmp/old"
    assert resumed["events"][0]["threadId"] == asked["events"][0]["threadId"]
    assert resumed["events"][0]["runId"] != asked["events"][0]["runId"]
    assert resumed["events"][-1]["result"] == {"output": "all clean"}
    assert wiped == ["/tmp/old"]
    assert driven["pendingInterrupts"] == []


@pytest.mark.parametrize(
    ("answer", "told"),
    [({"approved": False, "reason": "not today"}, "not today"), ({"cancelled": True}, "cancel")],
)
async def test_a_denied_or_cancelled_interrupt_never_runs_the_tool(
    node: str, answer: dict[str, Any], told: str
) -> None:
    swarm, wiped, model = approval_flow()
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(node, url, "tidy /tmp", answers=[answer])
    _asked, resumed = driven["runs"]
    [result] = named(resumed["events"], "TOOL_CALL_RESULT")
    assert told in result["content"]
    assert resumed["events"][-1]["outcome"] == {"type": "success"}
    assert wiped == []
    assert told in model.requests[1].tool_results[0]["content"]


async def test_a_client_that_aborts_cancels_the_run(node: str) -> None:
    model = FunctionModel(lambda _: Reply(text="too late", delay=60))
    seen: list[Event] = []
    ended = threading.Event()  # the run ends in the server's thread

    def watch(event: Event) -> None:
        seen.append(event)
        if isinstance(event, RunFinished):
            ended.set()

    swarm = Swarm(
        Agent("slow", "Take your time.", model=model.model)
        >> Agent("after", "Never reached.", model=model.model),
        hooks=[watch],
    )
    with serve(swarm.to_ag_ui()) as url:
        driven = await drive(node, url, "go", abortOn="STEP_STARTED")
        assert await asyncio.to_thread(ended.wait, 30)
    assert driven["runs"][0]["aborted"]
    [finished] = [e for e in seen if isinstance(e, RunFinished)]
    assert isinstance(finished.error, asyncio.CancelledError)
    assert [e.agent_name for e in seen if isinstance(e, AgentStarted)] == ["slow"]


async def test_a_failing_agent_is_a_run_error_after_the_finished_results(
    node: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTNER_API_KEY", SECRET)

    def answer(request: RecordedRequest) -> Fail | str:
        if speaker(request) == "Second":
            return Fail(400, f"invalid request: key {SECRET} was refused")
        return "First done."

    model = FunctionModel(answer)
    flow = Agent("first", "First. Go.", model=model.model) >> Agent(
        "second", "Second. Go.", model=model.model
    )
    with serve(Swarm(flow).to_ag_ui()) as url:
        driven = await drive(node, url, "go")
    events = driven["runs"][0]["events"]
    error = events[-1]
    assert error["type"] == "RUN_ERROR"
    assert "invalid request" in error["message"]
    assert "was refused" in error["message"]
    assert "\n" not in error["message"]
    assert SECRET not in str(driven)
    paths = [op["path"] for e in named(events, "STATE_DELTA") for op in e["delta"]]
    assert paths == ["/context/first", "/failures/second"]
    assert driven["state"]["context"]["first"]["output"] == "First done."
    assert "RUN_FINISHED" not in types(events)


async def test_bad_input_is_refused_with_a_clear_message() -> None:
    swarm, _wiped, _model = approval_flow()
    with serve(swarm.to_ag_ui(token="s3cret")) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            refused = await http.post(f"{url}/", json={})
            assert refused.status_code == 401
            headers = {"Authorization": "Bearer s3cret"}
            malformed = await http.post(f"{url}/", json={"threadId": "t"}, headers=headers)
            assert malformed.status_code == 422
            assert "RunAgentInput" in malformed.json()["error"]
            empty = {"threadId": "t", "runId": "r", "messages": []}
            answered = await http.post(f"{url}/", json=empty, headers=headers)
            assert "no user message" in answered.text
            assert "RUN_ERROR" in answered.text
            resume = {**empty, "resume": [{"interruptId": "x", "status": "resolved"}]}
            answered = await http.post(f"{url}/", json=resume, headers=headers)
            assert "no run of this thread waits" in answered.text


def sse_events(text: str) -> list[dict[str, Any]]:
    """The events of a server-sent event stream's text."""
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def test_a_malformed_answer_is_refused_and_the_run_still_waits_for_a_good_one() -> None:
    swarm, wiped, _model = approval_flow()
    message = {"id": "m1", "role": "user", "content": "tidy /tmp"}
    with serve(swarm.to_ag_ui()) as url:
        async with httpx.AsyncClient(timeout=30) as http:

            async def post(run_id: str, **more: Any) -> list[dict[str, Any]]:
                body = {"threadId": "t", "runId": run_id, "messages": [message], **more}
                return sse_events((await http.post(f"{url}/", json=body)).text)

            asked = await post("r1")
            [interrupt] = asked[-1]["outcome"]["interrupts"]
            busy = await post("r2")
            assert busy[-1]["code"] == "thread_busy"
            assert interrupt["id"] in busy[-1]["message"]
            entry = {"interruptId": interrupt["id"], "status": "resolved"}
            bad = await post("r3", resume=[{**entry, "payload": {"ok": "sure"}}])
            assert bad[-1]["code"] == "invalid_resume"
            assert '{"approved": true}' in bad[-1]["message"]
            other = await post("r4", resume=[{**entry, "interruptId": "nope"}])
            assert "not the pending interrupt" in other[-1]["message"]
            assert wiped == []
            edited = {"approved": True, "arguments": {"path": "/tmp/older"}}
            done = await post("r5", resume=[{**entry, "payload": edited}])
    assert done[-1]["outcome"] == {"type": "success"}
    assert wiped == ["/tmp/older"]


async def test_variables_that_are_no_object_are_refused_before_the_run() -> None:
    model = ScriptedModel([])
    swarm = Swarm(Agent("city", "You find cities in {country}.", model=model.model))
    with serve(swarm.to_ag_ui()) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "m1", "role": "user", "content": "a city"}],
                "forwardedProps": {"variables": ["France"]},
            }
            bad = sse_events((await http.post(f"{url}/", json=body)).text)
            missing = sse_events(
                (await http.post(f"{url}/", json={**body, "forwardedProps": {}})).text
            )
    assert types(bad) == ["RUN_STARTED", "RUN_ERROR"]
    assert "forwardedProps.variables must be an object" in bad[-1]["message"]
    assert missing[-1]["type"] == "RUN_ERROR"
    assert "country" in missing[-1]["message"]
    assert model.requests == []


async def test_a_reasoning_summary_streams_as_a_reasoning_message(node: str) -> None:
    reply = Reply(
        text="Four.", reasoning_summary="Two and two.", encrypted_reasoning="gAAA-never-shown"
    )
    with MockOpenAIServer([reply]) as server:
        agent = Agent("adder", "Add.", api="responses", **server.model_kwargs)
        with serve(Swarm(agent).to_ag_ui()) as url:
            driven = await drive(node, url, "2 + 2?")
    events = driven["runs"][0]["events"]
    thought = "".join(e["delta"] for e in named(events, "REASONING_MESSAGE_CONTENT"))
    assert thought == "Two and two."
    kinds = types(events)
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")
    assert "gAAA-never-shown" not in str(driven)


async def test_a_run_whose_interrupt_gets_no_answer_in_time_is_cancelled() -> None:
    swarm, wiped, _model = approval_flow()
    ended = threading.Event()
    finished: list[RunFinished] = []

    @swarm.on(RunFinished)
    def watch(event: RunFinished) -> None:
        finished.append(event)
        ended.set()

    message = {"id": "m1", "role": "user", "content": "tidy /tmp"}
    with serve(swarm.to_ag_ui(answer_within=0.2)) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            body = {"threadId": "t", "runId": "r1", "messages": [message]}
            asked = sse_events((await http.post(f"{url}/", json=body)).text)
            [interrupt] = asked[-1]["outcome"]["interrupts"]
            assert await asyncio.to_thread(ended.wait, 30)
            entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": True}
            late = {**body, "runId": "r2", "resume": [entry]}
            refused = sse_events((await http.post(f"{url}/", json=late)).text)
    assert isinstance(finished[0].error, asyncio.CancelledError)
    assert refused[-1]["code"] == "no_interrupt"
    assert wiped == []


async def test_a_swarms_own_approval_callback_decides_without_an_interrupt() -> None:
    swarm, wiped, _model = approval_flow()
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request.tool_name)
        return True

    swarm = Swarm(swarm.flow, approve=approve)
    message = {"id": "m1", "role": "user", "content": "tidy /tmp"}
    with serve(swarm.to_ag_ui()) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            body = {"threadId": "t", "runId": "r1", "messages": [message]}
            events = sse_events((await http.post(f"{url}/", json=body)).text)
    assert events[-1]["outcome"] == {"type": "success"}
    assert asked == ["wipe"]
    assert wiped == ["/tmp/old"]
