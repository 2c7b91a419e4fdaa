from __future__ import annotations

import argparse
import asyncio
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from swarmcore import Agent, Swarm, SwarmError
from swarmcore.cli import main
from swarmcore.cli._app import build_parser
from swarmcore.store import SQLiteStore
from swarmcore.testing import Fail, FunctionModel, RecordedRequest

FLOW_FILE = """
from swarmcore import Agent, parallel
from swarmcore.testing import offline_model

m = offline_model()
a, b, c, d = (Agent(n, f"{n.upper()} works.", model=m) for n in "abcd")
flow = a >> (b | c)
diamond = a >> (b | c) >> d
branch = (a >> b) | c
nested = parallel(a >> (b | c), d, policy="best_effort")
not_a_flow = 42
"""

# Agent c fails while the marker file exists; every model call is logged to calls.log.
FLAKY_FILE = """
from pathlib import Path

from swarmcore import Agent
from swarmcore.testing import Fail, FunctionModel

HERE = Path(__file__).parent


def answer(request):
    name = request.system.split()[0]
    with (HERE / "calls.log").open("a") as log:
        log.write(name + "\\n")
    if name == "c" and (HERE / "fail_c").exists():
        return Fail(400, "c is down", delay=0.3)  # b finishes first
    return f"{name} says hi\\nmore text"


model = FunctionModel(answer)  # test models are held weakly: keep this reference
a, b, c, d = (Agent(n, f"{n} works.", model=model.model) for n in "abcd")
flow = a >> (b | c) >> d
"""

RUN_ID = re.compile(r"^run ([0-9a-f]{32}) stored in (.+)$", re.MULTILINE)


