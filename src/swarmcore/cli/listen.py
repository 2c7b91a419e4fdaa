"""Where ``swarmcore ui`` and ``swarmcore serve`` listen: one rule for both servers.

Loopback by default; any other host needs ``--allow-remote`` and a token. The
socket is bound before the URL is printed, so ``--port 0`` prints the real port.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket

from swarmcore.cli.errors import CLIError

__all__ = ["bind_socket", "check_access", "is_loopback", "url_of"]


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


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
