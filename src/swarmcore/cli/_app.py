"""The command line: its arguments, and ``main``, which runs the command they name."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from swarmcore import __version__
from swarmcore.cli._errors import CLIError
from swarmcore.cli._eval import add_eval_parser
from swarmcore.cli._format import one_line
from swarmcore.cli._graph import command_graph
from swarmcore.cli._run import budget_number, command_demo, command_run, context_budget
from swarmcore.cli._runs import (
    command_runs_approve,
    command_runs_list,
    command_runs_prune,
    command_runs_resume,
    command_runs_show,
)
from swarmcore.cli._serve import add_serve_parser
from swarmcore.cli._ui import add_ui_parser
from swarmcore.cli._worker import add_worker_parser
from swarmcore.errors import StoreError, SwarmError, UserError

_VERBOSITIES = ("minimal", "summary", "detailed", "debug")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line: ``swarmcore: error: ...``."""

    def error(self, message: str) -> NoReturn:
        """Print one line naming the problem and where help is, and exit 2."""
        self.exit(2, f"swarmcore: error: {message} (see `{self.prog} --help`)\n")


def _add_store(parser: argparse.ArgumentParser, *, optional: bool) -> None:
    where = "the run store (default: $SWARMCORE_STORE, else ~/.local/share/swarmcore/runs.db)"
    if not optional:
        parser.add_argument("--store", type=Path, metavar="PATH", help=where)
        return
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--store", type=Path, metavar="PATH", help=f"store the run in {where}")
    group.add_argument("--no-store", action="store_true", help="do not store the run")