@pytest.fixture(autouse=True)
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test stores its runs under tmp_path, never in the home directory."""
    path = tmp_path / "store" / "runs.db"
    monkeypatch.setenv("SWARMCORE_STORE", str(path))
    return path


@pytest.fixture
def flow_file(tmp_path: Path) -> Path:
    path = tmp_path / "flows.py"
    path.write_text(FLOW_FILE)
    return path


@pytest.fixture
def flaky_file(tmp_path: Path) -> Path:
    path = tmp_path / "flaky.py"
    path.write_text(FLAKY_FILE)
    (tmp_path / "fail_c").touch()
    return path


def _calls(flaky_file: Path) -> list[str]:
    log = flaky_file.with_name("calls.log")
    return log.read_text().split() if log.exists() else []


def _stored_id(err: str) -> str:
    match = RUN_ID.search(err)
    assert match, err
    return match.group(1)


def _in_fresh_process(argv: list[str]) -> tuple[list[str], bool, int]:
    """Run the CLI in a new interpreter: its stdout lines, whether litellm got imported, rc."""
    code = (
        "import sys; from swarmcore.cli import main; "
        f"rc = main({argv!r}); "
        "print('litellm' in sys.modules, rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    imported, rc = lines[-1].split()
    return lines[:-1], imported == "True", int(rc)


def _fail_flaky_run(flaky_file: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """Run the flaky flow until c fails; returns the run id."""
    assert main(["run", f"{flaky_file}:flow", "what is tea", "--quiet", *extra]) == 1
    err = capsys.readouterr().err
    assert "swarmcore: error: " in err
    assert "c is down" in err
    match = re.search(r"^resume with: swarmcore runs resume ([0-9a-f]{32})$", err, re.MULTILINE)
    assert match, err
    return match.group(1)


# --- graph ---------------------------------------------------------------------------


def test_graph_prints_mermaid_without_importing_litellm(flow_file: Path) -> None:
    lines, imported, rc = _in_fresh_process(["graph", f"{flow_file}:flow"])
    assert lines[0] == "flowchart LR"
    assert "    a --> b" in lines
    assert "    a --> c" in lines
    assert (imported, rc) == (False, 0)


@pytest.mark.parametrize(
    ("name", "drawing"),
    [
        ("diamond", ["a", "parallel", "├─ b", "└─ c", "d"]),
        ("branch", ["parallel", "├─ a", "│  b", "└─ c"]),
        (
            "nested",
            ["parallel (best effort)", "├─ a", "│  parallel", "│  ├─ b", "│  └─ c", "└─ d"],
        ),
    ],
)
def test_graph_draws_a_tree(
    flow_file: Path, capsys: pytest.CaptureFixture[str], name: str, drawing: list[str]
) -> None:
    assert main(["graph", f"{flow_file}:{name}", "--format", "tree"]) == 0
    assert capsys.readouterr().out.splitlines() == drawing


# --- run -----------------------------------------------------------------------------


def test_run_executes_the_flow(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", f"{flow_file}:flow", "what is tea", "--context-mode", "push", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr()
    assert out.out.startswith("## b\n\nOffline answer (B works.) to: what is tea")


@pytest.mark.parametrize(
    "command",
    [
        ["run", "{flow}", "what is tea"],
        ["demo", "Is tea good for you?"],
        ["runs", "resume", "{failed}"],
    ],
    ids=["run", "demo", "runs-resume"],
)
def test_quiet_prints_the_output_and_nothing_on_stderr(
    command: list[str], flow_file: Path, flaky_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = ""
    if "{failed}" in command:
        failed = _fail_flaky_run(flaky_file, capsys)
        flaky_file.with_name("fail_c").unlink()
    argv = [a.format(flow=f"{flow_file}:flow", failed=failed) for a in command]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.out.strip()
    assert out.err == ""  # no summary, no "run ... stored in ...", no notice


def test_quiet_still_reports_a_failure(
    flaky_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flaky_file}:flow", "what is tea", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("swarmcore: error: ")
    assert "resume with: swarmcore runs resume " in err


def test_run_shows_progress_on_stderr(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "summary"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("## b\n\n")
    for name in "abc":
        assert name in out.err
    assert "\x1b[" not in out.err  # not a terminal: plain lines


def test_run_stores_the_run_and_prints_its_id(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "minimal"]) == 0
    err = capsys.readouterr().err
    run_id = _stored_id(err)
    assert f"stored in {store_path}" in err
    store = SQLiteStore(store_path)
    try:
        record = store.get_run(run_id)
    finally:
        store.close()
    assert record is not None
    assert (record.status, record.agents_done, record.agents_total) == ("succeeded", 3, 3)
    assert record.settings["metadata"] == {
        "target": f"{flow_file}:flow",
        "model": None,
        "cwd": os.getcwd(),
    }


def test_run_with_no_store_writes_nothing(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "tea", "--quiet", "--no-store"]) == 0
    assert "stored in" not in capsys.readouterr().err
    assert not store_path.exists()


def test_run_with_model_runs_every_agent_on_it(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alt = FunctionModel(lambda r: f"ALT for {r.system.split()[0]}")
    assert (
        main(["run", f"{flow_file}:flow", "tea", "--verbosity", "minimal", "--model", alt.model])
        == 0
    )
    out = capsys.readouterr()
    assert out.out.startswith("## b\n\nALT for B\n\n## c\n\nALT for C")
    assert len(alt.requests) == 3
    store = SQLiteStore(store_path)
    try:
        record = store.get_run(_stored_id(out.err))
    finally:
        store.close()
    assert record is not None
    assert record.settings["metadata"]["model"] == alt.model
    assert {r.model for r in record.results} == {alt.model}


async def test_model_swaps_drop_the_agents_own_backend() -> None:
    from swarmcore.cli._targets import on_model

    alt = FunctionModel(lambda r: "ALT")
    flow = on_model(Swarm(Agent("a", "x", backend="native")).flow, alt.model)
    assert [a.backend for a in flow.agents if isinstance(a, Agent)] == [None]
    assert (await Swarm(flow).run("tea")).output == "ALT"


def test_dry_run_prints_the_estimate(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["agent", "model", "calls", "prompt", "tokens", "prompt", "cost"]
    assert lines[-1].startswith("total")


def test_budget_flags_stop_the_run(flow_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{flow_file}:flow", "tea", "--quiet", "--max-tokens", "10"]) == 1
    err = capsys.readouterr().err
    assert "swarmcore: error: Budget exhausted" in err
    assert "resume with: swarmcore runs resume " in err


def test_a_failed_run_says_how_to_resume_it(
    flaky_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_flaky_run(flaky_file, capsys)
    assert _calls(flaky_file) == ["a", "b", "c"]


def test_a_run_whose_store_write_fails_is_not_reported_stored(
    flaky_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flaky_file.with_name("fail_c").unlink()
    SQLiteStore(store_path).close()
    with closing(sqlite3.connect(store_path)) as raw:  # b's row cannot be written: a full disk
        raw.execute(
            "CREATE TRIGGER full BEFORE INSERT ON agents WHEN NEW.agent_name = 'b' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        raw.commit()
    assert main(["run", f"{flaky_file}:flow", "what is tea", "--quiet"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert "stored in" not in out.err
    lost = f"agent 'b': Could not write to the run store {store_path}: database or disk is full"
    assert lost in out.err
    assert _calls(flaky_file) == ["a", "b", "c"]  # d, after the lost write, never ran
    match = re.search(r"^resume with: swarmcore runs resume ([0-9a-f]{32})$", out.err, re.MULTILINE)
    assert match, out.err
    with closing(sqlite3.connect(store_path)) as raw:  # the disk is freed
        raw.execute("DROP TRIGGER full")
        raw.commit()
    assert main(["runs", "resume", match.group(1), "--quiet"]) == 0
    assert _calls(flaky_file) == ["a", "b", "c", "b", "d"]  # only what was not recorded


def test_a_run_whose_start_cannot_be_stored_says_to_run_it_again(
    flaky_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flaky_file.with_name("fail_c").unlink()
    SQLiteStore(store_path).close()
    with closing(sqlite3.connect(store_path)) as raw:  # the run's own row cannot be written
        raw.execute(
            "CREATE TRIGGER full BEFORE INSERT ON runs "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        raw.commit()
    assert main(["run", f"{flaky_file}:flow", "what is tea", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "database or disk is full" in err
    assert "resume with" not in err  # there is no stored run to resume
    assert "the run was not recorded: run it again" in err
    assert _calls(flaky_file) == []


# --- demo ----------------------------------------------------------------------------


def test_demo_runs_offline(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "Is tea good for you?", "--verbosity", "minimal"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(
        "Offline answer (You write a short, balanced answer for a general reader.) to: "
        "Is tea good for you?"
    )
    assert out.err.startswith("Running offline on the built-in test model")
    assert "researcher >> (analyst | critic) >> writer" in out.err
    assert f"stored in {store_path}" in out.err


# --- runs ----------------------------------------------------------------------------


def test_runs_list_shows_the_stored_runs(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "minimal"]) == 0
    run_id = _stored_id(capsys.readouterr().err)
    assert main(["runs", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "status", "agents", "started", "duration", "flow", "task"]
    row = lines[2]
    assert row.startswith(run_id[:12] + "  succeeded")
    assert re.search(r" 3/3  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  +\d+\.\ds  a >> \(b \| c\)  ", row)
    assert row.endswith("what is tea")


def test_runs_list_and_show_do_not_import_litellm(
    flow_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "minimal"]) == 0
    run_id = _stored_id(capsys.readouterr().err)
    lines, imported, rc = _in_fresh_process(["runs", "list"])
    assert (imported, rc) == (False, 0)
    assert lines[2].startswith(run_id[:12])
    lines, imported, rc = _in_fresh_process(["runs", "show", run_id[:8]])
    assert (imported, rc) == (False, 0)
    assert lines[0] == f"run       {run_id}"


def test_runs_show_a_failed_run(flaky_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = _fail_flaky_run(flaky_file, capsys)
    assert main(["runs", "show", run_id[:10]]) == 0
    out = capsys.readouterr().out
    header = dict(line.split(None, 1) for line in out.split("\n\n")[0].splitlines())
    assert header["run"] == run_id
    assert header["flow"] == "a >> (b | c) >> d"
    assert header["status"] == "failed"
    assert header["task"] == "what is tea"
    assert "c is down" in header["error"]
    assert header["target"] == f"{flaky_file}:flow"
    rows = {
        line.split()[0]: line for line in out.splitlines() if line[:2] in {"a ", "b ", "c ", "d "}
    }
    assert list(rows) == ["a", "b", "c", "d"]  # flow order
    model = r"swarmcore-test/\S+"
    assert re.fullmatch(rf"a +{model} +done +\d+ +unpriced +\d+\.\ds +a says hi", rows["a"])
    assert rows["b"].split()[2] == "done"
    # the failed agent keeps its model and its time; the error has a column of its own
    failed = rf"c +{model} +failed \(ModelError\) +- +- +\d+\.\ds +Agent 'c': .*"
    assert re.fullmatch(failed, rows["c"])
    assert rows["d"].split() == ["d", "-", "pending", "-", "-", "-"]
    assert f"resume with: swarmcore runs resume {run_id}" in out


def test_the_resume_hints_name_the_store_the_run_was_made_with(
    flaky_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "my runs" / "team.db"  # not the default store; a space to quote
    assert main(["run", f"{flaky_file}:flow", "what is tea", "--store", str(elsewhere)]) == 1
    err = capsys.readouterr().err
    hint = re.search(r"^resume with: (.+)$", err, re.MULTILINE)
    assert hint, err
    argv = shlex.split(hint.group(1))
    run_id = argv[3]
    assert argv == ["swarmcore", "runs", "resume", run_id, "--store", str(elsewhere)]
    assert main(["runs", "show", run_id, "--store", str(elsewhere)]) == 0
    shown = capsys.readouterr().out
    assert f"resume with: {hint.group(1)}" in shown
    # the hint's command, as printed, resumes the run
    flaky_file.with_name("fail_c").unlink()
    assert main([*argv[1:], "--quiet"]) == 0
    assert capsys.readouterr().out == "d says hi\nmore text\n"


def test_a_run_not_in_the_default_store_says_to_name_its_store(
    flaky_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "team.db"
    assert main(["run", f"{flaky_file}:flow", "tea", "--quiet", "--store", str(elsewhere)]) == 1
    run_id = re.findall(r"runs resume ([0-9a-f]{32})", capsys.readouterr().err)[0]
    assert main(["run", f"{flaky_file}:flow", "tea", "--quiet"]) == 1  # the default store exists
    capsys.readouterr()
    assert main(["runs", "resume", run_id]) == 2
    err = capsys.readouterr().err
    assert f"no run {run_id!r} in " in err
    assert "--store PATH" in err


def test_runs_list_without_a_store_says_to_name_one(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "list"]) == 0
    assert capsys.readouterr().err == (
        f"no runs stored in {store_path} (no store there yet); runs stored elsewhere: "
        "name their store with --store PATH\n"
    )


def test_runs_resume_runs_only_the_unfinished_agents(
    flaky_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = _fail_flaky_run(flaky_file, capsys)
    flaky_file.with_name("fail_c").unlink()
    assert main(["runs", "resume", run_id[:12], "--verbosity", "minimal"]) == 0
    out = capsys.readouterr()
    assert out.out == "d says hi\nmore text\n"
    assert _stored_id(out.err) == run_id
    assert _calls(flaky_file) == ["a", "b", "c", "c", "d"]
    assert main(["runs", "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "status    succeeded" in shown
    table = shown.split("\n\n")[1]
    assert "pending" not in table
    assert "failed" not in table
    # the failure before the resume stays on record
    assert re.search(r"^earlier   failed, then resumed .*: .*c is down", shown, re.MULTILINE), shown


def test_runs_resume_applies_the_stored_model(
    flaky_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []

    def answer(request: RecordedRequest) -> str | Fail:
        name = request.system.split()[0]
        seen.append(name)
        if name == "c" and flaky_file.with_name("fail_c").exists():
            return Fail(400, "c is down", delay=0.3)
        return f"alt {name}"

    alt = FunctionModel(answer)
    run_id = _fail_flaky_run(flaky_file, capsys, "--model", alt.model)
    assert sorted(seen) == ["a", "b", "c"]
    flaky_file.with_name("fail_c").unlink()
    assert main(["runs", "resume", run_id, "--quiet"]) == 0
    assert capsys.readouterr().out == "alt d\n"
    assert sorted(seen[3:]) == ["c", "d"]
    assert _calls(flaky_file) == []  # the flow file's own model was never called


def test_runs_resume_refuses_a_succeeded_run_and_leaves_its_record(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "minimal"]) == 0
    run_id = _stored_id(capsys.readouterr().err)
    store = SQLiteStore(store_path)
    try:
        before = store.get_run(run_id)
        assert main(["runs", "resume", run_id[:12], "--quiet"]) == 2
        after = store.get_run(run_id)
    finally:
        store.close()
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        f"swarmcore: error: run {run_id[:12]} already succeeded; nothing to resume "
        f"(see `swarmcore runs show {run_id[:12]}`)\n"
    )
    assert after == before  # status, start and end (so its duration) untouched


def test_runs_show_totals_the_runs_wall_time_not_the_agents_sum(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{flow_file}:flow", "what is tea", "--verbosity", "minimal"]) == 0
    run_id = _stored_id(capsys.readouterr().err)
    store = SQLiteStore(store_path)
    try:  # b and c ran in parallel: say each took 100 s, as they might have
        record = store.get_run(run_id)
        assert record is not None
        for result in record.results:
            if result.agent_name in ("b", "c"):
                store.save_result(run_id, result.model_copy(update={"duration_seconds": 100.0}))
    finally:
        store.close()
    assert main(["runs", "show", run_id]) == 0
    out = capsys.readouterr().out
    header = dict(line.split(None, 1) for line in out.split("\n\n")[0].splitlines())
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert total.split()[-1] == header["duration"]  # the run's own start to end, not b + c + a


def _every_parser(
    parser: argparse.ArgumentParser, path: str = "swarmcore"
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            for name, sub in action.choices.items():  # pyright: ignore[reportUnknownVariableType]
                found += _every_parser(sub, f"{path} {name}")  # pyright: ignore[reportUnknownArgumentType]
    return found


def test_every_argument_of_every_command_has_help() -> None:
    missing = [
        f"{path} {'/'.join(action.option_strings) or action.dest}"
        for path, parser in _every_parser(build_parser())
        for action in parser._actions  # pyright: ignore[reportPrivateUsage]
        # a subcommand list is described by its subcommands' own help
        if not action.help and not isinstance(action, argparse._SubParsersAction)  # pyright: ignore[reportPrivateUsage]
    ]
    assert missing == []


def test_runs_prune_keep_0_deletes_finished_runs(
    flow_file: Path, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for task in ("one", "two"):
        assert main(["run", f"{flow_file}:flow", task, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["runs", "prune", "--keep", "0"]) == 0
    assert capsys.readouterr().out == f"deleted 2 runs from {store_path}\n"
    assert main(["runs", "list"]) == 0
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == f"no runs stored in {store_path}\n"


def _run_from_python(store_path: Path) -> str:
    """A failed run stored by Swarm(...).run() in Python: it has no CLI target."""
    model = FunctionModel(lambda r: Fail(400, "down"))
    store = SQLiteStore(store_path)
    try:
        swarm = Swarm(Agent("solo", "Solo works.", model=model.model), store=store)
        with pytest.raises(SwarmError) as failed:
            asyncio.run(swarm.run("tea"))
    finally:
        store.close()
    assert failed.value.partial is not None
    return failed.value.partial.run_id


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "show", "nope"], "no run 'nope' in "),
        (["runs", "resume", "nope"], "no run 'nope' in "),
        (["runs", "prune"], "runs prune needs --keep N or --older-than DAYS"),
        (["runs", "prune", "--keep", "-1"], "--keep must be 0 or more"),
        (["runs", "list", "--limit", "x"], "argument --limit: invalid int value: 'x'"),
        (["runs", "resume", "{python_run}"], "was not started by the swarmcore command"),
        (["run", "{flows}:flow", "  "], "needs a non-empty task"),
        (["bogus"], "invalid choice: 'bogus'"),
    ],
    ids=[
        "show-unknown",
        "resume-unknown",
        "prune-no-option",
        "prune-negative",
        "bad-int",
        "resume-python-run",
        "empty-task",
        "no-command",
    ],
)
def test_usage_errors_print_one_line_and_exit_2(
    flow_file: Path,
    store_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    python_run = _run_from_python(store_path)
    capsys.readouterr()  # what the run above logged
    args = [a.format(python_run=python_run, flows=flow_file) for a in argv]
    try:
        rc = main(args)
    except SystemExit as exit_:  # argparse's own errors
        rc = exit_.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("swarmcore: error: ")
    assert message in err
    assert err.count("\n") == 1


def test_runs_show_without_a_store_is_a_usage_error(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "show", "abc"]) == 2
    assert capsys.readouterr().err == (
        f"swarmcore: error: no run store at {store_path} "
        "(runs are stored there by `swarmcore run`); a run stored elsewhere: name its "
        "store with --store PATH\n"
    )
    assert not store_path.exists()  # reading never creates a store


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["run"],
        ["demo"],
        ["graph"],
        ["runs"],
        ["runs", "list"],
        ["runs", "show"],
        ["runs", "resume"],
        ["runs", "prune"],
    ],
    ids=lambda c: " ".join(c) or "swarmcore",
)
def test_help_works_for_every_command(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: swarmcore {' '.join(command)}".rstrip())


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nocolon", "expected FILE_OR_MODULE:NAME"),
        ("missing.py:flow", "no such file: missing.py"),
        ("no_such_module_xyz:flow", "cannot import module 'no_such_module_xyz'"),
        ("{file}:nothing", "has no attribute 'nothing'"),
        ("{file}:not_a_flow", "is a int, not a Flow, Agent or Swarm"),
    ],
    ids=["no-colon", "no-file", "no-module", "no-attr", "wrong-type"],
)
def test_user_errors_print_one_line_and_exit_non_zero(
    flow_file: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    assert main(["graph", target.format(file=flow_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("swarmcore: error: ")
    assert message in err
    assert err.count("\n") == 1


# --- prompt variables and approval ---------------------------------------------------

VARS_FILE = """
from swarmcore import Agent, Swarm, function_tool
from swarmcore.testing import offline_model

