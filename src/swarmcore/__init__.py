"""swarmcore: coordinate LLM agents with ``>>`` and ``|`` over a shared context.

```python
from swarmcore import Agent, Swarm

flow = researcher >> (analyst | critic) >> writer
result = await Swarm(flow, context_mode="pull").run("task")
```

Importing swarmcore never imports litellm: the model seam loads it on the
first model call. The names below are loaded on first use (PEP 562), so
``import swarmcore`` itself costs next to nothing and a program pays only for
the parts it touches.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swarmcore._batch import MapProgress as MapProgress
    from swarmcore._flow import Flow as Flow
    from swarmcore._flow import chain as chain
    from swarmcore._flow import parallel as parallel
    from swarmcore._policies import (
        BEST_EFFORT as BEST_EFFORT,
    )
    from swarmcore._policies import (
        Quorum as Quorum,
    )
    from swarmcore._policies import (
        RetryPolicy as RetryPolicy,
    )
    from swarmcore._swarm import Swarm as Swarm
    from swarmcore._tools import (
        Approval as Approval,
    )
    from swarmcore._tools import (
        ApprovalRequest as ApprovalRequest,
    )
    from swarmcore._tools import (
        Tool as Tool,
    )
    from swarmcore._tools import (
        function_tool as function_tool,
    )
    from swarmcore.agent import Agent as Agent
    from swarmcore.agent import AgentDefaults as AgentDefaults
    from swarmcore.context import SharedContext as SharedContext
    from swarmcore.control import loop as loop
    from swarmcore.control import plan as plan
    from swarmcore.control import route as route
    from swarmcore.errors import (
        AgentError as AgentError,
    )
    from swarmcore.errors import (
        BudgetExceeded as BudgetExceeded,
    )
    from swarmcore.errors import (
        DelegationDepthExceeded as DelegationDepthExceeded,
    )
    from swarmcore.errors import (
        GroupError as GroupError,
    )
    from swarmcore.errors import (
        MaxTurnsExceeded as MaxTurnsExceeded,
    )
    from swarmcore.errors import (
        ModelError as ModelError,
    )
    from swarmcore.errors import (
        OutputValidationError as OutputValidationError,
    )
    from swarmcore.errors import (
        StoreError as StoreError,
    )
    from swarmcore.errors import (
        SwarmError as SwarmError,
    )
    from swarmcore.errors import (
        UserError as UserError,
    )
    from swarmcore.llm._limits import (
        ModelLimit as ModelLimit,
    )
    from swarmcore.llm._limits import (
        clear_model_limits as clear_model_limits,
    )
    from swarmcore.llm._limits import (
        limit_model as limit_model,
    )
    from swarmcore.llm._limits import (
        set_model_limit as set_model_limit,
    )
    from swarmcore.llm.choice import set_model_backend as set_model_backend
    from swarmcore.results import (
        AgentFailure as AgentFailure,
    )
    from swarmcore.results import (
        AgentResult as AgentResult,
    )
    from swarmcore.results import (
        Decision as Decision,
    )
    from swarmcore.results import (
        LLMCallRecord as LLMCallRecord,
    )
    from swarmcore.results import (
        SwarmResult as SwarmResult,
    )
    from swarmcore.results import (
        TokenUsage as TokenUsage,
    )
    from swarmcore.results import (
        ToolCallRecord as ToolCallRecord,
    )

_SOURCES: dict[str, str] = {
    "BEST_EFFORT": "swarmcore._policies",
    "Agent": "swarmcore.agent",
    "AgentDefaults": "swarmcore.agent",
    "AgentError": "swarmcore.errors",
    "AgentFailure": "swarmcore.results",
    "AgentResult": "swarmcore.results",
    "Approval": "swarmcore._tools",
    "ApprovalRequest": "swarmcore._tools",
    "BudgetExceeded": "swarmcore.errors",
    "Decision": "swarmcore.results",
    "DelegationDepthExceeded": "swarmcore.errors",
    "Flow": "swarmcore._flow",
    "GroupError": "swarmcore.errors",
    "LLMCallRecord": "swarmcore.results",
    "MapProgress": "swarmcore._batch",
    "MaxTurnsExceeded": "swarmcore.errors",
    "ModelError": "swarmcore.errors",
    "ModelLimit": "swarmcore.llm._limits",
    "OutputValidationError": "swarmcore.errors",
    "Quorum": "swarmcore._policies",
    "RetryPolicy": "swarmcore._policies",
    "SharedContext": "swarmcore.context",
    "StoreError": "swarmcore.errors",
    "Swarm": "swarmcore._swarm",
    "SwarmError": "swarmcore.errors",
    "SwarmResult": "swarmcore.results",
    "TokenUsage": "swarmcore.results",
    "Tool": "swarmcore._tools",
    "ToolCallRecord": "swarmcore.results",
    "UserError": "swarmcore.errors",
    "chain": "swarmcore._flow",
    "clear_model_limits": "swarmcore.llm._limits",
    "function_tool": "swarmcore._tools",
    "limit_model": "swarmcore.llm._limits",
    "loop": "swarmcore.control",
    "parallel": "swarmcore._flow",
    "plan": "swarmcore.control",
    "route": "swarmcore.control",
    "set_model_backend": "swarmcore.llm.choice",
    "set_model_limit": "swarmcore.llm._limits",
}
"""Where each public name lives; imported on first access."""

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
    "StoreError",
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
    "set_model_backend",
    "set_model_limit",
]

__version__ = "1.0.0"


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'swarmcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# Quiet by default: records reach the user only through handlers they configure.
logging.getLogger("swarmcore").addHandler(logging.NullHandler())
