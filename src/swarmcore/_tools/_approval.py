"""Approvals: a person (or a policy) allows, denies or edits a call before it runs."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from swarmcore._tools._tool import Tool, ToolArgumentsError
from swarmcore.errors import SwarmError, UserError


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call to a tool marked ``requires_approval``, waiting for a decision."""

    agent_name: str
    """The agent that wants to call the tool."""
    tool_name: str
    """The tool."""
    arguments: dict[str, Any]
    """The arguments the model sent (already validated against the tool's schema)."""
    call_id: str
    """The provider's ``tool_call_id`` (for an elicitation, the call's id and the question's
    number: ``call_1#elicitation1``)."""
    elicitation: Elicitation | None = None
    """Set when an MCP server asks a question in the middle of the call (see
    :class:`Elicitation`) rather than the call asking to run: :meth:`Approval.edit`
    answers a form with its values, :meth:`Approval.allow` accepts (a URL, or a form with
    nothing to fill), :meth:`Approval.deny` declines."""


@dataclass(frozen=True, slots=True)
class Elicitation:
    """A question an MCP server asks while one of its tools runs (MCP *elicitation*).

    A ``form`` asks for values fitting ``requested_schema`` (a flat JSON schema); a
    ``url`` asks the person to open ``url`` (to log in, pay, consent) and say whether
    they did.
    """

    server: str
    """The MCP server that asks."""
    agent_name: str
    """The agent whose tool call is waiting."""
    tool_name: str
    """The tool being called, as the model knows it."""
    call_id: str
    """The tool call's ``tool_call_id``."""
    mode: Literal["form", "url"]
    """``form`` (fill in values) or ``url`` (open a page)."""
    message: str
    """What the server says it needs, for the person."""
    requested_schema: Mapping[str, Any] | None = None
    """For a form: the JSON schema the answer must fit."""
    url: str | None = None
    """For a URL request: the page to open."""
    elicitation_id: str | None = None
    """For a URL request: the server's id for it."""


@dataclass(frozen=True, slots=True)
class Approval:
    """An approval callback's decision: :meth:`allow`, :meth:`deny` or :meth:`edit`.

    A callback may also return ``True`` (allow) or ``False`` (deny).
    """

    decision: Literal["allow", "deny", "edit"]
    reason: str = ""
    """Why a call was denied; the model is told."""
    arguments: Mapping[str, Any] | None = None
    """The arguments to run with instead, for ``edit``."""

    @classmethod
    def allow(cls) -> Approval:
        """Run the call as the model asked."""
        return cls("allow")

    @classmethod
    def deny(cls, reason: str = "") -> Approval:
        """Do not run the call; the model is told it was denied, and why."""
        return cls("deny", reason=reason)

    @classmethod
    def edit(cls, arguments: Mapping[str, Any]) -> Approval:
        """Run the call with these arguments instead (validated like the model's)."""
        return cls("edit", arguments=dict(arguments))


class AnswerNeeded(SwarmError):
    """A tool call stopped at a question that must wait for a person, durably.

    Under a durable engine, an MCP server's question in a run with no callback to
    answer it cannot wait inside the recorded tool call (a step cannot wait for a
    message), so the call stops with this error (recorded with the step); the agent's
    loop waits for the decision on :attr:`request` outside the step, then makes the
    call again with the answer ready for the same question.

    Args:
        request: The question, as the approval it waits for.
    """

    request: ApprovalRequest

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__(f"Tool {request.tool_name!r} waits for an answer to {request.call_id!r}.")
        self.request = request


Approver = Callable[[ApprovalRequest], "Approval | bool | Awaitable[Approval | bool]"]
"""An approval callback, sync or async."""

_OUTCOMES = {"allow": "allowed", "deny": "denied", "edit": "edited"}
"""How each decision is recorded on the call (``ToolCallRecord.approval``)."""


Decided = tuple[str, "str | None", "str | None"]
"""What :func:`ask` found: the arguments to run with, the error for the model, the outcome."""

Recorder = Callable[[str, Callable[[], Awaitable["Approval"]]], Awaitable["Approval"]]
"""Makes a named call as a step of the run (``RunScope.step``): how a decision is recorded."""


async def ask(
    tool: Tool,
    approve: Approver | None,
    agent_name: str,
    call_id: str,
    arguments: str,
    step: Recorder | None = None,
    wait: Callable[[ApprovalRequest], Awaitable[Approval]] | None = None,
) -> Decided:
    """Ask whether a call to ``tool`` may run.

    Args:
        tool: The tool, marked ``requires_approval``.
        approve: The run's approval callback, if any.
        agent_name: The calling agent.
        call_id: The provider's ``tool_call_id``.
        arguments: The model's arguments, as JSON text.
        step: Makes the callback's call as the run's step ``"approval"`` (a
            durable engine records it); by default the callback is just called.
        wait: A durable engine's wait for a decision, used when there is no
            callback (the run's ``RunScope.decider``).

    Returns:
        The arguments to run with, the error for the model when the call must not
        run (bad arguments, or denied), and the recorded outcome (None when the
        arguments were bad and nobody was asked).

    Raises:
        UserError: There is no callback (and no durable engine to wait for a
            decision), or it returned something that is not a decision.
    """
    try:  # bad arguments go back to the model, not to a person, as for any tool
        tool.validate_arguments(arguments)
        shown = tool.json_object(arguments)
    except ToolArgumentsError as exc:
        return arguments, str(exc), None
    request = ApprovalRequest(agent_name, tool.name, shown, call_id)
    if approve is not None:  # recorded under a durable engine: not asked again on a replay

        async def asking() -> Approval:
            return await decide(approve, request)

        decision: Approval = await (asking() if step is None else step("approval", asking))
    elif wait is not None:  # a durable engine parks the run
        decision = await wait(request)
    else:
        raise UserError(
            f"Tool {tool.name!r} requires approval, and this run has no approval callback; "
            "pass approve=callback to Swarm(...) or agent.run(...)."
        )
    outcome = _OUTCOMES[decision.decision]
    if decision.decision == "deny":
        return arguments, _denied(tool.name, decision.reason), outcome
    if decision.arguments is not None:
        arguments = json.dumps(dict(decision.arguments))
    return arguments, None, outcome


async def decide(approve: Approver, request: ApprovalRequest) -> Approval:
    """Call the approval callback (sync or async) and read its answer as an :class:`Approval`.

    Args:
        approve: The callback.
        request: The call waiting for a decision.

    Returns:
        The decision; ``True`` and ``False`` become allow and deny.

    Raises:
        UserError: The callback returned something that is not a decision.
    """
    verdict = approve(request)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    if isinstance(verdict, bool):
        return Approval.allow() if verdict else Approval.deny()
    if not isinstance(verdict, Approval):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callbacks
        raise UserError(
            f"The approval callback returned {type(verdict).__name__} for tool "
            f"{request.tool_name!r}; return Approval.allow(), Approval.deny(reason), "
            "Approval.edit(arguments), True or False."
        )
    return verdict


def _denied(name: str, reason: str) -> str:
    why = f": {reason}" if reason else ""
    return (
        f"The user denied this call to {name!r}{why}. Do not repeat it; continue without it "
        "or ask for something else."
    )
