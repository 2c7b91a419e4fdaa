"""Replay: a stored run answers its own requests, so a real run becomes an offline test.

Every model request of a stored run can be rebuilt from what the store already
keeps: each agent's conversation (``AgentResult.messages``) holds every request
(the messages before an assistant turn) and its response (that turn), and
``llm_calls`` holds each call's token usage. Nothing is stored twice.

Requests are matched by content, not by order, so parallel agents may arrive in
any order; a request the recording does not hold fails loudly, saying where it
departs from the nearest recorded one. The text tool protocol's marker is drawn
afresh for every run, so it is left out of the match, and a recorded tool-call
block is sent back with the marker of the request it answers.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from swarmcore._text_tools import text_tool_marker
from swarmcore.results import AgentResult
from swarmcore.testing._endpoint import model_string
from swarmcore.testing._replies import Call, Fail, RecordedRequest, Reply, Step

if TYPE_CHECKING:
    from swarmcore._flow import Flow, FlowNode
    from swarmcore.store import RunStore


class ReplayModel:
    """A test model that answers from a stored run's recording.

    ```python
    replay = ReplayModel.from_store("runs.db", run_id)
    result = await Swarm(replay.flow(flow)).run(replay.task)
    assert result.output == replay.output
    ```

    Tools still run (only model calls are replayed), so they must give the
    same results as in the recorded run: deterministic tools, or test doubles.

    Args:
        results: The recorded agents' results (``SwarmResult.history``, or a
            stored run's ``results``).
        task: The recorded run's task, for convenience.
        name: The model's name; a fresh one by default.
    """

    def __init__(
        self,
        results: Iterable[AgentResult],
        *,
        task: str | None = None,
        name: str | None = None,
    ) -> None:
        self.results = list(results)
        self.task = task
        """The recorded run's task, when known."""
        self._answers: dict[str, deque[Reply]] = {}
        self._recorded: list[list[dict[str, Any]]] = []
        for result in self.results:
            self._learn(result)
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.unmatched: list[RecordedRequest] = []
        """Requests the recording did not hold."""
        self.model = model_string(name or f"replay-{id(self):x}", self)
        """The string to pass as ``Agent(model=...)``."""

    @classmethod
    def from_store(cls, store: RunStore | str | os.PathLike[str], run_id: str) -> ReplayModel:
        """The recording of a stored run.

        Raises:
            UserError: The store has no such run.
        """
        from swarmcore.errors import UserError
        from swarmcore.store import open_store

        opened = open_store(store)
        record = opened.get_run(run_id)
        if record is None:
            raise UserError(f"No run {run_id!r} in {opened!r} to replay.")
        return cls(record.results, task=record.task)

    @property
    def output(self) -> str | None:
        """The recorded output of the last agent that finished, when known."""
        return self.results[-1].output if self.results else None

    def flow(self, flow: Flow) -> Flow:
        """``flow`` with every agent on this model (fallback models dropped)."""
        from swarmcore.agent import Agent

        def replayed(node: FlowNode) -> FlowNode:
            assert isinstance(node, Agent)
            return node.clone(model=self.model, fallback_models=())

        return flow.map_agents(replayed)

    @property
    def remaining(self) -> int:
        """Recorded replies not used yet."""
        return sum(len(q) for q in self._answers.values())

    async def respond(self, request: RecordedRequest) -> Step:
        """The recorded reply to ``request``, or a loud failure."""
        self.requests.append(request)
        answers = self._answers.get(request_key(unmarked(request.messages)))
        if answers:
            reply = answers.popleft()
            marker = text_tool_marker(request.system)
            if marker is None or not reply.text:
                return reply
            return dataclasses.replace(reply, text=reply.text.replace(MARKER_SLOT, marker))
        self.unmatched.append(request)
        return Fail(400, self._explain(request.messages))

    def _learn(self, result: AgentResult) -> None:
        messages = unmarked(result.messages)
        calls = iter(result.llm_calls)
        for index, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            call = next(calls, None)
            usage = call.token_usage if call else None
            raw_calls: list[Mapping[str, Any]] = message.get("tool_calls") or []
            tool_calls: list[Call] = []
            for raw in raw_calls:
                function: Mapping[str, Any] = raw["function"]
                arguments = str(function.get("arguments") or "{}")
                tool_calls.append(Call(str(function["name"]), arguments, id=str(raw["id"])))
            reply = Reply(
                text=message.get("content"),
                tool_calls=tool_calls,
                prompt_tokens=usage.prompt_tokens if usage else None,
                completion_tokens=usage.completion_tokens if usage else None,
                cached_tokens=usage.cached_tokens if usage else 0,
                reasoning_tokens=usage.reasoning_tokens if usage else 0,
            )
            self._answers.setdefault(request_key(messages[:index]), deque()).append(reply)
            self._recorded.append(messages[:index])
        for delegated in result.delegations:  # agents it called as tools hold their own calls
            self._learn(delegated)

    def _explain(self, sent: Sequence[Mapping[str, Any]]) -> str:
        base = (
            f"ReplayModel: the recording ({len(self._recorded)} requests) holds no reply to "
            f"this request ({len(sent)} messages)"
        )
        if not self._recorded:
            return base + "."
        sent_parts = [canonical_message(m) for m in unmarked(sent)]

        def shared(recorded: list[dict[str, Any]]) -> int:
            count = 0
            for mine, theirs in zip(sent_parts, recorded, strict=False):
                if mine != canonical_message(theirs):
                    break
                count += 1
            return count

        nearest = max(self._recorded, key=shared)
        at = shared(nearest)
        if at < len(nearest) and at < len(sent):
            mine, theirs = sent[at], nearest[at]
            return (
                f"{base}. It departs from the nearest recorded request at message {at + 1} "
                f"({mine.get('role')}): sent {preview(mine)}, recorded {preview(theirs)}. "
                "Did the flow, an agent's instructions or a tool's result change?"
            )
        return f"{base}; the nearest recorded request has {len(nearest)} messages."


MARKER_SLOT = "\x00marker\x00"
"""Stands for a run's text tool protocol marker in the recording and in the match."""


def unmarked(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with their run's text tool protocol marker (if any) replaced by a slot."""
    systems = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    marker = text_tool_marker(systems[0]) if systems else None
    if marker is None:
        return [dict(m) for m in messages]
    return [
        {**m, "content": m["content"].replace(marker, MARKER_SLOT)}
        if isinstance(m.get("content"), str)
        else dict(m)
        for m in messages
    ]


def canonical_message(message: Mapping[str, Any]) -> list[Any]:
    """What of ``message`` a replay matches on: role, text, tool call id and calls."""
    calls: list[list[Any]] = []
    raw_calls: list[Mapping[str, Any]] = message.get("tool_calls") or []
    for call in raw_calls:
        function: Mapping[str, Any] = call.get("function") or {}
        calls.append([call.get("id"), function.get("name"), function.get("arguments")])
    return [message.get("role"), message.get("content") or "", message.get("tool_call_id"), calls]


def request_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A request's content key: its messages (already :func:`unmarked`) as canonical JSON.

    ``swarmcore.evals`` keys its model cassettes by a digest of this text.
    """
    return json.dumps([canonical_message(m) for m in messages], sort_keys=True)


def preview(message: Mapping[str, Any], limit: int = 80) -> str:
    """``message``'s text (or its tool calls) on one line, cut to ``limit`` characters."""
    text = str(message.get("content") or message.get("tool_calls") or "")
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
