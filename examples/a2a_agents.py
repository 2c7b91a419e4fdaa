"""A2A: a swarmcore flow served as an Agent2Agent agent, and remote A2A agents as steps.

Run it with ``uv run python examples/a2a_agents.py`` (installed from PyPI: ``pip install
"swarmcore[a2a]"``). Everything listens on 127.0.0.1 only, and it runs on the
offline model when no provider key is set (set OPENAI_API_KEY to run it for real):

1. The *desk*, a swarmcore flow (``researcher >> writer``), is served as an A2A
   agent with ``swarm.to_a2a()``.
2. A plain ``a2a-sdk`` client (the SDK's own ``ClientFactory``; no swarmcore)
   reads the desk's card and sends it a question; the answer is the writer's.
3. The *shouter*, a plain ``a2a-sdk`` agent built with the SDK's own server
   classes (an ``AgentExecutor`` that answers in capitals), is served beside it.
4. A second swarmcore flow uses both as steps:
   ``planner >> RemoteAgent(desk) >> RemoteAgent(shouter)``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from starlette.applications import Starlette

from swarmcore import Agent, Swarm
from swarmcore.a2a import RemoteAgent
from swarmcore.testing import choose_model


@contextmanager
def serving(app: Any) -> Generator[str]:
    """Serve an ASGI app on 127.0.0.1 at a free port in a thread; its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


class Shouter(AgentExecutor):
    """A plain a2a-sdk agent: it answers with its input in capitals."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answer the task."""
        if context.current_task is None and context.message is not None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        task = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await task.add_artifact([new_text_part(context.get_user_input().upper())], name="answer")
        await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def shouter_app(url: str) -> Starlette:
    """The shouter on the SDK's own request handler, task store and routes."""
    card = AgentCard(
        name="Shouter",
        description="Repeats what it is sent, in capitals.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="shout", name="Shout", description="Capitals.", tags=["text"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Shouter(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


@contextmanager
def serving_shouter() -> Generator[str]:
    """The shouter served on a free port (its card must name the URL, known once bound)."""
    holder: dict[str, Starlette] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await holder["app"](scope, receive, send)

    with serving(app) as url:
        holder["app"] = shouter_app(url)
        yield url


async def ask_with_the_sdk(url: str, question: str) -> str:
    """A plain a2a-sdk client: read the card, send one message, return the answer's text."""
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        message = Message(role=Role.ROLE_USER, message_id="q1", parts=[Part(text=question)])
        answer = ""
        async for response in client.send_message(SendMessageRequest(message=message)):
            if response.HasField("task"):
                texts = [p.text for a in response.task.artifacts for p in a.parts if p.text]
                answer = "\n".join(texts) or answer
        return answer


async def main() -> None:
    model, notice = choose_model()
    print(notice)
    researcher = Agent("researcher", "You gather the facts for the question.", model=model)
    writer = Agent("writer", "You write a two-line answer.", model=model)
    desk = Swarm(researcher >> writer)

    with serving(desk.to_a2a(name="desk", description="Researches and answers.")) as desk_url:
        print(f"1. the desk (researcher >> writer) is served as an A2A agent at {desk_url}")
        answer = await ask_with_the_sdk(desk_url, "Is coffee good for you?")
        print(f"2. a plain a2a-sdk client asked it; the answer begins: {answer[:70]!r}")

        with serving_shouter() as shouter_url:
            print(f"3. a plain a2a-sdk agent (the shouter) is served at {shouter_url}")
            planner = Agent("planner", "You restate the question in one line.", model=model)
            flow = (
                planner
                >> RemoteAgent(desk_url, name="desk")
                >> RemoteAgent(shouter_url, name="shouter")
            )
            result = await Swarm(flow).run("Is tea good for you?")
            print(f"4. planner >> desk >> shouter ran; agents: {list(result.context)}")
            print(f"   the desk answered: {result['desk'].output.splitlines()[0][:70]!r}")
            print(f"   the shouter answered: {result['shouter'].output.splitlines()[0]!r}")


if __name__ == "__main__":
    asyncio.run(main())
