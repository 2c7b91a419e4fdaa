"""The SQLite store's reads: pages of runs with a keyset cursor, and one run's rows.

A page is cut by a keyset cursor, the ``(started_at, run_id)`` of the last run of
the page before, never by an offset: the ``runs_order`` and ``runs_status_order``
indexes hand the rows over in order from the cursor on, so the hundredth page
costs what the first does. The tokens and cost of the finished agents are
summed in SQL (``json_extract`` over the stored bodies) for the rows of the page
only, never for the whole store.
"""

from __future__ import annotations

import json
from typing import Any, cast, get_args

from pydantic import ValidationError

from swarmcore.errors import UserError
from swarmcore.results import AgentFailure, AgentResult, Decision, sum_cost
from swarmcore.store._base import (
    EarlierAttempt,
    RunListing,
    RunMark,
    RunRecord,
    RunStatus,
    RunSummary,
)

_STATUSES: tuple[str, ...] = get_args(RunStatus)

MAX_SEARCH = 1000
"""The most characters in a search text (SQLite takes LIKE patterns of 50,000 bytes at most)."""

EARLIER = "earlier"
"""The key of a run's settings under which a resumed run's earlier attempts are kept."""

# Tokens are prompt plus completion (what ``TokenUsage.total_tokens`` computes), read
# from the fields themselves so a body stored without the computed field still counts.
# A body that is not JSON (a damaged row) counts no tokens and an unknown cost rather
# than failing the whole page: ``json_extract`` raises on it.
_PAGE = """
WITH page AS (
    SELECT run_id, flow, task, status, started_at, ended_at, error, agents_total
    FROM runs {where}
    ORDER BY started_at DESC, run_id DESC
    LIMIT :limit
), done AS (
    SELECT run_id,
           CASE WHEN json_valid(body) THEN
                coalesce(json_extract(body, '$.token_usage.prompt_tokens'), 0)
                + coalesce(json_extract(body, '$.token_usage.completion_tokens'), 0)
           END AS tokens,
           CASE WHEN json_valid(body) THEN json_extract(body, '$.cost') END AS cost
    FROM agents WHERE status = 'done'
)
SELECT page.*, count(done.run_id), total(done.tokens), total(done.cost),
       count(done.run_id) - count(done.cost)
FROM page LEFT JOIN done ON done.run_id = page.run_id
GROUP BY page.run_id
ORDER BY page.started_at DESC, page.run_id DESC
"""


def like_escape(text: str) -> str:
    """``text`` made literal in a LIKE pattern that escapes with a backslash."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def page_query(
    *,
    limit: int,
    status: RunStatus | None,
    text: str | None,
    before: tuple[float, str] | None,
) -> tuple[str, dict[str, object]]:
    """The SQL of one page of ``limit`` runs, and its parameters.

    It fetches ``limit + 1`` rows: the extra one only tells that a next page exists.
    """
    where, params = _where(status, text, before)
    params["limit"] = limit + 1
    return _PAGE.format(where=where), params


def count_query(*, status: RunStatus | None, text: str | None) -> tuple[str, dict[str, object]]:
    """The SQL counting the runs the filters keep, and its parameters."""
    where, params = _where(status, text, None)
    return f"SELECT count(*) FROM runs {where}", params


def decode_page(rows: list[tuple[Any, ...]], limit: int) -> RunListing:
    """The rows of :func:`page_query` as a listing; rows that do not validate are named."""
    listing = RunListing([], [], None)
    for row in rows[:limit]:
        try:
            listing.runs.append(_summary(row))
        except (ValueError, TypeError):  # pydantic's errors are ValueErrors
            listing.unreadable.append(str(row[0]))
    if len(rows) > limit > 0:
        last = rows[limit - 1]
        # The row's own values, even a damaged one's: SQLite orders them all.
        return RunListing(listing.runs, listing.unreadable, (last[4], str(last[0])))
    return listing


def _summary(row: tuple[Any, ...]) -> RunSummary:
    run_id, flow, task, status, started, ended, error, total = row[:8]
    done, tokens, priced, unpriced = row[8:12]
    return RunSummary(
        run_id=run_id,
        flow=flow,
        task=task,
        status=status,
        started_at=started,
        ended_at=ended,
        error=error,
        agents_done=done,
        agents_total=total,
        tokens=int(tokens),
        # Nothing finished has cost nothing; one unpriced agent makes the sum unknown.
        cost=None if unpriced else priced,
    )


def _where(
    status: RunStatus | None, text: str | None, before: tuple[float, str] | None
) -> tuple[str, dict[str, object]]:
    """The WHERE clause of the filters (empty without any) and its parameters."""
    clauses: list[str] = []
    params: dict[str, object] = {}
    if status is not None:
        if status not in _STATUSES:
            raise UserError(f"status must be one of {', '.join(_STATUSES)}; got {status!r}.")
        clauses.append("status = :status")
        params["status"] = status
    if text:
        if len(text) > MAX_SEARCH:  # SQLite refuses a long LIKE pattern as if the file were bad
            raise UserError(
                f"The search text is too long: {len(text):,} characters, at most {MAX_SEARCH}."
            )
        clauses.append(
            "(run_id LIKE :text ESCAPE '\\' OR flow LIKE :text ESCAPE '\\'"
            " OR task LIKE :text ESCAPE '\\')"
        )
        params["text"] = f"%{like_escape(text)}%"
    if before is not None:
        params["started"], params["after"] = _cursor(before)
        clauses.append("(started_at, run_id) < (:started, :after)")
    if not clauses:
        return "", params
    return "WHERE " + " AND ".join(clauses), params


def _cursor(before: object) -> tuple[object, str]:
    """The checked cursor; its time may be text, the value of a damaged row's."""
    if isinstance(before, tuple) and len(before) == 2:  # pyright: ignore[reportUnknownArgumentType]
        started, run_id = cast("tuple[object, object]", before)
        number = isinstance(started, int | float) and not isinstance(started, bool)
        if (number or isinstance(started, str)) and isinstance(run_id, str):
            return started, run_id
    raise UserError(
        f"before must be the next cursor of a page, a (started_at, run_id) pair; got {before!r}."
    )


