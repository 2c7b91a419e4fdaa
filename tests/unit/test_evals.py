"""swarmcore.evals: a stored run becomes a case, replays offline, every change flagged by name."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swarmcore import Agent, Swarm, Tool, function_tool
from swarmcore._flow import Flow, chain
from swarmcore.cli import main
from swarmcore.control import route
from swarmcore.errors import UserError
from swarmcore.evals import (
    Budget,
    Case,
    CaseRun,
    Check,
    CheckOptions,
    ContextGiven,
    Evaluator,
    Judge,
    JudgeOptions,
    OutputContains,
    OutputMatches,
    OutputSchema,
    Suite,
    SuiteReport,
    Thresholds,
    ToolCalls,
    ToolUse,
    case_from_run,
    live_case,
    replay_case,
)
from swarmcore.testing import Fail, FunctionModel, OfflineModel, RecordedRequest

MODEL = OfflineModel(name="evals-offline")
OTHER = OfflineModel(name="evals-other")
TASK = "What is the weather in Paris?"
lookups: list[str] = []


def lookup(city: str) -> str:
    """Look up a city's weather.

    Args:
        city: The city.
    """
    lookups.append(city)
    return f"sunny in {city}"


def lookup_with_units(city: str, units: str = "metric") -> str:
    """Look up a city's weather.

    Args:
        city: The city.
        units: metric or imperial.
    """
    return f"sunny in {city}"


def build(
    *,
    analyst: str = "Analyse the research.",
    tool: Callable[..., str] | Tool = lookup,
    swap: bool = False,
    branch: str = "quick",
    analyst_model: str = MODEL.model,
) -> Flow:
    """The flow under test, and each mutation of it (one keyword each)."""
    research = Agent("researcher", "Research the task.", model=MODEL.model, tools=[tool])
    analysis = Agent("analyst", analyst, model=analyst_model)
    critic = Agent("critic", "Criticise the analysis.", model=MODEL.model)
    checker = Agent("checker", "Check the facts.", model=MODEL.model)
    quick = Agent("quick", "Answer quickly.", model=MODEL.model)
    deep = Agent("deep", "Answer in depth.", model=MODEL.model)
    first, second = (analysis, research) if swap else (research, analysis)
    choose = route({"quick": quick, "deep": deep}, by=lambda _ctx: branch)
    return first >> second >> (critic | checker) >> choose


def refactored() -> Flow:
    """The same flow written another way: agents from a table, a new predicate and tool object."""

    def weather(city: str) -> str:
        """Look up a city's weather.

        Args:
            city: The city.
        """
        return f"sunny in {city}"

    table: dict[str, tuple[str, list[Tool]]] = {
        "researcher": ("Research the task.", [function_tool(weather, name="lookup")]),
        "analyst": ("Analyse the research.", []),
        "critic": ("Criticise the analysis.", []),
        "checker": ("Check the facts.", []),
        "quick": ("Answer quickly.", []),
        "deep": ("Answer in depth.", []),
    }
    agents = {
        name: Agent(name, text, model=MODEL.model, tools=tools)
        for name, (text, tools) in table.items()
    }

    def always_quick(_ctx: object) -> str:
        return "quick"

    steps = agents["researcher"] >> agents["analyst"]
    group = agents["critic"] | agents["checker"]
    return (
        steps >> group >> route({"quick": agents["quick"], "deep": agents["deep"]}, by=always_quick)
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real stored run of the flow: its store and run id."""
    store = tmp_path_factory.mktemp("evals") / "runs.db"
    result = Swarm(build(), store=store).run_sync(TASK)
    return store, result.run_id


@pytest.fixture(scope="module")
def case(recorded: tuple[Path, str]) -> Case:
    store, run_id = recorded
    return case_from_run(store, run_id, flow=build(), name="paris")


async def test_a_case_from_a_stored_run_replays_and_passes(case: Case) -> None:
    lookups.clear()
    report = await Suite([case]).run(build())
    assert report.failed == 0, report.details()
    assert lookups == []  # the tool answered from the cassette, not by running
    assert [c.name for c in report.cases[0].checks] == [
        "replay", "models", "tool_schemas", "output", "path", "branches", "tool_calls",
        "budget", "context",
    ]  # fmt: skip
    assert case.expect.steps == [["researcher"], ["analyst"], ["checker", "critic"], ["quick"]]
    assert [(d.kind, d.step, d.value) for d in case.expect.decisions] == [
        ("route", "route", "quick")
    ]
    assert case.expect.agents["researcher"].tool_calls == [
        ToolUse(tool="lookup", arguments={"city": "example city"})
    ]
    assert "researcher" in case.expect.agents["analyst"].given
    assert case.tool_modes == {"lookup": "replay"}  # the context tools run on the replay's context


