from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from swarmcore import (
    Agent,
    AgentError,
    Flow,
    ModelError,
    StoreError,
    Swarm,
    UserError,
    chain,
    parallel,
)
from swarmcore._flow import shape_of
from swarmcore.results import AgentResult, sum_usage
from swarmcore.store import SCHEMA_VERSION, RunRecord, SQLiteStore
from swarmcore.store._sqlite import _MIGRATIONS  # pyright: ignore[reportPrivateUsage]
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, ReplayModel, Reply
from tests.helpers import agents, echo_model


def counting_model(
    fail: dict[str, int] | None = None, fail_delay: float = 0.0
) -> tuple[FunctionModel, Counter[str]]:
    """Answers '<who> output' and counts calls per agent.

    The first ``fail[who]`` calls of agent ``who`` fail with a 400 (not retried).
    Keep the returned model referenced: test models are registered weakly.
    """
    calls: Counter[str] = Counter()

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        calls[who] += 1
        if calls[who] <= (fail or {}).get(who, 0):
            return Fail(400, f"bad request for {who}", delay=fail_delay)
        return Reply(text=f"{who} output\n<summary>{who} summary</summary>")

    return FunctionModel(answer), calls


def stored_names(path: Path, run_id: str) -> list[str]:
    """The agents whose results are stored, read over a connection of its own."""
    store = SQLiteStore(path)
    try:
        record = store.get_run(run_id)
        return [] if record is None else [r.agent_name for r in record.results]
    finally:
        store.close()


def bare_record(run_id: str, *, started_at: float | None = None) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        flow="a",
        task="t",
        status="running",
        started_at=time.time() if started_at is None else started_at,
        agents_total=1,
        shape='["a"]',
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


# --- recording ---------------------------------------------------------------------------


async def test_a_run_is_recorded_with_its_status_flow_task_and_settings(db: Path) -> None:
    model = echo_model()
    a, b, c = agents(model.model, "a", "b", "c")
    store = SQLiteStore(db)
    swarm = Swarm(a >> (b | c), store=store, context_mode="push", max_tokens=100_000)
    assert swarm.store is store
    before = time.time()
    result = await swarm.run("the task", metadata={"who": "tests"})
    assert len(result.run_id) == 32
    record = store.get_run(result.run_id)
    assert record is not None
    assert record.run_id == result.run_id
    assert record.status == "succeeded"
    assert record.error is None
    assert record.flow == "a >> (b | c)"
    assert record.shape == shape_of(swarm.flow)
    assert record.task == "the task"
    assert record.settings == {
        "context_mode": "push",
        "max_cost": None,
        "max_tokens": 100_000,
        "metadata": {"who": "tests"},
        "variables": {},
    }
    assert before <= record.started_at <= (record.ended_at or 0) <= time.time()
    assert (record.agents_done, record.agents_total) == (3, 3)
    assert sorted(r.agent_name for r in record.results) == ["a", "b", "c"]
    assert {r.agent_name: r for r in record.results} == {r.agent_name: r for r in result.history}
    assert record.failures == []
    [summary] = store.list_runs()
    assert summary.run_id == result.run_id
    assert (summary.status, summary.agents_done, summary.agents_total) == ("succeeded", 3, 3)


async def test_store_given_as_a_path_and_bad_store_values(db: Path) -> None:
    model = echo_model()
    [a] = agents(model.model, "a")
    swarm = Swarm(a, store=str(db))
    assert isinstance(swarm.store, SQLiteStore)
    result = await swarm.run("go")
    assert stored_names(db, result.run_id) == ["a"]
    with pytest.raises(UserError, match="store must be a path"):
        Swarm(a, store=42)  # type: ignore[arg-type]


async def test_each_result_is_committed_before_the_next_step_starts(db: Path) -> None:
    seen: dict[str, list[str]] = {}

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        other = SQLiteStore(db)  # a second connection: sees only committed data
        try:
            [run] = other.list_runs()
            record = other.get_run(run.run_id)
            assert record is not None
            seen[who] = sorted(r.agent_name for r in record.results)
        finally:
            other.close()
        return Reply(text=f"{who} output", delay=0.05 if who == "b" else 0)

    model = FunctionModel(answer)
    a, b, c, d = agents(model.model, "a", "b", "c", "d")
    await Swarm(a >> (b | c) >> d, store=db).run("go")
    assert seen["a"] == []
    assert seen["b"] == ["a"]
    assert seen["c"] == ["a"]
    assert seen["d"] == ["a", "b", "c"]  # both members, the slower one included


