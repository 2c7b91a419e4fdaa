"""swarmcore: coordinate LLM agents with ``>>`` and ``|`` over a shared context.

```python
from swarmcore import Agent, Swarm

flow = researcher >> (analyst | critic) >> writer
result = await Swarm(flow, context_mode="pull").run("task")
```

Importing swarmcore never imports litellm: the model seam loads it on the
first model call, so building agents and flows stays instant.
"""

import logging

from swarmcore.agent import Agent
from swarmcore.context import SharedContext
from swarmcore.errors import AgentError, MaxTurnsExceeded, ModelError, SwarmError, UserError
from swarmcore.flow import Flow, chain, parallel
from swarmcore.models import AgentResult, LLMCallRecord, SwarmResult, TokenUsage, ToolCallRecord
from swarmcore.swarm import Swarm
from swarmcore.tools import Tool, function_tool

__all__ = [
    "Agent",
    "AgentError",
    "AgentResult",
    "Flow",
    "LLMCallRecord",
    "MaxTurnsExceeded",
    "ModelError",
    "SharedContext",
    "Swarm",
    "SwarmError",
    "SwarmResult",
    "TokenUsage",
    "Tool",
    "ToolCallRecord",
    "UserError",
    "chain",
    "function_tool",
    "parallel",
]

__version__ = "0.2.0"

# Quiet by default: records reach the user only through handlers they configure.
logging.getLogger("swarmcore").addHandler(logging.NullHandler())
