"""MCP tool servers: the tools of any Model Context Protocol server, beside Python functions.

```python
from swarmcore.mcp import MCPServer

files = MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])
agent = Agent("clerk", "You manage files.", tools=[files.select("read_file", "list_directory")])
```

Connections follow the run: a server is connected the first time an agent of
the run needs its tools, shared by every agent of that run (parallel ones
included), and closed when the run ends, fails or is cancelled. Open the
server yourself (``async with files: ...``) to share one connection across
runs, or to list its tools (``await files.tools()``) outside any run. The tool
list is fetched once per connection.

Each connection lives in a task of its own, because the SDK's transports must
be entered and exited by the same task; agents in any task call through it. A
server that dies mid-run turns the call into a tool error the model sees, the
next call restarts the server once, and if that fails the agent stops with an
:class:`MCPError`.

The official ``mcp`` SDK (v2) is imported only when a server is connected.

The package, by concern:

* ``_server``: :class:`MCPServer` (stdio, HTTP, in-process; select) and :class:`MCPTool`.
* ``_connection``: one connection, its task, its transports and its restart; :class:`MCPError`.
* ``_scope``: the connections of the run in progress (:class:`ConnectionScope`).
* ``_elicit``: answering a server's questions (:class:`Elicitation`, :class:`ElicitationAnswer`).
* ``_tasks``: following a call the server answers with a task (the tasks extension).
* ``_results``: checking arguments against a tool's schema; its result as text.
"""

from swarmcore._tools._approval import Elicitation
from swarmcore.mcp._connection import MCPError
from swarmcore.mcp._elicit import ElicitationAnswer, Elicitor
from swarmcore.mcp._server import MCPServer, MCPTool
from swarmcore.mcp._server import gather_tools as gather_tools
from swarmcore.scope import ConnectionScope as ConnectionScope

__all__ = ["Elicitation", "ElicitationAnswer", "Elicitor", "MCPError", "MCPServer", "MCPTool"]
