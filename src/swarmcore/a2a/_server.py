"""Serving a Swarm as an Agent2Agent (A2A) agent, on the a2a-sdk's own server classes.

:func:`to_a2a` builds a Starlette app from the SDK's pieces: its agent card
route (at the well-known path), its JSON-RPC route, its request handler and
in-memory task store. What is ours is the :class:`SwarmExecutor`, which runs
the flow once per A2A task:

* **The task id is the run id.** ``swarm.stream(..., run_id=task_id)``, so a
  Swarm with a store records the run under the A2A task's id (and
  ``swarm.resume(task_id)`` continues it).
* **Two protocol versions.** A2A 1.0 (its requests carry the header
  ``A2A-Version: 1.0``; without it a request is taken for 0.3, as the protocol
  says) and A2A 0.3 (``message/send``...), both on ``/``; the card lists both.
* **Progress streams.** Agent, tool, route, loop and retry events become
  ``working`` status updates with a one-line message (the event's type and
  agent in the message's metadata, so none is left on the finished task);
  on a streaming request, model text streams as chunks of the ``output``
  artifact (the agent in their metadata): appended to while one agent
  speaks, replaced when the next one starts.
* **The run's output** then replaces that artifact (``last_chunk``): a text
  part, and a data part when the last agent has an ``output_type``. A task
  has one artifact, its answer.
* **Failure** is a ``failed`` task whose message is the error's first line,
  with every credential in the environment masked: never a traceback.
* **Cancelling** the task cancels the run's asyncio task and waits for it to
  stop before the task is marked ``canceled``.
* **Approvals.** A tool marked ``requires_approval`` (and no ``approve`` on
  the Swarm) turns the task ``input-required``, naming the tool, its arguments
  and call id; the client's next message on the task answers (``approve`` or
  ``deny [reason]``, or a data part ``{"approve": bool, "reason": str}``).
* **An MCP server's questions** (elicitation) in the middle of a tool call
  turn the task ``input-required`` too: the message's text says what the server
  asks (and the URL to open), its data part is the question whole (``"type":
  "elicitation_request"``, the mode, the message, the URL or the requested
  schema). The client's next message answers: a data part ``{"action":
  "accept"|"decline"|"cancel", "content": {...}}`` (a form's values, checked
  against its schema), or the text ``accept``, ``decline [reason]`` or
  ``cancel``. An answer that does not fit asks again, saying what is wrong.

The run itself lives in an asyncio task of its own, apart from the SDK's
``execute`` calls: one ``execute`` pumps the run's events to the SDK's queue
until the task ends or asks for input; the answer's ``execute`` resumes the
pumping. Between the two the run waits on the answer and buffers nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    AgentCard,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
)
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from swarmcore import events
from swarmcore._checks import check_number, no_limit
from swarmcore._hosts import HostGuard, Hosts
from swarmcore._serving import (
    ELICITATION_ACTIONS,
    Ask,
    Done,
    elicitation_shown,
    error_message,
    read_elicitation_answer,
)
from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._tools._approval import Elicitation
from swarmcore.a2a._bounds import BodyLimit, ExpiringTaskStore
from swarmcore.a2a._card import agent_card
from swarmcore.a2a._dialects import Answers
from swarmcore.errors import UserError

if TYPE_CHECKING:
    from a2a.server.events import EventQueue

    from swarmcore._swarm import Swarm
    from swarmcore.results import SwarmResult

logger = logging.getLogger("swarmcore.a2a")

OUTPUT_ARTIFACT = "output"
"""The id and name of the artifact that holds a run's output."""

MAX_REQUEST_BYTES = 10 * 2**20
"""The largest request body :func:`to_a2a` takes by default (10 MiB)."""
KEEP_TASKS = 3600.0
"""Seconds a finished task stays in memory by default (its run stays in the store)."""

_YES = frozenset({"approve", "approved", "allow", "yes", "y", "ok"})
_NO = frozenset({"deny", "denied", "reject", "no", "n"})


