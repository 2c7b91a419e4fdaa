"""Answering an MCP server's questions (elicitation) while one of its tools runs.

A server may stop in the middle of a tool call to ask for a form's values or
for a person to open a URL. Who answers, in order:

1. the server's own ``elicit`` callback (``MCPServer.stdio(..., elicit=callback)``);
2. else the run's approval callback (``approve=``), given an
   :class:`~swarmcore.ApprovalRequest` whose ``elicitation`` is the question;
3. else, under a durable engine (DBOS), a person: the question waits durably like
   an approval (``swarm.pending_approvals``, ``swarm.decide``, ``swarmcore runs
   approve``). A recorded tool call cannot wait for a message, so the call stops
   (:class:`~swarmcore._tools.AnswerNeeded`, recorded with it), the agent's loop
   waits outside it, and the call is made again with the answer ready; the server's
   tool body runs once, after its question is answered;
4. else nobody: swarmcore declines, and tells the server why (in the answer's
   ``_meta``), so a server never waits on a question no one will see.

A form's values are checked against the server's schema before they go back;
values that do not fit are declined with the problem as the reason. Every
question and its answer are recorded on the tool call
(``ToolCallRecord.elicitations``), redacted like the rest of the record, and
published as :class:`~swarmcore.events.ElicitationRequested` /
:class:`~swarmcore.events.ElicitationAnswered` events.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from swarmcore import events
from swarmcore._tools import Approval, ApprovalRequest, Approver
from swarmcore._tools._approval import Elicitation
from swarmcore._tools._approval import decide as decide_approval
from swarmcore.errors import UserError
from swarmcore.mcp._results import schema_validator
from swarmcore.results import ElicitationRecord
from swarmcore.scope import CallInProgress

logger = logging.getLogger("swarmcore.mcp")

REASON_KEY = "dev.swarmcore/reason"
"""Where a declined or cancelled answer tells the server why (its ``_meta``)."""

Action = Literal["accept", "decline", "cancel"]
AnsweredBy = Literal["elicit", "approve", "decide", "nobody"]


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """An answer to an MCP server's question: :meth:`accept`, :meth:`decline` or :meth:`cancel`."""

    action: Action
    content: Mapping[str, Any] | None = None
    """For an accepted form: the values, which must fit its ``requested_schema``."""
    reason: str = ""
    """Why it was declined or cancelled; the server is told."""

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationAnswer:
        """Answer a form with ``content``, or say a URL was opened (no content)."""
        return cls("accept", None if content is None else dict(content))

    @classmethod
    def decline(cls, reason: str = "") -> ElicitationAnswer:
        """Refuse to answer; the server is told ``reason``."""
        return cls("decline", reason=reason)

    @classmethod
    def cancel(cls, reason: str = "") -> ElicitationAnswer:
        """Dismiss the question without choosing; the server is told ``reason``."""
        return cls("cancel", reason=reason)


class Elicitor(Protocol):
    """An ``elicit`` callback: answers an MCP server's question, sync or async."""

    def __call__(self, request: Elicitation, /) -> ElicitationAnswer | Awaitable[ElicitationAnswer]:
        """Answer ``request`` (a form to fill or a URL to open)."""
        ...


