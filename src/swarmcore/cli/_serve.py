"""``swarmcore serve TARGET --a2a``: a flow served as an Agent2Agent agent over HTTP."""

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


def add_serve_parser(commands: Any) -> None:
    """The ``serve`` subcommand."""
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve",
        help="serve a flow to other agents (Agent2Agent protocol)",
        description="Serve the target flow as an A2A agent: its agent card at "
        "/.well-known/agent-card.json, a run per A2A task (the task id is the run id), progress "
        "streamed, tools that need approval asking the client. Needs the [a2a] extra: "
        "pip install 'swarmcore[a2a]'.",
    )
    serve.add_argument("target", help="the flow: path/to/file.py:NAME or package.module:NAME")
    serve.add_argument(
        "--a2a", action="store_true", help="speak the Agent2Agent protocol (the one served today)"
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
        f"(default: ${TOKEN_VARIABLE}); "
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
    if not args.a2a:
        raise CLIError("name the protocol to serve: --a2a (Agent2Agent)")
    try:
        import uvicorn

        from swarmcore.a2a._server import to_a2a
    except ImportError as exc:
        raise CLIError(
            f"swarmcore serve --a2a needs the [a2a] extra ({exc.name} is missing): "
            "pip install 'swarmcore[a2a]'"
        ) from exc
    token, remote = check_access(args, TOKEN_VARIABLE)
    target = load_target(args.target)
    if isinstance(target, Swarm):
        swarm = target  # its own store, hooks, budget and approval callback
    else:
        store = None if args.no_store else store_location(args)
        swarm = Swarm(as_flow(target), store=store)
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
        print(f"swarmcore serve: A2A agent {args.target} at {url}{where}", flush=True)
        print(f"its card: {url}.well-known/agent-card.json", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