def to_a2a(
    swarm: Swarm,
    *,
    name: str | None = None,
    description: str | None = None,
    skills: Sequence[AgentSkill | Mapping[str, Any]] | None = None,
    url: str | None = None,
    token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    keep_tasks: float | None = KEEP_TASKS,
) -> Starlette:
    """Serve ``swarm`` as an A2A agent: an ASGI app to run with any ASGI server.

    The agent card is at ``/.well-known/agent-card.json`` and the JSON-RPC
    endpoint at ``/``. Each A2A task runs the flow once on the message's text
    (data parts as JSON), under the task's id as the run id. See the module
    docstring for how progress, output, failure, cancellation and approvals
    map to A2A.

    ```python
    app = swarm.to_a2a(name="researcher", token=os.environ["A2A_TOKEN"])
    uvicorn.run(app, port=9000)
    ```

    Args:
        swarm: The Swarm to serve.
        name: The agent's name on its card (default: the flow's expression).
        description: What the agent does (default: one naming the flow).
        skills: The card's skills, as ``AgentSkill`` or mappings of its
            fields (``id``, ``name``, ``description``, ``tags``, ``examples``);
            by default one skill, the flow.
        url: The URL clients reach the agent at, for the card (default: the
            address each card request came to).
        token: When set, every request but the card's needs the header
            ``Authorization: Bearer <token>`` (401 otherwise), and the card
            declares the scheme.
        allowed_hosts: Host names (or addresses) the server answers besides
            ``127.0.0.1``, ``localhost`` and ``[::1]`` (and ``url``'s host):
            the one it listens on, and any name it is reached by; ``0.0.0.0``
            or ``::`` add any IP address. Other ``Host`` headers get a 421
            (DNS rebinding), and a POST from a browser page of another origin
            a 403.
        max_request_bytes: The largest request body taken; a larger one gets
            HTTP 413 and a JSON-RPC error (-32600) naming the limit.
        keep_tasks: Seconds a finished task (completed, failed, canceled)
            stays readable with ``GetTask`` before it is dropped from memory;
            its run stays in the Swarm's store. None keeps every task.

    Returns:
        A Starlette app.

    Raises:
        UserError: ``token`` is empty, a skill is not an AgentSkill or a
            mapping of its fields, a host name is no host name, or a limit is
            not a positive number.
    """
    if token is not None and not token.strip():
        raise UserError("to_a2a(token=...) must be a non-empty string, or None for no token.")
    check_number("to_a2a", "max_request_bytes", max_request_bytes, whole=True)
    check_number("to_a2a", "keep_tasks", keep_tasks, unlimited=True, none="no limit")
    keep = no_limit("to_a2a", "keep_tasks", keep_tasks)
    named = [*(allowed_hosts or ())]
    if url is not None and urlsplit(url).hostname:
        named.append(str(urlsplit(url).hostname))
    hosts = Hosts.of(named, who="to_a2a")
    card = agent_card(swarm, name=name, description=description, skills=skills, url=url)
    if token is not None:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    executor = SwarmExecutor(swarm)
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=ExpiringTaskStore(math.inf if keep is None else keep),
        agent_card=card,
    )

    async def card_here(request: Request) -> Response:
        """The card, its URL the address this request came to (``HostGuard`` checked it)."""
        here = AgentCard()
        here.CopyFrom(card)
        for interface in here.supported_interfaces:
            interface.url = _base_url(request.scope)
        served: Response = await create_agent_card_routes(here)[0].endpoint(request)
        return served

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:  # no run outlives the server
            await executor.aclose()
            await handler.aclose()

    routes = [
        *(
            create_agent_card_routes(card)
            if url is not None
            else [Route(AGENT_CARD_WELL_KNOWN_PATH, card_here, methods=["GET"])]
        ),
        # A2A 0.3 clients too (FastA2A's, the 0.3 SDKs'): their methods are told apart by name.
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
    middleware = [
        Middleware(HostGuard, hosts=hosts, as_json=True),
        Middleware(_Guard, token=token),
        Middleware(BodyLimit, limit=max_request_bytes),
        Middleware(Answers),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def _base_url(scope: Scope) -> str:
    """The address a request came to, from its ``Host`` (which ``HostGuard`` checked)."""
    host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}/"


class _Guard:
    """ASGI middleware: the bearer token check.

    The card is served without the token (clients read it to learn the scheme).
    """

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self._app = app
        # Bytes against the header's raw bytes: any token, any header value, never an error.
        self._token = None if token is None else f"Bearer {token}".encode("utf-8", "surrogatepass")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._token is not None and scope["path"] != AGENT_CARD_WELL_KNOWN_PATH:
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._token):
                refused = JSONResponse(
                    {"error": "This agent needs the header 'Authorization: Bearer <token>'."},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)


