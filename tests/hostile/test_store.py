"""Hostile cases for the run store: writes that fail mid-run, paths and files that cannot be used.

Each table row is one case tried (what breaks, and where) and the outcome
expected, so a regression fails by name.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmcore import Flow, StoreError, Swarm, UserError, chain, route
from swarmcore.cli import main
from swarmcore.results import AgentFailure, AgentResult, Decision
from swarmcore.store import RunRecord, RunStatus, SQLiteStore
from swarmcore.testing import FunctionModel, RecordedRequest, Reply
from tests.helpers import agents

FULL = "database or disk is full"


class FullDisk(SQLiteStore):
    """A SQLite store whose writes start failing, like a full disk, at the write named ``at``.

    ``at`` is ``start``, ``result:<agent>``, ``decision``, ``failure`` or ``end``.
    With ``once``, only that write fails (a disk freed again at once).
    """

    def __init__(self, path: Path, at: str, *, once: bool = False) -> None:
        super().__init__(path)
        self.at = at
        self.once = once
        self.full = False

    def _fill(self, what: str) -> None:
        if what == self.at:
            self.at = ""  # the disk fills up once; clear ``full`` to free it
            self.full = True
            raise sqlite3.OperationalError(FULL)
        if self.full and not self.once:
            raise sqlite3.OperationalError(FULL)

    def start_run(self, record: RunRecord) -> None:
        self._fill("start")
        super().start_run(record)

    def save_result(self, run_id: str, result: AgentResult) -> None:
        self._fill(f"result:{result.agent_name}")
        super().save_result(run_id, result)

    def save_failure(self, run_id: str, failure: AgentFailure) -> None:
        self._fill("failure")
        super().save_failure(run_id, failure)

    def save_decision(self, run_id: str, decision: Decision) -> None:
        self._fill("decision")
        super().save_decision(run_id, decision)

    def finish_run(self, run_id: str, status: RunStatus, *, error: str | None = None) -> None:
        self._fill("end")
        super().finish_run(run_id, status, error=error)


def counting_model(delays: dict[str, float] | None = None) -> tuple[FunctionModel, Counter[str]]:
    """Answers '<who> output' (after an optional delay per agent) and counts calls per agent."""
    calls: Counter[str] = Counter()

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        calls[who] += 1
        return Reply(text=f"{who} output", delay=(delays or {}).get(who, 0.0))

    return FunctionModel(answer), calls


def five(model: str) -> Flow:
    return chain(*agents(model, *"abcde"))


def fan(model: str) -> Flow:
    a, b, c, d = agents(model, *"abcd")
    return a >> (b | c) >> d


def routed(model: str) -> Flow:
    a, b, c, d = agents(model, *"abcd")
    return a >> route({"left": b, "right": c}, by=lambda _: "left") >> d


def stored(path: Path) -> tuple[RunStatus | None, list[str]]:
    """The stored status and agents of the only run in ``path``, read afresh."""
    store = SQLiteStore(path)
    try:
        runs = store.list_runs()
        if not runs:
            return None, []
        record = store.get_run(runs[0].run_id)
        assert record is not None
        return record.status, sorted(r.agent_name for r in record.results)
    finally:
        store.close()


@dataclass(frozen=True)
class Failing:
    flow: Callable[[str], Flow]
    at: str
    called: str
    """The agents that ran (paid), in any order."""
    kept: str
    """The agents whose results are stored."""
    partial: str
    """The agents in ``error.partial`` (in memory)."""
    status: RunStatus | None
    delays: dict[str, float] | None = None


FAILING_WRITES = {
    "start-fails-no-agent-runs": Failing(five, "start", "", "", "", None),
    "c-result-fails-d-and-e-never-run": Failing(five, "result:c", "abc", "ab", "abc", "running"),
    "last-result-fails-still-raises": Failing(
        five, "result:e", "abcde", "abcd", "abcde", "running"
    ),
    "run-end-fails-never-succeeded": Failing(five, "end", "abcde", "abcde", "abcde", "running"),
    "parallel-member-fails-next-step-never-runs": Failing(
        fan, "result:b", "abc", "a", "abc", "running", delays={"c": 0.3}
    ),
    "route-decision-fails-branch-never-runs": Failing(routed, "decision", "a", "a", "a", "running"),
}


@pytest.mark.parametrize("case", FAILING_WRITES.values(), ids=FAILING_WRITES.keys())
async def test_a_failed_store_write_stops_the_run_with_a_store_error(
    tmp_path: Path, case: Failing
) -> None:
    model, calls = counting_model(case.delays)
    path = tmp_path / "runs.db"
    store = FullDisk(path, case.at)
    with pytest.raises(StoreError, match=FULL) as caught:
        await Swarm(case.flow(model.model), store=store).run("task")
    error = caught.value
    assert str(path) in str(error)
    assert error.path == str(path)
    assert "error.partial" in str(error)
    assert "\n" not in str(error)
    assert sorted(calls) == list(case.called)  # nothing paid for beyond the lost write
    assert error.partial is not None
    assert sorted(r.agent_name for r in error.partial.history) == list(case.partial)
    status, kept = stored(path)
    assert (status, kept) == (case.status, list(case.kept))  # never "succeeded"


async def test_once_the_store_is_fixed_resume_runs_only_what_was_not_recorded(
    tmp_path: Path,
) -> None:
    model, calls = counting_model()
    path = tmp_path / "runs.db"
    store = FullDisk(path, "result:c")
    swarm = Swarm(five(model.model), store=store)
    with pytest.raises(StoreError) as caught:
        await swarm.run("task")
    assert caught.value.partial is not None
    store.full = False  # space freed
    calls.clear()
    result = await swarm.resume(caught.value.partial.run_id)
    assert sorted(calls) == ["c", "d", "e"]
    assert result.output == "e output"
    assert stored(path) == ("succeeded", list("abcde"))


@dataclass(frozen=True)
class Warned:
    once: bool
    status: RunStatus
    warnings: tuple[str, ...]


WARNED_WRITES = {
    "one-write-lost-run-marked-incomplete": Warned(True, "incomplete", ("goes on without",)),
    "disk-stays-full-says-do-not-resume": Warned(
        False, "running", ("goes on without", "do not resume it")
    ),
}


@pytest.mark.parametrize("case", WARNED_WRITES.values(), ids=WARNED_WRITES.keys())
async def test_store_errors_warn_warns_and_never_reports_success(
    tmp_path: Path, case: Warned
) -> None:
    model, calls = counting_model()
    path = tmp_path / "runs.db"
    swarm = Swarm(
        five(model.model), store=FullDisk(path, "result:c", once=case.once), store_errors="warn"
    )
    with pytest.warns(RuntimeWarning) as warned:
        result = await swarm.run("task")
    assert result.output == "e output"
    assert sorted(calls) == list("abcde")
    messages = [str(w.message) for w in warned]
    assert len(messages) == len(case.warnings)
    for message, expected in zip(messages, case.warnings, strict=True):
        assert expected in message
    assert str(path) in messages[0]
    assert FULL in messages[0]
    status, _ = stored(path)
    assert status == case.status
    if status == "incomplete":
        with pytest.raises(UserError, match="cannot be resumed: its record is incomplete"):
            await Swarm(five(model.model), store=path).resume(result.run_id)


def test_store_errors_takes_only_raise_or_warn(tmp_path: Path) -> None:
    model, _ = counting_model()
    with pytest.raises(UserError, match="store_errors must be 'raise' or 'warn', got 'ignore'"):
        Swarm(five(model.model), store=tmp_path / "runs.db", store_errors="ignore")  # pyright: ignore[reportArgumentType]


# --- store files that cannot be used ---------------------------------------------------------

FLOW_FILE = """
from swarmcore import Agent
from swarmcore.testing import offline_model