def test_a_case_file_has_no_ids_or_times_and_two_adds_are_byte_identical(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    store, run_id = recorded
    first = case_from_run(store, run_id, flow=build()).save(tmp_path / "a").read_bytes()
    second = case_from_run(store, run_id[:10], flow=build()).save(tmp_path / "b").read_bytes()
    assert first == second
    text = first.decode()
    assert run_id not in text
    assert "duration" not in text
    assert "started_at" not in text  # no timestamps; wall times are durations, from the record
    assert Case.load(tmp_path / "a" / f"run-{run_id[:8]}.json").to_json().encode() == first


def test_a_case_keeps_the_recorded_wall_times_as_durations(
    recorded: tuple[Path, str], case: Case
) -> None:
    from swarmcore.store import SQLiteStore

    store, run_id = recorded
    record = SQLiteStore(store).get_run(run_id)
    assert record is not None
    assert record.ended_at is not None
    assert case.expect.wall_seconds == round(record.ended_at - record.started_at, 3)
    assert {k: a.wall_seconds for k, a in case.expect.agents.items()} == {
        r.agent_name: round(r.duration_seconds, 3) for r in record.results
    }


# Each row: a change to the flow, and the checks that must fail and name it.
MUTATIONS: dict[str, tuple[Callable[[Case], Any], dict[str, str]]] = {
    "instruction edited": (
        lambda _case: build(analyst="Analyse the research carefully."),
        {"replay": "agent 'analyst': message 1 (system) differs"},
    ),
    "tool schema changed": (
        lambda _case: build(tool=function_tool(lookup_with_units, name="lookup")),
        {"tool_schemas": "agent 'researcher': tool 'lookup' changed its parameters"},
    ),
    "two steps swapped": (
        lambda _case: build(swap=True),
        {"path": "step 1 ran analyst, recorded researcher", "replay": "agent 'analyst'"},
    ),
    "route branch changed": (
        lambda _case: build(branch="deep"),
        {"branches": "route 'route' took branch 'deep', recorded 'quick'", "path": "deep"},
    ),
    "model swapped": (
        lambda _case: build(analyst_model=OTHER.model),
        {"models": "agent 'analyst' runs on 'swarmcore-test/evals-other'"},
    ),
    "budget blown": (
        lambda case: Swarm(build(), max_tokens=case.expect.tokens // 2),
        {"budget": "the run's budget stopped it"},
    ),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
async def test_every_mutation_is_flagged_by_name(case: Case, mutation: str) -> None:
    make, expected = MUTATIONS[mutation]
    report = await Suite([case]).run(make(case))
    failed = {c.name: c.detail for c in report.cases[0].failed}
    for check, words in expected.items():
        assert check in failed, f"{mutation}: {check} passed; failed: {failed}"
        assert words in failed[check], f"{mutation}: {failed[check]!r}"


async def test_a_pure_refactor_of_the_flow_flags_nothing(case: Case) -> None:
    report = await Suite([case]).run(refactored())
    assert report.failed == 0, report.details()
    report = await Suite([case]).run(Swarm(refactored()))  # a Swarm target with the same settings
    assert report.failed == 0, report.details()


async def test_a_tool_call_the_cassette_lacks_stops_the_agent_naming_the_tool(case: Case) -> None:
    emptied = case.model_copy(update={"tool_cassette": []})
    lookups.clear()
    run = await replay_case(emptied, build())
    assert lookups == []  # never run live
    assert [(m.agent, m.kind) for m in run.misses] == [("researcher", "tool")]
    report = await Suite([emptied]).run(build())
    assert 'tool \'lookup\' called with {"city":"example city"}, not recorded' in report.details()


async def test_a_tool_marked_live_runs(case: Case) -> None:
    live = case.model_copy(update={"tool_modes": {"lookup": "live"}})
    lookups.clear()
    report = await Suite([live]).run(build())
    assert report.failed == 0, report.details()
    assert lookups == ["example city"]


async def test_reports_are_byte_identical_across_reruns(case: Case) -> None:
    suite = Suite([case, case.model_copy(update={"name": "paris-deep"})])
    reports = [await suite.run(build(branch="deep")) for _ in range(3)]
    assert len({r.to_json() for r in reports}) == 1
    assert len({r.junit() for r in reports}) == 1
    assert reports[0].failed == 2  # the rerun is of a failing suite: the details too are stable
    data = json.loads(reports[0].to_json())
    assert data["pass_rate"] == 0.0
    assert data["cases"][0]["name"] == "paris"
    assert data["cases"][0]["wall_seconds"] is None  # a replay's times are not a model's
    assert "time" not in reports[0].table()


async def test_a_replay_has_no_times_and_is_never_failed_on_them(case: Case) -> None:
    run = await replay_case(_timed(case, agent=0.0, run=0.0, grace=0.0), build())
    assert run.trace.wall_seconds is None
    assert {a.wall_seconds for a in run.trace.agents.values()} == {None}
    report = await Suite([_timed(case, agent=0.0, run=0.0, grace=0.0)]).run(build())
    assert report.failed == 0, report.details()


class _Polite(Evaluator):
    name = "polite"

    def evaluate(self, run: CaseRun) -> Check:
        return self.verdict("please" in run.trace.output, "the answer never says please")


class _Answer(BaseModel):
    answer: str


async def test_user_evaluators_and_the_output_checks(case: Case) -> None:
    evaluators = [
        _Polite(),
        OutputContains("Answer quickly"),
        OutputMatches(r"^Offline answer"),
        OutputSchema(_Answer),
        ContextGiven("quick", "sunny in example city"),
        ContextGiven("analyst", "cloudy"),
    ]
    report = await Suite([case], evaluators=evaluators).run(build())
    verdicts = {c.name: c.passed for c in report.cases[0].checks[-6:]}
    assert verdicts == {
        "polite": False,
        "output_contains": True,
        "output_regex": True,
        "output_schema": False,
        "context": False,  # the last context check: analyst was never given "cloudy"
    }
    assert "agent 'analyst' was not given 'cloudy'" in report.details()
    assert "agent 'quick'" not in report.details()  # the fact quick needed reached it


def _run_with(calls: dict[str, list[ToolUse]]) -> CaseRun:
    """A CaseRun whose replay made ``calls`` (per agent); search(q=a, page=1), read() recorded."""
    from swarmcore.evals import AgentTrace, Trace

    recorded = [
        ToolUse(tool="search", arguments={"q": "a", "page": 1}),
        ToolUse(tool="read", arguments={}),
    ]
    expect = Trace(
        agents={"r": AgentTrace(model="m", tool_calls=recorded, prompt_tokens=100, calls=2)}
    )
    case = Case(name="c", task="t", flow="r", flow_version="v", shape='["r"]', expect=expect)
    trace = Trace(
        agents={
            agent: AgentTrace(model="m", tool_calls=uses, prompt_tokens=130, calls=2)
            for agent, uses in calls.items()
        }
    )
    return CaseRun(
        case=case, trace=trace, result=None, error=None, misses=[], models={}, tool_specs={}
    )


@pytest.mark.parametrize(
    ("mode", "made", "ignore", "passes"),
    [
        ("strict", [("search", {"q": "a", "page": 1}), ("read", {})], (), True),
        ("strict", [("read", {}), ("search", {"q": "a", "page": 1})], (), False),
        ("unordered", [("read", {}), ("search", {"q": "a", "page": 1})], (), True),
        ("strict", [("search", {"q": "b", "page": 1}), ("read", {})], (), False),
        ("strict", [("search", {"q": "b", "page": 1}), ("read", {})], ("search.q",), True),
        ("strict", [("search", {"q": "b", "page": 2}), ("read", {})], ("q", "page"), True),
        ("subset", [("read", {})], (), True),
        ("subset", [("read", {}), ("write", {})], (), False),
        ("superset", [("search", {"q": "a", "page": 1}), ("read", {}), ("write", {})], (), True),
        ("superset", [("read", {})], (), False),
    ],
)
def test_tool_calls_match_strictly_unordered_as_subset_or_superset(
    mode: Any, made: list[tuple[str, dict[str, Any]]], ignore: tuple[str, ...], passes: bool
) -> None:
    run = _run_with({"r": [ToolUse(tool=t, arguments=a) for t, a in made]})
    check = ToolCalls(mode, ignore).evaluate(run)
    assert check.passed is passes, check.detail
    if not passes:
        assert check.detail.startswith(f"agent 'r': tool calls differ ({mode})")


def test_budget_holds_within_the_tolerance_and_names_who_overspent() -> None:
    run = _run_with({"r": []})  # 130 tokens where 100 were recorded
    assert Budget(tolerance=1.3).evaluate(run).passed
    check = Budget(tolerance=1.2).evaluate(run)
    assert not check.passed
    assert "agent 'r' spent 130 tokens, recorded 100 (tolerance x1.2)" in check.detail


async def test_a_baseline_diff_names_each_regression(case: Case) -> None:
    suite = Suite([case])
    baseline = await suite.run(build())
    assert baseline.regressions(baseline) == []
    broken = await suite.run(build(analyst="Analyse it."))
    found = broken.regressions(baseline, Thresholds())
    assert found[0].startswith("paris: passed in the baseline, fails now (replay,")
    assert found[-1] == "suite: pass rate 0.0%, baseline 100.0% (allowed drop 0.0%)"
    assert broken.regressions(baseline, Thresholds(pass_rate_drop=1.0))[-1].startswith("paris:")


def test_bad_case_files_and_suites_say_what_to_fix(tmp_path: Path, case: Case) -> None:
    (tmp_path / "broken.json").write_text('{"swarmcore_case": 1, "name": "x"}')
    with pytest.raises(
        UserError, match=r"broken.json is not a swarmcore eval case: task: Field required"
    ):
        Suite.from_dir(tmp_path)
    with pytest.raises(UserError, match="No suite directory"):
        Suite.from_dir(tmp_path / "missing")
    with pytest.raises(UserError, match="case names must differ; repeated: paris"):
        Suite([case, case])
    with pytest.raises(UserError, match="must be a file name"):
        case_from_run(*_store_and_run(case, tmp_path), name="../escape")


def _store_and_run(case: Case, tmp_path: Path) -> tuple[Path, str]:
    store = tmp_path / "runs.db"
    return store, Swarm(build(), store=store).run_sync(case.task).run_id


FLOW_FILE = """\
from swarmcore import Agent
from swarmcore.control import route
from swarmcore.testing import OfflineModel

model = OfflineModel(name="evals-cli")


def lookup(city: str) -> str:
    \"\"\"Look up a city's weather.

    Args:
        city: The city.
    \"\"\"
    return f"sunny in {city}"


researcher = Agent("researcher", "{instructions}", model=model.model, tools=[lookup])
flow = researcher >> (Agent("a", "A.", model=model.model) | Agent("b", "B.", model=model.model))
"""


def _cli(*args: str) -> int:
    return main(list(args))


def test_cli_adds_a_case_and_runs_the_suite_with_reports_and_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text(FLOW_FILE.replace("{instructions}", "Research the task."))
    store, suite = tmp_path / "runs.db", tmp_path / "suite"
    assert _cli("run", f"{flows}:flow", TASK, "--store", str(store), "--quiet") == 0
    from swarmcore.store import SQLiteStore

    run_id = SQLiteStore(store).list_runs()[0].run_id
    capsys.readouterr()
    assert (
        _cli("eval", "add", run_id, "--store", str(store), "--suite", str(suite), "--name", "c1")
        == 0
    )
    added = capsys.readouterr().out
    assert "c1.json: " in added
    assert "model calls, 1 tool results recorded" in added
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    args = ("eval", "run", f"{flows}:flow", "--suite", str(suite))
    assert _cli(*args, "--report", str(report), "--junit", str(junit)) == 0
    out = capsys.readouterr().out
    assert "c1" in out
    assert "pass" in out
    first = report.read_bytes()
    assert _cli(*args, "--report", str(report)) == 0
    assert report.read_bytes() == first
    assert '<testcase classname="suite" name="c1" />' in junit.read_text()

    edited = tmp_path / "edited.py"
    edited.write_text(FLOW_FILE.replace("{instructions}", "Research the task twice."))
    changed = ("eval", "run", f"{edited}:flow", "--suite", str(suite))
    assert _cli(*changed) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "c1: replay: model request of agent 'researcher': message 1" in out
    assert _cli(*changed, "--baseline", str(report)) == 1
    assert "regression: c1: passed in the baseline, fails now (replay" in capsys.readouterr().err
    assert _cli(*args, "--baseline", str(report)) == 0  # the unchanged flow: no regression
    assert SuiteReport.load(report).passed == 1

    live = tmp_path / "live.json"
    assert _cli(*args, "--live", "--report", str(live)) == 0
    timed = SuiteReport.load(live)
    assert timed.cases[0].wall_seconds is not None  # a live run is timed
    assert SuiteReport.load(report).cases[0].wall_seconds is None  # a replay is not
    instant = timed.model_copy(
        update={"cases": [timed.cases[0].model_copy(update={"wall_seconds": 0.0})]}
    )
    instant.save(live)  # a baseline that took no time: any live run is slower, by the grace
    capsys.readouterr()
    assert _cli(*args, "--live", "--baseline", str(live), "--wall-grace", "0") == 1
    err = capsys.readouterr().err
    assert "regression: c1: wall time " in err
    assert "baseline 0.000 s (from 0, allowed x1.5 + 0 s)" in err


def test_cli_eval_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli("eval", "add", "nope", "--store", str(tmp_path / "none.db"), "--suite", "s") == 2
    assert "no run store at" in capsys.readouterr().err


def test_a_suite_replays_with_networking_forbidden(tmp_path: Path, case: Case) -> None:
    case.save(tmp_path / "suite")
    root = str(Path(__file__).parents[2])
    (tmp_path / "flows.py").write_text(
        f"import sys\nsys.path.insert(0, {root!r})\n"
        "from tests.unit.test_evals import build\nflow = build()\n"
    )
    target, suite = str(tmp_path / "flows.py:flow"), str(tmp_path / "suite")
    code = textwrap.dedent(
        f"""
        import socket, sys
        refused = []
        real_connect = socket.socket.connect

        def local(address):
            here = ("127.0.0.1", "::1", "localhost")
            return isinstance(address, (str, bytes)) or address[0] in here

        def connect(self, address):
            if self.family != socket.AF_UNIX and not local(address):
                refused.append(address)
                raise OSError(f"no network in this test: {{address}}")
            return real_connect(self, address)

        real_getaddrinfo = socket.getaddrinfo

        def getaddrinfo(host, *args, **kwargs):
            if host not in ("127.0.0.1", "::1", "localhost", None):
                refused.append(host)
                raise OSError(f"no network in this test: {{host}}")
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect
        socket.getaddrinfo = getaddrinfo
        from swarmcore.cli import main
        status = main(["eval", "run", {target!r}, "--suite", {suite!r}])
        assert not refused, refused
        sys.exit(status)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "paris" in done.stdout
    assert "1/1" in done.stdout


def tick() -> str:
    """Count a tick."""
    ticks.append(1)
    return f"tick {len(ticks)}"


ticks: list[int] = []


async def test_a_call_repeated_with_other_results_replays_them_in_order(tmp_path: Path) -> None:
    from swarmcore.testing import Call, Reply, ScriptedModel

    model = ScriptedModel(
        [Reply(tool_calls=[Call("tick")]), Reply(tool_calls=[Call("tick")]), "done"]
    )
    agent = Agent("counter", "Count.", model=model.model, tools=[tick])
    store = tmp_path / "runs.db"
    run_id = (await Swarm(agent, store=store).run("Count twice.")).run_id
    case = case_from_run(store, run_id, flow=chain(agent))
    assert [t.result for t in case.tool_cassette] == ["tick 1", "tick 2"]
    ticks.clear()
    report = await Suite([case]).run(agent)
    assert report.failed == 0, report.details()
    assert ticks == []


async def test_suite_check_is_one_assertion_per_case(case: Case) -> None:
    suite = Suite([case])
    assert (await suite.check(case, build())).passed
    with pytest.raises(
        AssertionError, match=r"eval case 'paris' failed:\n  models: agent 'analyst'"
    ):
        await suite.check(case, build(analyst_model=OTHER.model))


def test_a_case_of_a_newer_format_is_refused(tmp_path: Path, case: Case) -> None:
    path = case.model_copy(update={"swarmcore_case": 99}).save(tmp_path)
    with pytest.raises(UserError, match="written by a newer swarmcore"):
        Case.load(path)


def test_the_example_suite_records_and_replays(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SWARMCORE_MODEL", raising=False)
    examples = Path(__file__).parents[2] / "examples" / "evals"
    committed = Suite.from_dir(examples / "suite")  # the committed cases still read
    record = [sys.executable, str(examples / "record.py"), str(tmp_path)]
    subprocess.run(record, check=True, capture_output=True, timeout=120)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [
        f"{c.name}.json" for c in committed.cases
    ]
    status = _cli("eval", "run", f"{examples / 'flows.py'}:flow", "--suite", str(tmp_path))
    assert status == 0, capsys.readouterr().out
    assert "3/3" in capsys.readouterr().out


PATIENT = 600.0
"""Seconds of wall-time grace for live runs timed on the real clock, where time is not
what a test checks: the recorded run took milliseconds, and a loaded machine may pause."""


def _patient(case: Case) -> Case:
    return case.model_copy(
        update={"checks": case.checks.model_copy(update={"wall_grace": PATIENT})}
    )


async def test_live_trials_run_the_real_tools_and_report_a_pass_rate_with_its_interval(
    case: Case,
) -> None:
    lookups.clear()
    case = _patient(case)
    report = await Suite([case]).run_live(build(), trials=2)
    assert lookups == ["example city", "example city"]  # the tool ran, in both trials
    live = report.cases[0].live
    assert live is not None
    assert (live.trials, live.passes, live.pass_rate) == (2, 2, 1.0)
    assert live.interval == (0.34238, 1.0)  # Wilson, 95 %
    assert "2/2 100% (95% CI 34%-100%)" in report.table()
    broken = await Suite([case]).run_live(build(branch="deep"), trials=2)
    assert broken.pass_rate == 0.0
    assert "(failed in 2 of 2 trials)" in broken.details()
    with pytest.raises(UserError, match="trials must be a whole number above 0"):
        await Suite([case]).run_live(build(), trials=0)


async def test_record_refreshes_the_cassettes_from_a_live_run(case: Case, tmp_path: Path) -> None:
    edited = build(analyst="Analyse the research carefully.")
    tuned = case.model_copy(update={"checks": CheckOptions(tolerance=2.0)})
    assert (await Suite([tuned]).run(edited)).failed == 1
    suite = await Suite([tuned]).record(edited, tmp_path)
    fresh = Case.load(tmp_path / "paris.json")
    assert fresh.checks.tolerance == 2.0  # kept, as the name and the tool modes are
    assert fresh.to_json() == suite.cases[0].to_json()
    report = await suite.run(edited)
    assert report.failed == 0, report.details()


def test_cli_live_and_record(
    tmp_path: Path, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    case.save(tmp_path / "suite")
    root = str(Path(__file__).parents[2])
    (tmp_path / "flows.py").write_text(
        f"import sys\nsys.path.insert(0, {root!r})\n"
        "from tests.unit.test_evals import build\n"
        "flow = build(branch='deep')\n"
    )
    args = ("eval", "run", f"{tmp_path / 'flows.py'}:flow", "--suite", str(tmp_path / "suite"))
    assert _cli(*args, "--live", "2") == 1  # the route takes another branch than recorded
    assert "0/2 0%" in capsys.readouterr().out
    assert _cli(*args, "--record") == 0
    assert "recorded 1 cases again" in capsys.readouterr().err
    assert _cli(*args) == 0
    with pytest.raises(SystemExit, match="2"):
        _cli(*args, "--live", "0")
    assert "a whole number of trials above 0, not '0'" in capsys.readouterr().err


async def test_an_agent_called_as_a_tool_replays_as_a_tool(tmp_path: Path) -> None:
    helper_model = OfflineModel(name="evals-helper")
    helper = Agent("helper", "Help with the facts.", model=helper_model.model)
    boss = Agent("boss", "Delegate, then answer.", model=MODEL.model, tools=[helper.as_tool()])
    store = tmp_path / "runs.db"
    run_id = (await Swarm(boss, store=store).run(TASK)).run_id
    case = case_from_run(store, run_id, flow=chain(boss))
    assert [t.tool for t in case.tool_cassette] == ["helper"]
    sent = len(helper_model.requests)
    report = await Suite([case]).run(boss)
    assert report.failed == 0, report.details()
    assert len(helper_model.requests) == sent  # the delegate's answer came from the cassette


def _rule(request: RecordedRequest) -> str:
    passed = "Paris" in request.user
    return json.dumps({"passed": passed, "reason": "it names the city" if passed else "no city"})


JUDGE = FunctionModel(_rule)


async def test_a_judge_rules_live_and_its_recorded_ruling_replays_offline(
    case: Case, tmp_path: Path
) -> None:
    options = CheckOptions(
        judge=JudgeOptions(criteria="names the city", model=JUDGE.model),
        wall_grace=PATIENT,  # timed on the real clock: a busy machine must not fail it
    )
    judged = case.model_copy(update={"checks": options})
    asked = len(JUDGE.requests)
    report = await Suite([judged]).run(build())
    assert "judge: no recorded ruling of the judge on this output" in report.details()
    assert len(JUDGE.requests) == asked  # a replay never calls the judge's model

    suite = await Suite([judged]).record(build(), tmp_path)
    assert len(JUDGE.requests) == asked + 1
    recorded = Case.load(tmp_path / "paris.json")
    assert [e.agent for e in recorded.judge_cassette] == ["judge"]
    report = await suite.run(build())
    assert report.failed == 0, report.details()
    assert len(JUDGE.requests) == asked + 1  # the ruling came from the cassette

    live = await Suite([judged]).run_live(build(), trials=1)
    assert live.failed == 0, live.details()
    assert len(JUDGE.requests) == asked + 2


async def test_a_judge_of_your_own_fails_with_its_reason(case: Case) -> None:
    strict = FunctionModel(lambda _request: '{"passed": false, "reason": "too vague"}')
    judge = Judge(Agent("strict", "Judge strictly.", model=strict.model), "is precise")
    run = await live_case(case, build())
    check = await judge.evaluate(run)
    assert (check.name, check.passed, check.detail) == ("judge", False, "the judge: too vague")


async def test_a_tool_given_to_an_agent_that_had_none_is_flagged(case: Case) -> None:
    def build_with_analyst_tool() -> Flow:
        flow = build()
        return flow.map_agents(
            lambda node: (
                node.clone(tools=[lookup])
                if isinstance(node, Agent) and node.name == "analyst"
                else node
            )
        )

    report = await Suite([case]).run(build_with_analyst_tool())
    failed = {c.name: c.detail for c in report.cases[0].failed}
    assert failed["tool_schemas"] == "agent 'analyst' has a new tool 'lookup'"
    unchecked = case.model_copy(update={"tool_specs": None})  # made without the flow
    report = await Suite([unchecked]).run(build_with_analyst_tool())
    assert "tool_schemas" not in {c.name for c in report.cases[0].failed}


def test_pytest_collects_a_suite_as_one_test_per_case(tmp_path: Path) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text(FLOW_FILE.replace("{instructions}", "Research the task."))
    store, suite = tmp_path / "runs.db", tmp_path / "tests" / "evals"
    assert _cli("run", f"{flows}:flow", TASK, "--store", str(store), "--quiet") == 0
    from swarmcore.store import SQLiteStore

    run_id = SQLiteStore(store).list_runs()[0].run_id
    assert (
        _cli("eval", "add", run_id, "--store", str(store), "--suite", str(suite), "--name", "ok")
        == 0
    )
    case = Case.load(suite / "ok.json")
    expect = case.expect.model_copy(update={"output": "another answer"})
    case.model_copy(update={"name": "changed", "expect": expect}).save(suite)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nswarmcore_evals = ["tests/evals = flows.py:flow"]\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "eval case 'changed' failed:" in done.stdout
    assert "output: the output differs at character 1" in done.stdout
    assert "tests/evals/changed.json::changed" in done.stdout


DOWN = FunctionModel(lambda _request: Fail(503, "the primary model is down"))


def _writer(model: str = DOWN.model, *fallbacks: str) -> Flow:
    return chain(Agent("writer", "Write.", model=model, fallback_models=fallbacks, retry=0))


async def test_an_answer_from_a_fallback_model_passes_and_a_swapped_model_is_flagged(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    result = await Swarm(_writer(DOWN.model, MODEL.model), store=store).run(TASK)
    assert result["writer"].model == MODEL.model  # the primary failed: the fallback answered
    made_with_flow = case_from_run(store, result.run_id, flow=_writer(DOWN.model, MODEL.model))
    assert made_with_flow.models == {"writer": [DOWN.model, MODEL.model]}
    without_flow = case_from_run(store, result.run_id)
    assert without_flow.models is None

    for case in (made_with_flow, without_flow):
        report = await Suite([case]).run(_writer(DOWN.model, MODEL.model))
        assert report.failed == 0, report.details()

    assert await _models_detail(made_with_flow, _writer(OTHER.model)) == (
        f"agent 'writer' runs on '{OTHER.model}', recorded on "
        f"'{DOWN.model}' (fallbacks '{MODEL.model}')"
    )
    assert await _models_detail(made_with_flow, _writer(DOWN.model, OTHER.model)) == (
        f"agent 'writer' runs on '{DOWN.model}' (fallbacks '{OTHER.model}'), recorded on "
        f"'{DOWN.model}' (fallbacks '{MODEL.model}')"
    )
    assert await _models_detail(without_flow, _writer(OTHER.model)) == (
        f"agent 'writer' runs on '{OTHER.model}'; its recorded answer came from '{MODEL.model}'"
    )
    assert await _models_detail(without_flow, _writer(OTHER.model, MODEL.model)) == ""


async def _models_detail(case: Case, flow: Flow) -> str:
    """What the ``models`` check says of ``case`` replayed against ``flow`` ("" if it passed)."""
    report = await Suite([case]).run(flow)
    return {c.name: c.detail for c in report.cases[0].failed}.get("models", "")


class _Clock:
    """A clock only a tool moves: the seconds a live run takes, with no real time spent."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.per_lookup = 0.0

    def __call__(self) -> float:
        return self.now


CLOCK = _Clock()


def _slow_lookup(city: str) -> str:
    """Look up a city's weather.

    Args:
        city: The city.
    """
    CLOCK.now += CLOCK.per_lookup  # the tool "takes" that long on the test's clock
    return f"sunny in {city}"


SLOW_LOOKUP = function_tool(_slow_lookup, name="lookup")  # the same schema as lookup's


def _timed(case: Case, *, agent: float, run: float, grace: float = 1.0) -> Case:
    """``case`` with round recorded wall times: ``agent`` s for each agent, ``run`` s in all."""
    agents = {
        k: a.model_copy(update={"wall_seconds": agent}) for k, a in case.expect.agents.items()
    }
    expect = case.expect.model_copy(update={"agents": agents, "wall_seconds": run})
    checks = case.checks.model_copy(update={"wall_grace": grace})
    return case.model_copy(update={"expect": expect, "checks": checks})


async def test_a_live_run_slower_than_recorded_is_flagged_by_name(case: Case) -> None:
    timed = _timed(case, agent=2.0, run=40.0)  # limits: x2 + 1 s, so 5 s an agent, 81 s in all
    CLOCK.per_lookup = 4.0
    report = await Suite([timed]).run_live(build(tool=SLOW_LOOKUP), clock=CLOCK)
    assert report.failed == 0, report.details()  # 4 s where 2 s were recorded: within the limit
    assert report.cases[0].wall_seconds == 4.0
    assert "4.00s" in report.table()

    CLOCK.per_lookup = 30.0
    slow = await Suite([timed]).run_live(build(tool=SLOW_LOOKUP), trials=2, clock=CLOCK)
    assert [c.name for c in slow.cases[0].failed] == ["budget"]
    assert slow.cases[0].failed[0].detail == (
        "agent 'researcher' took 30.000 s, recorded 2.000 s (limit x2 + 1 s) "
        "(failed in 2 of 2 trials)"
    )  # the run's 30 s is within its own limit
    assert slow.cases[0].wall_seconds == 30.0
    loose = timed.model_copy(
        update={"checks": timed.checks.model_copy(update={"wall_tolerance": 15.0})}
    )
    assert (await Suite([loose]).run_live(build(tool=SLOW_LOOKUP), clock=CLOCK)).failed == 0

    assert slow.regressions(report) == [
        "paris: passed in the baseline, fails now (budget)",
        "paris: wall time 30.000 s, baseline 4.000 s (x7.50, allowed x1.5 + 1 s)",
        "suite: pass rate 0.0%, baseline 100.0% (allowed drop 0.0%)",
    ]
    assert slow.regressions(report, Thresholds(wall_ratio=8.0, pass_rate_drop=1.0)) == [
        "paris: passed in the baseline, fails now (budget)"
    ]
    replayed = await Suite([timed]).run(build())  # no times: never a wall-time regression
    assert replayed.regressions(slow) == []
    assert not [line for line in slow.regressions(replayed) if "wall time" in line]