@dataclass
class _Failed:
    message: str


_Item = events.Event | Ask | Done | _Failed


@dataclass
class _Job:
    """One A2A task's run: its asyncio task and what it has to say."""

    task_id: str
    context_id: str
    runner: asyncio.Task[None] | None = None
    outbox: asyncio.Queue[_Item] = field(default_factory=asyncio.Queue[_Item])
    asking: Ask | None = None
    streaming: str | None = None
    """The agent whose text the output artifact holds while the run streams."""
    over: bool = False
    """The task reached a terminal state."""

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The run's approval callback: wait for the client's next message."""
        answer = asyncio.get_running_loop().create_future()
        self.outbox.put_nowait(Ask(request, answer))
        return await answer


class SwarmExecutor(AgentExecutor):
    """The a2a-sdk ``AgentExecutor`` that runs a Swarm's flow per A2A task."""

    def __init__(self, swarm: Swarm) -> None:
        self._swarm = swarm
        self._jobs: dict[str, _Job] = {}
        self._runners: set[asyncio.Task[None]] = set()
        """Every run's task until it is done: one that ended may still close its MCP servers."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Start the task's run, or answer its pending approval; report until it ends or asks."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        job = self._jobs.get(task_id)
        if job is None and context.current_task is not None:
            # A task whose run is gone (the server stopped it): a new message cannot resume it.
            await updater.failed(_say(updater, "This task's run has stopped; start a new task."))
            return
        if job is None:
            if context.message is not None:
                await event_queue.enqueue_event(
                    Task(
                        id=task_id,
                        context_id=context_id,
                        status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                        history=[context.message],
                    )
                )
            text = task_text(context.message)
            if not text.strip():
                await updater.failed(_say(updater, "The message has no text or data part to run."))
                return
            job = self._jobs[task_id] = _Job(task_id, context_id)
            streaming = "stream" in str(context.call_context.state.get("method", "")).lower()
            job.runner = asyncio.create_task(self._run(job, text, streaming))
            self._runners.add(job.runner)
            job.runner.add_done_callback(self._runners.discard)
            await updater.start_work(_say(updater, "Started."))
        elif job.asking is not None:
            asking = job.asking.request
            if asking.elicitation is not None:
                decision = read_answer(context.message, asking.elicitation)
                if isinstance(decision, str):
                    await _ask_elicitation(updater, asking.elicitation, problem=decision)
                    return
                said = "Accepted." if decision.decision != "deny" else "Declined."
            else:
                decision = read_decision(context.message)
                if decision is None:
                    await _ask(updater, asking, again=True)
                    return
                said = "Approved." if decision.decision != "deny" else "Denied."
            job.asking.answer.set_result(decision)
            job.asking = None
            await updater.start_work(_say(updater, said))
        try:
            await self._report(job, updater)
        except asyncio.CancelledError:
            if job.runner is not None:  # the SDK gave up on the task: so does the run
                job.runner.cancel()
            raise

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task's run, wait for it to stop, and mark the task canceled."""
        job = self._jobs.pop(context.task_id or "", None)
        if job is None or job.over:
            return
        job.over = True
        if job.runner is not None:
            job.runner.cancel()
            await asyncio.gather(job.runner, return_exceptions=True)
        updater = TaskUpdater(event_queue, job.task_id, job.context_id)
        await updater.cancel(_say(updater, "Canceled."))

    async def aclose(self) -> None:
        """Cancel every run still going (the server is stopping)."""
        runners = [job.runner for job in self._jobs.values() if job.runner is not None]
        self._jobs.clear()
        for runner in runners:
            runner.cancel()
        # With the runs that ended and are still closing their MCP servers, let finish.
        await asyncio.gather(*runners, *self._runners, return_exceptions=True)

    async def _run(self, job: _Job, text: str, streaming: bool) -> None:
        try:
            # The Swarm's own approval callback, if it has one; else the client decides.
            approve = None if self._swarm.approve is not None else job.approve
            stream = self._swarm.stream(text, text=streaming, run_id=job.task_id, approve=approve)
            async for event in stream:  # cancelling the runner cancels the run inside it
                if isinstance(event, events.RunFinished) and event.result is not None:
                    job.outbox.put_nowait(Done(event.result))
                elif not isinstance(event, events.RunFinished):
                    job.outbox.put_nowait(event)
        except Exception as error:  # the other side gets its message, never its traceback
            logger.info("A2A task %s failed", job.task_id, exc_info=True)
            job.outbox.put_nowait(_Failed(error_message(error)))

    async def _report(self, job: _Job, updater: TaskUpdater) -> None:
        """Pass the run's events on until it ends or asks for a decision."""
        while True:
            item = await job.outbox.get()
            if job.over:
                return
            if isinstance(item, Ask):
                job.asking = item
                if item.request.elicitation is not None:
                    await _ask_elicitation(updater, item.request.elicitation)
                else:
                    await _ask(updater, item.request)
                return
            if isinstance(item, Done | _Failed):
                job.over = True
                self._jobs.pop(job.task_id, None)
                if isinstance(item, _Failed):
                    await updater.failed(_say(updater, item.message))
                else:
                    await updater.add_artifact(
                        output_parts(item.result),
                        artifact_id=OUTPUT_ARTIFACT,
                        name=OUTPUT_ARTIFACT,
                        last_chunk=True,
                    )
                    # What the run spent, in the shape RemoteAgent (and others) read.
                    await updater.update_status(
                        TaskState.TASK_STATE_COMPLETED, metadata=usage_metadata(item.result)
                    )
                return
            await _progress(job, updater, item)


