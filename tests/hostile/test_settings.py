"""Hostile numbers in every numeric setting: each is refused where it is defined, by name.

A table of (setting, value, where) -> outcome. NaN, infinities, negatives, bools,
strings and ints beyond float range were probed in each budget, timeout, retry,
limit, concurrency and size setting, in the API and on the command line. NaN used
to slip past every ``value <= 0`` check: ``max_cost=nan`` disabled the budget,
``call_timeout=nan`` meant no limit, ``timeout=nan`` failed at once and
``max_tool_result_chars=nan`` raised a raw TypeError mid-run. No limit is None;
``math.inf``, its older spelling, is accepted (with a DeprecationWarning naming
None) only where it meant no limit (an agent's timeouts and result size, a
tool's timeout); elsewhere it is refused.
"""

from __future__ import annotations

import inspect
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarmcore import (
    Agent,
    AgentDefaults,
    ModelLimit,
    Quorum,
    RetryPolicy,
    Swarm,
    UserError,
    loop,
    parallel,
    plan,
)
from swarmcore._tools import function_tool
from swarmcore.cli import main
from swarmcore.mcp import MCPServer
from swarmcore.store import SQLiteStore
from swarmcore.testing import MockOpenAIServer, Reply, ScriptedModel

HUGE = 10**5000  # beyond float range, and beyond the 4,300 digits repr() will print


def _agent(model: str, **settings: Any) -> Agent:
    return Agent("a", "a works.", model=model, **settings)


def _b(model: str) -> Agent:
    return Agent("b", "b works.", model=model)


def _lookup(query: str) -> str:
    """Look something up."""
    return query


Build = Callable[[Any, str], object]  # (value, model) -> what defines the setting

