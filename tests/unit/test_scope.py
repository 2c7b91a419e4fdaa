"""Run state is passed down (RunScope), not carried beside the calls in context variables."""

from __future__ import annotations

import ast
import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from swarmcore import Agent, BudgetExceeded, Swarm, events
from swarmcore.durable import idempotency_key, with_key
from swarmcore.llm import CallSpec, LLMReply, LLMRequest, complete
from swarmcore.results import TokenUsage
from swarmcore.scope import CallInProgress, RunScope, current_call
from swarmcore.testing import Call, FunctionModel, RecordedRequest, Reply

SRC = Path(__file__).resolve().parents[2] / "src" / "swarmcore"


def _context_vars() -> list[str]:
    """Where ``ContextVar(...)`` is constructed in the package: ``path:line``."""
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name == "ContextVar" or name.endswith(".ContextVar"):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_at_most_three_context_variables_in_the_package() -> None:
    # Only where user code (a tool) must reach its run: the call in progress.
    found = _context_vars()
    assert len(found) <= 3, found
    assert any(f.startswith("scope.py:") for f in found)  # and the test does count something


async def test_two_interleaved_runs_keep_their_own_budgets_and_events() -> None:
    arrived: list[str] = []
    both = asyncio.Event()

    async def answer(request: RecordedRequest) -> Reply:
        arrived.append(request.user)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)  # the two runs' first calls are in flight at once
        return Reply(text=f"on {request.user}", prompt_tokens=60, completion_tokens=40)

    model = FunctionModel(answer)
    a, b = (Agent(n, f"{n} x", model=model.model) for n in "ab")
    tight = Swarm(a >> b, max_tokens=100)  # spent after one call: b is refused
    loose = Swarm(a >> b, max_tokens=1_000)
    seen: dict[str, list[events.Event]] = {"tight": [], "loose": []}
    tight.on()(seen["tight"].append)
    loose.on()(seen["loose"].append)

    async with asyncio.TaskGroup() as group:
        failing = group.create_task(_failure(tight.run("ONE")))
        passing = group.create_task(loose.run("TWO"))

    error = failing.result()
    assert isinstance(error, BudgetExceeded)
    assert error.spent_tokens == 100  # its own call only, not the other run's
    assert passing.result().context == {"a": "on TWO", "b": "on TWO"}
    for name, task in (("tight", "ONE"), ("loose", "TWO")):
        started = [e for e in seen[name] if isinstance(e, events.RunStarted)]
        assert [e.task for e in started] == [task]  # one run's events only
        run_ids = {e.run_id for e in seen[name]}
        assert len(run_ids) == 1
    assert not {e.span_id for e in seen["tight"]} & {e.span_id for e in seen["loose"]}


async def _failure(run: object) -> Exception | None:
    assert asyncio.iscoroutine(run)
    try:
        await run
    except Exception as exc:  # the test reads which one
        return exc
    return None


async def test_a_tool_finds_the_call_in_progress_and_its_caller() -> None:
    found: list[CallInProgress | None] = []

    def where() -> str:
        """Say where the call is."""
        found.append(current_call())
        return "here"

    def answer(request: RecordedRequest) -> Reply:
        if not request.tool_results:
            return Reply(tool_calls=[Call("where", {}), Call("where", {})])
        return Reply(text="done")

    model = FunctionModel(answer)
    agent = Agent("caller", "Call tools.", model=model.model, tools=[where])
    await agent.run("go")
    assert current_call() is None  # outside the tool: nothing
    calls = [c for c in found if c is not None]
    assert len(calls) == 2
    assert {c.position for c in calls} == {0, 1}
    assert all(c.caller is not None and c.caller.agent_name == "caller" for c in calls)
    assert all(c.caller is not None and c.caller.chain == ("caller",) for c in calls)