def usage_metadata(result: SwarmResult) -> dict[str, Any]:
    """A finished run's tokens and cost, as a completed task's metadata carries them."""
    usage = result.token_usage
    return {
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "cost": result.cost,
        }
    }


async def _progress(job: _Job, updater: TaskUpdater, event: events.Event) -> None:
    if isinstance(event, events.TextDelta):
        # Into the output artifact, so a client that keeps artifacts sees the answer once: each
        # agent's text replaces the one before (append=False), and the final output replaces all.
        await updater.add_artifact(
            [new_text_part(event.text)],
            artifact_id=OUTPUT_ARTIFACT,
            name=OUTPUT_ARTIFACT,
            metadata={"agent": event.agent_name},
            append=job.streaming == event.agent_name,
        )
        job.streaming = event.agent_name
        return
    said = describe(event)
    if said is not None:
        # On the message, not the update: an update's metadata stays on the task (the SDK
        # merges it in), and the finished task would carry the last event's keys.
        message = _say(updater, said)
        message.metadata.update({"event": type(event).__name__})
        agent = getattr(event, "agent_name", None)
        if agent is not None:
            message.metadata.update({"agent": agent})
        await updater.update_status(TaskState.TASK_STATE_WORKING, message)


def describe(event: events.Event) -> str | None:
    """A one-line account of ``event`` for a status update; None for those not reported."""
    match event:
        case events.AgentStarted(agent_name=agent, attempt=attempt):
            return f"{agent} started" + (f" (attempt {attempt})" if attempt > 1 else "")
        case events.AgentFinished(agent_name=agent, error=None):
            return f"{agent} finished"
        case events.AgentFinished(agent_name=agent, error=error):
            return f"{agent} failed: {error_message(error)}"
        case events.ToolCallStarted(agent_name=agent, tool_name=tool):
            return f"{agent} calls {tool}"
        case events.RouteChosen(route=route, branch=branch):
            return f"{route} chose {branch}"
        case events.LoopIteration(loop=loop, iteration=i, max_iterations=most):
            return f"{loop}: iteration {i} of {most}"
        case events.PlanMade(plan=plan, expression=expression):
            return f"{plan} planned {expression}"
        case events.RemoteStatus(agent_name=agent, state=state, message=said):
            return f"{agent} (remote) {state}" + (f": {said}" if said else "")
        case events.RetryScheduled(agent_name=agent, delay_seconds=delay):
            return f"{agent}: retrying in {delay:.1f}s"
        case _:
            return None


