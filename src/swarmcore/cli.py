"""The ``swarmcore`` command: a thin layer over the public API.

``swarmcore run FILE_OR_MODULE:FLOW "task"`` runs a flow defined in a script or
module; ``swarmcore graph FILE_OR_MODULE:FLOW`` prints it as Mermaid. Commands
that make no model call never import litellm, so they start at once.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from swarmcore import __version__
from swarmcore.agent import Agent
from swarmcore.errors import SwarmError
from swarmcore.events import Hook
from swarmcore.flow import Flow
from swarmcore.swarm import Swarm

__all__ = ["main"]


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def load_target(spec: str) -> Flow | Agent | Swarm:
    """Load ``path/to/file.py:name`` or ``package.module:name``.

    Raises:
        CLIError: The spec is malformed, the file or attribute is missing, or
            the object is not a Flow, Agent or Swarm.
    """
    location, sep, attr = spec.rpartition(":")
    if not sep or not location or not attr:
        raise CLIError(f"expected FILE_OR_MODULE:NAME (e.g. flows.py:flow), got {spec!r}")
    if location.endswith(".py") or Path(location).is_file():
        path = Path(location)
        if not path.is_file():
            raise CLIError(f"no such file: {location}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise CLIError(f"cannot import {location}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.parent.resolve()))
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(location)
        except ImportError as exc:
            raise CLIError(f"cannot import module {location!r}: {exc}") from exc
    if not hasattr(module, attr):
        raise CLIError(f"{location} has no attribute {attr!r}")
    target: object = getattr(module, attr)
    if not isinstance(target, Flow | Agent | Swarm):
        raise CLIError(f"{spec} is a {type(target).__name__}, not a Flow, Agent or Swarm")
    return target


def _command_run(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    flow = target.flow if isinstance(target, Swarm) else target
    mode = args.context_mode or (target.context_mode if isinstance(target, Swarm) else "pull")
    hooks: list[Hook] = []
    if not args.quiet:
        from swarmcore.console import ConsoleProgress

        hooks.append(ConsoleProgress(verbosity=args.verbosity))
    swarm = Swarm(
        flow,
        context_mode=mode,
        hooks=hooks,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
    )
    if args.dry_run:
        report = asyncio.run(Swarm(flow, context_mode=mode).dry_run(args.task))
        print(report.table())
        return 0
    result = asyncio.run(swarm.run(args.task))
    print(result.output)
    if args.quiet:
        print(
            f"\n[{len(result.history)} agents, {result.token_usage.total_tokens} tokens, "
            f"{result.duration_seconds:.2f}s]",
            file=sys.stderr,
        )
    return 0


def _command_graph(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    flow = target.flow if isinstance(target, Swarm) else target
    if isinstance(flow, Agent):
        flow = Flow([flow])
    print(flow.expression() if args.format == "text" else flow.to_mermaid())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swarmcore", description="Run and inspect swarmcore flows."
    )
    parser.add_argument("--version", action="version", version=f"swarmcore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a flow on a task")
    run.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    run.add_argument("task", help="the task to run the flow on")
    run.add_argument("--context-mode", choices=["pull", "push"], help="override the context mode")
    run.add_argument(
        "--verbosity",
        choices=["minimal", "summary", "detailed", "debug"],
        default="summary",
        help="how much progress to show on stderr (default: summary)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress; print only the output")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="count model calls and prompt tokens on the offline model; spend nothing",
    )
    run.add_argument("--max-cost", type=float, help="stop before spending more than this (USD)")
    run.add_argument("--max-tokens", type=int, help="stop before spending more tokens than this")
    run.set_defaults(handler=_command_run)
    graph = commands.add_parser("graph", help="print a flow as Mermaid or as an expression")
    graph.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    graph.add_argument("--format", choices=["mermaid", "text"], default="mermaid")
    graph.set_defaults(handler=_command_graph)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarmcore`` console script."""
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (CLIError, SwarmError) as exc:
        print(f"swarmcore: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
