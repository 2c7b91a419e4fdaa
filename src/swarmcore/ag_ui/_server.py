"""Serving a Swarm to AG-UI front ends: an ASGI app that streams a run as AG-UI events.

One endpoint, ``POST /``: its body is a ``RunAgentInput``, its answer a
server-sent event stream (the ``ag-ui-protocol`` package's ``EventEncoder``).

* **A run per thread.** A ``RunAgentInput`` without ``resume`` starts a run of
  the flow on the last user message; its variables come from
  ``forwardedProps.variables``, else ``state.variables``. The first AG-UI run's
  id is the swarmcore run's id when it can be one (``swarm.resume`` and the
  store find it by that id).
* **Approvals are interrupts.** A tool marked ``requires_approval`` (and no
  ``approve`` on the Swarm) ends the AG-UI run with ``RUN_FINISHED`` whose
  outcome is an interrupt: its id is the tool call's id, its reason
  ``tool_approval``, its ``responseSchema`` the answer expected. The swarmcore
  run waits, in this process. The client answers with a new ``RunAgentInput``
  on the same thread whose ``resume`` holds ``{"interruptId": <id>, "status":
  "resolved", "payload": {"approved": true}}`` (or ``false`` with a
  ``"reason"``; or ``"arguments"`` to run the call with others); ``"status":
  "cancelled"`` denies the call. That run streams the rest.
* **A run waits** ``answer_within`` seconds (an hour by default) for the
  answer; then it is cancelled.
* **Cancelling.** A client that disconnects while its run streams (``abortRun``)
  cancels the swarmcore run; so does stopping the server.
* **On a durable engine** (one that declares :class:`~swarmcore.engines.DurableEngine`
  and :class:`~swarmcore.engines.CanApprove`, as ``DBOSEngine`` does) the wait is
  the engine's: the run is started with no approval callback, so it parks durably
  at the call, and the server finds the waiting call in the engine's records
  (``swarm.pending_approvals``, looked at every ``DURABLE_POLL`` seconds while the
  run goes). The interrupt's id is ``<run id>/<call id>``, so its answer names the
  run: the next ``RunAgentInput`` on the thread answers through ``swarm.decide``,
  to this process or to a new one after a restart. A new process follows the run
  through the engine (:class:`~swarmcore.engines.CanEnqueue` ``handle``): the events
  of the run walked in this process (a server restarted with the worker id of the
  one that died recovers its runs when it launches the engine) stream live; a run
  walked elsewhere sends its end (usage, the result) when it finishes there.
  ``answer_within`` does not apply: the engine's own approval timeout does, and
  stopping the server leaves a waiting run waiting in the engine.
* **Failure** is ``RUN_ERROR`` with the error's first line (credentials in the
  environment masked, never a traceback), after what the run finished was
  streamed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ag_ui.core import BaseEvent, RunAgentInput, UserMessage
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from swarmcore import events
from swarmcore._checks import check_number, check_run_id
from swarmcore._hosts import HostGuard, Hosts
from swarmcore._serving import Ask, Done, error_message, read_elicitation_answer
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._tools._approval import Elicitation
from swarmcore.ag_ui._translate import Translator
from swarmcore.engines import CanApprove, CanEnqueue, DurableEngine
from swarmcore.errors import SwarmError, UserError

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm
    from swarmcore.results import SwarmResult

logger = logging.getLogger("swarmcore.ag_ui")

MAX_REQUEST_BYTES = 10 * 2**20
"""The largest request body :func:`to_ag_ui` takes by default (10 MiB)."""
ANSWER_WITHIN = 3600.0
"""Seconds a run waits for the answer to its interrupt by default before it is cancelled."""
DURABLE_POLL = 0.2
"""Seconds between looks for a durable run's call waiting for approval (one query each)."""
FOLLOW_WAIT = 15.0
"""Seconds an answer to a durable run's interrupt waits for its call to show as waiting."""


