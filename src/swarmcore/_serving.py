"""What the serving faces (A2A, AG-UI) share: what a served run says, and the errors shown.

A served run hands its protocol's stream the run's events, a question for the
client (:class:`Ask`) and its end (:class:`Done`, or the face's own failure).
A question may be an MCP server's (an elicitation): every face shows it the same
way (:func:`elicitation_shown`) and reads the same answer
(:func:`read_elicitation_answer`).
A client on the other side of a socket gets an error's first line, every
credential in the environment masked, never a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._tools._approval import Elicitation
from swarmcore.llm._redaction import env_secrets, redact
from swarmcore.results import SwarmResult

MAX_MESSAGE = 500
"""The most characters of an error's message a client is sent."""


def error_message(error: BaseException | None) -> str:
    """An error's first line, credentials in the environment masked: what the client sees."""
    # Redacted whole, then cut: a key cut in two at the limit would no longer be found.
    text = redact(str(error), *env_secrets()).strip() or type(error).__name__
    line = text.splitlines()[0]
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1] + "…"
    return line


@dataclass
class Ask:
    """The run waits for the client's decision on ``request``."""

    request: ApprovalRequest
    answer: asyncio.Future[Approval]


@dataclass
class Done:
    """The run finished with ``result``."""

    result: SwarmResult


ELICITATION_ACTIONS = ("accept", "decline", "cancel")
"""What a client may answer an MCP server's question with."""


def elicitation_shown(asked: Elicitation) -> dict[str, Any]:
    """What a client is shown of an MCP server's question (JSON, the same on every face)."""
    shown: dict[str, Any] = {
        "type": "elicitation_request",
        "server": asked.server,
        "agent": asked.agent_name,
        "tool": asked.tool_name,
        "tool_call_id": asked.call_id,
        "mode": asked.mode,
        "message": asked.message,
    }
    if asked.mode == "url":
        shown["url"] = asked.url
    else:
        shown["requested_schema"] = dict(asked.requested_schema or {})
    return shown


def elicitation_answer_schema(asked: Elicitation) -> dict[str, Any]:
    """The JSON schema of the answer a client sends: an action, and a form's values."""
    properties: dict[str, Any] = {
        "action": {
            "type": "string",
            "enum": list(ELICITATION_ACTIONS),
            "description": "accept (with the values, for a form; having opened the page, "
            "for a URL), decline, or cancel.",
        },
        "reason": {"type": "string", "description": "Why it was declined; the server is told."},
    }
    if asked.mode == "form":
        properties["content"] = dict(asked.requested_schema or {"type": "object"})
    return {"type": "object", "properties": properties, "required": ["action"]}


def read_elicitation_answer(asked: Elicitation, answer: object) -> Approval | str:
    """The decision a client's answer ``{"action": ..., "content": {...}}`` makes.

    A form's values are checked against its schema here, so a client hears what
    is wrong and may answer again rather than the server getting a decline.
    ``cancel`` reaches the server as a decline (an approval allows, denies or edits).

    Returns:
        The decision, or what is wrong with the answer.
    """
    expected = (
        '{"action": "accept", "content": {...the form\'s values...}}'
        if asked.mode == "form"
        else '{"action": "accept"} (the page was opened)'
    )
    fields = cast("dict[str, Any]", answer) if isinstance(answer, Mapping) else {}
    action = fields.get("action")
    if action not in ELICITATION_ACTIONS:
        return (
            f"the answer to the question of MCP server {asked.server!r} must be {expected}, "
            '{"action": "decline", "reason": "..."} or {"action": "cancel"}'
        )
    if action != "accept":
        reason = str(fields.get("reason") or "")
        return Approval.deny(
            reason or f"the user {'cancelled' if action == 'cancel' else 'declined'}"
        )
    if asked.mode == "url":
        return Approval.allow()
    content = fields.get("content", {})
    if not isinstance(content, Mapping):
        return f"'content' must be an object of the form's values: {expected}"
    values = dict(cast("Mapping[str, Any]", content))
    from swarmcore.mcp._results import schema_validator  # jsonschema comes with mcp

    problem = schema_validator(dict(asked.requested_schema or {}))(values)
    if problem:
        return f"the form's values do not fit its schema: {problem}"
    return Approval.edit(values)
