"""``swarmcore eval``: stored runs become cases (``add``); a suite replays offline (``run``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmcore.cli._errors import CLIError
from swarmcore.cli._run import store_location
from swarmcore.cli._targets import as_flow, load_target

if TYPE_CHECKING:
    from swarmcore.evals import SuiteReport
    from swarmcore.store import RunRecord


def add_eval_parser(commands: Any) -> None:
    """The ``eval`` subcommand and its actions."""
    evals: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="turn stored runs into offline regression tests and run them",
        description="Evals: `add` makes a case of a stored run (its model and tool cassettes "
        "and what it did); `run` replays a suite of cases against the current flow, offline, "
        "and checks output, path, budget and context.",
    )
    actions = evals.add_subparsers(dest="action", required=True, metavar="ACTION")

    add = actions.add_parser(
        "add",
        help="make a case of a stored run",
        description="Write SUITE/NAME.json: the run's task, variables, flow version, model and "
        "tool cassettes and expectations (no ids, no timestamps, wall times as durations: "
        "adding a run twice writes the same bytes).",
    )
    add.add_argument("run_id", metavar="RUN_ID", help="the run's id or a unique prefix of it")
    add.add_argument("--suite", type=Path, required=True, metavar="DIR", help="the suite directory")
    add.add_argument(
        "--name", help="the case's name (default: run- and the id's first 8 characters)"
    )
    add.add_argument(
        "--target",
        metavar="FILE_OR_MODULE:NAME",
        help="the flow the run was made with: its tools' schemas and its agents' models "
        "(and fallback models) are recorded and checked",
    )
    add.add_argument(
        "--live-tool",
        action="append",
        default=[],
        metavar="TOOL",
        help="run this tool for real on replay instead of from the cassette (repeatable)",
    )
    add.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="the run store (default: $SWARMCORE_STORE, else ~/.local/share/swarmcore/runs.db)",
    )
    add.add_argument(
        "--database-url", metavar="URL", help="read the run from a durable engine's database"
    )
    add.set_defaults(handler=command_eval_add)

    run = actions.add_parser(
        "run",
        help="replay a suite against the current flow, offline",
        description="Replay every case of the suite against TARGET with no network: a request "
        "the cassette lacks fails the case, naming the agent and the first differing message. "
        "Exit status 1 when a case fails (with --baseline: when something regressed).",
    )
    run.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    run.add_argument("--suite", type=Path, required=True, metavar="DIR", help="the suite directory")
    how = run.add_mutually_exclusive_group()
    how.add_argument(
        "--live",
        type=_trials,
        nargs="?",
        const=1,
        metavar="N",
        help="run the cases against the target's real models and tools instead, N times each "
        "(default 1): each case's pass rate and its 95%% interval",
    )
    how.add_argument(
        "--record",
        action="store_true",
        help="record every case again from a live run of the target (new cassettes and "
        "expectations; names, checks and tool modes kept), then replay them",
    )
    run.add_argument("--report", type=Path, metavar="OUT.json", help="write the JSON report here")
    run.add_argument("--junit", type=Path, metavar="OUT.xml", help="write JUnit XML here")
    run.add_argument(
        "--baseline",
        type=Path,
        metavar="REPORT.json",
        help="an earlier --report: exit 1 only on a regression against it",
    )
    run.add_argument(
        "--token-ratio",
        type=float,
        default=1.1,
        metavar="R",
        help="with --baseline: a case may spend R times its baseline tokens (default 1.1)",
    )
    run.add_argument(
        "--cost-ratio",
        type=float,
        default=1.1,
        metavar="R",
        help="with --baseline: a case may spend R times its baseline cost (default 1.1)",
    )
    run.add_argument(
        "--wall-ratio",
        type=float,
        default=1.5,
        metavar="R",
        help="with --baseline, between --live reports: a case may take R times its baseline "
        "wall time, plus --wall-grace (default 1.5); replay reports have no times",
    )
    run.add_argument(
        "--wall-grace",
        type=float,
        default=1.0,
        metavar="S",
        help="with --baseline: seconds added to the wall-time limit (default 1)",
    )
    run.add_argument(
        "--pass-rate-drop",
        type=float,
        default=0.0,
        metavar="P",
        help="with --baseline: how far (0 to 1) the pass rate may fall (default 0)",
    )
    run.set_defaults(handler=command_eval_run)


def _trials(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number of trials above 0, not {text!r}")
    return value


def command_eval_add(args: argparse.Namespace) -> int:
    """``swarmcore eval add``: write one case made from a stored run."""
    from swarmcore.evals import case_from_record

    flow = as_flow(load_target(args.target)) if args.target else None
    record = _read_run(args)
    modes = dict.fromkeys(args.live_tool, "live")
    case = case_from_record(record, name=args.name, flow=flow, tool_modes=modes)  # pyright: ignore[reportArgumentType] -- the literal "live"
    path = case.save(args.suite)
    calls = len(case.model_cassette)
    print(f"{path}: {calls} model calls, {len(case.tool_cassette)} tool results recorded")
    return 0


def _read_run(args: argparse.Namespace) -> RunRecord:
    run_id = str(args.run_id).strip()
    if not run_id:
        raise CLIError("RUN_ID is empty; list the runs with `swarmcore runs list`")
    if args.database_url:
        from swarmcore.cli._worker import engine_history

        history = engine_history(args.database_url, "swarmcore eval add --database-url")
        try:
            record = history.get_run(run_id)
        finally:
            history.close()
        where = "the engine's database"
    else:
        from swarmcore.store import SQLiteStore

        path = store_location(args)
        if not path.exists():
            raise CLIError(f"no run store at {path}; name the run's store with --store PATH")
        store = SQLiteStore(path)
        try:
            record = store.get_run(run_id)
        finally:
            store.close()
        where = str(path)
    if record is None:
        raise CLIError(f"no run {run_id!r} in {where}; list them with `swarmcore runs list`")
    return record


def command_eval_run(args: argparse.Namespace) -> int:
    """``swarmcore eval run``: replay the suite, print the table, write the reports."""
    from swarmcore.agent import run_sync
    from swarmcore.evals import Suite, SuiteReport, Thresholds

    target = load_target(args.target)
    suite = Suite.from_dir(args.suite)
    baseline = SuiteReport.load(args.baseline) if args.baseline else None
    if args.record:
        suite = run_sync(lambda: suite.record(target, args.suite))
        print(f"recorded {len(suite)} cases again in {args.suite}", file=sys.stderr)
    if args.live:
        trials: int = args.live
        report = run_sync(lambda: suite.run_live(target, trials=trials))
    else:
        report = run_sync(lambda: suite.run(target))
    _print_table(report)
    if args.report:
        report.save(args.report)
    if args.junit:
        args.junit.write_text(report.junit(), encoding="utf-8")
    if baseline is None:
        return 0 if report.failed == 0 else 1
    thresholds = Thresholds(
        pass_rate_drop=args.pass_rate_drop,
        token_ratio=args.token_ratio,
        cost_ratio=args.cost_ratio,
        wall_ratio=args.wall_ratio,
        wall_grace=args.wall_grace,
    )
    regressions = report.regressions(baseline, thresholds)
    for line in regressions:
        print(f"regression: {line}", file=sys.stderr)
    if not regressions:
        print(f"no regression against {args.baseline}", file=sys.stderr)
    return 1 if regressions else 0


def _print_table(report: SuiteReport) -> None:
    """The report's table (rich's, on a terminal with the ``cli`` extra) and its failures."""
    if sys.stdout.isatty() and _rich_table(report):
        return
    print(report.table())
    if report.details():
        print(report.details())


def _rich_table(report: SuiteReport) -> bool:
    """Print the report with rich; False when rich is not installed."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    table = Table(title=f"eval {report.suite}")
    timed = any(c.wall_seconds is not None for c in report.cases)  # a live run's
    columns = ("case", "result", "failed checks", "tokens", "calls") + (("time",) if timed else ())
    for column in columns:
        right = column in ("tokens", "calls", "time")
        table.add_column(column, justify="right" if right else "left")
    for case in report.cases:
        failed = ", ".join(c.name for c in case.failed)
        result = "[green]pass[/]" if case.passed else "[red]FAIL[/]"
        row = [case.name, result, failed, f"{case.tokens:,}", str(case.calls)]
        if timed:
            row.append("-" if case.wall_seconds is None else f"{case.wall_seconds:.2f}s")
        table.add_row(*row)
    console = Console()
    console.print(table)
    for line in report.details().splitlines():
        console.print(line, markup=False)
    return True