m = offline_model()
writer = Agent("writer", "Write for {audience}.", model=m)


def wipe(path: str) -> str:
    \"\"\"Delete a path.\"\"\"
    return "wiped " + path


careful = Agent("careful", "Tidy up.", model=m, tools=[function_tool(wipe, requires_approval=True)])
approved = Swarm(careful, approve=lambda request: True)
"""


@pytest.fixture
def vars_file(tmp_path: Path) -> Path:
    path = tmp_path / "vars_flow.py"
    path.write_text(VARS_FILE)
    return path


def test_run_fills_prompt_variables_from_var_flags(
    vars_file: Path, capsys: pytest.CaptureFixture[str], store_path: Path
) -> None:
    args = ["run", f"{vars_file}:writer", "say hi", "--var", "audience=new hires", "--quiet"]
    assert main(args) == 0
    assert "Offline answer (Write for new hires.) to: say hi" in capsys.readouterr().out
    store = SQLiteStore(store_path)
    (run,) = store.list_runs()
    record = store.get_run(run.run_id)
    store.close()
    assert record is not None
    assert record.settings["variables"] == {"audience": "new hires"}


def test_run_without_a_needed_variable_fails_before_any_call(
    vars_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{vars_file}:writer", "say hi", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "missing prompt variables: {audience} (used by 'writer'); pass --var audience=..." in err
    assert "variables={" not in err  # the Python spelling, not the command line's


def test_a_malformed_var_flag_is_a_usage_error(
    vars_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{vars_file}:writer", "x", "--var", "audience"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_run_uses_the_target_swarms_approval_callback(
    vars_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{vars_file}:approved", "tidy", "--no-store", "--quiet"]) == 0
    assert main(["run", f"{vars_file}:careful", "tidy", "--no-store", "--quiet"]) == 2
    assert "requires approval" in capsys.readouterr().err


# A target Swarm's settings: its approval callback, defaults and step retries, on run and resume.
SWARM_TARGET_FILE = """
from pathlib import Path

