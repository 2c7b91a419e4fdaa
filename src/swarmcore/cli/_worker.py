"""``swarmcore worker``: serve a flow's enqueued runs from a durable engine until stopped.

The one place of the CLI that knows the durable engines, DBOS and Temporal (imported lazily):
the other commands reach an engine's database through :func:`engine_history`, a
reader typed by the protocols of :mod:`swarmcore.engines`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
from typing import Any, Protocol

from swarmcore._swarm import Swarm
from swarmcore.cli._errors import CLIError
from swarmcore.cli._targets import as_flow, load_target
from swarmcore.engines import ApprovalInbox, CanRequeue, Engine
from swarmcore.llm._types import CallSpec
from swarmcore.store import RunReader


class EngineHistory(RunReader, ApprovalInbox, CanRequeue, Protocol):
    """The runs of a durable engine's database: read, decided, handed back to its workers."""


def require_dbos(command: str) -> None:
    """Check that the ``dbos`` extra is installed, before ``command`` needs it.

    Raises:
        CLIError: DBOS or psycopg is missing; the message names the extra to install.
    """
    for module in ("dbos", "psycopg"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise CLIError(
                f"{command} needs the [dbos] extra ({exc.name or module} is missing): "
                "pip install 'swarmcore[dbos]'"
            ) from exc


def require_temporal(command: str) -> None:
    """Check that the ``temporal`` extra is installed, before ``command`` needs it.

    Raises:
        CLIError: temporalio is missing; the message names the extra to install.
    """
    try:
        importlib.import_module("temporalio")
    except ImportError as exc:
        raise CLIError(
            f"{command} needs the [temporal] extra (temporalio is missing): "
            "pip install 'swarmcore[temporal]'"
        ) from exc


def engine_history(database_url: str, command: str) -> EngineHistory:
    """The runs of the durable engine whose database is ``database_url``, for ``command``.

    ``temporal://HOST:PORT[/NAMESPACE]`` names a Temporal engine's server; any
    other URL, a DBOS engine's PostgreSQL database.

    Raises:
        CLIError: The engine's extra is not installed.
    """
    if database_url.startswith("temporal://"):
        require_temporal(command)
        from swarmcore.engines.temporal import TemporalHistory

        return TemporalHistory(database_url)
    require_dbos(command)
    from swarmcore.engines.dbos import DBOSHistory

    return DBOSHistory(database_url)


GRACE = 20.0
"""Default seconds a stopping worker lets its runs in flight finish (Kubernetes kills at 30)."""


def add_worker_parser(commands: Any) -> None:
    """The ``worker`` subcommand."""
    worker: argparse.ArgumentParser = commands.add_parser(
        "worker",
        help="serve a flow's enqueued runs (durable, on PostgreSQL or Temporal)",
        description="Serve the runs enqueued for a flow (swarm.enqueue) until SIGTERM or "
        "Ctrl-C, and recover the runs this worker id left in flight. On SIGTERM or Ctrl-C "
        "the worker takes no new run and lets its runs in flight finish for --grace "
        "seconds; those still running then stay pending (nothing is recorded as "
        "cancelled), and a worker restarted with the same --worker-id goes on with them, "
        "without repeating a finished agent or a recorded call; if none comes back within "
        "--adopt-after seconds, a live worker of the same flow adopts them. A second "
        "signal stops the worker at once, as kill -9 would. "
        "Needs the [dbos] extra: pip install 'swarmcore[dbos]'. With --engine temporal it "
        "serves the flow's Temporal task queue instead (the [temporal] extra), and on SIGTERM "
        "stops at once, its runs left to the other workers of the flow.",
    )
    worker.add_argument("target", help="FILE_OR_MODULE:NAME of a Flow, Agent or Swarm")
    worker.add_argument(
        "--engine",
        choices=["dbos", "temporal"],
        default="dbos",
        help="the durable engine: dbos (PostgreSQL) or temporal (a Temporal cluster; needs "
        "the [temporal] extra)",
    )
    worker.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="--engine temporal: the Temporal frontend (default: $SWARMCORE_TEMPORAL_ADDRESS, "
        "or the target Swarm's own engine's, else 127.0.0.1:7233)",
    )
    worker.add_argument(
        "--namespace", metavar="NAME", help="--engine temporal: the namespace (default: default)"
    )
    worker.add_argument(
        "--task-queue",
        metavar="NAME",
        help="--engine temporal: the prefix of the flow's task queue (default: swarmcore); "
        "clients that enqueue give their TemporalEngine the same",
    )
    worker.add_argument(
        "--database-url",
        metavar="URL",
        help="PostgreSQL URL of the engine's database (default: $SWARMCORE_DATABASE_URL, "
        "or the target Swarm's own engine)",
    )
    worker.add_argument(
        "--worker-id",
        metavar="ID",
        help="this worker's id, unique per live process; restart with the same id to "
        "recover its runs (default: the target's engine's, else 'local')",
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="run at most N runs at once in this worker (default: no limit)",
    )
    worker.add_argument(
        "--adopt-after",
        type=float,
        metavar="SECONDS",
        help="adopt the runs of a worker of this flow silent for longer than SECONDS "
        "(default: the engine's, 30); this worker is adopted likewise if it goes silent",
    )
    worker.add_argument(
        "--heartbeat",
        type=float,
        metavar="SECONDS",
        help="seconds between this worker's heartbeats (default: the engine's, 5)",
    )
    worker.add_argument(
        "--grace",
        type=float,
        default=GRACE,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, wait up to SECONDS for the runs in flight to finish "
        f"before handing the rest back (default: {GRACE:g}; keep it under your "
        "orchestrator's kill timeout)",
    )
    worker.set_defaults(handler=command_worker)


