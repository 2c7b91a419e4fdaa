"""Which ``Host`` and ``Origin`` the local servers answer: one rule for the viewer and A2A.

DNS rebinding: a web page at ``evil.example`` whose name the attacker re-points
at 127.0.0.1 becomes same-origin with a server on this machine, and reads it as
its own; its requests still say ``Host: evil.example``. So ``swarmcore ui`` and
``swarmcore serve`` answer only the names they were bound for: ``127.0.0.1``,
``localhost``, ``[::1]``, the address they listen on, and the names given
explicitly (``--allowed-host``, ``allowed_hosts=``). Bound to every address
(``0.0.0.0``, ``::``), they also answer any IP address: no name, no rebinding.

A request that changes something (any method but GET, HEAD and OPTIONS) that
carries an ``Origin`` must come from the server's own origin (the host and
port it was sent to) or from a name given explicitly (a proxy in front); a
page on another origin, another local port, or an opaque ``null`` origin is
refused. Clients other than browsers send no ``Origin`` and are not affected.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from swarmcore.errors import UserError

if TYPE_CHECKING:  # starlette comes with the [ui] and [a2a] extras; the CLI loads this without
    from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""The names a local server always answers."""
_ANY_ADDRESS = frozenset({"0.0.0.0", "::"})  # bound to every address
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Hosts:
    """The host names a server answers (see the module docstring).

    Build it with :meth:`of`.
    """

    names: frozenset[str]
    """Every name answered: the loopback names and ``named``."""
    named: frozenset[str]
    """The names given explicitly (beyond the loopback ones): also trusted as an ``Origin``."""
    any_ip: bool = False
    """Bound to every address: any IP address is answered too."""

    @classmethod
    def of(cls, allowed: Iterable[str] | None, *, who: str) -> Hosts:
        """The loopback names plus ``allowed`` (``0.0.0.0`` or ``::`` adds any IP address).

        Args:
            allowed: Host names or addresses, without scheme or port.
            who: The caller, named in errors (``create_app``, ``to_a2a``).

        Raises:
            UserError: A name that is not a host name (a URL, a port, a path).
        """
        if isinstance(allowed, str):
            raise UserError(f"{who}: allowed_hosts must be a list of host names, not one string.")
        named: set[str] = set()
        any_ip = False
        for entry in allowed or ():
            name = _checked(entry, who)
            if name in _ANY_ADDRESS:
                any_ip = True
            elif name not in LOOPBACK_NAMES:
                named.add(name)
        return cls(frozenset(LOOPBACK_NAMES) | named, frozenset(named), any_ip)

    def answers(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header is one of ours."""
        name = None if host is None else _host_name(host)
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))

    def shown(self) -> str:
        """The names answered, for a message."""
        names = [*LOOPBACK_NAMES, *sorted(self.named)]
        shown = ", ".join(f"[{n}]" if ":" in n else n for n in names)
        return shown + (", and any IP address" if self.any_ip else "")

    def trusts(self, origin: str, host: str) -> bool:
        """Whether a changing request from ``origin``, sent to ``host``, may go through."""
        try:
            parts = urlsplit(origin)
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False
        name = parts.hostname.rstrip(".")
        if name in self.named:
            return True
        default = _DEFAULT_PORTS[parts.scheme]
        here = _host_name(host)
        return here == name and _port(host, default) == (port or default)


class HostGuard:
    """ASGI middleware: refuse a foreign ``Host`` (421) and a foreign ``Origin`` (403).

    Args:
        app: The app it guards.
        hosts: The names answered.
        as_json: Refusals as ``{"error": ...}`` JSON (an API), else plain text.
    """

    def __init__(self, app: ASGIApp, hosts: Hosts, *, as_json: bool = False) -> None:
        self._app, self._hosts, self._as_json = app, hosts, as_json

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        if not self._hosts.answers(host):
            said = "no Host header" if not host else f"host {_quoted(host)}"
            message = (
                f"This server answers requests for {self._hosts.shown()} only, not for {said} "
                "(a page on another site may be trying to reach it through DNS rebinding). If "
                "you reach it by that name, start it with --allowed-host NAME (allowed_hosts= "
                "in code)."
            )
            await self._refuse(421, message, scope, receive, send)
            return
        origin = headers.get("origin")
        method = str(scope.get("method", "GET")).upper()
        if origin is not None and method not in _SAFE_METHODS:
            assert host is not None
            if not self._hosts.trusts(origin, host):
                message = (
                    f"Refused: a {method} from the page at {_quoted(origin)}, another origin "
                    "than this server's. Changes are taken from this server's own pages, or "
                    "from clients that send no Origin; a proxy's name goes in --allowed-host."
                )
                await self._refuse(403, message, scope, receive, send)
                return
        await self._app(scope, receive, send)

    async def _refuse(
        self, status: int, message: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if self._as_json:
            body, kind = json.dumps({"error": message}).encode(), b"application/json"
        else:
            body, kind = (message + "\n").encode(), b"text/plain; charset=utf-8"
        headers = [
            (b"content-type", kind),
            (b"content-length", str(len(body)).encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    """The headers this guard reads, each once (a repeated Host or Origin is refused)."""
    seen: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = bytes(key).decode("latin-1").lower()
        if name in ("host", "origin"):
            text = bytes(value).decode("latin-1")
            seen[name] = "\x00" if name in seen else text  # two values: neither is trusted
    return seen


def _checked(entry: object, who: str) -> str:
    if not isinstance(entry, str) or not entry.strip():
        raise UserError(f"{who}: allowed_hosts holds {entry!r}; give host names like 'viewer.lan'.")
    name = entry.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if _is_ip(name):
        return str(ipaddress.ip_address(name))
    if not name or any(c in name for c in "/:@?#[] \t*"):
        raise UserError(
            f"{who}: allowed_hosts holds {entry!r}, which is no host name: give the name "
            "alone, without scheme, port or path (e.g. 'viewer.lan', '192.168.1.20')."
        )
    return name


def _host_name(host: str) -> str | None:
    """The name of a ``Host`` header (``[::1]:8484`` gives ``::1``); None when malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        name, rest = host[1:end], host[end + 1 :]
        if end < 0 or not _is_ip(name) or (rest and not _is_port(rest.removeprefix(":"))):
            return None
        return str(ipaddress.ip_address(name))
    name, _, port = host.partition(":")
    if ":" in port or (port and not _is_port(port)) or (":" in host and not port):
        return None
    name = name.rstrip(".")
    if not name or any(c in name for c in "/@?#\\ \t\x00"):
        return None
    return str(ipaddress.ip_address(name)) if _is_ip(name) else name


def _port(host: str, default: int) -> int:
    """The port of a well-formed ``Host`` header; ``default`` when it names none."""
    _, _, after = host.strip().rpartition("]") if host.startswith("[") else ("", "", host)
    _, colon, port = after.rpartition(":")
    return int(port) if colon and port else default


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and 0 < int(text) < 65536


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _quoted(text: str) -> str:
    """A header value quoted for a message, cut short."""
    shown = text if len(text) <= 80 else text[:79] + "…"
    return repr(shown)
