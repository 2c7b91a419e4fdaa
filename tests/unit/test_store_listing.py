"""The run listing a viewer pages through: filters, the keyset cursor, totals, deletes."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from swarmcore import UserError
from swarmcore.results import AgentFailure, AgentResult, LLMCallRecord, TokenUsage
from swarmcore.store import (
    SCHEMA_VERSION,
    RunListing,
    RunReader,
    RunRecord,
    RunStatus,
    SQLiteStore,
)
from swarmcore.store._sqlite import _MIGRATIONS  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "runs.db")


def add_run(
    store: SQLiteStore,
    run_id: str,
    *,
    started: float,
    status: RunStatus = "succeeded",
    flow: str = "a >> b",
    task: str = "a task",
    costs: tuple[float | None, ...] = (),
) -> None:
    """A run, through the public API, with one finished agent per cost given."""
    store.start_run(
        RunRecord(
            run_id=run_id,
            flow=flow,
            task=task,
            status="running",
            started_at=started,
            shape="{}",
            agents_total=len(costs),
        )
    )
    for n, cost in enumerate(costs):
        store.save_result(run_id, result(f"agent{n}", cost, tokens=(10 * (n + 1), n + 1)))
    if status != "running":
        store.finish_run(run_id, status)


def result(name: str, cost: float | None, *, tokens: tuple[int, int]) -> AgentResult:
    usage = TokenUsage(prompt_tokens=tokens[0], completion_tokens=tokens[1])
    call = LLMCallRecord(
        model="m", duration_seconds=0.1, token_usage=usage, cost=cost, finish_reason="stop"
    )
    return AgentResult(
        agent_name=name,
        output="out",
        summary="out",
        model="m",
        duration_seconds=0.1,
        token_usage=usage,
        llm_calls=[call],
    )


def ids(listing: RunListing) -> list[str]:
    return [r.run_id for r in listing.runs]


def test_both_stores_are_run_readers(store: SQLiteStore) -> None:
    assert isinstance(store, RunReader)


def test_status_and_text_filters_and_their_counts(store: SQLiteStore) -> None:
    add_run(store, "r1", started=1, status="failed", task="Plan the TRIP to Rome")
    add_run(store, "r2", started=2, flow="research >> write", task="50% off")
    add_run(store, "r3", started=3, status="running", task="a_b")
    add_run(store, "r4", started=4, status="failed", task="axb and 5 of 10")
    add_run(store, "trip-5", started=5, task="back\\slash")

    assert ids(store.read_runs(status="failed")) == ["r4", "r1"]
    assert ids(store.read_runs(status="running")) == ["r3"]
    assert ids(store.read_runs(status="cancelled")) == []
    assert ids(store.read_runs(text="trip")) == ["trip-5", "r1"]  # its id; case ignored
    assert ids(store.read_runs(text="WRITE")) == ["r2"]  # the flow
    assert ids(store.read_runs(text="trip", status="failed")) == ["r1"]
    # LIKE's wildcards and its escape character are literal text
    assert ids(store.read_runs(text="%")) == ["r2"]
    assert ids(store.read_runs(text="a_b")) == ["r3"]  # not "axb"
    assert ids(store.read_runs(text="\\")) == ["trip-5"]
    assert ids(store.read_runs(text="nothing like it")) == []
    assert ids(store.read_runs(text="")) == ["trip-5", "r4", "r3", "r2", "r1"]  # no filter

    assert store.count_runs() == 5
    assert store.count_runs(status="failed") == 2
    assert store.count_runs(text="trip") == 2
    assert store.count_runs(text="_") == 1
    assert store.count_runs(status="failed", text="rome") == 1
    assert store.count_runs(status="incomplete") == 0


def test_bad_filters_and_cursors_are_refused(store: SQLiteStore) -> None:
    with pytest.raises(UserError, match="status must be one of running, succeeded"):
        store.read_runs(status="done")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="status must be one of"):
        store.count_runs(status="Failed")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="before must be the next cursor"):
        store.read_runs(before=("1.0", 5))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="limit"):
        store.read_runs(limit=-1)


def test_pages_through_equal_start_times_lose_and_repeat_no_run(store: SQLiteStore) -> None:
    # 23 runs at 4 start times: pages of 5 end inside groups of equal times
    expected: list[tuple[float, str]] = []
    for n in range(23):
        started = float(n // 6)
        status: RunStatus = "failed" if n % 3 == 0 else "succeeded"
        add_run(store, f"run-{n:02d}", started=started, status=status)
        expected.append((started, f"run-{n:02d}"))
    expected.sort(reverse=True)

    def walk(status: RunStatus | None = None) -> list[str]:
        seen: list[str] = []
        listing = store.read_runs(limit=5, status=status)
        while True:
            assert len(listing.runs) <= 5
            seen += ids(listing)
            if listing.next is None:
                return seen
            last = listing.runs[-1]
            assert listing.next == (last.started_at, last.run_id)
            listing = store.read_runs(limit=5, status=status, before=listing.next)

    assert walk() == [run_id for _, run_id in expected]
    assert walk("failed") == [f"run-{n:02d}" for n in (21, 18, 15, 12, 9, 6, 3, 0)]
    # A page that ends the store exactly has no next page
    assert store.read_runs(limit=23).next is None
    last_page = store.read_runs(limit=22)
    assert last_page.next == (0.0, "run-01")  # the last run shown
    assert ids(store.read_runs(before=last_page.next)) == ["run-00"]
    assert store.read_runs(limit=0) == RunListing([], [], None)
    # The old callers' unpacking still works
    runs, unreadable = store.read_runs(limit=2)
    assert [r.run_id for r in runs] == ["run-22", "run-21"]
    assert unreadable == []


def test_tokens_and_cost_are_summed_over_finished_agents(store: SQLiteStore) -> None:
    add_run(store, "priced", started=1, costs=(0.25, 0.5))
    add_run(store, "unpriced", started=2, costs=(0.25, None))
    add_run(store, "nothing-done", started=3, status="running")
    add_run(store, "with-failure", started=4, status="failed", costs=(0.125,))
    store.save_failure(
        "with-failure", AgentFailure(agent_name="late", error_type="ModelError", message="x")
    )
    add_run(store, "damaged", started=5, costs=(0.5, 0.25))
    with closing(sqlite3.connect(store.path)) as raw:
        raw.execute(
            "UPDATE agents SET body = 'not json' WHERE run_id = 'damaged' AND agent_name = 'agent1'"
        )
        raw.commit()

    by_id = {r.run_id: r for r in store.read_runs().runs}
    # agent n spent 10(n+1) prompt and n+1 completion tokens
    assert (by_id["priced"].tokens, by_id["priced"].cost) == (11 + 22, 0.75)
    assert (by_id["priced"].agents_done, by_id["priced"].agents_total) == (2, 2)
    assert (by_id["unpriced"].tokens, by_id["unpriced"].cost) == (33, None)
    assert (by_id["nothing-done"].tokens, by_id["nothing-done"].cost) == (0, 0.0)
    assert (by_id["with-failure"].tokens, by_id["with-failure"].cost) == (11, 0.125)
    assert by_id["with-failure"].agents_done == 1  # the failed agent counts nothing
    # One damaged body does not hide the page: its tokens are lost, its cost unknown
    assert (by_id["damaged"].tokens, by_id["damaged"].cost) == (11, None)

    for run_id in ("priced", "unpriced", "nothing-done", "with-failure"):
        record = store.get_run(run_id)
        assert record is not None
        assert (record.tokens, record.cost) == (by_id[run_id].tokens, by_id[run_id].cost)


def test_delete_run_removes_a_finished_run_with_its_rows(store: SQLiteStore) -> None:
    add_run(store, "done", started=1, costs=(0.1, 0.2))
    add_run(store, "kept", started=2, costs=(0.1,))
    add_run(store, "live", started=3, status="running", costs=(0.1,))

    assert store.delete_run("done") is True
    assert store.get_run("done") is None
    with closing(sqlite3.connect(store.path)) as raw:
        assert raw.execute("SELECT count(*) FROM agents WHERE run_id = 'done'").fetchone() == (0,)
        assert raw.execute("SELECT count(*) FROM agents").fetchone() == (2,)

    with pytest.raises(UserError, match=r"Run live is running .* it was not deleted"):
        store.delete_run("live")
    assert store.get_run("live") is not None

    assert store.delete_run("done") is False
    assert store.delete_run("kep") is False  # a whole id only: never a prefix
    assert ids(store.read_runs()) == ["live", "kept"]


def test_a_version_3_file_migrates_and_lists(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as raw:
        for statements in _MIGRATIONS[:3]:
            for statement in statements:
                raw.execute(statement)
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        raw.execute("INSERT INTO meta VALUES ('schema_version', '3')")
        for n in range(3):
            raw.execute(
                "INSERT INTO runs VALUES (?, 'a', '{}', 'old task', 'failed', 7.0, 8.0, "
                "'boom', '{}', 1)",
                (f"old-{n}",),
            )
        raw.execute(
            "INSERT INTO agents VALUES ('old-1', 'a', 'done', ?, 9.0)",
            (result("a", 0.5, tokens=(3, 4)).model_dump_json(),),
        )
        raw.commit()

    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION == 4
    first = store.read_runs(limit=2, status="failed", text="OLD")
    assert ids(first) == ["old-2", "old-1"]
    assert (first.runs[1].tokens, first.runs[1].cost) == (7, 0.5)
    assert ids(store.read_runs(limit=2, before=first.next)) == ["old-0"]
    assert store.count_runs(status="failed") == 3
    store.close()