def command_worker(args: argparse.Namespace) -> int:
    """Serve the target's runs until a signal stops the worker."""
    if args.engine == "temporal":
        return _command_temporal(args)
    require_dbos("swarmcore worker")
    from swarmcore.engines.dbos import DBOSEngine

    target = load_target(args.target)
    engine = target.engine if isinstance(target, Swarm) else None
    url: str | None = args.database_url or os.environ.get("SWARMCORE_DATABASE_URL")
    if isinstance(engine, DBOSEngine) and (url is None or url == engine.database_url):
        swarm = target
    else:
        if url is None:
            raise CLIError(
                "the worker needs a database: --database-url postgresql://... (or "
                "$SWARMCORE_DATABASE_URL), or a target Swarm with engine=DBOSEngine(url)"
            )
        engine = DBOSEngine(url)
        swarm = _on_engine(target, engine)
    assert isinstance(swarm, Swarm)
    assert isinstance(engine, DBOSEngine)
    if args.worker_id:
        engine.worker_id = args.worker_id
    heartbeat: float = engine.heartbeat if args.heartbeat is None else args.heartbeat
    adopt_after: float | None = engine.adopt_after if args.adopt_after is None else args.adopt_after
    if not heartbeat > 0 or (adopt_after is not None and not adopt_after > heartbeat):
        raise CLIError(
            f"--heartbeat must be above 0 and --adopt-after above it, got {heartbeat:g} "
            f"and {adopt_after}"
        )
    engine.heartbeat, engine.adopt_after = heartbeat, adopt_after
    concurrency: int | None = args.concurrency
    if concurrency is not None and concurrency < 1:
        raise CLIError(f"--concurrency must be 1 or more, got {concurrency}")
    grace: float = args.grace
    if not 0 <= grace < float("inf"):
        raise CLIError(f"--grace takes seconds, 0 or more, got {grace:g}")
    return asyncio.run(_serve(swarm, engine, concurrency, grace))


