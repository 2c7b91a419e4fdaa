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
present it (for a viewer reachable from other machines).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import secrets
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from swarmcore import __version__
from swarmcore.errors import StoreError, UserError
from swarmcore.store.base import RunListing, RunReader, RunRecord, RunStatus
from swarmcore.tools import Approval, ApprovalRequest
from swarmcore.ui.pages import pretty_json, run_view, summary_view

__all__ = ["PAGE_SIZE", "create_app"]

PAGE_SIZE = 50
"""Runs per page of the runs page."""
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
) -> Starlette:
    """The viewer over ``reader``'s runs, as an ASGI app (serve it with uvicorn).

    Args:
        reader: Where runs are read: a :class:`~swarmcore.store.SQLiteStore`,
            or a DBOS engine's :class:`~swarmcore.engines.dbos_history.DBOSHistory`.
        store_path: The store's file, named in the resume command a failed run's
            page shows; None leaves the default store implied.
        database_url: For a DBOS engine's history: its database, which the
            resume action hands runs back through (never shown in a page).
        allow_actions: Offer and accept actions that change the store or start
            work (resume a run, delete a run); read-only when False.
        token: When set, every request must carry it: ``?token=`` once (it is
            then kept in a cookie), a cookie, or ``Authorization: Bearer``.
        poll_seconds: How often a live page's event stream reads the store.

    Returns:
        A Starlette app. It does not close ``reader``.
    """
    if token is not None and not token.strip():
        raise UserError("create_app: token is empty; give a long random string, or None.")
    if store_path is not None:
        resume_with = ["--store", str(store_path)]
    else:
        resume_with = None if database_url is None else ["--database-url", database_url]
    viewer = _Viewer(
        reader,
        store_path,
        resume_with=resume_with if allow_actions else None,
        allow_actions=allow_actions,
        poll_seconds=poll_seconds,
    )
    app = Starlette(
        routes=[
            Route("/", viewer.runs),
            Route("/runs/{run_id}", viewer.run),
            Route("/runs/{run_id}/events", viewer.live),
            Route("/runs/{run_id}/{action:str}", viewer.act, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("swarmcore.ui", "static")]), name="static"),
        ],
        exception_handlers={StoreError: viewer.failed, UserError: viewer.failed},
    )
    app.add_middleware(_Guard, token=token)  # pyright: ignore[reportArgumentType]
    return app


class _Viewer:
    """The pages, over one reader."""

    def __init__(
        self,
        reader: RunReader,
        store_path: Path | None,
        *,
        resume_with: list[str] | None,
        allow_actions: bool,
        poll_seconds: float,
    ) -> None:
        self.reader, self.store_path, self.poll_seconds = reader, store_path, poll_seconds
        self.allow_actions, self.resume_with = allow_actions, resume_with
        self.csrf = secrets.token_urlsafe(32)
        self.env = Environment(
            loader=PackageLoader("swarmcore.ui", "templates"),
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
        }
        self.env.globals.update(shared)  # pyright: ignore[reportCallIssue, reportArgumentType]

    def page(self, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**values), status_code=code)

    def error(self, status: int, title: str, message: str) -> HTMLResponse:
        return self.page("error.html", status, title=title, message=message)

    async def failed(self, request: Request, exc: Exception) -> Response:
        return self.error(500, "The store could not be read", str(exc))

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

    async def live(self, request: Request) -> Response:
        events = _follow(self.reader, request.path_params["run_id"], self.poll_seconds)
        return StreamingResponse(events, media_type="text/event-stream")

    async def act(self, request: Request) -> Response:
        if not self.allow_actions:
            return self.error(403, "Read-only", _READ_ONLY)
        form = await request.form()
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, self.csrf):
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
        if action == "approve" and hasattr(self.reader, "decide"):
            try:
                await run_in_threadpool(_decide, self.reader, record.run_id, form)
            except UserError as exc:
                return self.error(400, "Not possible", str(exc))
            return RedirectResponse(f"/runs/{record.run_id}", status_code=303)
        return self.error(400, "Not possible", _CANNOT.format(action))


_READ_ONLY = "This viewer is read-only; start it with `swarmcore ui --allow-actions` to act."
_NO_CSRF = "The form's token is missing or stale: reload the page and try again."
_CANNOT = "Cannot {} this run here."


class _Guard:
    """Security headers on every response; the access token, when one is set."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if self.token is not None:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given, self.token):
                response = RedirectResponse(request.url.remove_query_params("token"), 303)
                response.set_cookie(_COOKIE, self.token, httponly=True, samesite="strict")
                await response(scope, receive, send)
                return
            if not self._allowed(request):
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

    def _allowed(self, request: Request) -> bool:
        assert self.token is not None
        bearer = request.headers.get("authorization", "")
        sent = [request.cookies.get(_COOKIE, ""), bearer.removeprefix("Bearer ").strip()]
        return any(s and hmac.compare_digest(s, self.token) for s in sent)


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
    try:
        return await run_in_threadpool(reader.get_run, run_id)
    except UserError:  # an ambiguous prefix: a page names whole ids
        return None


def _waiting(reader: RunReader, record: RunRecord) -> list[ApprovalRequest]:
    """The calls of a running run that wait for an approval (the DBOS engine's durable waits)."""
    waiting = getattr(reader, "waiting", None)
    if waiting is None or record.status != "running":
        return []
    return list(waiting(record.run_id))


def _decide(reader: RunReader, run_id: str, form: Any) -> None:
    """Send the approve form's decision on one waiting call."""
    call_id, decision = form.get("call_id"), form.get("decision")
    if not isinstance(call_id, str) or decision not in ("allow", "deny"):
        raise UserError("The form must name a call_id and a decision: allow or deny.")
    reason = form.get("reason")
    reason = (
        reason.strip() if isinstance(reason, str) and reason.strip() else "denied in the viewer"
    )
    approval = Approval.allow() if decision == "allow" else Approval.deny(reason)
    reader.decide(run_id, call_id, approval)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


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


def _mark(record: RunRecord) -> tuple[object, ...]:
    """What changes on a run page as a run goes on."""
    return (
        record.status,
        record.ended_at,
        len(record.results),
        len(record.failures),
        len(record.decisions),
    )


async def _follow(reader: RunReader, run_id: str, every: float) -> AsyncIterator[str]:
    """Server-sent events: ``changed`` when the stored run changes, ``finished`` at its end."""
    last: tuple[object, ...] | None = None
    quiet = 0.0
    while True:
        record = await _get(reader, run_id)
        if record is None:
            yield "event: gone\ndata: {}\n\n"
            return
        waiting = await run_in_threadpool(_waiting, reader, record)
        mark = (*_mark(record), len(waiting))
        if last is not None and mark != last:
            yield f"event: changed\ndata: {json.dumps({'status': record.status})}\n\n"
            quiet = 0.0
        last = mark
        if record.status != "running":
            yield f"event: finished\ndata: {json.dumps({'status': record.status})}\n\n"
            return
        if quiet >= 15.0:  # a comment keeps proxies from closing an idle stream
            yield ": waiting\n\n"
            quiet = 0.0
        await asyncio.sleep(every)
        quiet += every


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