def to_ag_ui(
    swarm: Swarm,
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    answer_within: float | None = ANSWER_WITHIN,
) -> Starlette:
    """Serve ``swarm`` to AG-UI front ends: an ASGI app to run with any ASGI server.

    ``POST /`` with a ``RunAgentInput`` runs the flow on its last user message
    and streams the run as AG-UI events (server-sent events). See the module
    docstring for approvals (AG-UI interrupts), cancellation and failure, and
    :mod:`swarmcore.ag_ui._translate` for how each event maps.

    ```python
    app = swarm.to_ag_ui()
    uvicorn.run(app, port=8000)
    ```

    Args:
        swarm: The Swarm to serve.
        token: When set, every request needs the header
            ``Authorization: Bearer <token>`` (401 otherwise).
        allowed_hosts: Host names (or addresses) the server answers besides
            ``127.0.0.1``, ``localhost`` and ``[::1]``: the one it listens on,
            and any name it is reached by. Other ``Host`` headers get a 421
            (DNS rebinding), and a POST from a browser page of another origin
            a 403.
        max_request_bytes: The largest request body taken; a larger one gets
            HTTP 413.
        answer_within: Seconds a run that asked for approval (an interrupt)
            waits for the client's answer; then it is cancelled, so a client
            that never comes back holds nothing. None waits as long as the
            server runs.

    Returns:
        A Starlette app.

    Raises:
        UserError: ``token`` is empty, a host name is no host name, or a
            limit is not a positive number.
    """
    if token is not None and not token.strip():
        raise UserError("to_ag_ui(token=...) must be a non-empty string, or None for no token.")
    check_number("to_ag_ui", "max_request_bytes", max_request_bytes, whole=True)
    check_number("to_ag_ui", "answer_within", answer_within, none="no limit")
    hosts = Hosts.of([*(allowed_hosts or ())], who="to_ag_ui")
    endpoint = AGUIEndpoint(swarm, max_request_bytes=max_request_bytes, answer_within=answer_within)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:  # no run outlives the server
            await endpoint.aclose()

    middleware = [
        Middleware(HostGuard, hosts=hosts, as_json=True),
        Middleware(_TokenGuard, token=token),
    ]
    routes = [Route("/", endpoint, methods=["POST"])]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


class _TokenGuard:
    """ASGI middleware: the bearer token check."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self._app = app
        # Bytes against the header's raw bytes: any token, any header value, never an error.
        self._token = None if token is None else f"Bearer {token}".encode("utf-8", "surrogatepass")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._token is not None:
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._token):
                await _refuse(
                    send,
                    401,
                    "This agent needs the header 'Authorization: Bearer <token>'.",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
        await self._app(scope, receive, send)


async def _refuse(
    send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class _Gone(Exception):
    """The client disconnected before its request's body was read."""


@dataclass
class _Failed:
    message: str
    code: str
    partial: SwarmResult | None


@dataclass
class _Parked:
    """A durable run waits, in its engine, for a decision on ``request`` (``swarm.decide``)."""

    request: ApprovalRequest


_Item = events.Event | Ask | _Parked | Done | _Failed


@dataclass
class _Job:
    """One thread's swarmcore run: its asyncio task, what it has to say, what it waits for."""

    thread_id: str
    run_id: str
    """The swarmcore run's id."""
    translator: Translator
    durable: bool = False
    """The run is its durable engine's: it waits in the engine, decided by ``swarm.decide``."""
    runner: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    """Looks for the durable run's calls waiting for approval."""
    outbox: asyncio.Queue[_Item] = field(default_factory=asyncio.Queue[_Item])
    asking: Ask | _Parked | None = None
    asked: set[str] = field(default_factory=set[str])
    """The calls of the durable run already put to the client."""
    expiry: asyncio.TimerHandle | None = None
    """Cancels the run if the answer to its interrupt does not come in time."""
    streaming: bool = False
    """An AG-UI run is streaming this job's events now."""

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The run's approval callback: wait for the client's resume entry."""
        answer = asyncio.get_running_loop().create_future()
        self.outbox.put_nowait(Ask(request, answer))
        return await answer

    def interrupt_id(self, request: ApprovalRequest) -> str:
        """The id of the interrupt asking about ``request``: a durable run's names the run."""
        return f"{self.run_id}/{request.call_id}" if self.durable else request.call_id