from swarmcore import Agent, AgentDefaults, Swarm, function_tool
from swarmcore.testing import Fail, FunctionModel, offline_model

HERE = Path(__file__).parent


def answer(request):
    if (HERE / "fail_once").exists():
        (HERE / "fail_once").unlink()
        return Fail(500, "the provider is down")  # transient: retried unless retry=0
    return "done"


def wipe(path: str) -> str:
    \"\"\"Delete a path.\"\"\"
    return "wiped " + path


model = FunctionModel(answer)  # test models are held weakly: keep this reference
wipe_tool = function_tool(wipe, requires_approval=True)
careful = Agent("careful", "Tidy up.", model=offline_model(), tools=[wipe_tool])
flaky = Agent("flaky", "Report.", model=model.model)
approved = Swarm(careful >> flaky, approve=lambda request: True)
no_retries = Swarm(flaky, defaults=AgentDefaults(retry=0))
step_retried = Swarm(flaky, defaults=AgentDefaults(retry=0), step_retries=1)
"""


@pytest.fixture
def swarm_file(tmp_path: Path) -> Path:
    path = tmp_path / "swarm_target.py"
    path.write_text(SWARM_TARGET_FILE)
    return path


def test_run_uses_the_target_swarms_defaults_and_step_retries(
    swarm_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swarm_file.with_name("fail_once").touch()
    assert main(["run", f"{swarm_file}:no_retries", "go", "--no-store", "--quiet"]) == 1
    assert "the provider is down" in capsys.readouterr().err
    swarm_file.with_name("fail_once").touch()
    assert main(["run", f"{swarm_file}:step_retried", "go", "--no-store", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == "done"


def test_resume_uses_the_target_swarms_approval_callback(
    swarm_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (swarm_file.parent / "fail_once").touch()
    swarm_file.write_text(SWARM_TARGET_FILE.replace("Fail(500", "Fail(400"))  # not retried
    assert main(["run", f"{swarm_file}:approved", "tidy"]) == 1
    err = capsys.readouterr().err
    run_id = re.search(r"resume with: swarmcore runs resume ([0-9a-f]+)", err)
    assert run_id is not None, err
    assert main(["runs", "resume", run_id.group(1), "--quiet"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == "done"


# --- control flow ------------------------------------------------------------------------

CONTROL_FILE = """
from swarmcore import Agent, loop, route
from swarmcore.testing import FunctionModel, offline_model