def _add_database(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    parser.add_argument(
        "--database-url",
        metavar="URL",
        required=required,
        help="read the runs of a durable engine instead of a run store (the runs of every "
        "worker): its PostgreSQL database (DBOS), or temporal://HOST:PORT[/NAMESPACE]",
    )


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verbosity",
        choices=_VERBOSITIES,
        default="summary",
        help="how much progress to show on stderr (default: summary)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print only the output: nothing on stderr unless the run fails",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``swarmcore`` argument parser: one subcommand per command, each with its handler."""
    parser = _Parser(prog="swarmcore", description="Run, inspect and resume swarmcore flows.")
    parser.add_argument("--version", action="version", version=f"swarmcore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run_parser(commands)

    demo = commands.add_parser(
        "demo",
        help="run the demo flow (offline when no key is set)",
        description="Run researcher >> (analyst | critic) >> writer over a few notes; on the "
        "offline model when no provider key is set (set OPENAI_API_KEY, and optionally "
        "SWARMCORE_MODEL, to run it for real).",
    )
    demo.add_argument("task", nargs="?", help="the task (default: 'Is coffee good for you?')")
    _add_progress(demo)
    _add_store(demo, optional=True)
    demo.set_defaults(handler=command_demo)

    _add_runs_parser(commands)
    add_worker_parser(commands)
    add_ui_parser(commands)
    add_serve_parser(commands)
    add_eval_parser(commands)

    graph = commands.add_parser(
        "graph",
        help="draw a flow as Mermaid, an expression or a tree",
        description="Print a flow: Mermaid (default), the >>/| expression, or a terminal tree.",
    )
    graph.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    graph.add_argument(
        "--format",
        choices=["mermaid", "text", "tree"],
        default="mermaid",
        help="mermaid: a Mermaid flowchart (default); text: the >>/| expression; "
        "tree: a tree for the terminal",
    )
    graph.set_defaults(handler=command_graph)
    return parser


def _add_run_parser(commands: Any) -> None:
    run: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="run a flow on a task",
        description="Run a flow on a task: progress on stderr, the output on stdout. The run "
        "is stored (see `swarmcore runs`) so that a failed run can be resumed.",
    )
    run.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    run.add_argument("task", help="the task to run the flow on")
    run.add_argument(
        "--model",
        metavar="M",
        help="run every agent on this LiteLLM model, without fallbacks ('offline': the "
        "built-in offline model)",
    )
    run.add_argument(
        "--context-mode", choices=["pull", "push", "auto"], help="override the context mode"
    )
    run.add_argument(
        "--context-budget",
        type=context_budget,
        metavar="N",
        help="with --context-mode auto (or a Swarm in auto mode): tokens of context per agent "
        "(default 1000)",
    )
    _add_store(run, optional=True)
    _add_progress(run)
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="count model calls and prompt tokens on the offline model; spend nothing",
    )
    run.add_argument(
        "--max-cost",
        type=budget_number(whole=False),
        help="stop before spending more than this (USD)",
    )
    run.add_argument(
        "--max-tokens",
        type=budget_number(whole=True),
        help="stop before spending more tokens than this",
    )
    run.add_argument(
        "--var",
        action="append",
        metavar="NAME=VALUE",
        help="a value for a {NAME} placeholder in instructions (repeatable)",
    )
    run.set_defaults(handler=command_run)


def _add_runs_parser(commands: Any) -> None:
    runs: argparse.ArgumentParser = commands.add_parser(
        "runs",
        help="list, show, resume and prune stored runs",
        description="Stored runs: every `swarmcore run` is recorded unless --no-store.",
    )
    actions = runs.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser(
        "list", help="the most recent runs", description="The most recent runs, newest first."
    )
    listing.add_argument("--limit", type=int, default=20, help="how many runs (default: 20)")
    _add_store(listing, optional=False)
    _add_database(listing)
    listing.set_defaults(handler=command_runs_list)

    show = actions.add_parser(
        "show",
        help="one run and each of its agents",
        description="A run's status, and each agent's status, tokens, cost, time and output.",
    )
    show.add_argument("run_id", metavar="RUN_ID", help="the run's id or a unique prefix of it")
    _add_store(show, optional=False)
    _add_database(show)
    show.set_defaults(handler=command_runs_show)

    resume = actions.add_parser(
        "resume",
        help="continue a failed or interrupted run",
        description="Continue a run started by `swarmcore run`: its flow is loaded again from "
        "the same target (and --model); agents that finished are not run again. A run that "
        "succeeded is refused (exit status 2) and its record left as it is.",
    )
    resume.add_argument("run_id", metavar="RUN_ID", help="the run's id or a unique prefix of it")
    _add_store(resume, optional=False)
    _add_progress(resume)
    resume.add_argument(
        "--database-url",
        metavar="URL",
        help="a failed run of a durable engine: hand it back to the workers of its flow",
    )
    resume.set_defaults(handler=command_runs_resume)

    approve = actions.add_parser(
        "approve",
        help="decide a call waiting for approval in a durable run",
        description="Allow (the default), deny or edit a call to a tool that requires "
        "approval, in a run of a durable engine waiting for a decision; the run goes on "
        "wherever it runs. `swarmcore runs show RUN_ID --database-url URL` lists the waiting "
        "calls.",
    )
    approve.add_argument("run_id", metavar="RUN_ID", help="the run's id")
    approve.add_argument("call_id", metavar="CALL_ID", help="the waiting call's id")
    decision = approve.add_mutually_exclusive_group()
    decision.add_argument("--deny", metavar="REASON", help="deny the call; the model is told why")
    decision.add_argument("--edit", metavar="JSON", help="run the call with these arguments")
    _add_database(approve, required=True)
    approve.set_defaults(handler=command_runs_approve)

    prune = actions.add_parser(
        "prune",
        help="delete old finished runs",
        description="Delete finished runs (runs still marked running are kept).",
    )
    prune.add_argument("--keep", type=int, metavar="N", help="keep only the newest N runs")
    prune.add_argument(
        "--older-than", type=float, metavar="DAYS", help="delete runs started over DAYS days ago"
    )
    _add_store(prune, optional=False)
    prune.set_defaults(handler=command_runs_prune)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarmcore`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (CLIError, UserError, StoreError) as exc:  # a store that cannot be opened or read
        print(f"swarmcore: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except SwarmError as exc:  # a failure outside a run (the runs report their own)
        print(f"swarmcore: error: {one_line(str(exc))}", file=sys.stderr)
        return 1


def console() -> NoReturn:
    """The ``swarmcore`` command's process: :func:`main`, then the process ends."""
    code = main()
    # What is left is never collected: freezing it spares the interpreter's shutdown
    # the collection of every loaded module's objects (LiteLLM, DBOS, pydantic's
    # models: one to three seconds per process, paid by every worker a SIGTERM stops).
    gc.freeze()
    if "swarmcore.engines.temporal" in sys.modules:
        # temporalio's Rust threads may call into Python while the interpreter shuts
        # down, aborting the process (temporalio/sdk-python#300): a process that used
        # Temporal ends here, its output flushed, with its own exit status.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