async def test_a_delegate_runs_in_its_callers_scope_and_its_events_nest_in_the_tool_call() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.system.startswith("boss") and not request.tool_results:
            return Reply(tool_calls=[Call("helper", {"task": "help"})])
        return Reply(text="helped", prompt_tokens=5, completion_tokens=5)

    model = FunctionModel(answer)
    helper = Agent("helper", "helper helps.", model=model.model)
    boss = Agent("boss", "boss delegates.", model=model.model, tools=[helper.as_tool()])
    seen: list[events.Event] = []
    swarm = Swarm(boss, max_tokens=10_000)
    swarm.on()(seen.append)
    result = await swarm.run("go")

    assert [d.agent_name for d in result.history[0].delegations] == ["helper"]
    tool = next(e for e in seen if isinstance(e, events.ToolCallStarted))
    helper_calls = [
        e for e in seen if isinstance(e, events.ModelCallStarted) and e.agent_name == "helper"
    ]
    assert [e.parent_id for e in helper_calls] == [tool.span_id]


async def test_a_delegate_spends_its_callers_budget_and_a_run_inside_a_tool_its_own() -> None:
    def answer(request: RecordedRequest) -> Reply:
        if request.system.startswith("boss") and not request.tool_results:
            calls = [Call("inner", {}), Call("helper", {"task": "help"})]
            return Reply(tool_calls=calls, prompt_tokens=50, completion_tokens=50)
        return Reply(text="done", prompt_tokens=50, completion_tokens=50)

    model = FunctionModel(answer)
    helper = Agent("helper", "helper helps.", model=model.model)
    alone = Agent("alone", "alone runs.", model=model.model)

    async def inner() -> str:
        """Run an agent of its own."""
        return (await alone.run("go")).output

    boss = Agent("boss", "boss delegates.", model=model.model, tools=[inner, helper.as_tool()])
    with pytest.raises(BudgetExceeded) as raised:
        await Swarm(boss, max_tokens=200).run("go")
    # boss's first call (100) and helper's (100) spend it; alone's run is not charged to it.
    assert raised.value.spent_tokens == 200
    assert raised.value.agent_name == "boss"


async def test_the_idempotency_key_is_the_call_in_progress_and_ends_with_it() -> None:
    async def read() -> str | None:
        return idempotency_key()

    assert idempotency_key() is None
    assert await with_key("run/agent/1/3", read) == "run/agent/1/3"
    assert idempotency_key() is None


async def test_a_scope_with_nobody_listening_publishes_nothing_and_makes_calls_directly() -> None:
    scope = RunScope()
    with scope.span(events.StepStarted, events.StepFinished, step="a", agents=("a",)) as span:
        assert scope.within(span) is scope
        scope.emit(events.RouteChosen, route="r", branch="b", by="x", reason="")

    async def call() -> int:
        return 7

    assert await scope.step("model", call) == 7


async def test_a_recording_scope_makes_each_call_through_its_runner() -> None:
    made: list[str] = []

    async def runner(name: str, call: object) -> object:
        made.append(name)
        assert callable(call)
        return await call()

    async def call() -> str:
        return "ok"

    scope = RunScope().recording(runner)
    assert await scope.step("tool:x", call) == "ok"
    assert made == ["tool:x"]


@pytest.mark.parametrize("name", ["llm/_budget", "events", "mcp/_scope", "durable", "_loop"])
def test_run_state_modules_hold_no_context_variable(name: str) -> None:
    path = SRC / f"{name}.py"
    assert "ContextVar(" not in path.read_text()


async def test_a_model_call_takes_its_backend_limits_and_text_sink_from_what_it_is_handed() -> None:
    model = FunctionModel(lambda _: Reply(text="from the test model")).model
    looked_up: list[str] = []
    streamed: list[str] = []

    class Fixed:
        async def attempt(self, request: LLMRequest, name: str, attempt: int) -> LLMReply:
            request.deliver("from the ")
            return LLMReply("from the scope's backend", (), TokenUsage(), None, "stop", 0.0, name)

    def limiter(name: str) -> None:
        looked_up.append(name)

    scope = RunScope(backend=lambda call, name: Fixed(), limiter=limiter)
    request = LLMRequest(CallSpec("a", model), [{"role": "user", "content": "hi"}], True)
    reply = await complete(replace(request, on_text=streamed.append), scope)
    assert reply.text == "from the scope's backend"
    assert looked_up == [model]
    assert streamed == ["from the "]
