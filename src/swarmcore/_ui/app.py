"""The viewer as an ASGI app: :func:`create_app` serves a run store's runs as pages.

Starlette routes, Jinja2 templates and two small static files, all shipped in
the package: the page makes no request to any other host. Reading needs no
JavaScript (a running run's page refreshes itself through ``<noscript>``);
with it, a running run's page follows the run through server-sent events.

Safety: every value a run recorded (task, outputs, tool arguments and results,
errors) is untrusted text, escaped by the templates' autoescaping and by the
SVG drawers; a Content-Security-Policy allows scripts from this server only.
Actions (resume, delete) are POSTs carrying a CSRF token, refused unless the
app was made with ``allow_actions``. With a ``token``, every request must
present it (for a viewer reachable from other machines). Only the host names
the viewer was bound for are answered, and a POST from another origin is
refused (:mod:`swarmcore._hosts`: DNS rebinding).

A running run's page follows it through one cheap change marker per run
(:class:`~swarmcore.store.RunMarks`), read once per poll however many pages
follow it; a run takes at most ``live_per_run`` followers at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from swarmcore import __version__
from swarmcore._checks import check_number
from swarmcore._hosts import HostGuard, Hosts
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._ui.evals import EvalSource, case_rows, case_view
from swarmcore._ui.pages import pretty_json, run_view, summary_view
from swarmcore.engines import ApprovalInbox
from swarmcore.errors import StoreError, UserError
from swarmcore.store._base import RunListing, RunMark, RunMarks, RunReader, RunRecord, RunStatus

PAGE_SIZE = 50
"""Runs per page of the runs page."""
LIVE_PER_RUN = 10
"""The most pages that follow one running run at once, by default."""
STATUSES: tuple[str, ...] = get_args(RunStatus)
_COOKIE = "swarmcore_ui_token"
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def create_app(
    reader: RunReader,
    *,
    store_path: Path | None = None,
    database_url: str | None = None,
    allow_actions: bool = False,
    token: str | None = None,
    poll_seconds: float = 0.5,
    allowed_hosts: Sequence[str] | None = None,
    live_per_run: int = LIVE_PER_RUN,
    evals: EvalSource | None = None,
) -> Starlette:
    """The viewer over ``reader``'s runs, as an ASGI app (serve it with uvicorn).

    Args:
        reader: Where runs are read: a :class:`~swarmcore.store.SQLiteStore`,
            or a durable engine's history (a :class:`~swarmcore.store.RunReader`).
        store_path: The store's file, named in the resume command a failed run's
            page shows; None leaves the default store implied.
        database_url: For a durable engine's history: its database, which the
            resume action hands runs back through (never shown in a page).
        allow_actions: Offer and accept actions that change the store or start
            work (resume a run, delete a run); read-only when False.
        token: When set, every request must carry it: ``?token=`` once (it is
            then kept in a cookie), a cookie, or ``Authorization: Bearer``.
        poll_seconds: How often a followed run's change marker is read (once
            per poll for all the pages that follow it).
        allowed_hosts: Host names (or addresses) the viewer answers besides
            ``127.0.0.1``, ``localhost`` and ``[::1]``: the one it listens on,
            and any name it is reached by; ``0.0.0.0`` or ``::`` add any IP
            address. Other ``Host`` headers get a 421 (DNS rebinding).
        live_per_run: The most pages that follow one running run at once; one
            more gets a 429.
        evals: An eval suite and its last report, shown at ``/evals`` beside the
            runs (``swarmcore ui --suite DIR --eval-report REPORT.json``); none when None.

    Returns:
        A Starlette app. It does not close ``reader``.

    Raises:
        UserError: An empty token, a host name that is no host name, or a
            ``live_per_run`` that is not a whole number from 1.
    """
    if token is not None and not token.strip():
        raise UserError("create_app: token is empty; give a long random string, or None.")
    check_number("create_app", "live_per_run", live_per_run, whole=True)
    hosts = Hosts.of(allowed_hosts, who="create_app")
    if store_path is not None:
        resume_with = ["--store", str(store_path)]
    else:
        resume_with = None if database_url is None else ["--database-url", database_url]
    viewer = _Viewer(
        reader,
        store_path,
        resume_with=resume_with if allow_actions else None,
        allow_actions=allow_actions,
        live=_Live(reader, poll_seconds, live_per_run),
        evals=evals,
    )
    return Starlette(
        routes=[
            Route("/", viewer.runs),
            Route("/runs/{run_id}", viewer.run),
            Route("/runs/{run_id}/events", viewer.live),
            Route("/runs/{run_id}/{action:str}", viewer.act, methods=["POST"]),
            Route("/evals", viewer.evals),
            Route("/evals/{name}", viewer.eval_case),
            Mount("/static", StaticFiles(packages=[("swarmcore._ui", "static")]), name="static"),
        ],
        exception_handlers={StoreError: viewer.failed, UserError: viewer.refused},
        middleware=[Middleware(HostGuard, hosts=hosts), Middleware(_Guard, token=token)],
    )


class _Viewer:
    """The pages, over one reader."""

    def __init__(
        self,
        reader: RunReader,
        store_path: Path | None,
        *,
        resume_with: list[str] | None,
        allow_actions: bool,
        live: _Live,
        evals: EvalSource | None = None,
    ) -> None:
        self.reader, self.store_path, self.live_runs = reader, store_path, live
        self.eval_source = evals
        self.allow_actions, self.resume_with = allow_actions, resume_with
        self.csrf = secrets.token_urlsafe(32)
        self.env = Environment(
            loader=PackageLoader("swarmcore._ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["json"] = pretty_json
        self.env.filters["content"] = _content
        shared: dict[str, object] = {
            "version": __version__,
            "allow_actions": allow_actions,
            "csrf": self.csrf,
            "evals_on": evals is not None,
        }
        self.env.globals.update(shared)  # pyright: ignore[reportCallIssue, reportArgumentType]

    def page(self, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**values), status_code=code)

    def error(self, status: int, title: str, message: str) -> HTMLResponse:
        return self.page("error.html", status, title=title, message=message)

    async def failed(self, request: Request, exc: Exception) -> Response:
        return self.error(500, "The store could not be read", str(exc))

    async def refused(self, request: Request, exc: Exception) -> Response:
        # The request asked for something no store could answer (an ambiguous id
        # prefix, an overlong id or search): the reader's fault, not the store's.
        return self.error(400, "This request cannot be answered", str(exc))

    async def runs(self, request: Request) -> Response:
        status = request.query_params.get("status") or None
        if status not in STATUSES:
            status = None
        text = (request.query_params.get("q") or "").strip() or None
        before = _cursor(request.query_params.get("before"))
        listing, total = await run_in_threadpool(_list, self.reader, status, text, before)
        cursor = None if listing.next is None else f"{listing.next[0]!r}:{listing.next[1]}"
        return self.page(
            "runs.html",
            runs=[summary_view(r) for r in listing.runs],
            unreadable=listing.unreadable,
            total=total,
            status=status or "",
            statuses=STATUSES,
            q=text or "",
            next=cursor,
            paged=before is not None,
        )

    async def run(self, request: Request) -> Response:
        record = await _get(self.reader, request.path_params["run_id"])
        if record is None:
            return self.error(404, "Not found", "No such run in this store.")
        view = run_view(record, store=self.store_path)
        waiting = await run_in_threadpool(_waiting, self.reader, record)
        template = "run_body.html" if request.query_params.get("part") == "body" else "run.html"
        resumable = self.resume_with is not None and view.resume is not None
        return self.page(
            template,
            view=view,
            run=record,
            resumable=resumable,
            deletable=hasattr(self.reader, "delete_run") and record.status != "running",
            waiting=waiting,
        )

    async def evals(self, request: Request) -> Response:
        if self.eval_source is None:
            return self.error(404, "Not found", "No eval suite: start the viewer with --suite DIR.")
        suite, report = await run_in_threadpool(self.eval_source.read)
        rows = case_rows(suite, report)
        return self.page("evals.html", suite=suite.name, rows=rows, report=report)

    async def eval_case(self, request: Request) -> Response:
        if self.eval_source is None:
            return self.error(404, "Not found", "No eval suite: start the viewer with --suite DIR.")
        suite, report = await run_in_threadpool(self.eval_source.read)
        view = case_view(suite, report, request.path_params["name"])
        if view is None:
            return self.error(404, "Not found", "No such case in this suite.")
        return self.page("eval_case.html", view=view)

    async def live(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        watch = self.live_runs.join(run_id)
        if watch is None:
            text = _TOO_MANY.format(self.live_runs.most)
            return Response(text, 429, media_type="text/plain", headers={"Retry-After": "10"})
        return _Following(self.live_runs, run_id, watch)

    async def act(self, request: Request) -> Response:
        if not self.allow_actions:
            return self.error(403, "Read-only", _READ_ONLY)
        form = await request.form()
        sent = form.get("csrf")
        if not isinstance(sent, str) or not _same(sent, self.csrf.encode()):
            return self.error(403, "Refused", _NO_CSRF)
        record = await _get(self.reader, request.path_params["run_id"])
        if record is None:
            return self.error(404, "Not found", "No such run in this store.")
        action = request.path_params["action"]
        delete: Callable[[str], object] | None = getattr(self.reader, "delete_run", None)
        if action == "delete" and delete is not None and record.status != "running":
            await run_in_threadpool(delete, record.run_id)
            return RedirectResponse("/", status_code=303)
        view = run_view(record, store=self.store_path)
        if action == "resume" and self.resume_with and view.resume and record.status != "running":
            _resume(record.run_id, self.resume_with)
            return RedirectResponse(f"/runs/{record.run_id}", status_code=303)
        if action == "approve" and isinstance(self.reader, ApprovalInbox):
            try:
                await run_in_threadpool(_decide, self.reader, record.run_id, form)
            except UserError as exc:
                return self.error(400, "Not possible", str(exc))
            return RedirectResponse(f"/runs/{record.run_id}", status_code=303)
        return self.error(400, "Not possible", _CANNOT.format(action))


_READ_ONLY = "This viewer is read-only; start it with `swarmcore ui --allow-actions` to act."
_NO_CSRF = "The form's token is missing or stale: reload the page and try again."
_CANNOT = "Cannot {} this run here."
_TOO_MANY = (
    "This run already has {} pages following it live, the most this viewer serves at once: "
    "close one, or reload this page to see where the run is.\n"
)


class _Guard:
    """Security headers on every response; the access token, when one is set.

    Every comparison is of bytes, so a value that is not ASCII is a wrong
    token (401), never an error. The cookie holds a digest of the token, not
    the token itself, and the redirect that sets it names no host.
    """

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = None if token is None else token.encode("utf-8", "surrogatepass")
        self.cookie = None if self.token is None else _cookie_value(self.token)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.token is not None and self.cookie is not None:
            given = request.query_params.get("token")
            if given is not None and _same(given, self.token):
                # A relative Location: the Host header never comes back in it.
                # One leading slash: //evil.example (or /\evil.example) would name a host.
                path = "/" + request.url.path.lstrip("/\\")
                rest = request.url.remove_query_params("token").query
                response = RedirectResponse(path + (f"?{rest}" if rest else ""), 303)
                response.set_cookie(_COOKIE, self.cookie, httponly=True, samesite="strict")
                await response(scope, receive, send)
                return
            if not self._allowed(request, self.token, self.cookie):
                text = "This viewer needs its token: open the URL `swarmcore ui` printed.\n"
                await Response(text, 401, media_type="text/plain")(scope, receive, send)
                return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in _HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def _allowed(request: Request, token: bytes, cookie: str) -> bool:
        # Headers arrive as latin-1 text: back to their bytes, as the token was sent.
        bearer = request.headers.get("authorization", "").encode("latin-1")
        if bearer.startswith(b"Bearer ") and hmac.compare_digest(bearer[7:].strip(), token):
            return True
        return _same(request.cookies.get(_COOKIE, ""), cookie.encode())


def _cookie_value(token: bytes) -> str:
    """What the cookie holds: a digest of the token, so the token itself is never stored."""
    return hmac.new(token, b"swarmcore ui cookie", hashlib.sha256).hexdigest()


def _same(given: str, expected: bytes) -> bool:
    """A constant-time comparison of a value a request sent (any text) with ``expected``."""
    return bool(given) and hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected)


def _cursor(value: str | None) -> tuple[float, str] | None:
    """``STARTED:RUN_ID`` from a "next page" link; None when absent or malformed."""
    if not value or ":" not in value:
        return None
    started, _, run_id = value.partition(":")
    try:
        at = float(started)
    except ValueError:
        return None
    return (at, run_id) if math.isfinite(at) and run_id else None


def _list(
    reader: RunReader, status: Any, text: str | None, before: tuple[float, str] | None
) -> tuple[RunListing, int]:
    listing = reader.read_runs(limit=PAGE_SIZE, status=status, text=text, before=before)
    return listing, reader.count_runs(status=status, text=text)


async def _get(reader: RunReader, run_id: str) -> RunRecord | None:
    return await run_in_threadpool(_whole, reader, run_id)


def _waiting(reader: RunReader, record: RunRecord) -> list[ApprovalRequest]:
    """The calls of a running run that wait for an approval (a durable engine's waits)."""
    if not isinstance(reader, ApprovalInbox) or record.status != "running":
        return []
    return reader.waiting(record.run_id)


def _decide(reader: ApprovalInbox, run_id: str, form: Any) -> None:
    """Send the approve form's decision on one waiting call."""
    call_id, decision = form.get("call_id"), form.get("decision")
    if not isinstance(call_id, str) or decision not in ("allow", "deny"):
        raise UserError("The form must name a call_id and a decision: allow or deny.")
    reason = form.get("reason")
    reason = (
        reason.strip() if isinstance(reason, str) and reason.strip() else "denied in the viewer"
    )
    approval = Approval.allow() if decision == "allow" else Approval.deny(reason)
    reader.decide(run_id, call_id, approval)


def _resume(run_id: str, where: list[str]) -> None:
    """Start ``swarmcore runs resume`` as a process of its own: it outlives the request.

    Its progress is the store's to show (the run's page follows it); a thread
    waits for it so that it is reaped when it ends.
    """
    command = [sys.executable, "-m", "swarmcore.cli", "runs", "resume", run_id, *where]
    process = subprocess.Popen(  # our own command; its arguments come from the store we serve
        [*command, "--quiet"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    threading.Thread(target=process.wait, name=f"resume {run_id[:12]}", daemon=True).start()


@dataclass
class _Watch:
    """One followed run: its pages, and its mark as last read (shared by them)."""

    followers: int = 0
    mark: RunMark | None = None
    read_at: float = -math.inf
    reading: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Live:
    """The runs that pages follow live: one poll of a cheap mark per run, at most ``most`` pages.

    Each page's event stream asks for the run's mark every ``every`` seconds;
    a mark read less than ``every`` ago by another page is reused, so a run
    costs one small read per poll however many pages follow it.
    """

    def __init__(self, reader: RunReader, every: float, most: int) -> None:
        self.reader, self.every, self.most = reader, every, most
        self.watches: dict[str, _Watch] = {}

    def join(self, run_id: str) -> _Watch | None:
        """A place among the run's followers; None when it has ``most`` already."""
        watch = self.watches.setdefault(run_id, _Watch())
        if watch.followers >= self.most:
            return None
        watch.followers += 1
        return watch

    def leave(self, run_id: str, watch: _Watch) -> None:
        watch.followers -= 1
        if watch.followers <= 0 and self.watches.get(run_id) is watch:
            del self.watches[run_id]

    async def mark(self, run_id: str, watch: _Watch) -> RunMark | None:
        async with watch.reading:
            if time.monotonic() - watch.read_at >= self.every:
                watch.mark = await run_in_threadpool(_read_mark, self.reader, run_id)
                watch.read_at = time.monotonic()
            return watch.mark

    async def follow(self, run_id: str, watch: _Watch) -> AsyncIterator[str]:
        """Server-sent events: ``changed`` when the stored run changes, ``finished`` at its end."""
        last: RunMark | None = None
        quiet = 0.0
        while True:
            mark = await self.mark(run_id, watch)
            if mark is None:
                yield "event: gone\ndata: {}\n\n"
                return
            if mark.status != "running":  # the page reads the run once more, as it ended
                yield f"event: finished\ndata: {json.dumps({'status': mark.status})}\n\n"
                return
            if last is None:
                yield ": following\n\n"  # the first mark is read: changes from here on
            elif mark != last:
                yield f"event: changed\ndata: {json.dumps({'status': mark.status})}\n\n"
                quiet = 0.0
            last = mark
            if quiet >= 15.0:  # a comment keeps proxies from closing an idle stream
                yield ": waiting\n\n"
                quiet = 0.0
            await asyncio.sleep(self.every)
            quiet += self.every


class _Following(StreamingResponse):
    """A page's event stream on a run; its place among the run's followers ends with it."""

    def __init__(self, live: _Live, run_id: str, watch: _Watch) -> None:
        super().__init__(live.follow(run_id, watch), media_type="text/event-stream")
        self.live, self.run_id, self.watch = live, run_id, watch

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # ended, closed by the page, or never started: the place is free again
            self.live.leave(self.run_id, self.watch)


def _read_mark(reader: RunReader, run_id: str) -> RunMark | None:
    """The run's mark: the reader's own cheap one, else taken from the whole run."""
    if isinstance(reader, RunMarks):
        return reader.run_mark(run_id)
    record = _whole(reader, run_id)
    if record is None:
        return None
    waiting = _waiting(reader, record)
    version = (
        record.ended_at,
        len(record.results),
        len(record.failures),
        len(record.decisions),
        len(waiting),
    )
    return RunMark(status=record.status, version=repr(version))


def _whole(reader: RunReader, run_id: str) -> RunRecord | None:
    try:
        return reader.get_run(run_id)
    except UserError:  # an ambiguous prefix: a page names whole ids
        return None


def _content(value: object) -> str:
    """A message's content as text: a string as is; parts (text, images...) one per line."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        lines: list[str] = []
        for part in value:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(part, dict) and isinstance(part.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
                lines.append(str(part["text"]))  # pyright: ignore[reportUnknownArgumentType]
            else:
                lines.append(pretty_json(part))  # pyright: ignore[reportUnknownArgumentType]
        return "\n".join(lines)
    return pretty_json(value)
