"""``swarmcore run`` and ``swarmcore demo``, and what every command that runs a flow shares."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmcore._checks import check_number
from swarmcore._flow import Flow
from swarmcore._prompt import MissingVariables
from swarmcore._swarm import ContextMode, Swarm
from swarmcore._tools import ApprovalRequest, Approver, Tool
from swarmcore.agent import Agent
from swarmcore.cli._errors import CLIError
from swarmcore.cli._format import one_line, resume_command, shorten, ui_command
from swarmcore.cli._targets import as_flow, load_target, on_model
from swarmcore.errors import SwarmError, UserError
from swarmcore.events import Event, Hook, RunStarted
from swarmcore.modes import DEFAULT_CONTEXT_MODE
from swarmcore.store import SQLiteStore, default_store_path

if TYPE_CHECKING:
    from swarmcore.results import SwarmResult


def store_location(args: argparse.Namespace) -> Path:
    """The run store the command names (``--store``), else the default one."""
    store: Path | None = args.store
    return store if store is not None else default_store_path()


def progress_hooks(args: argparse.Namespace) -> list[Hook]:
    """The console progress hook, unless ``--quiet``."""
    if args.quiet:
        return []
    from swarmcore.console import ConsoleProgress

    return [ConsoleProgress(verbosity=args.verbosity)]


def execute(
    swarm: Swarm,
    start: Callable[[Swarm], Coroutine[Any, Any, SwarmResult]],
    *,
    quiet: bool,
    store_path: Path | None,
) -> int:
    """Run ``start(swarm)``: the output on stdout; the run id, or the error, on stderr.

    With ``quiet``, a run that succeeds writes nothing to stderr; a failure is
    still reported there.
    """
    started: list[str] = []

    def remember(event: Event) -> None:
        started.append(event.run_id)

    swarm.on(RunStarted)(remember)
    try:
        result = asyncio.run(start(swarm))
    except MissingVariables as exc:  # said as the command line takes them
        used = "; ".join(
            f"{{{name}}} (used by {', '.join(repr(a) for a in agents)})"
            for name, agents in exc.used_by.items()
        )
        flags = " ".join(f"--var {name}=..." for name in exc.used_by)
        raise CLIError(f"missing prompt variables: {used}; pass {flags}") from None
    except UserError:
        raise
    except SwarmError as exc:
        run_id = exc.partial.run_id if exc.partial and exc.partial.run_id else None
        _fail(exc, run_id or (started[0] if started else None), store_path)
        return 1
    except KeyboardInterrupt:
        _fail("interrupted", started[0] if started else None, store_path)
        return 130
    print(result.output)
    if store_path is not None and not quiet:  # quiet: stderr stays empty on success
        print(f"run {result.run_id} stored in {store_path}", file=sys.stderr)
        print(f"see it in a browser: {ui_command(store_path)}", file=sys.stderr)
    return 0


def budget_number(*, whole: bool) -> Callable[[str], float]:
    """An argparse type for ``--max-cost`` (``whole=False``) or ``--max-tokens``.

    ``float("nan")`` and ``float("inf")`` parse, and a NaN budget would stop
    nothing, so the value is checked by the same rule as ``Swarm(max_cost=...)``.
    """

    def parse(text: str) -> float:
        try:
            value = int(text) if whole else float(text)
            check_number("", "budget", value, whole=whole)
        except (ValueError, UserError):
            kind = "a positive whole number" if whole else "a positive number of USD, e.g. 0.50"
            raise argparse.ArgumentTypeError(
                f"must be {kind}, got {shorten(text, 40)!r}; leave the flag out for no budget"
            ) from None
        return value

    return parse


def context_budget(text: str) -> int:
    """An argparse type for ``--context-budget``: a whole number of tokens above 0."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of tokens above 0, e.g. 1500, got {shorten(text, 40)!r}"
        )
    return value


def _parse_vars(items: Sequence[str]) -> dict[str, str]:
    variables: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise CLIError(f"--var takes NAME=VALUE (e.g. --var topic=caching), got {item!r}")
        variables[name.strip()] = value
    return variables


def agent_settings(target: object) -> dict[str, Any]:
    """What a target Swarm says about running its agents: its defaults and step retries."""
    if not isinstance(target, Swarm):
        return {}
    return {"defaults": target.defaults, "step_retries": target.step_retries}