def _command_temporal(args: argparse.Namespace) -> int:
    """``swarmcore worker --engine temporal``: serve the flow's task queue until a signal."""
    require_temporal("swarmcore worker --engine temporal")
    from swarmcore.engines.temporal import TemporalEngine

    target = load_target(args.target)
    own = target.engine if isinstance(target, Swarm) else None
    address: str | None = args.address or os.environ.get("SWARMCORE_TEMPORAL_ADDRESS")
    if isinstance(own, TemporalEngine) and (address is None or address == own.target):
        engine = own
        swarm = target
    else:
        engine = TemporalEngine(
            address or "127.0.0.1:7233",
            namespace=args.namespace or "default",
            task_queue=args.task_queue or "swarmcore",
        )
        swarm = _on_engine(target, engine)
    assert isinstance(swarm, Swarm)
    if args.worker_id:
        engine.worker_id = args.worker_id
    return asyncio.run(_serve_temporal(swarm, engine))


async def _serve_temporal(swarm: Swarm, engine: object) -> int:
    from swarmcore.engines.temporal import TemporalEngine
    from swarmcore.llm.backends import preload

    assert isinstance(engine, TemporalEngine)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await asyncio.to_thread(preload, _call_specs(swarm))
    await engine.launch()
    print(
        f"worker {engine.worker_id} serving {swarm.flow.expression()} on Temporal "
        f"{engine.target}, task queue {engine.queue_name(swarm)}; SIGTERM or Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await engine.shutdown()
    print(
        f"worker {engine.worker_id} stopped; Temporal hands its runs in flight to another "
        "worker of the flow",
        file=sys.stderr,
    )
    return 0


def _on_engine(target: object, engine: Engine) -> Swarm:
    if isinstance(target, Swarm):
        limits = target.budget
        return Swarm(
            target.flow,
            context_mode=target.context_mode,
            context_budget=target.context_budget,
            defaults=target.defaults,
            step_retries=target.step_retries,
            approve=target.approve,
            max_cost=limits.max_cost,
            max_tokens=limits.max_tokens,
            allow_unpriced=limits.allow_unpriced,
            engine=engine,
        )
    return Swarm(as_flow(target), engine=engine)  # pyright: ignore[reportArgumentType] -- a Flow or Agent


async def _serve(swarm: Swarm, engine: object, concurrency: int | None, grace: float) -> int:
    from swarmcore.engines.dbos import DBOSEngine
    from swarmcore.llm.backends import preload

    assert isinstance(engine, DBOSEngine)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    queue = engine.queue_name(swarm)
    # Import the model libraries before taking runs: a worker's first runs would
    # otherwise wait for them, holding the CPU its other runs need.
    await asyncio.to_thread(preload, _call_specs(swarm))
    await engine.launch(queues=[queue], concurrency=concurrency)
    print(
        f"worker {engine.worker_id} serving {swarm.flow.expression()} on queue {queue}; "
        "SIGTERM or Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        await stop.wait()
        for sig in (signal.SIGTERM, signal.SIGINT):
            # A second signal stops the worker at once, recording nothing, as kill -9 does.
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_DFL)
        print(
            f"worker {engine.worker_id} stopping: takes no new run, lets its runs in flight "
            f"finish for up to {grace:g} s (a second signal stops it now)",
            file=sys.stderr,
            flush=True,
        )
    finally:
        handed_back = await engine.shutdown(grace=grace)
    left = (
        f"{len(handed_back)} handed back ({', '.join(handed_back)}) for a worker restarted "
        f"with --worker-id {engine.worker_id}, or a live worker after --adopt-after, to finish"
        if handed_back
        else "none was left"
    )
    print(
        f"worker {engine.worker_id} stopped; runs in flight stay pending: {left}", file=sys.stderr
    )
    return 0


def _call_specs(swarm: Swarm) -> list[CallSpec]:
    """What the flow's agents send, enough to tell which model libraries they use."""
    from swarmcore.agent import Agent

    return [
        CallSpec(
            agent_name=node.name,
            model=node.model,
            settings=node.model_settings,
            fallback_models=node.fallback_models,
            api_base=node.api_base,
            api_key=node.api_key,
        )
        for node in swarm.flow.agents
        if isinstance(node, Agent)
    ]