class AGUIEndpoint:
    """The ASGI endpoint: a ``RunAgentInput`` in, the run's AG-UI events out."""

    def __init__(
        self, swarm: Swarm, *, max_request_bytes: int, answer_within: float | None
    ) -> None:
        self._swarm = swarm
        self._limit = max_request_bytes
        self._answer_within = answer_within
        self._jobs: dict[str, _Job] = {}
        """Jobs by thread id."""
        self._runs: dict[str, _Job] = {}
        """The same jobs by their swarmcore run's id."""
        self._encoder = EventEncoder()
        engine = swarm.engine
        # A durable engine that can approve keeps the wait: the runs here are its runs.
        self._inbox: CanApprove | None = (
            engine if isinstance(engine, DurableEngine) and isinstance(engine, CanApprove) else None
        )
        self._follower: CanEnqueue | None = engine if isinstance(engine, CanEnqueue) else None
        # The events come through a hook, not through the stream's queue: a hook is called as
        # each event is published, so an approval request (asked from inside the run) lands in
        # the job's outbox after every event published before it, never ahead of them.
        swarm.on()(self._deliver)

    def _deliver(self, event: events.Event) -> None:
        job = self._runs.get(event.run_id)
        if job is not None and not isinstance(event, events.RunFinished):
            job.outbox.put_nowait(event)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the request, then stream until the run ends, pauses, or the client leaves."""
        try:
            body = await self._body(receive)
        except _TooLarge:
            await _refuse(send, 413, f"The request body is over {self._limit} bytes.")
            return
        except _Gone:
            return
        try:
            given = RunAgentInput.model_validate_json(body)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                for e in error.errors()[:5]
            )
            await _refuse(send, 422, f"The body is no AG-UI RunAgentInput: {problems}")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", self._encoder.get_content_type().encode()),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        streaming = asyncio.ensure_future(self._send_all(self.run(given), send))
        leaving = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({streaming, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # The client left (or this handler was cancelled): cancelling the stream cancels
            # the run it pumps, unless that run is paused on an interrupt.
            for task in (streaming, leaving):
                task.cancel()
            await asyncio.gather(streaming, leaving, return_exceptions=True)
        if streaming.done() and not streaming.cancelled() and streaming.exception() is None:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_all(self, stream: AsyncGenerator[BaseEvent], send: Send) -> None:
        async with contextlib.aclosing(stream):
            async for event in stream:
                encoded = self._encoder.encode(event).encode()
                await send({"type": "http.response.body", "body": encoded, "more_body": True})

    async def _body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone
            chunk = cast("bytes", message.get("body", b""))
            size += len(chunk)
            if size > self._limit:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def run(self, given: RunAgentInput) -> AsyncGenerator[BaseEvent]:
        """The AG-UI events of one ``RunAgentInput``: a new run, or one resumed."""
        job = await self._job_for(given)
        if isinstance(job, tuple):
            for event in _refused(given, *job):
                yield event
            return
        async for event in self._pump(job, given):
            yield event

    async def _job_for(self, given: RunAgentInput) -> _Job | tuple[str, str]:
        """The job ``given`` streams (started, or answered and resumed); or why none, and a code."""
        job = self._jobs.get(given.thread_id)
        if given.resume:
            if job is None and self._inbox is not None:
                # A durable run's answer may come to a process that never saw the run.
                return await self._follow(given, self._inbox)
            if job is None or job.asking is None:
                why = "no run of this thread waits for an answer; start a new run (no resume)"
                return why, "no_interrupt"
            refused = await self._answer(job, job.asking, given)
            return job if refused is None else (refused, "invalid_resume")
        if job is not None:
            asking = job.asking
            why = (
                f"this thread's run waits for an answer to interrupt "
                f"{job.interrupt_id(asking.request)!r}: send it in 'resume'"
                if asking is not None
                else "this thread's run is streaming to another request; wait for it to end"
            )
            return why, "thread_busy"
        started = self._start(given)
        return (started, "invalid_input") if isinstance(started, str) else started

    def _start(self, given: RunAgentInput) -> _Job | str:
        """A new job for ``given``'s thread, its run started; or why it cannot start."""
        task = last_user_text(given)
        if not task.strip():
            return "the input has no user message with text to run"
        variables = read_variables(given)
        if isinstance(variables, str):
            return variables
        run_id = given.run_id
        try:
            check_run_id(run_id)
        except UserError:
            run_id = ""  # an AG-UI run id that is no swarmcore one: the run gets its own
        if not run_id or run_id in self._runs:
            run_id = uuid.uuid4().hex
        translator = Translator(given.thread_id, task, variables)
        job = _Job(given.thread_id, run_id, translator, durable=self._inbox is not None)
        self._jobs[given.thread_id] = self._runs[run_id] = job
        job.runner = asyncio.create_task(self._run(job, task, variables))
        if self._inbox is not None:
            job.watcher = asyncio.create_task(self._watch(job, self._inbox))
        return job

    async def _answer(self, job: _Job, asking: Ask | _Parked, given: RunAgentInput) -> str | None:
        """Pass ``given``'s answer to the question ``job`` waits on; or say what is wrong."""
        decision = read_resume(given, job.interrupt_id(asking.request), asking.request.elicitation)
        if isinstance(decision, str):
            return decision
        job.asking = None  # now: a second answer sent meanwhile finds nothing to answer
        if isinstance(asking, Ask):
            asking.answer.set_result(decision)
        elif self._inbox is not None:
            try:
                await self._inbox.approve(job.run_id, asking.request.call_id, decision)
            except UserError as error:  # decided elsewhere meanwhile, say
                job.asking = asking
                return error_message(error)
        if job.expiry is not None:
            job.expiry.cancel()
        return None

    async def _follow(self, given: RunAgentInput, inbox: CanApprove) -> _Job | tuple[str, str]:
        """A job following the durable run that ``given`` answers, answered; or why not.

        The run was started by a server process that is gone (or by anyone): the
        interrupt's id names it. Its events stream from here if it is walked in
        this process; its end comes from the engine wherever it is walked.
        """
        entry = given.resume[0] if given.resume else None
        run_id, _, call_id = (entry.interrupt_id if entry else "").partition("/")
        if not run_id or not call_id:
            why = "no run of this thread waits for an answer; start a new run (no resume)"
            return why, "no_interrupt"
        if self._follower is None:
            why = f"this server's engine cannot follow run {run_id!r} it did not start"
            return why, "no_interrupt"
        if run_id in self._runs:
            return f"run {run_id!r} streams to another thread", "thread_busy"
        variables = read_variables(given)
        if isinstance(variables, str):
            return variables, "invalid_input"
        translator = Translator(given.thread_id, last_user_text(given), variables)
        state: object = given.state
        if isinstance(state, dict):
            had = cast("dict[str, Any]", state)
            if {"context", "failures"} <= had.keys():
                translator.state.update(had)  # the client's state: what the run had so far
        job = _Job(given.thread_id, run_id, translator, durable=True)
        # A server restarted a moment ago may still be recovering the run: its call shows
        # as waiting once the recovered run reaches its wait again.
        deadline = asyncio.get_running_loop().time() + FOLLOW_WAIT
        while True:
            requests = await inbox.approvals(run_id)
            asking = next((r for r in requests if r.call_id == call_id), None)
            if asking is not None or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(DURABLE_POLL)
        if asking is None:
            waiting = ", ".join(job.interrupt_id(r) for r in requests) or "none"
            why = (
                f"run {run_id!r} has no call {call_id!r} waiting for approval (waiting: {waiting})"
            )
            return why, "no_interrupt"
        self._jobs[given.thread_id] = self._runs[run_id] = job
        refused = await self._answer(job, _Parked(asking), given)
        if refused is not None:
            del self._jobs[given.thread_id], self._runs[run_id]
            return refused, "invalid_resume"
        job.asked.add(call_id)
        job.runner = asyncio.create_task(self._await_end(job, self._follower))
        job.watcher = asyncio.create_task(self._watch(job, inbox))
        return job

    async def _watch(self, job: _Job, inbox: CanApprove) -> None:
        """Put each call the durable run waits on to the client, once (it ends with the run)."""
        while True:
            await asyncio.sleep(DURABLE_POLL)
            if job.asking is not None:
                continue
            for request in await inbox.approvals(job.run_id):
                if request.call_id not in job.asked:  # a decided call may show until read
                    job.asked.add(request.call_id)
                    job.outbox.put_nowait(_Parked(request))

    async def _await_end(self, job: _Job, follower: CanEnqueue) -> None:
        """Wait for the end of a durable run walked by whichever process walks it."""
        try:
            handle = await follower.handle(job.run_id)
            job.outbox.put_nowait(Done(await handle.result()))
        except Exception as error:  # the client gets its message, never its traceback
            logger.info("AG-UI run on thread %s failed", job.thread_id, exc_info=True)
            partial = error.partial if isinstance(error, SwarmError) else None
            job.outbox.put_nowait(_Failed(error_message(error), type(error).__name__, partial))
        finally:
            self._runs.pop(job.run_id, None)
            if job.watcher is not None:
                job.watcher.cancel()

    async def _pump(self, job: _Job, given: RunAgentInput) -> AsyncGenerator[BaseEvent]:
        """Pass the run's events on until it ends or asks; a cancelled pump cancels the run."""
        translator = job.translator
        job.streaming = True
        paused = ended = False
        try:
            for event in translator.begin(given.run_id, given):
                yield event
            while True:
                item = await job.outbox.get()
                if isinstance(item, events.Event):
                    for event in translator.translate(item):
                        yield event
                    continue
                if isinstance(item, Ask | _Parked):
                    paused = True
                    self._pause(job, item)
                else:
                    ended = True
                for event in _last_words(translator, item, job):
                    yield event
                return
        finally:
            job.streaming = False
            if not paused:
                self._jobs.pop(job.thread_id, None)
                tasks = [t for t in (job.runner, job.watcher) if t is not None and not t.done()]
                for running in tasks:  # the client left mid-run: so does the run
                    # A run that ended is still closing its MCP servers (a durable one,
                    # recording its end in the engine): cancelling it would leave them.
                    if not (ended and running is job.runner):
                        running.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    def _pause(self, job: _Job, ask: Ask | _Parked) -> None:
        """The run waits for ``ask``'s answer, for ``answer_within`` seconds at most.

        A durable run's wait is its engine's (and its timeout the engine's approval timeout).
        """
        job.asking = ask
        if self._answer_within is not None and not job.durable:
            loop = asyncio.get_running_loop()
            job.expiry = loop.call_later(self._answer_within, self._expire, job)

    def _expire(self, job: _Job) -> None:
        """No answer came in time: the waiting run is cancelled and forgotten."""
        if self._jobs.get(job.thread_id) is job and job.asking is not None:
            logger.info("AG-UI run on thread %s got no answer in time", job.thread_id)
            del self._jobs[job.thread_id]
            if job.runner is not None:
                job.runner.cancel()

    async def _run(self, job: _Job, task: str, variables: Mapping[str, object]) -> None:
        try:
            # The Swarm's own approval callback, if it has one; else the client decides: on a
            # durable engine through the engine (the run parks there), else through the job.
            client = None if job.durable else job.approve
            approve = None if self._swarm.approve is not None else client
            stream = self._swarm.stream(
                task, text=True, variables=variables, run_id=job.run_id, approve=approve
            )
            async for event in stream:  # cancelling the runner cancels the run inside it
                if isinstance(event, events.RunFinished) and event.result is not None:
                    job.outbox.put_nowait(Done(event.result))
        except Exception as error:  # the client gets its message, never its traceback
            logger.info("AG-UI run on thread %s failed", job.thread_id, exc_info=True)
            partial = error.partial if isinstance(error, SwarmError) else None
            job.outbox.put_nowait(_Failed(error_message(error), type(error).__name__, partial))
        finally:
            self._runs.pop(job.run_id, None)
            if job.watcher is not None:
                job.watcher.cancel()

    async def aclose(self) -> None:
        """Cancel every run still going or waiting (the server is stopping)."""
        for job in self._jobs.values():
            if job.expiry is not None:
                job.expiry.cancel()
            if job.watcher is not None:
                job.watcher.cancel()
        # A durable run waiting for an answer is its engine's: it waits on there, for a
        # restarted server (or anyone) to answer; the engine's shutdown hands it back.
        runners = [
            job.runner
            for job in self._jobs.values()
            if job.runner is not None and not (job.durable and job.asking is not None)
        ]
        self._jobs.clear()
        self._runs.clear()
        for runner in runners:
            runner.cancel()
        await asyncio.gather(*runners, return_exceptions=True)


