"""AG-UI: a swarmcore flow behind a web page that speaks AG-UI with ``@ag-ui/client``.

Run it with ``uv run python examples/ag_ui_app/server.py`` (installed from PyPI:
``pip install "swarmcore[ag-ui]"``) and open http://127.0.0.1:8000/. It runs on
the offline model when no provider key is set (set OPENAI_API_KEY to run it for real).

The flow is ``(researcher | critic) >> writer``: the two first agents stream side by
side, the writer's ``publish`` tool needs approval, so the page asks you (an AG-UI
interrupt) and your answer resumes the run. The page (``index.html``) is plain HTML
and JavaScript on the official ``@ag-ui/client``; this script serves it and the flow
from one origin: the page at ``/``, the AG-UI agent at ``/agent/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Mount, Route

from swarmcore import Agent, Swarm, function_tool
from swarmcore.testing import choose_model

PAGE = Path(__file__).with_name("index.html")


def publish(title: str, text: str) -> str:
    """Publish the article: needs a person's approval."""
    return f"published {title!r} ({len(text)} characters)"


def build_app(model: str) -> Starlette:
    """The page at ``/`` and the flow, served as an AG-UI agent, at ``/agent/``."""
    flow = (
        Agent("researcher", "You gather the facts about the task.", model=model)
        | Agent("critic", "You say what could go wrong.", model=model)
    ) >> Agent(
        "writer",
        "You write a short article from the context, then publish it.",
        model=model,
        tools=[function_tool(publish, requires_approval=True)],
    )
    agent = Swarm(flow).to_ag_ui()

    async def page(_: Request) -> FileResponse:
        return FileResponse(PAGE)

    return Starlette(routes=[Route("/", page), Mount("/agent", app=agent)])


if __name__ == "__main__":
    chosen, notice = choose_model()
    print(notice, file=sys.stderr)
    print("open http://127.0.0.1:8000/", file=sys.stderr)
    uvicorn.run(build_app(chosen), host="127.0.0.1", port=8000, log_level="warning")
