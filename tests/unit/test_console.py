from __future__ import annotations

import asyncio
import io
import logging
import re
import subprocess
import sys
import threading

import pytest
from rich.console import Console

from swarmcore import Agent, Flow, ModelError, RetryPolicy, Swarm, UserError, loop, route
from swarmcore.console import ConsoleProgress, Verbosity
from swarmcore.events import (
    AgentFinished,
    AgentStarted,
    Event,
    ModelCallFinished,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    ToolCallStarted,
)
from swarmcore.testing import (
    Fail,
    FunctionModel,
    OfflineModel,
    RecordedRequest,
    Reply,
    ScriptedModel,
)

FAST = RetryPolicy(max_retries=1, initial_delay=0.01, max_delay=0.01, jitter=0)


def diamond(model: str) -> tuple[Agent, ...]:
    return tuple(Agent(n, f"{n} works.", model=model) for n in "abcd")


async def run_plain(verbosity: Verbosity, *, text: bool = False) -> str:
    out = io.StringIO()
    progress = ConsoleProgress(verbosity, file=out)
    model = OfflineModel()  # test models are held weakly: keep it alive for the run
    a, b, c, d = diamond(model.model)
    swarm = Swarm(a >> (b | c) >> d, context_mode="pull", hooks=[progress])
    if text:
        async for _ in swarm.stream("tea", text=True):
            pass
    else:
        await swarm.run("tea")
    return out.getvalue()


def failing_model() -> FunctionModel:
    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "c":
            return Fail(400, "bad request for c")
        return Reply(text=f"{who} done", delay=0.05 if who == "b" else 0)

    return FunctionModel(answer)


