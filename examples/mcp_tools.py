"""An agent using the tools of a local MCP server, beside a Python function.

Run it with ``uv run python examples/mcp_tools.py``. The server
(examples/mcp_server.py) is launched over stdio when the agent first needs it
and stopped when the run ends. Offline (no key) the built-in model calls each
tool it is offered once; with OPENAI_API_KEY set, a real model decides.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from swarmcore import Agent, Swarm
from swarmcore.console import ConsoleProgress
from swarmcore.mcp import MCPServer
from swarmcore.testing import choose_model


def cups_per_day(mg_limit: float, mg_per_cup: float) -> float:
    """How many cups fit under a daily caffeine limit.

    Args:
        mg_limit: The daily limit in milligrams.
        mg_per_cup: Caffeine in one cup, in milligrams.
    """
    return round(mg_limit / mg_per_cup, 1)


async def main() -> None:
    model, notice = choose_model()
    print(notice)
    server = str(Path(__file__).with_name("mcp_server.py"))
    units = MCPServer.stdio(sys.executable, [server], name="units")
    advisor = Agent(
        "advisor",
        "You answer questions about caffeine with the tools you have.",
        model=model,
        tools=[units.select("caffeine_per_cup"), cups_per_day],
    )
    swarm = Swarm(advisor, hooks=[ConsoleProgress(verbosity="detailed")])
    result = await swarm.run("How many cups of coffee stay under 400 mg a day?")
    print(result.output)
    for call in result["advisor"].tool_calls:
        where = f"MCP server {call.server}" if call.server else "Python"
        print(f"- {call.tool_name} ({where}) -> {call.result}")


if __name__ == "__main__":
    asyncio.run(main())