def approver(target: object, flow: Flow) -> Approver | None:
    """The target Swarm's approval callback; else, for tools that need one, ask on the terminal."""
    if isinstance(target, Swarm) and target.approve is not None:
        return target.approve
    needs = any(
        t.requires_approval
        for a in flow.agents
        if isinstance(a, Agent)
        for t in a.tools
        if isinstance(t, Tool)
    )
    if not needs or not sys.stdin.isatty():
        return None  # none needed, or no one to ask: the run fails before any model call
    lock = asyncio.Lock()

    async def ask(request: ApprovalRequest) -> bool:
        arguments = json.dumps(request.arguments)
        prompt = f"\nallow {request.agent_name} to call {request.tool_name}({arguments})? [y/N] "
        async with lock:  # one question at a time, even from parallel agents
            answer = await asyncio.to_thread(input, prompt)
        return answer.strip().lower() in ("y", "yes")

    return ask


def _fail(error: object, run_id: str | None, store_path: Path | None) -> None:
    print(f"swarmcore: error: {one_line(str(error))}", file=sys.stderr)
    if run_id and store_path is not None:
        if _recorded(store_path, run_id):
            print(f"resume with: {resume_command(run_id, store_path)}", file=sys.stderr)
        else:  # the store failed before the run's start was written: nothing to resume
            print("the run was not recorded: run it again", file=sys.stderr)


def _recorded(store_path: Path, run_id: str) -> bool:
    try:
        store = SQLiteStore(store_path)
    except SwarmError:
        return False
    try:
        return store.get_run(run_id) is not None
    except SwarmError:
        return False
    finally:
        store.close()


def command_run(args: argparse.Namespace) -> int:
    """``swarmcore run``: run the target flow on the task (or dry-run it)."""
    target = load_target(args.target)
    flow = as_flow(target)
    if args.model:
        flow = on_model(flow, args.model)
    mode: ContextMode = args.context_mode or (
        target.context_mode if isinstance(target, Swarm) else DEFAULT_CONTEXT_MODE
    )
    budget: int | None = args.context_budget
    if budget is None and isinstance(target, Swarm) and mode == "auto":
        budget = target.context_budget  # the target's own budget, unless the mode was changed
    variables = _parse_vars(args.var or [])
    if args.dry_run:
        rehearsal = Swarm(flow, context_mode=mode, context_budget=budget)
        report = asyncio.run(rehearsal.dry_run(args.task, variables=variables))
        print(report.table())
        return 0
    store_path = None if args.no_store else store_location(args)
    store = None if store_path is None else SQLiteStore(store_path)
    metadata = {"target": args.target, "model": args.model, "cwd": os.getcwd()}
    try:
        swarm = Swarm(
            flow,
            context_mode=mode,
            context_budget=budget,
            **agent_settings(target),
            hooks=progress_hooks(args),
            max_cost=args.max_cost,
            max_tokens=args.max_tokens,
            store=store,
            approve=approver(target, flow),
        )
        return execute(
            swarm,
            lambda s: s.run(args.task, variables=variables, metadata=metadata),
            quiet=args.quiet,
            store_path=store_path,
        )
    finally:
        if store is not None:
            store.close()


def command_demo(args: argparse.Namespace) -> int:
    """``swarmcore demo``: run the demo flow, on the offline model when no key is set."""
    from swarmcore.demo import DEFAULT_TASK, build_flow
    from swarmcore.testing import choose_model

    model, notice = choose_model()
    if not args.quiet:
        print(notice, file=sys.stderr)
    demo = build_flow(model)
    store_path = None if args.no_store else store_location(args)
    store = None if store_path is None else SQLiteStore(store_path)
    task: str = args.task or DEFAULT_TASK
    metadata = {"target": None, "demo": True, "model": model, "cwd": os.getcwd()}
    try:
        swarm = Swarm(
            demo.flow, context_mode=demo.context_mode, hooks=progress_hooks(args), store=store
        )
        return execute(
            swarm,
            lambda s: s.run(task, metadata=metadata),
            quiet=args.quiet,
            store_path=store_path,
        )
    finally:
        if store is not None:
            store.close()