async def _disconnected(receive: Receive) -> None:
    """Return when the client disconnects."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _last_words(
    translator: Translator, item: Ask | _Parked | Done | _Failed, job: _Job
) -> list[BaseEvent]:
    """The events that end an AG-UI run: on an interrupt, a result or a failure."""
    match item:
        case Ask(request=request) | _Parked(request=request):
            run_id = job.run_id if job.durable else None
            return translator.ask(request, job.interrupt_id(request), run_id=run_id)
        case Done(result=result):
            return translator.finish(result)
        case _Failed(message=message, code=code, partial=partial):
            return translator.fail(message, code, partial)


def _refused(given: RunAgentInput, message: str, code: str) -> list[BaseEvent]:
    translator = Translator(given.thread_id, "", {})
    return translator.refuse(given.run_id, given, message, code)


def last_user_text(given: RunAgentInput) -> str:
    """The text of the input's last user message (its text parts joined, for a list)."""
    for message in reversed(given.messages):
        if isinstance(message, UserMessage):
            content = message.content
            if isinstance(content, str):
                return content
            return "\n".join(getattr(part, "text", "") for part in content if part.type == "text")
    return ""


def read_variables(given: RunAgentInput) -> dict[str, object] | str:
    """The run's prompt variables: ``forwardedProps.variables``, else ``state.variables``.

    Returns:
        The variables, or what is wrong with them.
    """
    for where, holder in (("forwardedProps", given.forwarded_props), ("state", given.state)):
        if isinstance(holder, dict) and "variables" in holder:
            value = cast("dict[str, Any]", holder)["variables"]
            if not isinstance(value, dict):
                return f"{where}.variables must be an object of names to values"
            return dict(cast("dict[str, object]", value))
    return {}