async def test_a_failed_run_is_recorded_with_its_error(db: Path) -> None:
    model, _ = counting_model(fail={"b": 1})
    a, b, c = agents(model.model, "a", "b", "c")
    store = SQLiteStore(db)
    with pytest.raises(ModelError, match="Agent 'b'") as info:
        await Swarm(a >> b >> c, store=store).run("go")
    partial = info.value.partial
    assert partial is not None
    record = store.get_run(partial.run_id)
    assert record is not None
    assert record.run_id == partial.run_id
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.startswith("ModelError: ")
    assert "bad request for b" in record.error
    assert record.ended_at is not None
    assert [r.agent_name for r in record.results] == ["a"]
    assert [f.agent_name for f in record.failures] == ["b"]
    assert "bad request for b" in record.failures[0].message
    assert (record.agents_done, record.agents_total) == (1, 3)


async def test_a_cancelled_run_is_recorded_as_cancelled_and_resumes(db: Path) -> None:
    b_started = asyncio.Event()
    calls: Counter[str] = Counter()
    block = True

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        calls[who] += 1
        if who == "b" and block:
            b_started.set()
            return Reply(text="never", delay=3600)
        return Reply(text=f"{who} output")

    model = FunctionModel(answer)
    a, b, c = agents(model.model, "a", "b", "c")
    store = SQLiteStore(db)
    swarm = Swarm(a >> b >> c, store=store)
    task = asyncio.create_task(swarm.run("go"))
    await asyncio.wait_for(b_started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [summary] = store.list_runs()
    assert (summary.status, summary.error) == ("cancelled", "cancelled")
    assert summary.agents_done == 1  # a was kept
    block = False
    result = await swarm.resume(summary.run_id)
    assert result.run_id == summary.run_id
    assert calls == {"a": 1, "b": 2, "c": 1}
    record = store.get_run(summary.run_id)
    assert record is not None
    assert record.status == "succeeded"


# --- resume ------------------------------------------------------------------------------


async def test_resume_reruns_only_the_failed_and_unfinished_agents(db: Path) -> None:
    model, calls = counting_model(fail={"b": 1})
    a, b, c = agents(model.model, "a", "b", "c")
    swarm = Swarm(a >> b >> c, store=db)
    with pytest.raises(AgentError) as info:
        await swarm.run("go")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    assert calls == {"a": 1, "b": 1}

    result = await swarm.resume(run_id)
    assert calls == {"a": 1, "b": 2, "c": 1}
    assert result.run_id == run_id
    assert result.output == "c output"
    assert result.context == {"a": "a output", "b": "b output", "c": "c output"}
    assert [r.agent_name for r in result.history] == ["a", "b", "c"]
    assert result.failures == []
    assert swarm.store is not None
    record = swarm.store.get_run(run_id)
    assert record is not None
    assert (record.status, record.error) == ("succeeded", None)
    assert sorted(r.agent_name for r in record.results) == ["a", "b", "c"]
    assert record.failures == []  # b's stored failure was replaced by its result
    assert len(swarm.store.list_runs()) == 1  # the same run, not a new one


async def test_resume_checks_approvals_before_any_call(db: Path) -> None:
    # A Swarm's agents do not check approvals per run: the run (new or resumed) does, once.
    from swarmcore import function_tool

    def wipe() -> str:
        return "wiped"

    model, calls = counting_model(fail={"b": 1})
    a = Agent("a", "a works.", model=model.model)
    b = Agent("b", "b works.", model=model.model)
    with pytest.raises(ModelError):
        await Swarm(a >> b, store=db).run("go")
    [summary] = SQLiteStore(db).list_runs()
    careful = Agent(
        "b", "b works.", model=model.model, tools=[function_tool(wipe, requires_approval=True)]
    )
    with pytest.raises(UserError, match="requires approval"):
        await Swarm(a >> careful, store=db).resume(summary.run_id)
    assert calls == {"a": 1, "b": 1}  # refused before b ran again


async def test_resume_in_a_parallel_group_runs_only_unfinished_branches(db: Path) -> None:
    # c fails after a short delay, so its sibling d has finished and is stored by then.
    model, calls = counting_model(fail={"c": 1}, fail_delay=0.2)
    a, b, c, d, e = agents(model.model, "a", "b", "c", "d", "e")
    swarm = Swarm(a >> ((b >> c) | d) >> e, store=db)
    with pytest.raises(ModelError, match="Agent 'c'") as info:
        await swarm.run("go")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    assert sorted(stored_names(db, run_id)) == ["a", "b", "d"]
    assert calls == {"a": 1, "b": 1, "c": 1, "d": 1}

    result = await swarm.resume(run_id)
    assert calls == {"a": 1, "b": 1, "c": 2, "d": 1, "e": 1}
    assert result.run_id == run_id
    assert list(result.context) == ["a", "b", "c", "d", "e"]
    assert result.output == "e output"
    assert sorted(stored_names(db, run_id)) == ["a", "b", "c", "d", "e"]


async def test_resume_of_a_succeeded_run_is_refused_and_leaves_its_record(db: Path) -> None:
    model, calls = counting_model()
    a, b, c = agents(model.model, "a", "b", "c")
    swarm = Swarm(a >> (b | c), store=db)
    first = await swarm.run("go")
    assert swarm.store is not None
    before = swarm.store.get_run(first.run_id)
    with pytest.raises(UserError, match=r"already succeeded; nothing to resume"):
        await swarm.resume(first.run_id)
    assert calls == {"a": 1, "b": 1, "c": 1}
    assert swarm.store.get_run(first.run_id) == before  # status, start and end untouched


async def test_resume_accepts_the_same_shape_with_other_models(db: Path) -> None:
    model, calls = counting_model(fail={"b": 1})
    a, b = agents(model.model, "a", "b")
    with pytest.raises(AgentError) as info:
        await Swarm(a >> b, store=db).run("go")
    assert info.value.partial is not None
    other, other_calls = counting_model()
    a2 = Agent("a", "a has new instructions.", model=other.model)
    b2 = Agent("b", "b has new instructions.", model=other.model)
    result = await Swarm(a2 >> b2, store=db).resume(info.value.partial.run_id)
    assert other_calls == {"b": 1}
    assert calls == {"a": 1, "b": 1}
    assert result.context == {"a": "a output", "b": "b output"}


@pytest.mark.parametrize(
    ("names", "build"),
    [
        pytest.param("acx", lambda a, b, c: a >> b >> c, id="different-names"),
        pytest.param("abcx", lambda a, b, c, d: a >> (b | c) >> d, id="extra-agent"),
        pytest.param("ab", lambda a, b: a >> b, id="missing-agent"),
        pytest.param("abc", lambda a, b, c: a >> b >> c, id="chain-instead-of-group"),
        pytest.param(
            "abc",
            lambda a, b, c: a >> parallel(b, c, policy="best_effort"),
            id="other-group-policy",
        ),
        pytest.param("abc", lambda a, b, c: a >> parallel(b, c, retries=2), id="group-retries"),
    ],
)
async def test_resume_refuses_a_flow_of_another_shape(
    db: Path, names: str, build: Callable[..., Flow]
) -> None:
    model, calls = counting_model(fail={"b": 1})
    a, b, c = agents(model.model, "a", "b", "c")
    with pytest.raises(AgentError) as info:
        await Swarm(a >> (b | c), store=db).run("go")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    before = dict(calls)
    flow = build(*agents(model.model, *names))
    with pytest.raises(UserError, match=r"has another shape.*resume it with the same flow"):
        await Swarm(flow, store=db).resume(run_id)
    assert calls == before  # refused before any model call
    record = SQLiteStore(db).get_run(run_id)
    assert record is not None
    assert record.status == "failed"  # left as it was


async def test_resume_needs_a_store_and_a_known_run(db: Path) -> None:
    model = echo_model()
    a, b = agents(model.model, "a", "b")
    with pytest.raises(UserError, match="resume\\(\\) needs a run store"):
        await Swarm(a >> b).resume("abc")
    SQLiteStore(db).start_run(bare_record("0123abc"))
    swarm = Swarm(a >> b, store=db)
    with pytest.raises(UserError, match="No run 'ffff'"):
        await swarm.resume("ffff")
    assert not model.requests


async def test_id_prefixes_find_runs_and_ambiguous_prefixes_raise(db: Path) -> None:
    model, calls = counting_model(fail={"b": 1})
    a, b = agents(model.model, "a", "b")
    store = SQLiteStore(db)
    swarm = Swarm(a >> b, store=store)
    with pytest.raises(AgentError) as info:
        await swarm.run("go")
    assert info.value.partial is not None
    run_id = info.value.partial.run_id
    found = store.get_run(run_id[:6])
    assert found is not None
    assert found.run_id == run_id
    result = await swarm.resume(run_id[:8])
    assert result.run_id == run_id
    assert calls == {"a": 1, "b": 2}

    for run_id in ("feed-aa1", "feed-aa2", "feed-b", "x_y%z"):
        store.start_run(bare_record(run_id))
    for prefix in ("feed-aa", "feed-a", "feed-"):
        with pytest.raises(UserError, match=f"{prefix!r} matches several runs"):
            store.get_run(prefix)
        with pytest.raises(UserError, match="matches several runs"):
            await swarm.resume(prefix)
    for exact in ("feed-aa1", "feed-b", "feed-aa2"):
        record = store.get_run(exact)
        assert record is not None
        assert record.run_id == exact
    assert store.get_run("feed-c") is None
    assert store.get_run("") is None  # an empty id names no run
    with pytest.raises(UserError, match="No run ''"):
        await swarm.resume("")
    # A whole id names its run even when it begins another run's id.
    store.start_run(bare_record("feed-aa10"))
    exact = store.get_run("feed-aa1")
    assert exact is not None
    assert exact.run_id == "feed-aa1"
    with pytest.raises(UserError, match="matches several runs"):
        store.get_run("feed-aa")
    # LIKE wildcards in the prefix are taken literally.
    assert store.get_run("feed_") is None
    assert store.get_run("%") is None
    assert store.get_run("x_y") is not None
    assert store.get_run("xzy") is None


# --- schema ------------------------------------------------------------------------------


def test_a_fresh_file_has_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "runs.db"  # the directory is created too
    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION == len(_MIGRATIONS)
    assert repr(store) == f"SQLiteStore({str(path)!r})"
    store.close()
    again = SQLiteStore(path)  # opening again migrates nothing and keeps the version
    assert again.schema_version == SCHEMA_VERSION
    with closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    again.close()


def test_a_version_1_file_migrates_forward_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_result = AgentResult(
        agent_name="a", output="old a output", summary="old a", model="m", duration_seconds=0.5
    )
    with closing(sqlite3.connect(path)) as raw:
        for statement in _MIGRATIONS[0]:
            raw.execute(statement)
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        raw.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        raw.execute(
            "INSERT INTO runs VALUES ('old-run', 'a >> b', ?, 'old task', 'failed', ?, ?, "
            "'ModelError: boom', '{\"context_mode\": \"pull\"}', 2)",
            (shape_of(chain(Agent("a", "x"), Agent("b", "x"))), time.time() - 10, time.time()),
        )
        raw.execute(
            "INSERT INTO agents VALUES ('old-run', 'a', 'done', ?, ?)",
            (old_result.model_dump_json(), time.time() - 5),
        )
        raw.commit()

    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION
    with closing(sqlite3.connect(path)) as raw:
        indexes = {
            row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
    assert {"runs_status_order", "runs_order"} <= indexes
    assert not {"runs_status", "runs_started"} & indexes  # replaced by the two above
    record = store.get_run("old-run")
    assert record is not None
    assert (record.status, record.task, record.error) == ("failed", "old task", "ModelError: boom")
    assert record.results == [old_result]
    store.close()


async def test_a_run_from_a_migrated_file_can_be_resumed(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old_result = AgentResult(
        agent_name="a", output="old a output", summary="old a", model="m", duration_seconds=0.5
    )
    model, calls = counting_model()
    a, b = agents(model.model, "a", "b")
    with closing(sqlite3.connect(path)) as raw:
        for statement in _MIGRATIONS[0]:
            raw.execute(statement)
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        raw.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        raw.execute(
            "INSERT INTO runs VALUES ('old-run', 'a >> b', ?, 'old task', 'running', ?, NULL, "
            "NULL, '{}', 2)",
            (shape_of(a >> b), time.time() - 10),
        )
        raw.execute(
            "INSERT INTO agents VALUES ('old-run', 'a', 'done', ?, ?)",
            (old_result.model_dump_json(), time.time() - 5),
        )
        raw.commit()
    result = await Swarm(a >> b, store=path).resume("old")
    assert calls == {"b": 1}
    assert result.run_id == "old-run"
    assert result.context == {"a": "old a output", "b": "b output"}


def without_new_usage_fields(body: str) -> str:
    """A stored AgentResult as written before TokenUsage had cached and reasoning tokens."""
    result = json.loads(body)
    for usage in [result["token_usage"], *(c["token_usage"] for c in result["llm_calls"])]:
        del usage["cached_tokens"], usage["reasoning_tokens"]
    return json.dumps(result)


async def test_a_result_stored_before_cached_and_reasoning_tokens_loads_and_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    model = echo_model()
    (a,) = agents(model.model, "a")
    first = await Swarm(a, store=path).run("go")
    with closing(sqlite3.connect(path)) as raw:
        (body,) = raw.execute(
            "SELECT body FROM agents WHERE run_id = ?", (first.run_id,)
        ).fetchone()
        old_body = without_new_usage_fields(body)
        assert "cached_tokens" in body
        assert "cached_tokens" not in old_body
        raw.execute("UPDATE agents SET body = ? WHERE run_id = ?", (old_body, first.run_id))
        raw.commit()
    store = SQLiteStore(path)
    record = store.get_run(first.run_id)
    store.close()
    assert record is not None
    (old,) = record.results
    usage = first.token_usage
    assert (usage.cached_tokens, usage.reasoning_tokens) == (0, 0)
    assert old.token_usage == old.llm_calls[0].token_usage == usage
    assert sum_usage([old.token_usage, old.token_usage]) == usage + usage
    replay = ReplayModel.from_store(path, first.run_id)
    replayed = await Swarm(replay.flow(chain(a))).run("go")
    assert replayed.output == first.output
    assert replayed.token_usage == usage


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SQLiteStore(path).close()
    with closing(sqlite3.connect(path)) as raw:
        raw.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
        raw.commit()
    with pytest.raises(StoreError, match=r"newer swarmcore.*upgrade swarmcore"):
        SQLiteStore(path)
    with closing(sqlite3.connect(path)) as raw:  # left untouched
        version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION + 1),)


def test_a_refused_file_leaves_no_connection_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "future.db"
    SQLiteStore(path).close()
    with closing(sqlite3.connect(path)) as raw:
        raw.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        raw.commit()
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def tracking(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(sqlite3, "connect", tracking)
    with pytest.raises(StoreError, match="newer swarmcore"):
        SQLiteStore(path)
    [connection] = opened
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        connection.execute("SELECT 1")


@pytest.mark.parametrize(
    "content",
    [b"this is not a database\n" * 200, bytes(range(256)) * 64],
    ids=["text", "binary"],
)
def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="is not a swarmcore run store"):
        SQLiteStore(path)
    assert path.read_bytes() == content


# --- failed writes -----------------------------------------------------------------------


class _Faulty:
    """A connection whose next COMMIT, or next agent write, fails like a full disk."""

    def __init__(self, db: sqlite3.Connection, fail: str) -> None:
        self.db = db
        self.fail = fail

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.fail and sql.lstrip().startswith(self.fail):
            if self.fail == "INSERT":  # SQLite rolled the transaction back by itself
                self.db.execute("ROLLBACK")
            self.fail = ""
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def close(self) -> None:
        self.db.close()


@pytest.mark.parametrize("fail", ["COMMIT", "INSERT"])
def test_a_failed_write_leaves_the_store_usable(
    db: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    store = SQLiteStore(db)
    store.start_run(bare_record("r1"))
    result = AgentResult(agent_name="a", output="x", summary="x", model="m", duration_seconds=0)
    monkeypatch.setattr(store, "_db", _Faulty(store._db, fail))  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(StoreError, match=f"{db}: database or disk is full; free disk space"):
        store.save_result("r1", result)
    assert not store._db.in_transaction  # pyright: ignore[reportPrivateUsage]
    other = SQLiteStore(db)  # no write lock was left behind
    other.finish_run("r1", "failed", error="elsewhere")
    store.save_result("r1", result)
    record = other.get_run("r1")
    assert record is not None
    assert (record.status, record.agents_done) == ("failed", 1)
    other.close()
    store.close()


# --- retention -----------------------------------------------------------------------------


async def test_keep_last_keeps_only_the_newest_finished_runs(db: Path) -> None:
    model, _ = counting_model()
    [a] = agents(model.model, "a")
    store = SQLiteStore(db, keep_last=2)
    swarm = Swarm(a, store=store)
    ids = [(await swarm.run(f"task {i}")).run_id for i in range(4)]
    assert [r.run_id for r in store.list_runs()] == ids[:1:-1]  # the last two, newest first
    assert store.get_run(ids[0]) is None
    with closing(sqlite3.connect(db)) as raw:  # their agents went with them
        (orphans,) = raw.execute(
            "SELECT COUNT(*) FROM agents WHERE run_id NOT IN (SELECT run_id FROM runs)"
        ).fetchone()
        (rows,) = raw.execute("SELECT COUNT(*) FROM agents").fetchone()
    assert (orphans, rows) == (0, 2)


def test_prune_deletes_old_finished_runs_and_never_running_ones(db: Path) -> None:
    store = SQLiteStore(db)
    hour_ago = time.time() - 3600
    for run_id in ("old-done", "old-failed", "old-running", "new-done"):
        started = hour_ago if run_id.startswith("old") else None
        store.start_run(bare_record(run_id, started_at=started))
        store.save_result(
            run_id,
            AgentResult(agent_name="a", output="x", summary="x", model="m", duration_seconds=0),
        )
    store.finish_run("old-done", "succeeded")
    store.finish_run("old-failed", "failed", error="boom")
    store.finish_run("new-done", "succeeded")

    assert store.prune(older_than=60) == 2
    assert sorted(r.run_id for r in store.list_runs()) == ["new-done", "old-running"]
    assert store.prune(older_than=60) == 0
    assert store.prune(keep_last=0) == 1  # new-done; the running one stays
    [left] = store.list_runs()
    assert (left.run_id, left.status) == ("old-running", "running")
    assert store.prune(older_than=0, keep_last=0) == 0
    with closing(sqlite3.connect(db)) as raw:
        (rows,) = raw.execute("SELECT COUNT(*) FROM agents").fetchone()
    assert rows == 1


def test_keep_days_prunes_when_a_run_starts(db: Path) -> None:
    SQLiteStore(db).start_run(bare_record("ancient", started_at=time.time() - 3 * 86_400))
    SQLiteStore(db).finish_run("ancient", "succeeded")
    SQLiteStore(db).start_run(bare_record("ancient-running", started_at=time.time() - 3 * 86_400))
    store = SQLiteStore(db, keep_days=1)
    store.start_run(bare_record("today"))
    assert sorted(r.run_id for r in store.list_runs()) == ["ancient-running", "today"]


# --- size ----------------------------------------------------------------------------------


async def test_each_agent_result_is_stored_once(db: Path) -> None:
    size = 4000
    count = 20

    def payload(who: str) -> str:
        return f"<<{who}>>" + who[-1] * size

    def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        return Reply(text=f"{payload(who)}\n<summary>{who} summary</summary>")

    model = FunctionModel(answer)
    names = [f"agent{i:02d}" for i in range(count)]
    result = await Swarm(chain(*agents(model.model, *names)), store=db).run("go")
    with closing(sqlite3.connect(db)) as raw:
        rows = raw.execute(
            "SELECT agent_name, body FROM agents WHERE run_id = ? ORDER BY finished_at",
            (result.run_id,),
        ).fetchall()
        (runs_bytes,) = raw.execute(
            "SELECT SUM(LENGTH(settings) + LENGTH(shape) + LENGTH(task)) FROM runs"
        ).fetchone()
    assert [name for name, _ in rows] == names  # one row per agent
    for name, body in rows:
        assert f"<<{name}>>" in body
        others = [n for n in names if n != name and f"<<{n}>>" in body]
        assert others == []  # no row repeats an earlier agent's output
    total = sum(len(body) for _, body in rows)
    # Each row holds its own output (twice: as output and in its messages) plus a
    # bounded prompt; a row that repeated the history would make this ~10x larger.
    assert total < count * 3 * size
    assert runs_bytes < 2000
