"""A plain a2a-sdk agent, served over loopback HTTP: what swarmcore's client is tested against.

Everything here is the SDK's own server side (its request handler, in-memory
task store and Starlette routes); only the small :class:`ScriptedExecutor` is
ours. What it does depends on the text it is sent (see its docstring), so one
server covers every case. Beside it, ``/bad`` is an agent whose card is real
but whose endpoint answers garbage, ``/broken`` one whose endpoint always fails
with HTTP 500 (a bug of its own), and a bearer token can be required.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field

from a2a.helpers import (
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from tests.serving import bound_socket, serve

BIG = 1_200_000
"""Characters the ``big`` command answers: past the client's 1,000,000 limit."""


@dataclass
class Seen:
    """What the server saw: texts sent, each request's Authorization header, cancellations."""

    texts: list[str] = field(default_factory=list[str])
    authorization: list[str | None] = field(default_factory=list[str | None])
    cancelled: list[str] = field(default_factory=list[str])
    """The ids of the tasks a client cancelled."""
    overloaded: int = 0
    """Requests answered 503."""
    broken: int = 0
    """Requests ``/broken`` answered 500."""


class ScriptedExecutor(AgentExecutor):
    """An A2A agent whose behaviour the first word of its input picks.

    - ``fail ...``: the task fails with the message "remote exploded: disk full".
    - ``hang ...``: never answers.
    - ``big ...``: answers BIG characters.
    - ``data ...``: answers a data part ``{"answer": 42, "echo": <text>}``.
    - ``ask ...``: asks for more input (``input-required``).
    - ``crash ...``: raises (the SDK fails the task).
    - anything else: the text upper-cased, streamed in three artifact chunks
      after a "working" status, with usage in the final status's metadata.
    """

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answer the request as the first word of its text says."""
        text = context.get_user_input()
        self.seen.texts.append(text)
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None and context.message is not None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work(
            new_text_message("reading the task", context_id=context_id, task_id=task_id)
        )
        command = text.split(maxsplit=1)[0].lower() if text.strip() else ""
        match command:
            case "fail":
                await updater.failed(new_text_message("remote exploded: disk full"))
            case "hang":
                await asyncio.sleep(3600)
            case "crash":
                raise RuntimeError("executor crashed")
            case "big":
                await updater.add_artifact([new_text_part("x" * BIG)], name="answer")
                await updater.complete()
            case "data":
                part = new_data_part({"answer": 42, "echo": text})
                await updater.add_artifact([part], name="answer")
                await updater.complete()
            case "ask":
                await updater.requires_input(new_text_message("which city do you mean?"))
            case _:
                answer = text.upper()
                third = max(1, len(answer) // 3)
                chunks = [answer[:third], answer[third : 2 * third], answer[2 * third :]]
                for i, chunk in enumerate(chunks):
                    await updater.add_artifact(
                        [new_text_part(chunk)],
                        artifact_id="answer",
                        name="answer",
                        append=i > 0,
                        last_chunk=i == len(chunks) - 1,
                    )
                usage = {"usage": {"prompt_tokens": 7, "completion_tokens": 5}}
                await updater.update_status(TaskState.TASK_STATE_COMPLETED, metadata=usage)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        self.seen.cancelled.append(context.task_id or "")
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def agent_card(url: str, *, streaming: bool = True) -> AgentCard:
    """The card of the scripted agent served at ``url``."""
    return AgentCard(
        name="Shouter",
        description="Upper-cases what it is sent.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="shout", name="shout", description="Upper-cases text", tags=["x"])],
    )


def _app(
    base: str, seen: Seen, *, streaming: bool, token: str | None, fail_first: int
) -> Starlette:
    card = agent_card(f"{base}/", streaming=streaming)
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(seen), task_store=InMemoryTaskStore(), agent_card=card
    )
    bad_card = agent_card(f"{base}/bad/", streaming=False)

    async def garbage(request: Request) -> Response:
        body = json.loads(await request.body())
        if "notjson" in json.dumps(body):
            return Response("<html>this is not JSON</html>", media_type="application/json")
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {"task": 17}})

    bad = Starlette(
        routes=[*create_agent_card_routes(bad_card), Route("/", garbage, methods=["POST"])]
    )

    async def crash(request: Request) -> Response:
        seen.broken += 1
        return Response("KeyError: 'acceptedOutputModes'", status_code=500)

    broken_card = agent_card(f"{base}/broken/", streaming=True)
    broken = Starlette(
        routes=[*create_agent_card_routes(broken_card), Route("/", crash, methods=["POST"])]
    )
    app = Starlette(
        routes=[
            Mount("/bad", app=bad),
            Mount("/broken", app=broken),
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/"),
        ]
    )

    async def check_token(request: Request, call_next: RequestResponseEndpoint) -> Response:
        header = request.headers.get("authorization")
        seen.authorization.append(header)
        if token is not None and header != f"Bearer {token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        if request.method == "POST" and seen.overloaded < fail_first:
            seen.overloaded += 1
            return Response("overloaded", status_code=503)
        return await call_next(request)

    app.add_middleware(BaseHTTPMiddleware, dispatch=check_token)
    return app


@dataclass
class Remote:
    """A running scripted agent: its base URL and what it saw."""

    url: str
    seen: Seen


@contextmanager
def a2a_server(
    *, streaming: bool = True, token: str | None = None, fail_first: int = 0
) -> Generator[Remote]:
    """Serve the scripted agent on 127.0.0.1 at a free port in a thread; stopped on exit.

    Args:
        streaming: What the card says of streaming.
        token: The bearer token every request must carry, if any.
        fail_first: How many task requests (POSTs) are answered 503 first.
    """
    seen = Seen()
    sock = bound_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # the card names it: known before the app
    app = _app(url, seen, streaming=streaming, token=token, fail_first=fail_first)
    # A hanging task's stream may still be open at the end: don't wait on it for long.
    with serve(app, sock=sock, lifespan="off", grace=1):
        yield Remote(url, seen)


def free_url() -> str:
    """A loopback URL where nothing listens (a port bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
