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

from swarmcore._tools._approval import AnswerNeeded as AnswerNeeded
from swarmcore._tools._approval import Approval as Approval
from swarmcore._tools._approval import ApprovalRequest as ApprovalRequest
from swarmcore._tools._approval import Approver as Approver
from swarmcore._tools._approval import Decided as Decided
from swarmcore._tools._approval import ask as ask
from swarmcore._tools._call import run_tool_call as run_tool_call
from swarmcore._tools._call import truncate as truncate
from swarmcore._tools._function import function_tool as function_tool
from swarmcore._tools._function import parse_docstring as parse_docstring
from swarmcore._tools._function import to_tools as to_tools
from swarmcore._tools._tool import TaskPending as TaskPending
from swarmcore._tools._tool import Tool as Tool
from swarmcore._tools._tool import ToolArgumentsError as ToolArgumentsError
from swarmcore._tools._tool import ToolReportedError as ToolReportedError
from swarmcore._tools._tool import Toolset as Toolset
from swarmcore._tools._tool import serialise_result as serialise_result
from swarmcore._tools._tool import validate_name as validate_name