# setting id -> (how the value is given, the name the error must say, accepts math.inf, whole)
SETTINGS: dict[str, tuple[Build, str, bool, bool]] = {
    "Agent.max_turns": (lambda v, m: _agent(m, max_turns=v), "max_turns", False, True),
    "Agent.output_retries": (
        lambda v, m: _agent(m, output_retries=v),
        "output_retries",
        False,
        True,
    ),
    "Agent.retry": (lambda v, m: _agent(m, retry=v), "retr", False, True),
    "Agent.call_timeout": (lambda v, m: _agent(m, call_timeout=v), "call_timeout", True, False),
    "Agent.timeout": (lambda v, m: _agent(m, timeout=v), "timeout", True, False),
    "Agent.tool_timeout": (lambda v, m: _agent(m, tool_timeout=v), "tool_timeout", True, False),
    "Agent.max_tool_result_chars": (
        lambda v, m: _agent(m, max_tool_result_chars=v),
        "max_tool_result_chars",
        True,
        True,
    ),
    "Agent.max_parallel_tools": (
        lambda v, m: _agent(m, max_parallel_tools=v),
        "max_parallel_tools",
        False,
        True,
    ),
    "Agent.as_tool.max_depth": (lambda v, m: _b(m).as_tool(max_depth=v), "max_depth", False, True),
    "AgentDefaults.retry": (lambda v, m: AgentDefaults(retry=v), "retr", False, True),
    "AgentDefaults.call_timeout": (
        lambda v, m: AgentDefaults(call_timeout=v),
        "call_timeout",
        True,
        False,
    ),
    "AgentDefaults.timeout": (lambda v, m: AgentDefaults(timeout=v), "timeout", True, False),
    "AgentDefaults.tool_timeout": (
        lambda v, m: AgentDefaults(tool_timeout=v),
        "tool_timeout",
        True,
        False,
    ),
    "AgentDefaults.max_tool_result_chars": (
        lambda v, m: AgentDefaults(max_tool_result_chars=v),
        "max_tool_result_chars",
        True,
        True,
    ),
    "AgentDefaults.max_parallel_tools": (
        lambda v, m: AgentDefaults(max_parallel_tools=v),
        "max_parallel_tools",
        False,
        True,
    ),
    "RetryPolicy.max_retries": (
        lambda v, m: RetryPolicy(max_retries=v),
        "max_retries",
        False,
        True,
    ),
    "RetryPolicy.initial_delay": (
        lambda v, m: RetryPolicy(initial_delay=v),
        "initial_delay",
        False,
        False,
    ),
    "RetryPolicy.max_delay": (lambda v, m: RetryPolicy(max_delay=v), "max_delay", False, False),
    "RetryPolicy.jitter": (lambda v, m: RetryPolicy(jitter=v), "jitter", False, False),
    "RetryPolicy.max_retry_after": (
        lambda v, m: RetryPolicy(max_retry_after=v),
        "max_retry_after",
        False,
        False,
    ),
    "Swarm.max_cost": (lambda v, m: Swarm(_agent(m), max_cost=v), "max_cost", False, False),
    "Swarm.max_tokens": (lambda v, m: Swarm(_agent(m), max_tokens=v), "max_tokens", False, True),
    "Swarm.step_retries": (
        lambda v, m: Swarm(_agent(m), step_retries=v),
        "step_retries",
        False,
        True,
    ),
    "Swarm.map.concurrency": (
        lambda v, m: Swarm(_agent(m)).map(["x"], concurrency=v),
        "concurrency",
        False,
        True,
    ),
    "ModelLimit.max_in_flight": (
        lambda v, m: ModelLimit(max_in_flight=v),
        "max_in_flight",
        False,
        True,
    ),
    "ModelLimit.requests_per_minute": (
        lambda v, m: ModelLimit(requests_per_minute=v),
        "requests_per_minute",
        False,
        False,
    ),
    "ModelLimit.tokens_per_minute": (
        lambda v, m: ModelLimit(tokens_per_minute=v),
        "tokens_per_minute",
        False,
        False,
    ),
    "Tool.timeout": (lambda v, m: function_tool(_lookup, timeout=v), "timeout", True, False),
    "MCPServer.timeout": (
        lambda v, m: MCPServer.stdio("python", ["server.py"], timeout=v),
        "timeout",
        False,
        False,
    ),
    "Quorum.k": (lambda v, m: Quorum(v), "k", False, True),
    "parallel.retries": (
        lambda v, m: parallel(_agent(m), _b(m), retries=v),
        "retries",
        False,
        True,
    ),
    "loop.max_iterations": (
        lambda v, m: loop(_b(m), max_iterations=v),
        "max_iterations",
        False,
        True,
    ),
    "SQLiteStore.keep_last": (
        lambda v, m: SQLiteStore(Path(tempfile.mkdtemp()) / "runs.db", keep_last=v),
        "keep_last",
        False,
        True,
    ),
    "SQLiteStore.keep_days": (
        lambda v, m: SQLiteStore(Path(tempfile.mkdtemp()) / "runs.db", keep_days=v),
        "keep_days",
        False,
        False,
    ),
    "plan.max_attempts": (
        lambda v, m: plan(_agent(m), [_b(m)], max_attempts=v),
        "max_attempts",
        False,
        True,
    ),
}

# value id -> (the value, how the error shows it)
VALUES: dict[str, tuple[object, str]] = {
    "nan": (math.nan, "nan"),
    "inf": (math.inf, "inf"),
    "-inf": (-math.inf, "-inf"),
    "negative": (-1, "-1"),
    "string": ("abc", "'abc'"),
    "bool": (True, "True"),
    "huge-int": (HUGE, "digits"),
    "fraction": (1.5, "1.5"),  # only for whole-number settings
}


def _rows() -> list[Any]:
    rows: list[Any] = []
    for setting, (_, _, takes_inf, whole) in SETTINGS.items():
        for value_id in VALUES:
            if value_id == "fraction" and not whole:
                continue
            accepted = value_id == "inf" and takes_inf
            outcome = "accepted (no limit)" if accepted else "refused"
            rows.append(
                pytest.param(setting, value_id, accepted, id=f"{setting}={value_id}-API-{outcome}")
            )
    return rows


async def _define(setting: str, value: object, model: str) -> None:
    made = SETTINGS[setting][0](value, model)
    if inspect.iscoroutine(made):  # map() checks its settings before the first run
        await made