m = offline_model()
a, s, l, w, c, d = (Agent(n, f"{n} works.", model=m) for n in ["a", "s", "l", "w", "c", "d"])
verdicts = FunctionModel(lambda request: '{"done": true, "feedback": "good enough"}')
j = Agent("j", "Judge.", model=verdicts.model)
flow = a >> route({"quick": s, "deep": l}, by=lambda ctx: "quick") >> loop(
    w >> c, until=j, max_iterations=2
) >> d
"""


@pytest.fixture
def control_file(tmp_path: Path) -> Path:
    path = tmp_path / "control_flow.py"
    path.write_text(CONTROL_FILE)
    return path


def test_graph_tree_draws_routes_and_loops(
    control_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", f"{control_file}:flow", "--format", "tree"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "a",
        "route (route, by predicate)",
        "├─ quick: s",
        "└─ deep: l",
        "loop (loop, at most 2, judge j)",
        "└─ w",
        "   c",
        "d",
    ]


def test_runs_show_lists_decisions_and_iterations(
    control_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{control_file}:flow", "go", "--verbosity", "minimal"]) == 0
    run_id = _stored_id(capsys.readouterr().err)
    assert main(["runs", "show", run_id]) == 0
    out = capsys.readouterr().out
    rows = [
        cells[0]
        for cells in map(str.split, out.splitlines())
        if cells[2:3] == ["done"] and cells[0] != "total"
    ]
    assert rows == ["a", "s", "w#1", "c#1", "j#1", "d"]  # l never ran: not listed
    assert "route  route: -> quick (by predicate)" in out
    assert "loop   loop: 1 iterations (ended by j): good enough" in out
    assert "6 done" in out


# --- a missing extra -------------------------------------------------------------------

# Loaded at start-up through PYTHONPATH: the named top-level modules cannot be imported,
# as in an environment where the extra that brings them was never installed.
BLOCKER = """
import os
import sys

BLOCKED = set(os.environ["BLOCK_MODULES"].split(","))


class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Missing())
"""


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["worker", "{flows}:flow", "--database-url", "postgresql://127.0.0.1:9/x"], "worker"),
        (["runs", "list", "--database-url", "postgresql://127.0.0.1:9/x"], "runs list"),
        (["runs", "resume", "r1", "--database-url", "postgresql://127.0.0.1:9/x"], "runs resume"),
    ],
    ids=["worker", "runs-list", "runs-resume"],
)
@pytest.mark.parametrize("missing", ["dbos", "psycopg"])
def test_a_command_without_the_dbos_extra_names_it(
    flow_file: Path, tmp_path: Path, argv: list[str], command: str, missing: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": str(blocker), "BLOCK_MODULES": missing}
    done = subprocess.run(
        [sys.executable, "-m", "swarmcore.cli", *(a.format(flows=flow_file) for a in argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"swarmcore: error: swarmcore {command}{' --database-url' * (command != 'worker')} "
        f"needs the [dbos] extra ({missing} is missing): pip install 'swarmcore[dbos]'\n"
    )
