"""The ``swarmcore`` command: a thin layer over the public API.

```
swarmcore run FILE_OR_MODULE:FLOW "task"    run a flow (stored, so it can be resumed)
swarmcore demo ["task"]                     the demo flow; offline when no key is set
swarmcore runs list | show | resume | prune stored runs
swarmcore graph FILE_OR_MODULE:FLOW         draw a flow: Mermaid, expression or tree
```

Runs are stored in ``$SWARMCORE_STORE`` (else the user's data directory) unless
``--no-store`` is given. A user error prints one line and exits 2; a run that
fails (an agent, a group, a budget) prints its error and how to resume it, and
exits 1. Commands that make no model call never import litellm, so they start
at once: heavy imports live inside the command functions.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from swarmcore import __version__
from swarmcore.agent import Agent
from swarmcore.control import Loop, Plan, Route
from swarmcore.errors import SwarmError, UserError
from swarmcore.events import Event, Hook, RunStarted
from swarmcore.flow import Flow, FlowNode, Group, Step
from swarmcore.models import Decision, format_cost, sum_cost
from swarmcore.policies import Quorum
from swarmcore.store import RunRecord, SQLiteStore, default_store_path
from swarmcore.swarm import ContextMode, Swarm
from swarmcore.tools import ApprovalRequest, Approver, Tool

if TYPE_CHECKING:
    from swarmcore.models import SwarmResult

__all__ = ["main"]

_VERBOSITIES = ("minimal", "summary", "detailed", "debug")
_PREVIEW_CHARS = 60

_loaded_modules: list[ModuleType] = []
"""Flow files loaded by this process: kept alive, since test models are held weakly."""


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


# --- loading flows -------------------------------------------------------------------


def load_target(spec: str, *, cwd: Path | None = None) -> Flow | Agent | Swarm:
    """Load ``path/to/file.py:name`` or ``package.module:name``.

    Args:
        spec: The target, as given on the command line.
        cwd: The directory a relative file path (and a module) is found from;
            the current directory by default.

    Raises:
        CLIError: The spec is malformed, the file or attribute is missing, the
            file fails to import, or the object is not a Flow, Agent or Swarm.
    """
    location, sep, attr = spec.rpartition(":")
    if not sep or not location or not attr:
        raise CLIError(f"expected FILE_OR_MODULE:NAME (e.g. flows.py:flow), got {spec!r}")
    base = cwd or Path.cwd()
    path = base / location
    if location.endswith(".py") or path.is_file():
        module = _load_file(location, path)
    else:
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
        try:
            module = importlib.import_module(location)
        except ImportError as exc:
            raise CLIError(f"cannot import module {location!r}: {exc}") from exc
        except Exception as exc:
            raise CLIError(f"importing {location} raised {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise CLIError(f"{location} has no attribute {attr!r}")
    target: object = getattr(module, attr)
    if not isinstance(target, Flow | Agent | Swarm):
        raise CLIError(f"{spec} is a {type(target).__name__}, not a Flow, Agent or Swarm")
    return target


def _load_file(location: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise CLIError(f"no such file: {location}")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise CLIError(f"cannot import {location}")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise CLIError(f"importing {location} raised {type(exc).__name__}: {exc}") from exc
    _loaded_modules.append(module)
    return module


def _as_flow(target: Flow | Agent | Swarm) -> Flow:
    if isinstance(target, Swarm):
        return target.flow
    return Flow([target]) if isinstance(target, Agent) else target


def _model_name(model: str) -> str:
    """``model``, with ``offline`` (or the offline model's string) registered in this process."""
    from swarmcore.testing import offline_model

    offline = offline_model()
    return offline if model in ("offline", offline) else model


def _on_model(flow: Flow, model: str) -> Flow:
    """``flow`` with every agent on ``model`` and no fallback models."""
    name = _model_name(model)

    def swap(node: FlowNode) -> FlowNode:
        if not isinstance(node, Agent):
            raise CLIError(f"--model applies to Agents; {node!r} is not one")
        return node.clone(model=name, fallback_models=())

    return flow.map_agents(swap)


# --- running -------------------------------------------------------------------------


def _store_path(args: argparse.Namespace) -> Path:
    store: Path | None = args.store
    return store if store is not None else default_store_path()


def _progress_hooks(args: argparse.Namespace) -> list[Hook]:
    if args.quiet:
        return []
    from swarmcore.console import ConsoleProgress

    return [ConsoleProgress(verbosity=args.verbosity)]


def _execute(
    swarm: Swarm,
    start: Callable[[Swarm], Coroutine[Any, Any, SwarmResult]],
    *,
    quiet: bool,
    store_path: Path | None,
) -> int:
    """Run ``start(swarm)``: the output on stdout; the run id, or the error, on stderr."""
    started: list[str] = []

    def remember(event: Event) -> None:
        started.append(event.run_id)

    swarm.add_hook(remember, RunStarted)
    try:
        result = asyncio.run(start(swarm))
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
    if quiet:
        print(
            f"\n[{len(result.history)} agents, {result.token_usage.total_tokens} tokens, "
            f"{result.duration_seconds:.2f}s]",
            file=sys.stderr,
        )
    if store_path is not None:
        print(f"run {result.run_id} stored in {store_path}", file=sys.stderr)
    return 0


def _parse_vars(items: Sequence[str]) -> dict[str, str]:
    variables: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise CLIError(f"--var takes NAME=VALUE (e.g. --var topic=caching), got {item!r}")
        variables[name.strip()] = value
    return variables


def _approver(target: object, flow: Flow) -> Approver | None:
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
    print(f"swarmcore: error: {_one_line(str(error))}", file=sys.stderr)
    if run_id and store_path is not None:
        print(f"resume with: swarmcore runs resume {run_id}", file=sys.stderr)


def _command_run(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    flow = _as_flow(target)
    if args.model:
        flow = _on_model(flow, args.model)
    mode: ContextMode = args.context_mode or (
        target.context_mode if isinstance(target, Swarm) else "pull"
    )
    variables = _parse_vars(args.var or [])
    if args.dry_run:
        report = asyncio.run(Swarm(flow, context_mode=mode).dry_run(args.task, variables=variables))
        print(report.table())
        return 0
    store_path = None if args.no_store else _store_path(args)
    store = None if store_path is None else SQLiteStore(store_path)
    metadata = {"target": args.target, "model": args.model, "cwd": os.getcwd()}
    try:
        swarm = Swarm(
            flow,
            context_mode=mode,
            hooks=_progress_hooks(args),
            max_cost=args.max_cost,
            max_tokens=args.max_tokens,
            store=store,
            approve=_approver(target, flow),
        )
        return _execute(
            swarm,
            lambda s: s.run(args.task, variables=variables, metadata=metadata),
            quiet=args.quiet,
            store_path=store_path,
        )
    finally:
        if store is not None:
            store.close()


def _command_demo(args: argparse.Namespace) -> int:
    from swarmcore.demo import DEFAULT_TASK, build_flow
    from swarmcore.testing import choose_model

    model, notice = choose_model()
    print(notice, file=sys.stderr)
    demo = build_flow(model)
    store_path = None if args.no_store else _store_path(args)
    store = None if store_path is None else SQLiteStore(store_path)
    task: str = args.task or DEFAULT_TASK
    metadata = {"target": None, "demo": True, "model": model, "cwd": os.getcwd()}
    try:
        swarm = Swarm(
            demo.flow, context_mode=demo.context_mode, hooks=_progress_hooks(args), store=store
        )
        return _execute(
            swarm,
            lambda s: s.run(task, metadata=metadata),
            quiet=args.quiet,
            store_path=store_path,
        )
    finally:
        if store is not None:
            store.close()


# --- stored runs ---------------------------------------------------------------------


def _open_store(path: Path) -> SQLiteStore:
    """The store at ``path``, which must exist (reading never creates one)."""
    if not path.is_file():
        raise CLIError(f"no run store at {path} (runs are stored there by `swarmcore run`)")
    return SQLiteStore(path)


def _get_run(store: SQLiteStore, run_id: str, path: Path) -> RunRecord:
    if not run_id.strip():
        raise CLIError("RUN_ID is empty; list the runs with `swarmcore runs list`")
    record = store.get_run(run_id.strip())
    if record is None:
        raise CLIError(f"no run {run_id!r} in {path}; list them with `swarmcore runs list`")
    return record


def _command_runs_list(args: argparse.Namespace) -> int:
    path = _store_path(args)
    if args.limit < 1:
        raise CLIError(f"--limit must be 1 or more, got {args.limit}")
    if not path.is_file():
        print(f"no runs stored in {path}", file=sys.stderr)
        return 0
    store = SQLiteStore(path)
    try:
        runs = store.list_runs(limit=args.limit)
    finally:
        store.close()
    if not runs:
        print(f"no runs stored in {path}", file=sys.stderr)
        return 0
    header = ("id", "status", "agents", "started", "duration", "flow", "task")
    rows = [
        (
            r.run_id[:12],
            r.status,
            f"{r.agents_done}/{r.agents_total}",
            _local_time(r.started_at),
            _duration(r.started_at, r.ended_at),
            _shorten(r.flow, 50),
            _shorten(r.task, 40),
        )
        for r in runs
    ]
    print(_table(header, rows, right={2, 4}))
    return 0


def _command_runs_show(args: argparse.Namespace) -> int:
    path = _store_path(args)
    store = _open_store(path)
    try:
        record = _get_run(store, args.run_id, path)
    finally:
        store.close()
    metadata = _metadata(record)
    header = [
        ("run", record.run_id),
        ("flow", record.flow),
        ("task", _shorten(record.task, 200)),
        ("status", record.status),
        ("started", _local_time(record.started_at)),
        ("duration", _duration(record.started_at, record.ended_at)),
    ]
    if record.error:
        header.append(("error", _shorten(record.error, 200)))
    origin = _origin(metadata)
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
    if record.status != "succeeded" and origin:
        print(f"\nresume with: swarmcore runs resume {record.run_id}")
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
    return text + (f": {_shorten(decision.detail, 80)}" if decision.detail else "")


def _agent_table(record: RunRecord) -> str:
    results = {r.agent_name: r for r in record.results}
    failures = {f.agent_name: f for f in record.failures}
    header = ("agent", "status", "tokens", "cost", "time", "output")
    rows: list[tuple[str, ...]] = []
    order, optional = _agent_order(record)
    for name in order:
        result = results.get(name)
        failure = failures.get(name)
        if result is not None:
            rows.append(
                (
                    name,
                    "done",
                    f"{result.token_usage.total_tokens:,}",
                    format_cost(result.cost),
                    f"{result.duration_seconds:.1f}s",
                    _preview(result.output),
                )
            )
        elif failure is not None:
            kind = failure.error_type.lower() if failure.cancelled else "failed"
            status = kind if failure.cancelled else f"failed ({failure.error_type})"
            rows.append((name, status, "-", "-", "-", _preview(failure.message)))
        else:
            rows.append((name, "pending", "-", "-", "-", ""))
    done = list(results.values())
    rows.append(
        (
            "total",
            f"{len(done)} done" if optional else f"{len(done)}/{record.agents_total} done",
            f"{sum(r.token_usage.total_tokens for r in done):,}",
            format_cost(sum_cost([r.cost for r in done])) if done else "-",
            f"{sum(r.duration_seconds for r in done):.1f}s",
            "",
        )
    )
    return _table(header, rows, right={2, 3, 4}, rule_before_last=True)


def _agent_order(record: RunRecord) -> tuple[list[str], bool]:
    """Agent names in flow order, from the stored shape (then any the shape lacks).

    Agents inside routes, loops and plans are listed only when they ran (a
    loop's as its iterations, ``w#1``, ``w#2``...). Also says whether the flow
    had any such agents, so that not every agent was expected to run.
    """
    ran = [r.agent_name for r in record.results] + [f.agent_name for f in record.failures]
    names: list[str] = []
    optional = False

    def add(name: str, maybe: bool) -> None:
        runs = [n for n in ran if n.partition("#")[0] == name and "#" in n]
        for n in runs or ([name] if not maybe or name in ran else []):
            if n not in names:
                names.append(n)

    def walk(item: object, maybe: bool) -> None:
        nonlocal optional
        if isinstance(item, str):
            add(item, maybe)
        elif isinstance(item, list):
            parts: list[object] = item  # pyright: ignore[reportUnknownVariableType]
            for part in parts:
                walk(part, maybe)
        elif isinstance(item, dict):
            node: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
            if "group" in node:
                walk(node["group"], maybe)
                return
            optional = True
            for part in _control_parts(node):
                walk(part, True)

    try:
        walk(json.loads(record.shape), False)
    except ValueError:
        names.clear()
    return _with_runs(names, ran), optional


def _with_runs(names: list[str], ran: list[str]) -> list[str]:
    """``names``, a loop's iterations in the order they ran (w#1, c#1, w#2...), then the rest."""
    iterations = iter(sorted((n for n in names if "#" in n), key=ran.index))
    ordered = [next(iterations) if "#" in n else n for n in names]
    return ordered + [n for n in ran if n not in ordered]


def _control_parts(node: dict[str, Any]) -> list[object]:
    """What a route, loop or plan in a stored shape holds, in flow order."""
    if "route" in node:
        router = [] if node.get("by") == "predicate" else [str(node.get("by"))]
        return [*router, *dict(node.get("branches") or {}).values()]
    if "loop" in node:
        return [node.get("body"), *([str(node["judge"])] if node.get("judge") else [])]
    if "plan" in node:
        return [str(node.get("planner")), node.get("agents")]
    return []


def _metadata(record: RunRecord) -> dict[str, Any]:
    metadata: object = record.settings.get("metadata")
    return metadata if isinstance(metadata, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _origin(metadata: dict[str, Any]) -> str:
    """How the CLI started the run, for people; empty when it did not."""
    model = metadata.get("model")
    if metadata.get("demo"):
        return f"swarmcore demo (model {model})"
    target = metadata.get("target")
    if not isinstance(target, str):
        return ""
    return f"{target} (model {model})" if model else target


def _command_runs_resume(args: argparse.Namespace) -> int:
    path = _store_path(args)
    store = _open_store(path)
    try:
        record = _get_run(store, args.run_id, path)
        metadata = _metadata(record)
        flow = _stored_flow(record, metadata)
        model = metadata.get("model")
        if isinstance(model, str) and model:
            flow = _on_model(flow, model)
        mode: ContextMode = "push" if record.settings.get("context_mode") == "push" else "pull"
        swarm = Swarm(
            flow,
            context_mode=mode,
            hooks=_progress_hooks(args),
            max_cost=_number(record.settings.get("max_cost")),
            max_tokens=_whole(record.settings.get("max_tokens")),
            store=store,
            approve=_approver(None, flow),
        )
        run_id = record.run_id
        return _execute(swarm, lambda s: s.resume(run_id), quiet=args.quiet, store_path=path)
    finally:
        store.close()


def _stored_flow(record: RunRecord, metadata: dict[str, Any]) -> Flow:
    """The flow that made ``record``, rebuilt as the CLI started it."""
    if metadata.get("demo"):
        from swarmcore.demo import build_flow

        model = metadata.get("model")
        return build_flow(_model_name(model) if isinstance(model, str) else "offline").flow
    target = metadata.get("target")
    if not isinstance(target, str):
        raise CLIError(
            f"run {record.run_id[:12]} was not started by the swarmcore command, so there is "
            f"no flow to reload; resume it from Python: Swarm(flow, store=...).resume("
            f"{record.run_id[:12]!r})"
        )
    cwd = metadata.get("cwd")
    return _as_flow(load_target(target, cwd=Path(cwd) if isinstance(cwd, str) else None))


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _command_runs_prune(args: argparse.Namespace) -> int:
    keep: int | None = args.keep
    days: float | None = args.older_than
    if keep is None and days is None:
        raise CLIError("runs prune needs --keep N or --older-than DAYS (or both)")
    if keep is not None and keep < 0:
        raise CLIError(f"--keep must be 0 or more, got {keep}")
    if days is not None and days < 0:
        raise CLIError(f"--older-than must be 0 or more days, got {days:g}")
    path = _store_path(args)
    deleted = 0
    if path.is_file():
        store = SQLiteStore(path)
        try:
            older = None if days is None else days * 86_400
            deleted = store.prune(keep_last=keep, older_than=older)
        finally:
            store.close()
    print(f"deleted {deleted} run{'s' * (deleted != 1)} from {path}")
    return 0


# --- graph ---------------------------------------------------------------------------


def _command_graph(args: argparse.Namespace) -> int:
    flow = _as_flow(load_target(args.target))
    if args.format == "text":
        print(flow.expression())
    elif args.format == "tree":
        print(tree(flow))
    else:
        print(flow.to_mermaid())
    return 0


def tree(flow: Flow) -> str:
    """``flow`` drawn for a terminal, top to bottom in the order things run.

    Steps of a sequence are stacked; a parallel group is a ``parallel`` line
    with its members beneath it, and a branch (a member that is a sequence)
    stacks its steps along its member's line::

        a >> (b | c) >> d        (x >> y) | z
        a                        parallel
        parallel                 ├─ x
        ├─ b                     │  y
        └─ c                     └─ z
        d
    """
    return "\n".join(_tree_lines(flow.step_tuple))


def _tree_lines(steps: tuple[Step, ...]) -> list[str]:
    lines: list[str] = []
    for step in steps:
        if isinstance(step, Group):
            drawn = [
                _tree_lines(m.step_tuple) if isinstance(m, Flow) else _tree_lines((m,))
                for m in step
            ]
            lines += _under(_group_label(step), drawn)
        elif isinstance(step, Route):
            by = f"router {step.router.name}" if step.router is not None else "predicate"
            drawn = [_labelled(k, _tree_lines(f.step_tuple)) for k, f in step.branches.items()]
            lines += _under(f"{step.name} (route, by {by})", drawn)
        elif isinstance(step, Loop):
            until = f", judge {step.judge.name}" if step.judge is not None else ""
            until = until or (", until a predicate" if step.until is not None else "")
            label = f"{step.name} (loop, at most {step.max_iterations}{until})"
            lines += _under(label, [_tree_lines(step.body.step_tuple)])
        elif isinstance(step, Plan):
            names = ", ".join(a.name for a in step.agents)
            lines.append(f"{step.planner.name} (plans from {names})")
        else:
            lines.append(step.name)
    return lines


def _under(label: str, children: list[list[str]]) -> list[str]:
    """``label`` with each child's lines beneath it on a tree branch."""
    lines = [label]
    for index, drawn in enumerate(children):
        last = index == len(children) - 1
        first, rest = ("└─ ", "   ") if last else ("├─ ", "│  ")
        lines.append(first + drawn[0])
        lines.extend((rest + line).rstrip() for line in drawn[1:])
    return lines


def _labelled(label: str, lines: list[str]) -> list[str]:
    pad = " " * (len(label) + 2)
    return [f"{label}: {lines[0]}", *(pad + line for line in lines[1:])]


def _group_label(group: Group) -> str:
    details: list[str] = []
    if isinstance(group.policy, Quorum):
        details.append(f"quorum {group.policy.k} of {len(group)}")
    elif group.policy == "best_effort":
        details.append("best effort")
    if group.retries is not None:
        details.append(f"retries {group.retries}")
    return "parallel" + (f" ({', '.join(details)})" if details else "")


# --- formatting ----------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int) -> str:
    line = _one_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _preview(text: str) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _shorten(first, _PREVIEW_CHARS)


def _local_time(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def _duration(started: float, ended: float | None) -> str:
    if ended is None:
        return "-"
    seconds = max(ended - started, 0.0)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _table(
    header: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
    *,
    right: set[int],
    rule_before_last: bool = False,
) -> str:
    """Plain columns: a header, a rule, the rows (``right`` columns right-aligned)."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    body = [line(row) for row in rows]
    if rule_before_last and body:
        body.insert(len(body) - 1, rule)
    return "\n".join([line(header), rule, *body])


# --- arguments -----------------------------------------------------------------------


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


def _add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verbosity",
        choices=_VERBOSITIES,
        default="summary",
        help="how much progress to show on stderr (default: summary)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress; print only the output")


def _parser() -> argparse.ArgumentParser:
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
    demo.set_defaults(handler=_command_demo)

    _add_runs_parser(commands)

    graph = commands.add_parser(
        "graph",
        help="draw a flow as Mermaid, an expression or a tree",
        description="Print a flow: Mermaid (default), the >>/| expression, or a terminal tree.",
    )
    graph.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    graph.add_argument("--format", choices=["mermaid", "text", "tree"], default="mermaid")
    graph.set_defaults(handler=_command_graph)
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
    run.add_argument("--context-mode", choices=["pull", "push"], help="override the context mode")
    _add_store(run, optional=True)
    _add_progress(run)
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="count model calls and prompt tokens on the offline model; spend nothing",
    )
    run.add_argument("--max-cost", type=float, help="stop before spending more than this (USD)")
    run.add_argument("--max-tokens", type=int, help="stop before spending more tokens than this")
    run.add_argument(
        "--var",
        action="append",
        metavar="NAME=VALUE",
        help="a value for a {NAME} placeholder in instructions (repeatable)",
    )
    run.set_defaults(handler=_command_run)


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
    listing.set_defaults(handler=_command_runs_list)

    show = actions.add_parser(
        "show",
        help="one run and each of its agents",
        description="A run's status, and each agent's status, tokens, cost, time and output.",
    )
    show.add_argument("run_id", metavar="RUN_ID", help="the run's id or a unique prefix of it")
    _add_store(show, optional=False)
    show.set_defaults(handler=_command_runs_show)

    resume = actions.add_parser(
        "resume",
        help="continue a failed or interrupted run",
        description="Continue a run started by `swarmcore run`: its flow is loaded again from "
        "the same target (and --model); agents that finished are not run again.",
    )
    resume.add_argument("run_id", metavar="RUN_ID", help="the run's id or a unique prefix of it")
    _add_store(resume, optional=False)
    _add_progress(resume)
    resume.set_defaults(handler=_command_runs_resume)

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
    prune.set_defaults(handler=_command_runs_prune)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarmcore`` console script."""
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (CLIError, UserError) as exc:
        print(f"swarmcore: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except SwarmError as exc:  # a failure outside a run (the runs report their own)
        print(f"swarmcore: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