@pytest.mark.parametrize(("setting", "value_id", "accepted"), _rows())
async def test_a_numeric_setting_refuses_a_hostile_value_by_name(
    setting: str, value_id: str, accepted: bool
) -> None:
    value, shown = VALUES[value_id]
    name = SETTINGS[setting][1]
    model = ScriptedModel([])  # any call at all would be a test failure: nothing may run
    if accepted:
        with pytest.deprecated_call(match=f"{name}=None for no limit"):
            await _define(setting, value, model.model)  # the older spelling of no limit here
    else:
        with pytest.raises(UserError) as caught:
            await _define(setting, value, model.model)
        message = str(caught.value)
        assert name in message, message
        assert shown in message, message
    assert model.requests == []


# --- the command line ---------------------------------------------------------------------

FLOW_FILE = """
from pathlib import Path

from swarmcore import Agent
from swarmcore.testing import FunctionModel

HERE = Path(__file__).parent


def answer(request):
    (HERE / "called").touch()
    return "done"


model = FunctionModel(answer)
flow = Agent("a", "a works.", model=model.model)
"""

CLI_ROWS = [
    pytest.param(flag, text, id=f"{flag}={value_id}-CLI-refused")
    for flag, cases in {
        "--max-cost": {
            "nan": "nan",
            "inf": "inf",
            "-inf": "-inf",
            "negative": "-1",
            "zero": "0",
            "string": "abc",
            "bool": "True",
            "huge": "9" * 400,  # float() makes it inf
        },
        "--max-tokens": {
            "nan": "nan",
            "inf": "inf",
            "negative": "-5",
            "string": "abc",
            "bool": "True",
            "fraction": "1.5",
            "huge": "9" * 5000,  # beyond int()'s digit limit
        },
    }.items()
    for value_id, text in cases.items()
]


@pytest.mark.parametrize(("flag", "text"), CLI_ROWS)
def test_a_budget_flag_refuses_a_hostile_value_by_name(
    flag: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "flow.py"
    target.write_text(FLOW_FILE)
    argv = ["run", f"{target}:flow", "tea", "--quiet", "--no-store", f"{flag}={text}"]
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be a positive" in err, err
    assert "leave the flag out for no budget" in err
    assert not (tmp_path / "called").exists()  # refused before any model call


# --- end to end: a NaN budget no longer runs unbounded ------------------------------------

PRICED = "openai/gpt-4o-mini"


def _priced(server: MockOpenAIServer, name: str) -> Agent:
    return Agent(
        name, f"{name} works.", model=PRICED, api_base=server.url, api_key="sk-test", retry=0
    )


async def test_max_cost_nan_is_refused_before_any_model_call() -> None:
    each = Reply(text="ok", prompt_tokens=1_000_000, completion_tokens=0)  # $0.15 a call
    with MockOpenAIServer(responder=lambda r: each) as server:
        flow = _priced(server, "a") >> _priced(server, "b") >> _priced(server, "c")
        with pytest.raises(UserError, match=r"Swarm: max_cost must be .*; got nan"):
            await Swarm(flow, max_cost=math.nan).run("go")
        assert server.requests == []  # was: all three calls, 0.45 USD under a "budget"


def test_cli_max_cost_nan_is_refused_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    each = Reply(text="ok", prompt_tokens=1_000_000, completion_tokens=0)
    with MockOpenAIServer(responder=lambda r: each) as server:
        target = tmp_path / "priced.py"
        target.write_text(
            "from swarmcore import Agent\n"
            f"flow = Agent('a', 'a works.', model={PRICED!r}, api_base={server.url!r}, "
            "api_key='sk-test', retry=0)\n"
        )
        with pytest.raises(SystemExit) as caught:
            main(["run", f"{target}:flow", "go", "--quiet", "--no-store", "--max-cost", "nan"])
        assert caught.value.code == 2
        assert server.requests == []
    assert "argument --max-cost: must be a positive number" in capsys.readouterr().err