flow = Agent("solo", "Solo works.", model=offline_model())
"""


def _store_with_a_run(path: Path) -> Path:
    """A good store holding run 'r1' with agent a's result and a decision."""
    store = SQLiteStore(path)
    store.start_run(
        RunRecord(
            run_id="r1",
            flow="a",
            task="t",
            status="running",
            started_at=time.time(),
            agents_total=1,
            shape='["a"]',
        )
    )
    store.save_result(
        "r1",
        AgentResult(agent_name="a", output="x" * 3000, summary="x", model="m", duration_seconds=0),
    )
    store.finish_run("r1", "succeeded")
    store.close()
    return path


def _sql(statement: str) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        path = _store_with_a_run(tmp / "runs.db")
        with closing(sqlite3.connect(path)) as raw:
            raw.execute(statement)
            raw.commit()
        return path

    return build


def _folder(tmp: Path) -> Path:
    (tmp / "runs.db").mkdir()
    return tmp / "runs.db"


def _under_a_file(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("notes")
    return tmp / "notes.txt" / "runs.db"


def _read_only(tmp: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp / "locked"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "runs.db"
    if sys.platform != "linux":  # pragma: no cover
        pytest.skip("root may write anywhere; only Linux's /proc refuses even root")
    return Path("/proc/runs.db")  # /proc takes no new files, even from root


def _empty(tmp: Path) -> Path:
    (tmp / "runs.db").touch()
    return tmp / "runs.db"


def _text(tmp: Path) -> Path:
    (tmp / "runs.db").write_text("these are my notes\n" * 300)
    return tmp / "runs.db"


def _bit_flipped(tmp: Path) -> Path:
    path = _store_with_a_run(tmp / "runs.db")
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 2 * page  # a header page and the tables' pages
    data[page:] = bytes(b ^ 0x5A for b in data[page:])  # every page after the header
    path.write_bytes(bytes(data))
    return path


@dataclass(frozen=True)
class Unusable:
    build: Callable[[Path], Path]
    command: str
    """``run`` (a store to create or open for writing) or ``show`` (one to read)."""
    message: str


UNUSABLE = {
    "a-folder": Unusable(_folder, "show", "is a folder; give a file path"),
    "a-path-under-a-file": Unusable(_under_a_file, "run", "is a file, not a folder"),
    "a-read-only-location": Unusable(_read_only, "run", "pick another path for the store"),
    "an-empty-file": Unusable(_empty, "show", r"empty file \(0 bytes\).*delete it"),
    "a-text-file": Unusable(_text, "show", "not a swarmcore run store"),
    "meta-version-not-a-number": Unusable(
        _sql("UPDATE meta SET value = 'three' WHERE key = 'schema_version'"),
        "show",
        "damaged: its schema version is 'three', not a whole number",
    ),
    "meta-version-negative": Unusable(
        _sql("UPDATE meta SET value = '-2' WHERE key = 'schema_version'"),
        "show",
        "damaged: its schema version is '-2'",
    ),
    "a-missing-table": Unusable(
        _sql("DROP TABLE decisions"), "show", "damaged: its table 'decisions' is missing"
    ),
    "bit-flipped-pages": Unusable(_bit_flipped, "show", "restore it from a backup"),
    "a-malformed-agent-row": Unusable(
        _sql("UPDATE agents SET body = '{\"agent_name\": 7'"),
        "show",
        r"Run r1 in the run store .* is damaged .*cannot be shown or resumed",
    ),
    "a-malformed-settings-value": Unusable(
        _sql("UPDATE runs SET settings = 'not json'"), "show", "its settings are not JSON"
    ),
    "a-malformed-status": Unusable(
        _sql("UPDATE runs SET status = 'exploded'"), "show", "Run r1 .* is damaged"
    ),
}


@pytest.mark.parametrize("case", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_an_unusable_store_is_one_clear_store_error_from_the_api(
    tmp_path: Path, case: Unusable
) -> None:
    path = case.build(tmp_path)
    before = path.read_bytes() if path.is_file() else None

    def use() -> None:
        """Open, list and show: the first that fails is the error."""
        store = SQLiteStore(path)
        try:
            store.list_runs()
            store.get_run("r1")
        finally:
            store.close()

    with pytest.raises(StoreError, match=case.message) as caught:
        use()
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)
    if before == b"":
        assert path.read_bytes() == b""  # an empty file is never adopted as a new store


@pytest.mark.parametrize("case", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_an_unusable_store_is_one_line_and_exit_2_from_the_cli(
    tmp_path: Path, case: Unusable, capsys: pytest.CaptureFixture[str]
) -> None:
    path = case.build(tmp_path)
    flows = tmp_path / "flows.py"
    flows.write_text(FLOW_FILE)
    if case.command == "run":
        argv = ["run", f"{flows}:flow", "tea", "--quiet", "--store", str(path)]
    else:
        argv = ["runs", "show", "r1", "--store", str(path)]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.err.startswith("swarmcore: error: ")
    assert out.err.count("\n") == 1  # one line, no traceback
    assert str(path) in out.err
    assert re.search(case.message, out.err), out.err
    assert "stored in" not in out.err


def test_runs_list_skips_malformed_rows_and_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _store_with_a_run(tmp_path / "runs.db")
    with closing(sqlite3.connect(path)) as raw:
        good = raw.execute("SELECT * FROM runs").fetchone()
        for run_id, status, started in (("bad1", "exploded", 1.0), ("bad2", "running", "noon")):
            raw.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, *good[1:4], status, started, *good[6:]),
            )
        raw.commit()
    store = SQLiteStore(path)
    listing = store.read_runs()
    assert [r.run_id for r in listing.runs] == ["r1"]
    assert sorted(listing.unreadable) == ["bad1", "bad2"]
    store.close()
    assert main(["runs", "list", "--store", str(path)]) == 0
    out = capsys.readouterr()
    assert "r1" in out.out
    assert f"skipped 2 unreadable run(s) in {path}: " in out.err
    assert "bad1" in out.err
    assert "bad2" in out.err


# --- CLI counts SQLite cannot take ---------------------------------------------------------

HUGE = "99999999999999999999"

CLI_COUNTS = {
    "list-limit-huge": (["runs", "list", "--limit", HUGE], "--limit must be 1 or more"),
    "list-limit-zero": (["runs", "list", "--limit", "0"], "--limit must be 1 or more"),
    "prune-keep-huge": (["runs", "prune", "--keep", HUGE], "--keep must be 0 or more"),
    "prune-keep-negative": (["runs", "prune", "--keep", "-1"], "--keep must be 0 or more"),
    "prune-older-than-nan": (["runs", "prune", "--older-than", "nan"], "--older-than must be"),
    "prune-older-than-inf": (["runs", "prune", "--older-than", "inf"], "--older-than must be"),
}


@pytest.mark.parametrize(("argv", "message"), CLI_COUNTS.values(), ids=CLI_COUNTS.keys())
def test_counts_sqlite_cannot_take_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    path = _store_with_a_run(tmp_path / "runs.db")
    assert main([*argv, "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"swarmcore: error: {message}")
    assert err.count("\n") == 1
    assert stored(path)[0] == "succeeded"  # nothing pruned
