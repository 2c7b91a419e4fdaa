"""Where ``swarmcore ui`` and ``swarmcore serve`` listen: one rule for both servers.

Loopback by default; any other host needs ``--allow-remote`` and a token. The
socket is bound before the URL is printed, so ``--port 0`` prints the real port.
Both answer only the host names they were bound for (``swarmcore._hosts``).
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from swarmcore._hosts import is_loopback
from swarmcore.cli._errors import CLIError


def add_allowed_host(parser: Any) -> None:
    """The ``--allowed-host`` option of a serving command."""
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server may be reached by, besides 127.0.0.1, localhost, [::1] and "
        "--host (repeat for more); requests for other names are refused (DNS rebinding)",
    )


def allowed_hosts(args: argparse.Namespace) -> list[str]:
    """The names a server answers beyond the loopback ones: ``--host`` and ``--allowed-host``."""
    return [args.host, *args.allowed_host]


def check_access(args: argparse.Namespace, token_variable: str) -> tuple[str | None, bool]:
    """The token requests must carry, and whether the host is reachable from other machines.

    The token is ``--token``, else the environment variable ``token_variable``.

    Raises:
        CLIError: A port out of range, a remote host without ``--allow-remote``, or
            ``--allow-remote`` without a token.
    """
    if not 0 <= args.port <= 65535:
        raise CLIError(f"--port must be between 0 and 65535, got {args.port}")
    token: str | None = args.token or os.environ.get(token_variable) or None
    remote = not is_loopback(args.host)
    if remote and not args.allow_remote:
        raise CLIError(
            f"--host {args.host} can be reached from other machines; add --allow-remote (and a "
            "--token) if that is what you want, or leave --host at 127.0.0.1"
        )
    if remote and token is None:
        raise CLIError(
            f"--allow-remote needs a token: pass --token, or set {token_variable}, to a long "
            "random string (python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return token, remote


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket, bound before the URL is printed (so ``--port 0`` prints the real one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CLIError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port"
        ) from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(host: str, sock: socket.socket) -> str:
    """The base URL of ``sock``, bound on ``host``."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}/"
