"""Tools: plain functions turned into JSON schemas, validated calls and recorded results.

A function's signature becomes a pydantic model (so ``list[T]``, ``X | None``,
``Literal``, enums, nested models, defaults and ``Annotated[..., Field(...)]``
all work), its Google-style docstring gives the descriptions, and every call's
arguments are validated before the function runs. The schema is built once,
when the Agent is built; a signature that cannot become a schema fails there.

Model mistakes (an unknown tool, malformed JSON, invalid arguments) and tools
that raise become a tool result the model can act on, and are recorded; they
never crash the run.

The package, by concern:

* ``_tool``: the :class:`Tool` value, its validation and invocation, :class:`Toolset`.
* ``_function``: :func:`function_tool`, a Tool from a Python function's signature and docstring.
* ``_approval``: :class:`ApprovalRequest`, :class:`Approval` and asking the run's callback.
* ``_call``: :func:`run_tool_call`, one call with its time limit, truncation and record.
"""

from swarmcore.tools._approval import Approval, ApprovalRequest, Approver, Decided, ask
from swarmcore.tools._call import run_tool_call, truncate
from swarmcore.tools._function import function_tool, to_tools
from swarmcore.tools._function import parse_docstring as parse_docstring
from swarmcore.tools._tool import Tool, Toolset, validate_name
from swarmcore.tools._tool import ToolArgumentsError as ToolArgumentsError
from swarmcore.tools._tool import ToolReportedError as ToolReportedError
from swarmcore.tools._tool import serialise_result as serialise_result

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Decided",
    "Tool",
    "Toolset",
    "ask",
    "function_tool",
    "run_tool_call",
    "to_tools",
    "truncate",
    "validate_name",
]
