"""``swarmcore runs list | show | resume | prune``: the stored runs."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from swarmcore._flow import Flow
from swarmcore._swarm import ContextMode, Swarm
from swarmcore._table import text_table
from swarmcore.agent import Agent
from swarmcore.cli._errors import CLIError
from swarmcore.cli._format import (
    duration,
    local_time,
    preview,
    resume_command,
    run_metadata,
    run_origin,
    shorten,
)
from swarmcore.cli._run import agent_settings, approver, execute, progress_hooks, store_location
from swarmcore.cli._shape import agent_order
from swarmcore.cli._targets import as_flow, load_target, model_name, on_model
from swarmcore.results import Decision, failure_status, format_cost, sum_cost
from swarmcore.store import (
    EarlierAttempt,
    RunRecord,
    RunSummary,
    SQLiteStore,
    default_store_path,
)

_MAX_COUNT = 2**63 - 1
"""The largest count SQLite can take (``--limit``, ``--keep``)."""


def _count(option: str, value: int, least: int) -> int:
    """``value`` if it is a count SQLite can take, else a usage error naming ``option``."""
    if not least <= value <= _MAX_COUNT:
        raise CLIError(f"{option} must be {least} or more (and at most {_MAX_COUNT}), got {value}")
    return value


def _open_store(path: Path) -> SQLiteStore:
    """The store at ``path``, which must exist (reading never creates one)."""
    if not path.exists():
        raise CLIError(
            f"no run store at {path} (runs are stored there by `swarmcore run`); a run "
            "stored elsewhere: name its store with --store PATH"
        )
    return SQLiteStore(path)


def _get_run(store: SQLiteStore, run_id: str, path: Path) -> RunRecord:
    if not run_id.strip():
        raise CLIError("RUN_ID is empty; list the runs with `swarmcore runs list`")
    record = store.get_run(run_id.strip())
    if record is None:
        raise CLIError(
            f"no run {run_id!r} in {path}; a run stored elsewhere: name its store with "
            f"--store PATH; list the runs with `swarmcore runs list{_store_option(path)}`"
        )
    return record


def _store_option(path: Path) -> str:
    """`` --store PATH`` for a store other than the default one, else nothing."""
    return "" if path == default_store_path() else f" --store {shlex.quote(str(path))}"


def command_runs_list(args: argparse.Namespace) -> int:
    """``swarmcore runs list``: the newest stored runs, one line each."""
    limit = _count("--limit", args.limit, 1)
    if args.database_url:
        from swarmcore.cli._worker import engine_history

        history = engine_history(args.database_url, "swarmcore runs list --database-url")
        try:
            listed = history.read_runs(limit=limit).runs
        finally:
            history.close()
        return _print_runs(listed, (), "the engine's database")
    path = store_location(args)
    if not path.exists():
        print(
            f"no runs stored in {path} (no store there yet); runs stored elsewhere: "
            "name their store with --store PATH",
            file=sys.stderr,
        )
        return 0
    store = SQLiteStore(path)
    try:
        runs, unreadable = store.read_runs(limit=limit)
    finally:
        store.close()
    return _print_runs(runs, unreadable, str(path))


def _print_runs(runs: Sequence[RunSummary], unreadable: Sequence[str], path: str) -> int:
    if unreadable:  # one damaged row never hides the others
        print(
            f"swarmcore: skipped {len(unreadable)} unreadable run(s) in {path}: "
            f"{', '.join(unreadable)}",
            file=sys.stderr,
        )
    if not runs:
        print(f"no runs stored in {path}", file=sys.stderr)
        return 0
    header = ("id", "status", "agents", "started", "duration", "flow", "task")
    rows = [
        (
            r.run_id[:12],
            r.status,
            f"{r.agents_done}/{r.agents_total}",
            local_time(r.started_at),
            duration(r.started_at, r.ended_at),
            shorten(r.flow, 50),
            shorten(r.task, 40),
        )
        for r in runs
    ]
    print(text_table(header, rows, right={2, 4}))
    return 0


def command_runs_show(args: argparse.Namespace) -> int:
    """``swarmcore runs show``: one run, its agents, its decisions."""
    if args.database_url:
        from swarmcore.cli._worker import engine_history

        history = engine_history(args.database_url, "swarmcore runs show --database-url")
        try:
            found = history.get_run(args.run_id.strip()) if args.run_id.strip() else None
            waiting = history.waiting(found.run_id) if found is not None else []
        finally:
            history.close()
        if found is None:
            raise CLIError(
                f"no run {args.run_id!r} in the engine's database (or the prefix is "
                "not unique); list them with `swarmcore runs list --database-url`"
            )
        record = found
        path = None
    else:
        waiting = []
        path = store_location(args)
        store = _open_store(path)
        try:
            record = _get_run(store, args.run_id, path)
        finally:
            store.close()
    metadata = run_metadata(record)
    header = [
        ("run", record.run_id),
        ("flow", record.flow),
        ("task", shorten(record.task, 200)),
        ("status", record.status),
        ("started", local_time(record.started_at)),
        ("duration", duration(record.started_at, record.ended_at)),
    ]
    if record.error:
        header.append(("error", shorten(record.error, 200)))
    header += [("earlier", _earlier_text(e)) for e in record.earlier]
    origin = run_origin(metadata)
    if origin:
        header.append(("target", origin))
    for key, value in header:
        print(f"{key:<9} {value}")
    print()
    print(_agent_table(record))
    if record.decisions:
        print("\ndecisions")
        for d in record.decisions:
            print(f"  {d.kind:<6} {d.step}: {_decision_text(d)}")
    if waiting:
        print("\nwaiting for approval (swarmcore runs approve RUN_ID CALL_ID --database-url URL)")
        for request in waiting:
            arguments = shorten(json.dumps(request.arguments), 120)
            print(f"  {request.call_id}  {request.agent_name}: {request.tool_name}({arguments})")
    hint = _resume_hint(record, path, origin)
    if hint:
        print(f"\nresume with: {hint}")
    return 0


def _earlier_text(attempt: EarlierAttempt) -> str:
    """An attempt before a resume, on one line: how it ended and why."""
    ended = {"cancelled": "was cancelled", "running": "was interrupted"}.get(
        attempt.status, attempt.status
    )
    when = "" if attempt.resumed_at is None else f" {local_time(attempt.resumed_at)}"
    why = attempt.error or "; ".join(
        f"{f.agent_name}: {f.message}" for f in attempt.failures if not f.cancelled
    )
    return f"{ended}, then resumed{when}" + (f": {shorten(why, 160)}" if why else "")


def _resume_hint(record: RunRecord, path: Path | None, origin: str) -> str:
    """The command that resumes ``record`` from its store (``path``) or, if None, its engine."""
    if path is None:  # the engine's workers take it back, whoever started it
        if record.status not in ("failed", "cancelled"):
            return ""
        command = shlex.join(["swarmcore", "runs", "resume", record.run_id, "--database-url"])
        return f'{command} "$SWARMCORE_DATABASE_URL"'
    if record.status in ("succeeded", "incomplete") or not origin:
        return ""
    return resume_command(record.run_id, path)


def command_runs_approve(args: argparse.Namespace) -> int:
    """``swarmcore runs approve``: decide a call a durable run waits on."""
    from swarmcore._tools import Approval
    from swarmcore.cli._worker import engine_history

    approval = Approval.allow()
    if args.deny is not None:
        approval = Approval.deny(args.deny)
    elif args.edit is not None:
        try:
            arguments = json.loads(args.edit)
        except ValueError as exc:
            raise CLIError(f"--edit takes the call's arguments as a JSON object: {exc}") from None
        if not isinstance(arguments, dict):
            raise CLIError(f"--edit takes a JSON object of arguments, got {args.edit!r}")
        approval = Approval.edit(cast("dict[str, Any]", arguments))
    history = engine_history(args.database_url, "swarmcore runs approve")
    try:
        request = history.decide(args.run_id, args.call_id, approval)
    finally:
        history.close()
    print(f"{approval.decision}: {request.tool_name} ({request.call_id}) in run {args.run_id}")
    return 0


def _decision_text(decision: Decision) -> str:
    match decision.kind:
        case "route":
            text = f"-> {decision.value} (by {decision.by})"
        case "loop":
            text = f"{decision.value} iterations (ended by {decision.by})"
        case _:
            tries = f", {decision.attempts} attempts" if decision.attempts > 1 else ""
            text = f"{decision.value} (by {decision.by}{tries})"
    return text + (f": {shorten(decision.detail, 80)}" if decision.detail else "")


def _agent_table(record: RunRecord) -> str:
    """Each agent's model, status and spend; the total's time is the run's wall time."""
    results = {r.agent_name: r for r in record.results}
    failures = {f.agent_name: f for f in record.failures}
    header = ("agent", "model", "status", "tokens", "cost", "time", "output")
    rows: list[tuple[str, ...]] = []
    order, optional = agent_order(record)
    for name in order:
        result = results.get(name)
        failure = failures.get(name)
        if result is not None:
            rows.append(
                (
                    name,
                    result.model,
                    "done",
                    f"{result.token_usage.total_tokens:,}",
                    format_cost(result.cost),
                    f"{result.duration_seconds:.1f}s",
                    preview(result.output),
                )
            )
        elif failure is not None:
            ran = failure.duration_seconds
            rows.append(
                (
                    name,
                    failure.model or "-",
                    failure_status(failure),
                    "-",
                    "-",
                    "-" if ran is None else f"{ran:.1f}s",
                    preview(failure.message),
                )
            )
        else:
            rows.append((name, "-", "pending", "-", "-", "-", ""))
    done = list(results.values())
    rows.append(
        (
            "total",
            "",
            f"{len(done)} done" if optional else f"{len(done)}/{record.agents_total} done",
            f"{sum(r.token_usage.total_tokens for r in done):,}",
            format_cost(sum_cost([r.cost for r in done])) if done else "-",
            # parallel agents overlap: their times summed would exceed the run's
            duration(record.started_at, record.ended_at),
            "",
        )
    )
    return text_table(header, rows, right={3, 4, 5}, rule_before_last=True)


