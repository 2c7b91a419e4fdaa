"""Running one tool call: approval, the time limit, and a result the model can act on.

Model mistakes (an unknown tool, malformed JSON, invalid arguments) and tools
that raise or overrun become a tool result, and are recorded; they never
crash the run. An error's text is redacted of credentials (the agent's own,
and those in the environment) before it is cut or goes anywhere: a tool's
exception often quotes one (an HTTP client's error with ``?api_key=...`` in
its URL).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from swarmcore._checks import DEFAULT
from swarmcore._tools._approval import Approver, Decided, ask
from swarmcore._tools._tool import Tool, ToolArgumentsError, ToolReportedError
from swarmcore.errors import SwarmError
from swarmcore.llm._redaction import env_secrets, redact
from swarmcore.results import ElicitationRecord, ToolCallRecord


async def run_tool_call(
    tools: Mapping[str, Tool],
    call_id: str,
    name: str,
    arguments: str,
    *,
    default_timeout: float | None = None,
    max_result_chars: int | None = None,
    approve: Approver | None = None,
    agent_name: str = "",
    decided: Decided | None = None,
    secrets: Sequence[str] = (),
    elicitations: Sequence[ElicitationRecord] = (),
) -> ToolCallRecord:
    """Run one tool call; every failure becomes an error result the model can act on.

    Cancellation is never swallowed: only ordinary exceptions (and the tool's
    own timeout) become results.

    Args:
        tools: The tools by name.
        call_id: The provider's ``tool_call_id``.
        name: The tool the model named.
        arguments: The raw JSON arguments.
        default_timeout: Seconds allowed for a tool without its own ``timeout``;
            None for no limit.
        max_result_chars: Longer results are cut to this many characters and
            marked as cut; None keeps them whole.
        approve: The approval callback for tools marked ``requires_approval``.
        agent_name: The calling agent, for the approval request.
        decided: The approval already asked for (:func:`ask`'s answer); then
            ``approve`` is not called.
        secrets: Credentials to redact from an error (the agent's key and
            secret settings); those in the environment always are.
        elicitations: Where the tool leaves the questions an MCP server asked while
            it ran (``CallInProgress.elicitations``); read once the call is over.

    Returns:
        The record of the call, its result (or error) included.

    Raises:
        UserError: The tool requires approval and there is no callback, or the
            callback returned something that is not a decision.
    """
    start = time.perf_counter()
    started_at = time.time()
    error: str | None = None
    approval: str | None = None
    tool = tools.get(name)
    if decided is not None:
        arguments, error, approval = decided
    elif tool is not None and tool.requires_approval:
        arguments, error, approval = await ask(tool, approve, agent_name, call_id, arguments)
    if error is not None:
        result = error
    elif tool is None:
        result = error = f"Unknown tool {name!r}. Available tools: {', '.join(tools) or 'none'}."
    else:
        limit = default_timeout if tool.timeout is DEFAULT else tool.timeout
        result, error = await _invoke(tool, name, arguments, limit)
    if error is not None:  # redacted whole, before it is cut below
        result = error = redact(error, *secrets, *env_secrets())
    result, full_length = truncate(result, max_result_chars)
    return ToolCallRecord(
        call_id=call_id,
        tool_name=name,
        arguments=arguments,
        result=result,
        error=error,
        duration_seconds=time.perf_counter() - start,
        started_at=started_at,
        truncated_from=full_length,
        server=getattr(tool, "server", None),  # MCP tools name their server
        approval=approval,
        elicitations=list(elicitations),
    )


async def _invoke(
    tool: Tool, name: str, arguments: str, limit: float | None
) -> tuple[str, str | None]:
    """Run ``tool`` (called ``name``) within ``limit`` seconds: (result, None) or (error, error)."""
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await tool.invoke(arguments), None
    except (ToolArgumentsError, ToolReportedError) as exc:
        error = str(exc)
    except SwarmError:  # swarmcore's own stop signals (a dead MCP server, a budget) end the agent
        raise
    except TimeoutError as exc:
        if deadline.expired():
            own = tool.timeout is not DEFAULT
            setting = "the tool's timeout" if own else "the agent's tool_timeout"
            error = (
                f"Tool {name!r} did not finish within {limit:g}s and was stopped "
                f"({setting}; raise it if the tool needs longer).{tool.timeout_note()}"
            )
        else:  # the tool's own TimeoutError, not our limit
            error = f"Tool {name!r} raised TimeoutError: {exc}"
    except Exception as exc:  # a tool's own failure is reported to the model, not raised
        error = f"Tool {name!r} raised {type(exc).__name__}: {exc}"
    return error, error


def truncate(text: str, limit: int | None) -> tuple[str, int | None]:
    """Cut ``text`` to ``limit`` characters with a visible marker.

    Args:
        text: The result text.
        limit: The most characters to keep; None keeps it whole.

    Returns:
        The text to send, and its original length when it was cut (else None).
    """
    if limit is None or len(text) <= limit:
        return text, None
    marker = (
        f"\n\n[truncated: showing the first {limit:,} of {len(text):,} characters; "
        "ask for a narrower result if you need the rest]"
    )
    return text[:limit] + marker, len(text)
