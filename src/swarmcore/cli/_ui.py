"""``swarmcore ui``: the local web viewer over the run store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmcore.cli._errors import CLIError
from swarmcore.cli._listen import (
    add_allowed_host,
    allowed_hosts,
    bind_socket,
    check_access,
    url_of,
)
from swarmcore.cli._run import store_location

if TYPE_CHECKING:
    from swarmcore._ui.evals import EvalSource

DEFAULT_PORT = 8484


def add_ui_parser(commands: Any) -> None:
    """The ``ui`` subcommand."""
    ui: argparse.ArgumentParser = commands.add_parser(
        "ui",
        help="browse the stored runs in a local web page",
        description="Serve the run store as web pages: every run, and for each its flow as a "
        "picture, a timeline of agents and calls, messages, tool calls and errors; a running "
        "run's page follows it live. Read-only unless --allow-actions. Needs the [ui] extra: "
        "pip install 'swarmcore[ui]'.",
    )
    ui.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="the run store (default: $SWARMCORE_STORE, else ~/.local/share/swarmcore/runs.db)",
    )
    ui.add_argument(
        "--database-url",
        metavar="URL",
        help="show the runs of a durable engine's PostgreSQL database instead of a run store",
    )
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only)",
    )
    ui.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the port (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    ui.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines can reach (then a token is required)",
    )
    ui.add_argument(
        "--token",
        help="the token every request must carry (default: $SWARMCORE_UI_TOKEN); required "
        "with --allow-remote",
    )
    add_allowed_host(ui)
    ui.add_argument(
        "--allow-actions",
        action="store_true",
        help="offer resume and delete buttons (POSTs with a CSRF token); read-only without it",
    )
    ui.add_argument(
        "--suite",
        type=Path,
        metavar="DIR",
        help="also show this eval suite's cases at /evals (see `swarmcore eval`)",
    )
    ui.add_argument(
        "--eval-report",
        type=Path,
        metavar="REPORT.json",
        help="with --suite: the suite's last report (`swarmcore eval run --report`), read on "
        "every page load",
    )
    ui.set_defaults(handler=command_ui)


def command_ui(args: argparse.Namespace) -> int:
    """``swarmcore ui``: serve the viewer until interrupted."""
    try:
        import uvicorn

        from swarmcore._ui.app import create_app
    except ImportError as exc:
        raise CLIError(
            f"swarmcore ui needs the [ui] extra ({exc.name} is missing): "
            "pip install 'swarmcore[ui]'"
        ) from exc
    token, remote = check_access(args, "SWARMCORE_UI_TOKEN")
    reader, path = _reader(args)
    sock = bind_socket(args.host, args.port)
    try:
        app = create_app(
            reader,
            store_path=path,
            database_url=args.database_url,
            allow_actions=args.allow_actions,
            token=token,
            allowed_hosts=allowed_hosts(args),
            evals=_evals(args),
        )
        url = url_of(args.host, sock)
        if remote:
            print(
                f"swarmcore: warning: serving runs to other machines on {args.host}, over plain "
                "HTTP; anyone with the token can read every stored task and output",
                file=sys.stderr,
            )
        shown = f"{url}?token=…" if token is not None else url
        print(f"swarmcore ui: serving {path or 'the engine database'} at {shown}", flush=True)
        if token is not None:
            print(f"open {url}?token=<your token> once; the browser keeps it", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        server.run(sockets=[sock])
    finally:
        sock.close()
        reader.close()
    return 0


def _evals(args: argparse.Namespace) -> EvalSource | None:
    if args.eval_report is not None and args.suite is None:
        raise CLIError("--eval-report needs --suite DIR (the suite the report is of)")
    if args.suite is None:
        return None
    from swarmcore._ui.evals import EvalSource

    if not args.suite.is_dir():
        raise CLIError(f"no suite directory {args.suite}; make one with `swarmcore eval add`")
    return EvalSource(args.suite, args.eval_report)


def _reader(args: argparse.Namespace) -> tuple[Any, Any]:
    if args.database_url:
        if args.store:
            raise CLIError("give --store or --database-url, not both")
        from swarmcore.cli._worker import engine_history

        return engine_history(args.database_url, "swarmcore ui --database-url"), None
    from swarmcore.store import SQLiteStore

    path = store_location(args)
    if not path.exists():
        raise CLIError(
            f"no run store at {path}: run a flow first (`swarmcore demo`), or name one with --store"
        )
    return SQLiteStore(path), path
