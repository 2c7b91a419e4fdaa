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

from swarmcore.agent import Agent, AgentDefaults
from swarmcore.batch import MapProgress
from swarmcore.context import SharedContext
from swarmcore.control import loop, plan, route
from swarmcore.errors import (
    AgentError,
    BudgetExceeded,
    DelegationDepthExceeded,
    GroupError,
    MaxTurnsExceeded,
    ModelError,
    OutputValidationError,
    SwarmError,
    UserError,
)
from swarmcore.flow import Flow, chain, parallel
from swarmcore.limits import ModelLimit, clear_model_limits, limit_model, set_model_limit
from swarmcore.models import (
    AgentFailure,
    AgentResult,
    Decision,
    LLMCallRecord,
    SwarmResult,
    TokenUsage,
    ToolCallRecord,
)
from swarmcore.policies import BEST_EFFORT, Quorum, RetryPolicy
from swarmcore.swarm import Swarm
from swarmcore.tools import Approval, ApprovalRequest, Tool, function_tool

__all__ = [
    "BEST_EFFORT",
    "Agent",
    "AgentDefaults",
    "AgentError",
    "AgentFailure",
    "AgentResult",
    "Approval",
    "ApprovalRequest",
    "BudgetExceeded",
    "Decision",
    "DelegationDepthExceeded",
    "Flow",
    "GroupError",
    "LLMCallRecord",
    "MapProgress",
    "MaxTurnsExceeded",
    "ModelError",
    "ModelLimit",
    "OutputValidationError",
    "Quorum",
    "RetryPolicy",
    "SharedContext",
    "Swarm",
    "SwarmError",
    "SwarmResult",
    "TokenUsage",
    "Tool",
    "ToolCallRecord",
    "UserError",
    "chain",
    "clear_model_limits",
    "function_tool",
    "limit_model",
    "loop",
    "parallel",
    "plan",
    "route",
    "set_model_limit",
]

__version__ = "0.2.0"

# Quiet by default: records reach the user only through handlers they configure.
logging.getLogger("swarmcore").addHandler(logging.NullHandler())