async def _ask(updater: TaskUpdater, request: ApprovalRequest, *, again: bool = False) -> None:
    arguments = json.dumps(request.arguments, ensure_ascii=False, default=str)
    text = (
        f"{request.agent_name} wants to call {request.tool_name}({arguments}). "
        "Reply 'approve', or 'deny' and a reason (or a data part "
        '{"approve": true|false, "reason": "..."}).'
    )
    if again:
        text = "That answer was neither approve nor deny. " + text
    data = {
        "type": "approval_request",
        "agent": request.agent_name,
        "tool": request.tool_name,
        "arguments": to_jsonable_python(request.arguments, fallback=str),
        "call_id": request.call_id,
    }
    message = updater.new_agent_message([new_text_part(text), new_data_part(data)])
    await updater.requires_input(message)


async def _ask_elicitation(updater: TaskUpdater, asked: Elicitation, *, problem: str = "") -> None:
    """An MCP server's question: its text for a person, the question whole as data."""
    if asked.mode == "url":
        text = (
            f"MCP server {asked.server!r} asks (during {asked.tool_name}): {asked.message} "
            f"Open {asked.url} then reply 'accept', or 'decline' and a reason."
        )
    else:
        fields = ", ".join(_form_fields(asked)) or "none"
        text = (
            f"MCP server {asked.server!r} asks (during {asked.tool_name}): {asked.message} "
            f'Reply with a data part {{"action": "accept", "content": {{...}}}} '
            f"holding the form's fields ({fields}; the schema is in the data part), "
            "or 'decline' and a reason."
        )
    if problem:
        text = f"That answer cannot go to the server: {problem}. {text}"
    data = to_jsonable_python(elicitation_shown(asked), fallback=str)
    message = updater.new_agent_message([new_text_part(text), new_data_part(data)])
    await updater.requires_input(message)


def _form_fields(asked: Elicitation) -> list[str]:
    properties = (asked.requested_schema or {}).get("properties")
    return list(cast("dict[str, Any]", properties)) if isinstance(properties, dict) else []


def read_answer(message: Message | None, asked: Elicitation) -> Approval | str:
    """The answer a client's message gives an MCP server's question, or what is wrong with it.

    A data part with an ``action`` is the answer; else the text's first word
    (``accept``, ``decline``, ``cancel``; the rest of it the reason).
    """
    if message is not None:
        for data in get_data_parts(message.parts):
            fields = cast("dict[str, Any]", data) if isinstance(data, dict) else {}
            if "action" in fields:
                return read_elicitation_answer(asked, fields)
        text = " ".join(get_text_parts(message.parts)).strip()
        word, _, rest = text.partition(" ")
        word = word.strip(".,!:;").lower()
        if word in ELICITATION_ACTIONS:
            return read_elicitation_answer(asked, {"action": word, "reason": rest.strip()})
    return read_elicitation_answer(asked, {})


def _say(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([new_text_part(text)])


def task_text(message: Message | None) -> str:
    """The task a message asks for: its text parts, then its data parts as JSON, one per line."""
    if message is None:
        return ""
    texts = [t for t in get_text_parts(message.parts) if t]
    data = [json.dumps(d, ensure_ascii=False) for d in get_data_parts(message.parts)]
    return "\n".join([*texts, *data])


def read_decision(message: Message | None) -> Approval | None:
    """The approval decision a client's message gives; None when it gives none."""
    if message is None:
        return None
    for data in get_data_parts(message.parts):
        fields = cast("dict[str, Any]", data) if isinstance(data, dict) else {}
        if isinstance(fields.get("approve"), bool):
            reason = str(fields.get("reason") or "")
            return Approval.allow() if fields["approve"] else Approval.deny(reason)
    text = " ".join(get_text_parts(message.parts)).strip()
    word, _, rest = text.partition(" ")
    word = word.strip(".,!:;").lower()
    if word in _YES:
        return Approval.allow()
    if word in _NO:
        return Approval.deny(rest.strip())
    return None


def output_parts(result: SwarmResult) -> list[Part]:
    """The output artifact's parts: the text, and the last agent's structured output as data."""
    parts = [new_text_part(result.output)]
    last = result.history[-1] if result.history else None
    if last is not None and last.parsed is not None and last.output == result.output:
        parts.append(new_data_part(to_jsonable_python(last.parsed, fallback=str)))
    return parts