def command_runs_resume(args: argparse.Namespace) -> int:
    """``swarmcore runs resume``: continue a run, its flow loaded again as the CLI started it."""
    if args.database_url:
        return _requeue(args.database_url, args.run_id)
    path = store_location(args)
    store = _open_store(path)
    try:
        record = _get_run(store, args.run_id, path)
        if record.status == "succeeded":  # resuming would only rewrite its record
            raise CLIError(
                f"run {record.run_id[:12]} already succeeded; nothing to resume (see "
                f"`swarmcore runs show {record.run_id[:12]}`)"
            )
        metadata = run_metadata(record)
        target = _stored_target(record, metadata)
        flow = as_flow(target)
        model = metadata.get("model")
        if isinstance(model, str) and model:
            flow = on_model(flow, model)
        stored = record.settings.get("context_mode")
        mode: ContextMode = stored if stored in ("push", "auto") else "pull"
        swarm = Swarm(
            flow,
            context_mode=mode,
            context_budget=_whole(record.settings.get("context_budget"))
            if mode == "auto"
            else None,
            **agent_settings(target),
            hooks=progress_hooks(args),
            max_cost=_number(record.settings.get("max_cost")),
            max_tokens=_whole(record.settings.get("max_tokens")),
            store=store,
            approve=approver(target, flow),
        )
        run_id = record.run_id
        return execute(swarm, lambda s: s.resume(run_id), quiet=args.quiet, store_path=path)
    finally:
        store.close()