def live_setup(verbosity: Verbosity = "summary") -> tuple[ConsoleProgress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    return ConsoleProgress(verbosity, live=True, console=console), out


def no_live_left() -> bool:
    """No rich refresh thread runs, and stdout/stderr are no longer redirected by a Live."""
    threads = [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]
    for thread in threads:  # Live.stop() tells its thread to end; it does so at once
        thread.join(timeout=1)
    threads = [t for t in threads if t.is_alive()]
    proxied = [s for s in (sys.stdout, sys.stderr) if type(s).__name__ == "FileProxy"]
    return not threads and not proxied


# --- plain mode -------------------------------------------------------------------------


async def test_minimal_shows_only_the_run() -> None:
    out = await run_plain("minimal")
    lines = out.splitlines()
    assert lines[0].startswith("[  0.0s] run ")
    assert lines[0].endswith("started: a >> (b | c) >> d")
    assert " done in " in lines[1]
    assert "4 agents" in lines[1]
    assert len(lines) == 2  # no agent lines, no usage table
    assert "\x1b" not in out


async def test_summary_shows_agents_with_group_members_indented() -> None:
    out = await run_plain("summary")
    lines = out.splitlines()
    body = [line[9:] for line in lines]  # without the "[  0.0s] " stamp
    assert "a started (" in body[1]
    assert any(line.startswith("a done: ") and " tokens, " in line for line in body)
    assert "b | c started (parallel, all)" in body
    assert any(line.startswith("  b started (") for line in body)
    assert any(line.startswith("  c done: ") for line in body)
    assert any(line.startswith("d done: ") for line in body)
    assert "model call" not in out
    assert "tool list_context" not in out
    assert any(line.startswith("total ") for line in lines)  # the usage table
    assert "\x1b" not in out


async def test_detailed_adds_model_and_tool_calls() -> None:
    out = await run_plain("detailed")
    assert "a model call 1: " in out
    assert "  d tool list_context: " in out  # under d, in its agent's detail
    assert "d tool get_context: " in out
    assert "model call 1 started" not in out
    assert "a text: " not in out


async def test_debug_adds_every_event_and_text_deltas() -> None:
    out = await run_plain("debug", text=True)
    assert "a model call 1 started (" in out
    assert "d tool list_context started: " in out
    assert "step a started" in out
    assert "a text: '" in out
    assert "d tool get_context arguments: '" in out  # the call's arguments as they stream


async def test_detailed_shows_retries_and_fallbacks() -> None:
    primary = ScriptedModel([Fail(503), Fail(503)])
    backup = ScriptedModel([Reply(text="ok")])
    agent = Agent("a", "x", model=primary.model, fallback_models=[backup.model], retry=FAST)
    out = io.StringIO()
    await Swarm(agent, hooks=[ConsoleProgress("detailed", file=out)]).run("go")
    text = out.getvalue()
    assert f"a retry 1 (model call, {primary.model}) in 0.0s: " in text
    assert f"a falls back from {primary.model} to {backup.model}: " in text
    assert "3 attempts" in text


async def test_failing_agent_shows_failed_line_and_the_error() -> None:
    out = io.StringIO()
    model = failing_model()
    a, b, c, d = diamond(model.model)
    with pytest.raises(ModelError):
        await Swarm(a >> (b | c) >> d, hooks=[ConsoleProgress(file=out)]).run("go")
    lines = out.getvalue().splitlines()
    assert any(line[9:].startswith("  c FAILED: ModelError: ") for line in lines)
    # The sibling is cancelled; how long it ran depends on the machine's load.
    assert any(re.fullmatch(r"  b cancelled after \d+\.\ds", line[9:]) for line in lines)
    assert any(line[9:].startswith("b | c FAILED after ") for line in lines)
    final = next(line for line in lines if " FAILED after " in line and "run " in line)
    assert "ModelError: Agent 'c'" in final
    assert not any(line[9:].startswith("d ") for line in lines)


async def test_minimal_still_shows_failures() -> None:
    out = io.StringIO()
    model = failing_model()
    a, b, c, d = diamond(model.model)
    with pytest.raises(ModelError):
        await Swarm(a >> (b | c) >> d, hooks=[ConsoleProgress("minimal", file=out)]).run("go")
    body = [line[9:] for line in out.getvalue().splitlines()]
    assert len(body) == 3
    assert body[1].startswith("  c FAILED: ")
    assert " FAILED after " in body[2]


async def test_one_instance_watches_runs_in_turn_and_at_once() -> None:
    out = io.StringIO()
    model = OfflineModel()
    a, b = (Agent(n, f"{n} works.", model=model.model) for n in "ab")
    swarm = Swarm(a >> b, hooks=[ConsoleProgress("minimal", file=out)])
    first = await swarm.run("one")
    second = await swarm.run("two")
    text = out.getvalue()
    assert text.count(" started: a >> b") == 2
    assert f"run {first.run_id[:6]} done" in text
    assert f"run {second.run_id[:6]} done" in text

    out = io.StringIO()
    swarm = Swarm(a >> b, hooks=[ConsoleProgress(file=out)])
    one, two = await asyncio.gather(swarm.run("one"), swarm.run("two"))
    text = out.getvalue()
    assert f"{one.run_id[:6]}: " in text  # while both run, lines name their run
    assert f"{two.run_id[:6]}: " in text


# --- live mode --------------------------------------------------------------------------


async def test_live_runs_end_to_end() -> None:
    progress, out = live_setup("detailed")
    assert progress.live
    model = OfflineModel()
    a, b, c, d = diamond(model.model)
    result = await Swarm(a >> (b | c) >> d, hooks=[progress]).run("tea")
    text = out.getvalue()
    final = text[text.rindex(f"run {result.run_id[:6]}  a >> (b | c) >> d") :]
    for name in "abcd":
        assert f"✓ {name} " in final
    assert final.count("done") >= 5  # four agents and the group
    assert "parallel" in final
    assert "total " in final  # the usage table
    assert f"✓ run {result.run_id[:6]} done in " in final
    assert no_live_left()


async def test_live_shows_a_running_tree_while_the_run_goes() -> None:
    progress, _ = live_setup("detailed")
    frames: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        snapshot = Console(file=io.StringIO(), width=100, color_system=None)
        snapshot.print(progress._render_live())  # what the refresh thread would draw
        frames.append(snapshot.file.getvalue())  # type: ignore[attr-defined]
        return Reply(text=f"{who} done")

    model = FunctionModel(answer)
    a, b, c, d = diamond(model.model)
    await Swarm(a >> ((b >> c) | d), hooks=[progress]).run("go")
    first = frames[0]
    assert "running" in first
    assert "model call 1" in first
    assert "branch" in first
    assert "waiting" in first
    assert "├─ " in first
    assert "│  ├─ " in first  # b and c nested in their branch
    assert no_live_left()


async def test_live_is_stopped_after_a_failed_run() -> None:
    progress, out = live_setup()
    model = failing_model()
    a, b, c, d = diamond(model.model)
    with pytest.raises(ModelError):
        await Swarm(a >> (b | c) >> d, hooks=[progress]).run("go")
    assert no_live_left()
    text = out.getvalue()
    assert "✗ c " in text
    assert "skipped" in text  # d never ran
    assert "✗ run " in text
    assert "ModelError: Agent 'c'" in text
    # The same instance draws the next run.
    await Swarm(a, hooks=[progress]).run("again")
    assert no_live_left()
    assert out.getvalue().count("✓ a ") >= 2


async def test_live_concurrent_runs_share_one_display() -> None:
    progress, out = live_setup()
    model = OfflineModel()
    a, b = (Agent(n, f"{n} works.", model=model.model) for n in "ab")
    swarm = Swarm(a >> b, hooks=[progress])
    one, two = await asyncio.gather(swarm.run("one"), swarm.run("two"))
    text = out.getvalue()
    assert f"✓ run {one.run_id[:6]} done" in text
    assert f"✓ run {two.run_id[:6]} done" in text
    assert no_live_left()


def test_live_decision() -> None:
    assert not ConsoleProgress(file=io.StringIO()).live  # not a terminal
    assert not ConsoleProgress(live=False).live
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert ConsoleProgress(console=terminal).live
    with pytest.raises(UserError, match="verbosity"):
        ConsoleProgress("loud")  # type: ignore[arg-type]


def test_plain_mode_and_import_without_rich() -> None:
    code = (
        "import io, sys; sys.modules['rich'] = None\n"
        "from swarmcore.console import ConsoleProgress, Verbosity\n"
        "from swarmcore.events import RunStarted, RunFinished\n"
        "out = io.StringIO(); p = ConsoleProgress(live=True, file=out)\n"
        "assert not p.live\n"
        "p(RunStarted(run_id='abcdef12', span_id=1, parent_id=None, task='t', flow='a',"
        " agents=('a',), context_mode='pull'))\n"
        "p(RunFinished(run_id='abcdef12', span_id=1, parent_id=None, duration_seconds=0.5))\n"
        "assert 'run abcdef started: a' in out.getvalue(), out.getvalue()\n"
        "assert 'run abcdef done in 0.5s' in out.getvalue(), out.getvalue()\n"
        "assert not [m for m in sys.modules if m.startswith('rich.')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)


# --- robustness -------------------------------------------------------------------------


def garbage() -> list[Event]:
    return [
        RunFinished(run_id="ghost", span_id=1, parent_id=None, duration_seconds=1.0),
        AgentFinished(
            run_id="r1", span_id=50, parent_id=999, agent_name="x", model="m", duration_seconds=1
        ),
        RunStarted(
            run_id="r1",
            span_id=1,
            parent_id=None,
            task="t",
            flow="a >> (b | ((c",  # unreadable: the tree is built from events instead
            agents=("a", "b"),
            context_mode="pull",
        ),
        StepFinished(run_id="r1", span_id=77, parent_id=5, step="?", agents=(), duration_seconds=0),
        ToolCallStarted(
            run_id="r1",
            span_id=8,
            parent_id=404,
            agent_name="zz",
            tool_name="t",
            call_id="1",
            arguments="{}",
        ),
        ModelCallFinished(
            run_id="r1",
            span_id=9,
            parent_id=3,
            agent_name="a",
            model="m",
            turn=1,
            duration_seconds=0.1,
        ),
        StepStarted(
            run_id="r1", span_id=5, parent_id=12345, step="b | q", agents=("b", "q"), parallel=True
        ),
        AgentStarted(run_id="r1", span_id=6, parent_id=5, agent_name="q", model="m"),
        AgentStarted(run_id="r1", span_id=6, parent_id=5, agent_name="q", model="m", attempt=2),
        TextDelta(run_id="r1", span_id=10, parent_id=6, agent_name="q", text="hi"),
        Event(run_id="r1", span_id=11, parent_id=None),
        TextDelta(run_id="other", span_id=12, parent_id=None, agent_name="n", text="x"),
        RunFinished(run_id="r1", span_id=1, parent_id=None, duration_seconds=1.0),
        RunFinished(run_id="r1", span_id=1, parent_id=None, duration_seconds=1.0),
    ]


@pytest.mark.parametrize("verbosity", ["minimal", "summary", "detailed", "debug"])
@pytest.mark.parametrize("live", [False, True])
def test_garbage_never_raises(
    verbosity: Verbosity, live: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="swarmcore.console")
    if live:
        progress, out = live_setup(verbosity)
    else:
        out = io.StringIO()
        progress = ConsoleProgress(verbosity, file=out)
    for event in garbage():
        progress(event)
    progress.close()
    assert not caplog.records, caplog.records  # handled, not merely swallowed
    assert no_live_left()
    assert "run ghost done in 1.0s" in out.getvalue()


# --- control flow --------------------------------------------------------------------------


def control_flow(model: str, judge_model: str) -> Flow:
    a, s, long, w, c = (Agent(n, f"{n} works.", model=model) for n in ["a", "s", "l", "w", "c"])
    judge = Agent("j", "Judge.", model=judge_model)
    return (
        a
        >> route({"quick": s, "deep": long}, by=lambda ctx: "quick")
        >> loop(w >> c, until=judge, max_iterations=2)
    )


async def test_summary_shows_routes_and_loop_iterations() -> None:
    out = io.StringIO()
    model = OfflineModel()
    judge = FunctionModel(lambda request: '{"done": false, "feedback": "again"}')
    await Swarm(
        control_flow(model.model, judge.model), hooks=[ConsoleProgress("summary", file=out)]
    ).run("tea")
    text = out.getvalue()
    assert "route chose quick (by predicate)" in text
    assert "loop iteration 2 of at most 2" in text
    assert "loop ended after 2 (max_iterations)" in text
    assert "w#2 done" in text


async def test_live_renders_a_flow_with_routes_and_loops() -> None:
    progress, out = live_setup("detailed")
    model = OfflineModel()
    judge = FunctionModel(lambda request: '{"done": true}')
    result = await Swarm(control_flow(model.model, judge.model), hooks=[progress]).run("tea")
    final = out.getvalue()
    assert f"✓ run {result.run_id[:6]} done in " in final
    for name in ("a", "s", "w#1", "c#1", "j#1"):
        assert f"✓ {name} " in final
    assert no_live_left()


# --- an agent's time: the live tree and the usage table say the same -----------------


@pytest.mark.parametrize("live", [True, False], ids=["live-tree", "plain-lines"])
async def test_progress_and_the_usage_table_give_an_agent_the_same_time(live: bool) -> None:
    if live:
        progress, out = live_setup("summary")
    else:
        out = io.StringIO()
        progress = ConsoleProgress("summary", file=out)
    tries: list[str] = []

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        tries.append(who)
        if who == "b" and tries.count("b") == 1:  # fails once; a step retry runs it again
            return Fail(503, "overloaded", delay=0.3)
        return Reply(text=f"{who} done")

    model = FunctionModel(answer)
    a, b = (Agent(n, f"{n} works.", model=model.model, retry=0) for n in "ab")
    result = await Swarm(a >> b, hooks=[progress], step_retries=1).run("go")
    assert tries == ["a", "b", "b"]
    text = out.getvalue()
    if live:  # the last frame: the finished tree
        text = text[text.rindex(f"run {result.run_id[:6]}  a >> b") :]
    table = result.usage_table()
    progress_lines = text[: text.rindex("total ")].splitlines()  # before the usage table
    for name in "ab":
        (row,) = [line for line in table.splitlines() if line.startswith(f"{name} ")]
        took = re.findall(r"\d+\.\ds", row)[-1]  # the usage table's time column
        assert took == f"{result[name].duration_seconds:.1f}s"
        mark = f"✓ {name} " if live else f"] {name} done: "
        (shown,) = [line for line in progress_lines if mark in line]
        assert took in shown.replace(",", " ").split(), (shown, row)
    assert no_live_left()