# --- one run, for get_run ------------------------------------------------------------

_COLUMNS = (
    "run_id",
    "flow",
    "shape",
    "task",
    "status",
    "started_at",
    "ended_at",
    "error",
    "settings",
    "agents_total",
)


def run_row(row: tuple[Any, ...]) -> dict[str, Any]:
    """A ``SELECT * FROM runs`` row by column name."""
    return dict(zip(_COLUMNS, row[: len(_COLUMNS)], strict=True))


def _run_summary(run: dict[str, Any], results: list[AgentResult]) -> RunSummary:
    costs = [r.cost for r in results]
    return RunSummary(
        run_id=run["run_id"],
        flow=run["flow"],
        task=run["task"],
        status=run["status"],
        started_at=run["started_at"],
        ended_at=run["ended_at"],
        error=run["error"],
        agents_done=len(results),
        agents_total=run["agents_total"],
        tokens=sum(r.token_usage.total_tokens for r in results),
        cost=sum_cost(costs) if costs else 0.0,  # as the listing sums it
    )


def record(
    run: dict[str, Any], agents: list[tuple[Any, ...]], decided: list[tuple[Any, ...]]
) -> RunRecord:
    """A run's rows (``SELECT * FROM runs``, its agents' and decisions' bodies) as a record."""
    results = [AgentResult.model_validate_json(b) for s, b in agents if s == "done"]
    failures = [AgentFailure.model_validate_json(b) for s, b in agents if s == "failed"]
    # Not a dict (a damaged row): the record's validation below says so.
    settings = cast("dict[str, Any]", json.loads(run["settings"]))
    earlier: list[Any] = settings.pop(EARLIER, []) if isinstance(settings, dict) else []  # pyright: ignore[reportUnnecessaryIsInstance] -- read from the file
    return RunRecord(
        **_run_summary(run, results).model_dump(),
        shape=run["shape"],
        settings=settings,
        results=results,
        failures=failures,
        decisions=[Decision.model_validate_json(b) for (b,) in decided],
        earlier=[EarlierAttempt.model_validate(e) for e in earlier],
    )


def why(exc: Exception) -> str:
    """A short, one-line reason a row could not be read."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{exc.title} {where}: {first['msg']}".replace("  ", " ")[:200]
    if isinstance(exc, json.JSONDecodeError):
        return f"its settings are not JSON ({exc.msg})"
    return f"{type(exc).__name__}: {exc}"[:200]


MARK = """SELECT status, ended_at, error IS NOT NULL,
    (SELECT count(*) FROM agents a WHERE a.run_id = r.run_id),
    (SELECT group_concat(status) FROM agents a WHERE a.run_id = r.run_id),
    (SELECT max(finished_at) FROM agents a WHERE a.run_id = r.run_id),
    (SELECT max(seq) FROM decisions d WHERE d.run_id = r.run_id)
    FROM runs r WHERE run_id = ?"""
"""A run's change marker: indexed lookups that parse no result."""


def run_mark(row: tuple[Any, ...]) -> RunMark:
    """A :data:`MARK` row as a mark; a damaged status reads as incomplete (its page says why)."""
    status, *rest = row
    return RunMark(status=status if status in _STATUSES else "incomplete", version=repr(rest))