def _requeue(database_url: str, run_id: str) -> int:
    """Hand a failed run of a durable engine back to the workers of its flow."""
    import asyncio

    from swarmcore.cli._worker import engine_history

    history = engine_history(database_url, "swarmcore runs resume --database-url")
    try:
        was = asyncio.run(history.requeue(run_id))
    finally:
        history.close()
    print(
        f"run {run_id} handed back to the workers of flow version {was.flow_version} "
        f"(resumed {was.generation} time(s)); finished agents keep their results. Follow "
        f"it with `swarmcore runs show {run_id} --database-url URL`."
    )
    return 0


def _stored_target(record: RunRecord, metadata: dict[str, Any]) -> Flow | Agent | Swarm:
    """The flow (or Agent, or Swarm) that made ``record``, loaded again as the CLI started it."""
    if metadata.get("demo"):
        from swarmcore.demo import build_flow

        model = metadata.get("model")
        return build_flow(model_name(model) if isinstance(model, str) else "offline").flow
    target = metadata.get("target")
    if not isinstance(target, str):
        raise CLIError(
            f"run {record.run_id[:12]} was not started by the swarmcore command, so there is "
            f"no flow to reload; resume it from Python: Swarm(flow, store=...).resume("
            f"{record.run_id[:12]!r})"
        )
    cwd = metadata.get("cwd")
    return load_target(target, cwd=Path(cwd) if isinstance(cwd, str) else None)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def command_runs_prune(args: argparse.Namespace) -> int:
    """``swarmcore runs prune``: delete finished runs beyond ``--keep`` or ``--older-than``."""
    keep: int | None = args.keep
    days: float | None = args.older_than
    if keep is None and days is None:
        raise CLIError("runs prune needs --keep N or --older-than DAYS (or both)")
    if keep is not None:
        _count("--keep", keep, 0)
    if days is not None and not (math.isfinite(days) and days >= 0):
        raise CLIError(f"--older-than must be 0 or more days, got {days:g}")
    path = store_location(args)
    deleted = 0
    if path.exists():
        store = SQLiteStore(path)
        try:
            older = None if days is None else days * 86_400
            deleted = store.prune(keep_last=keep, older_than=older)
        finally:
            store.close()
    print(f"deleted {deleted} run{'s' * (deleted != 1)} from {path}")
    return 0