@dataclass(slots=True)
class Asker:
    """One tool call's way to answer the questions its server asks while it runs.

    Args:
        server: The server's name.
        tool_name: The tool, as the model knows it.
        elicit: The server's ``elicit`` callback, if any.
        call: The tool call in progress (its run's scope, its agent run and where
            its record collects the questions); None outside a run.
        redact: Cleans what is recorded of the server's credentials.
    """

    server: str
    tool_name: str
    elicit: Elicitor | None
    call: CallInProgress | None
    redact: Callable[[str], str] = str
    failure: UserError | None = None
    """A callback's mistake, raised once the call is over (the SDK would swallow it)."""
    deferred: ApprovalRequest | None = None
    """A question left for a person under a durable engine: the call stops, and the
    agent's loop waits for the answer outside the recorded call (:class:`AnswerNeeded`)."""
    _asked: int = field(default=0)

    async def answer(self, params: Any) -> Any:
        """Answer the SDK's ``ElicitRequestParams`` with an SDK ``ElicitResult``.

        Under a durable engine with no callback, the answer is an ``ErrorData``
        instead, which ends the call: the question waits outside it.
        """
        self._asked += 1
        request = self._request(params)
        call = self.call
        fields = {
            "agent_name": request.agent_name,
            "tool_name": request.tool_name,
            "call_id": request.call_id,
            "server": request.server,
        }
        if call is not None:
            call.scope.emit(
                events.ElicitationRequested,
                **fields,
                mode=request.mode,
                message=self.redact(request.message),
                url=request.url,
            )
        asked = self._approval_request(request)
        if self._waits_durably(asked):
            self.deferred = self.deferred or asked
            return _deferred()
        answer, by = await self._ask(asked)
        answer = _checked(answer, request)
        reason = self.redact(answer.reason)
        if call is not None:
            if call.elicitations is not None:
                call.elicitations.append(self._record(request, answer, by, reason))
            call.scope.emit(
                events.ElicitationAnswered,
                **fields,
                action=answer.action,
                answered_by=by,
                reason=reason,
            )
        return _sdk_result(answer)

    def _request(self, params: Any) -> Elicitation:
        caller = None if self.call is None else self.call.caller
        url = getattr(params, "url", None)
        schema = getattr(params, "requested_schema", None)
        return Elicitation(
            server=self.server,
            agent_name="" if caller is None else caller.agent_name,
            tool_name=self.tool_name,
            call_id="" if self.call is None else self.call.call_id,
            mode="url" if url is not None else "form",
            message=str(getattr(params, "message", "")),
            requested_schema=None if schema is None else cast("dict[str, Any]", schema),
            url=None if url is None else str(url),
            elicitation_id=getattr(params, "elicitation_id", None),
        )

    def _approval_request(self, request: Elicitation) -> ApprovalRequest:
        """The question as an approval (numbered within its call, the same on a replay)."""
        key = f"{request.call_id}#elicitation{self._asked}"
        return ApprovalRequest(
            request.agent_name, request.tool_name, _shown(request), key, elicitation=request
        )

    def _approver(self) -> Approver | None:
        caller = None if self.call is None else self.call.caller
        return None if caller is None else caller.options.approve

    def _waits_durably(self, asked: ApprovalRequest) -> bool:
        """Whether ``asked`` is for a person under a durable engine (no callback, no answer)."""
        call = self.call
        return (
            call is not None
            and call.scope.decider is not None
            and self.elicit is None
            and self._approver() is None
            and asked.call_id not in call.answered
        )

    async def _ask(self, asked: ApprovalRequest) -> tuple[ElicitationAnswer, AnsweredBy]:
        request = cast("Elicitation", asked.elicitation)
        if self.call is not None and asked.call_id in self.call.answered:
            return _from_approval(self.call.answered[asked.call_id], request), "decide"
        if self.elicit is not None:
            return await self._callback(self.elicit, request), "elicit"
        approve = self._approver()
        if approve is not None:
            try:
                decision = await decide_approval(approve, asked)
            except UserError as exc:
                self.failure = self.failure or exc
                return ElicitationAnswer.decline("the approval callback failed"), "approve"
            return _from_approval(decision, request), "approve"
        return ElicitationAnswer.decline(_nobody(request)), "nobody"

    async def _callback(self, elicit: Elicitor, request: Elicitation) -> ElicitationAnswer:
        answer = elicit(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, ElicitationAnswer):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callbacks
            self.failure = self.failure or UserError(
                f"The elicit callback of MCP server {self.server!r} returned "
                f"{type(answer).__name__}; return ElicitationAnswer.accept(values), "
                "ElicitationAnswer.decline(reason) or ElicitationAnswer.cancel(reason)."
            )
            return ElicitationAnswer.decline("the client's elicit callback failed")
        return answer

    def _record(
        self, request: Elicitation, answer: ElicitationAnswer, by: AnsweredBy, reason: str
    ) -> ElicitationRecord:
        content = None
        if answer.action == "accept" and answer.content is not None:
            content = self.redact(json.dumps(dict(answer.content), ensure_ascii=False))
        return ElicitationRecord(
            server=request.server,
            mode=request.mode,
            message=self.redact(request.message),
            url=request.url,
            fields=_fields(request),
            action=answer.action,
            answered_by=by,
            content=content,
            reason=reason,
        )


def _shown(request: Elicitation) -> dict[str, Any]:
    """What an approval callback sees as the ``arguments``: the question itself."""
    shown: dict[str, Any] = {"message": request.message}
    if request.mode == "url":
        shown["url"] = request.url
    else:
        shown["requested_schema"] = dict(request.requested_schema or {})
    return shown


def _fields(request: Elicitation) -> list[str]:
    """A form's field names, as its schema lists them."""
    properties = (request.requested_schema or {}).get("properties")
    return (
        [str(name) for name in cast("dict[str, Any]", properties)]
        if isinstance(properties, dict)
        else []
    )


def _from_approval(decision: Approval, request: Elicitation) -> ElicitationAnswer:
    match decision.decision:
        case "deny":
            return ElicitationAnswer.decline(decision.reason or "the user declined")
        case "edit":
            return ElicitationAnswer.accept(decision.arguments)
        case "allow":
            return ElicitationAnswer.accept(None if request.mode == "url" else {})


def _checked(answer: ElicitationAnswer, request: Elicitation) -> ElicitationAnswer:
    """``answer``, or a decline saying why when its values do not fit the form."""
    if answer.action != "accept":
        return answer
    if request.mode == "url":
        return ElicitationAnswer.accept()  # a URL's answer carries no values
    content = dict(answer.content or {})
    problem = schema_validator(dict(request.requested_schema or {}))(content)
    if problem:
        return ElicitationAnswer.decline(f"the answer did not fit the form: {problem}")
    return ElicitationAnswer.accept(content)


def _nobody(request: Elicitation) -> str:
    return (
        f"no one can answer questions in this run (server {request.server!r} asked "
        f"during {request.tool_name!r}); the client declined"
    )


def _deferred() -> Any:
    """Ends the call at a question that waits for a person (it is made again once answered)."""
    from mcp import types

    message = "the question waits for a person; the call will be made again once answered"
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


def _sdk_result(answer: ElicitationAnswer) -> Any:
    from mcp import types

    meta = {REASON_KEY: answer.reason} if answer.reason else None
    content = None if answer.content is None else dict(answer.content)
    return types.ElicitResult(action=answer.action, content=content, _meta=meta)  # pyright: ignore[reportCallIssue] -- _meta is the field's alias


async def decline_unasked(_context: Any, _params: Any) -> Any:
    """The answer to a question that arrives while no call of ours is in progress."""
    logger.warning("An MCP server asked a question outside any tool call; declined")
    return _sdk_result(ElicitationAnswer.decline("no tool call of this client is in progress"))