def read_resume(
    given: RunAgentInput, interrupt_id: str, elicitation: Elicitation | None = None
) -> Approval | str:
    """The decision ``given``'s resume entries make on the approval ``interrupt_id``.

    For an MCP server's question (``elicitation``), the payload is
    ``{"action": "accept"|"decline"|"cancel", "content": {...}}``.

    Returns:
        The decision, or what is wrong with the entries.
    """
    entries = {entry.interrupt_id: entry for entry in given.resume or ()}
    entry = entries.get(interrupt_id)
    if entry is None:
        named = ", ".join(repr(k) for k in entries) or "none"
        return f"resume answers {named}, not the pending interrupt {interrupt_id!r}"
    if entry.status == "cancelled":
        return Approval.deny("The user cancelled the request.")
    payload = entry.payload
    if elicitation is not None:
        return read_elicitation_answer(elicitation, payload)
    if isinstance(payload, bool):
        return Approval.allow() if payload else Approval.deny()
    fields = cast("dict[str, Any]", payload) if isinstance(payload, dict) else {}
    approved = fields.get("approved", fields.get("approve"))
    if not isinstance(approved, bool):
        return (
            f"the answer to interrupt {interrupt_id!r} must be a payload "
            '{"approved": true} or {"approved": false, "reason": "..."}'
        )
    if not approved:
        return Approval.deny(str(fields.get("reason") or ""))
    arguments = fields.get("arguments")
    if isinstance(arguments, dict):
        return Approval.edit(cast("dict[str, Any]", arguments))
    return Approval.allow()
