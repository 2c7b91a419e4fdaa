"""Approvals that wait: a run parks durably until someone decides, from any process.

Under the DBOS engine, a call to a tool marked ``requires_approval`` in a run
with no approval callback does not fail: its agent's workflow publishes the
request (a DBOS event on the agent's workflow, :data:`WAITING`) and waits for a
message on the call's topic (``DBOS.recv``, a durable wait: a worker killed
meanwhile recovers the run still waiting, and a decision sent while no worker
runs it is read when one does). ``swarm.approve(...)`` or ``swarmcore runs
approve`` finds the waiting call among the run's agent workflows and sends the
decision. An agent asks its approvals one at a time, so it waits on at most
one call at once.
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast

from dbos import DBOS, DBOSClient

from swarmcore._tools import Approval, ApprovalRequest
from swarmcore._tools._approval import Elicitation
from swarmcore.errors import UserError
from swarmcore.mcp._results import schema_validator

WAITING = "swarmcore.approval"
"""The agent workflow's event holding the request it waits on (None once decided)."""

_AGENT_WORKFLOW = "swarmcore.agent"  # engines/dbos/__init__.py names its agent workflows so
_log = logging.getLogger("swarmcore.engines.dbos")


def _topic(call_id: str) -> str:
    return f"approval:{call_id}"


async def await_decision(request: ApprovalRequest, *, wait: float) -> Approval:
    """In an agent's workflow: publish ``request`` and wait for its decision, durably.

    Args:
        request: The call waiting for a decision.
        wait: Seconds to wait; after that the call is denied.

    Returns:
        The decision sent with :func:`send_decision`.
    """
    await DBOS.set_event_async(WAITING, _request_data(request))
    run_id = str(DBOS.workflow_id or "").partition("/")[0]
    _log.warning(
        "Run %s waits for approval of %s(%s) by %s: swarmcore runs approve %s %s "
        "--database-url URL [--deny REASON | --edit JSON]",
        run_id,
        request.tool_name,
        request.call_id,
        request.agent_name,
        run_id,
        request.call_id,
    )
    message: object = await DBOS.recv_async(_topic(request.call_id), timeout_seconds=wait)
    await DBOS.set_event_async(WAITING, None)
    if message is None:
        return Approval.deny(f"no decision came within {wait:g} seconds")
    return _approval(message)


def waiting(client: DBOSClient, run_id: str) -> list[ApprovalRequest]:
    """The calls of run ``run_id`` waiting for a decision, from any process.

    Args:
        client: A DBOS client on the engine's database.
        run_id: The run.

    Returns:
        One request per waiting call (empty when none waits).
    """
    return [request for _, request in _waiting(client, run_id)]


def send_decision(
    client: DBOSClient, run_id: str, call_id: str, approval: Approval | bool
) -> ApprovalRequest:
    """Send the decision on a waiting call; its run goes on wherever it runs.

    Args:
        client: A DBOS client on the engine's database.
        run_id: The run.
        call_id: The call (``ApprovalRequest.call_id``).
        approval: ``Approval.allow()``, ``Approval.deny(reason)``,
            ``Approval.edit(arguments)``, ``True`` or ``False``.

    Returns:
        The request that was decided.

    Raises:
        UserError: No such call waits in that run, or ``approval`` is not a decision.
    """
    if isinstance(approval, bool):
        approval = Approval.allow() if approval else Approval.deny()
    if not isinstance(approval, Approval):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(
            f"approve() takes Approval.allow(), Approval.deny(reason), Approval.edit(arguments), "
            f"True or False, got {approval!r}."
        )
    found = _waiting(client, run_id)
    for workflow_id, request in found:
        if request.call_id == call_id:
            _check_answer(request, approval)
            data = {
                "decision": approval.decision,
                "reason": approval.reason,
                "arguments": None if approval.arguments is None else dict(approval.arguments),
            }
            client.send(workflow_id, data, _topic(call_id))
            return request
    calls = ", ".join(f"{r.call_id} ({r.tool_name})" for _, r in found) or "none"
    raise UserError(
        f"Run {run_id} has no call {call_id!r} waiting for approval (waiting: {calls}); "
        f"list them with `swarmcore runs show {run_id} --database-url URL`."
    )


def _waiting(client: DBOSClient, run_id: str) -> list[tuple[str, ApprovalRequest]]:
    agents = client.list_workflows(
        workflow_id_prefix=f"{run_id}/",
        name=_AGENT_WORKFLOW,
        status="PENDING",
        load_input=False,
        load_output=False,
    )
    found: list[tuple[str, ApprovalRequest]] = []
    for agent in agents:
        data: object = client.get_event(agent.workflow_id, WAITING, timeout_seconds=0)
        if isinstance(data, dict):
            found.append((agent.workflow_id, _request(cast("dict[str, Any]", data))))
    return found


def _request_data(request: ApprovalRequest) -> dict[str, Any]:
    data: dict[str, Any] = {
        "agent_name": request.agent_name,
        "tool_name": request.tool_name,
        "arguments": request.arguments,
        "call_id": request.call_id,
    }
    if request.elicitation is not None:  # an MCP server's question, waiting like an approval
        asked = request.elicitation
        data["elicitation"] = {
            "server": asked.server,
            "agent_name": asked.agent_name,
            "tool_name": asked.tool_name,
            "call_id": asked.call_id,
            "mode": asked.mode,
            "message": asked.message,
            "requested_schema": None
            if asked.requested_schema is None
            else dict(asked.requested_schema),
            "url": asked.url,
            "elicitation_id": asked.elicitation_id,
        }
    return data


def _request(data: dict[str, Any]) -> ApprovalRequest:
    asked = data.pop("elicitation", None)
    elicitation = Elicitation(**cast("dict[str, Any]", asked)) if isinstance(asked, dict) else None
    return ApprovalRequest(**data, elicitation=elicitation)


def _check_answer(request: ApprovalRequest, approval: Approval) -> None:
    """Refuse values that do not fit the form a server asked for, before they are sent."""
    asked = request.elicitation
    if asked is None or asked.mode != "form" or approval.decision == "deny":
        return
    values = dict(approval.arguments or {})
    problem = schema_validator(dict(asked.requested_schema or {}))(values)
    if problem:
        raise UserError(
            f"MCP server {asked.server!r} asked {asked.message!r}; the answer does not fit its "
            f"form ({problem}). Send Approval.edit(values) with values fitting "
            f"{json.dumps(dict(asked.requested_schema or {}))}, or Approval.deny(reason)."
        )


def _approval(message: object) -> Approval:
    data = cast("dict[str, Any]", message) if isinstance(message, dict) else {}
    decision = data.get("decision")
    if decision == "allow":
        return Approval.allow()
    if decision == "edit" and isinstance(data.get("arguments"), dict):
        return Approval.edit(cast("dict[str, Any]", data["arguments"]))
    reason = str(data.get("reason") or "")
    if decision != "deny":
        reason = f"an unreadable decision was sent ({message!r})"
    return Approval.deny(reason)
