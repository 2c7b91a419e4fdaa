"""``swarmcore serve TARGET --a2a`` or ``--ag-ui``: a flow served over HTTP.

``--a2a`` serves it to other agents (Agent2Agent), ``--ag-ui`` to AG-UI front
ends; both listen by the same rules (``swarmcore.cli._listen``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from swarmcore._swarm import Swarm
from swarmcore.cli._errors import CLIError
from swarmcore.cli._listen import (
    add_allowed_host,
    allowed_hosts,
    bind_socket,
    check_access,
    url_of,
)
from swarmcore.cli._run import store_location
from swarmcore.cli._targets import as_flow, load_target

DEFAULT_PORT = 9000
TOKEN_VARIABLE = "SWARMCORE_A2A_TOKEN"
AG_UI_TOKEN_VARIABLE = "SWARMCORE_AG_UI_TOKEN"


def add_serve_parser(commands: Any) -> None:
    """The ``serve`` subcommand."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve a flow to other agents (A2A) or to AG-UI front ends",
        description="Serve the target flow. --a2a: as an A2A agent: its agent card at "
        "/.well-known/agent-card.json, a run per A2A task (the task id is the run id), progress "
        "streamed, tools that need approval asking the client (the [a2a] extra: pip install "
        "'swarmcore[a2a]'). --ag-ui: as an AG-UI agent at POST /: a run per RunAgentInput, "
        "streamed as AG-UI events, tools that need approval as interrupts (the [ag-ui] extra: "
        "pip install 'swarmcore[ag-ui]').",
    )
    serve.add_argument("target", help="the flow: path/to/file.py:NAME or package.module:NAME")
    protocol = serve.add_mutually_exclusive_group()
    protocol.add_argument("--a2a", action="store_true", help="speak the Agent2Agent protocol")
    protocol.add_argument(
        "--ag-ui", action="store_true", help="speak AG-UI, to agent front ends (CopilotKit...)"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the port (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    serve.add_argument(
        "--token",
        help="the bearer token every request but the card's must carry "
        f"(default: ${TOKEN_VARIABLE}, or ${AG_UI_TOKEN_VARIABLE} with --ag-ui); "
        "required with --allow-remote",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines can reach (then a token is required)",
    )
    add_allowed_host(serve)
    serve.add_argument(
        "--max-request-bytes",
        type=int,
        default=None,
        metavar="N",
        help="the largest request body taken (default: 10485760, 10 MiB); a larger one gets "
        "HTTP 413 and a JSON-RPC error",
    )
    serve.add_argument(
        "--keep-tasks",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a finished task stays readable (GetTask) before it is dropped from memory "
        "(default: 3600); its run stays in the store",
    )
    serve.add_argument(
        "--answer-within",
        type=float,
        default=None,
        metavar="SECONDS",
        help="--ag-ui: how long a run that asked for approval waits for the answer before it "
        "is cancelled (default: 3600)",
    )
    serve.add_argument("--name", help="the agent's name on its card (default: the flow)")
    serve.add_argument("--description", help="what the agent does, for its card")
    where = serve.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="record the runs in this store (default: $SWARMCORE_STORE, else "
        "~/.local/share/swarmcore/runs.db; a Swarm target keeps its own)",
    )
    where.add_argument("--no-store", action="store_true", help="do not record the runs")
    serve.set_defaults(handler=command_serve)


def command_serve(args: argparse.Namespace) -> int:
    """``swarmcore serve``: serve the target until interrupted."""
    if args.ag_ui:
        return _serve_ag_ui(args)
    if not args.a2a:
        raise CLIError("name the protocol to serve: --a2a (Agent2Agent) or --ag-ui (AG-UI)")
    try:
        import uvicorn  # noqa: F401  # pyright: ignore[reportUnusedImport] -- for the hint

        from swarmcore.a2a._server import to_a2a
    except ImportError as exc:
        raise CLIError(
            f"swarmcore serve --a2a needs the [a2a] extra ({exc.name} is missing): "
            "pip install 'swarmcore[a2a]'"
        ) from exc
    if args.answer_within is not None:
        raise CLIError("--answer-within is an AG-UI option: add --ag-ui, or leave it out")
    token, remote = check_access(args, TOKEN_VARIABLE)
    swarm = _swarm(args)
    bounds: dict[str, Any] = {}
    if args.max_request_bytes is not None:
        bounds["max_request_bytes"] = args.max_request_bytes
    if args.keep_tasks is not None:
        bounds["keep_tasks"] = args.keep_tasks
    app = to_a2a(
        swarm,
        name=args.name,
        description=args.description,
        token=token,
        allowed_hosts=allowed_hosts(args),
        **bounds,
    )
    return _listen(args, app, swarm, remote, "A2A", card=".well-known/agent-card.json")


def _swarm(args: argparse.Namespace) -> Swarm:
    """The Swarm to serve: the target's own, or one over its flow."""
    target = load_target(args.target)
    if isinstance(target, Swarm):
        return target  # its own store, hooks, budget and approval callback
    store = None if args.no_store else store_location(args)
    return Swarm(as_flow(target), store=store)


def _serve_ag_ui(args: argparse.Namespace) -> int:
    """``swarmcore serve TARGET --ag-ui``: the flow to AG-UI front ends, until interrupted."""
    try:
        import uvicorn  # noqa: F401  # pyright: ignore[reportUnusedImport] -- for the hint

        from swarmcore.ag_ui._server import to_ag_ui
    except ImportError as exc:
        raise CLIError(
            f"swarmcore serve --ag-ui needs the [ag-ui] extra ({exc.name} is missing): "
            "pip install 'swarmcore[ag-ui]'"
        ) from exc
    a2a_only = (
        ("--keep-tasks", args.keep_tasks),
        ("--name", args.name),
        ("--description", args.description),
    )
    for option, given in a2a_only:
        if given is not None:
            raise CLIError(f"{option} is an A2A option; --ag-ui has none such")
    token, remote = check_access(args, AG_UI_TOKEN_VARIABLE)
    swarm = _swarm(args)
    bounds: dict[str, Any] = {}
    if args.max_request_bytes is not None:
        bounds["max_request_bytes"] = args.max_request_bytes
    if args.answer_within is not None:
        bounds["answer_within"] = args.answer_within
    app = to_ag_ui(swarm, token=token, allowed_hosts=allowed_hosts(args), **bounds)
    return _listen(args, app, swarm, remote, "AG-UI")


def _listen(
    args: argparse.Namespace,
    app: Any,
    swarm: Swarm,
    remote: bool,
    protocol: str,
    *,
    card: str | None = None,
) -> int:
    """Serve ``app`` on the socket ``args`` name until interrupted, saying where first."""
    import uvicorn

    sock = bind_socket(args.host, args.port)
    try:
        url = url_of(args.host, sock)
        if remote:
            print(
                f"swarmcore: warning: serving {args.target} to other machines on {args.host}, "
                "over plain HTTP: put TLS in front of it",
                file=sys.stderr,
            )
        stored = getattr(swarm.store, "path", None)
        where = f", runs stored in {stored}" if stored is not None else ""
        print(f"swarmcore serve: {protocol} agent {args.target} at {url}{where}", flush=True)
        if card is not None:
            print(f"its card: {url}{card}", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
