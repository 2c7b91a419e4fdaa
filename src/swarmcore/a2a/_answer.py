"""What a remote A2A task said, folded event by event into one answer (an AgentResult).

The SDK's client yields the raw stream (the task, status updates, artifact
chunks); :class:`Answer` keeps the state, the artifacts (appended chunks join
up) and any usage the remote reports, publishes progress as events, and refuses
an answer that grows past its limit as it arrives, not after.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Part, StreamResponse, TaskState
from google.protobuf.json_format import MessageToDict

from swarmcore import events
from swarmcore.llm._redaction import redact
from swarmcore.results import AgentResult, LLMCallRecord, TokenUsage
from swarmcore.scope import RunScope

logger = logging.getLogger("swarmcore.a2a")


class Refused(Exception):
    """The remote's answer cannot be used: ``what`` it did, for the step's error."""

    def __init__(self, what: str, *, state: str = "", retryable: bool = False) -> None:
        super().__init__(what)
        self.what = what
        self.state = state
        self.retryable = retryable


_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected the task",
    TaskState.TASK_STATE_CANCELED: "cancelled the task",
}
_PENDING = frozenset(
    {TaskState.TASK_STATE_UNSPECIFIED, TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
)
_INTERRUPTED = {
    TaskState.TASK_STATE_INPUT_REQUIRED: "asked for more input",
    TaskState.TASK_STATE_AUTH_REQUIRED: "asked for authentication",
}


@dataclass
class _Piece:
    """One part of an artifact: text (appended chunks join up) or a data value."""

    text: str | None = None
    data: Any = None


@dataclass
class Answer:
    """What a remote task has said so far: state, artifacts, usage."""

    name: str
    """The step's name, for the events."""
    url: str
    max_chars: int
    task_id: str = ""
    state: TaskState = TaskState.TASK_STATE_UNSPECIFIED
    status_text: str = ""
    artifacts: dict[str, list[_Piece]] = field(default_factory=dict[str, list[_Piece]])
    usage: TokenUsage | None = None
    cost: float | None = None
    """USD the remote reported spending; None when it reported no cost."""
    chars: int = 0
    message_text: str | None = None
    secrets: tuple[str, ...] = ()
    """Credentials redacted from what the remote says (a hostile one may quote them)."""
    scope: RunScope = field(default_factory=RunScope)
    """The calling run's scope: where the remote's progress and text go as events."""

    def reset(self) -> None:
        """Forget a failed attempt's partial answer before the next."""
        fresh = Answer(self.name, self.url, self.max_chars)
        for name in ("task_id", "state", "status_text", "artifacts", "usage", "cost", "chars"):
            setattr(self, name, getattr(fresh, name))
        self.message_text = None

    @property
    def pending(self) -> bool:
        """Whether the task is still submitted or working (neither finished nor interrupted)."""
        return self.message_text is None and self.state in _PENDING

    @property
    def done(self) -> bool:
        """Whether the task reached a final state (or the remote answered a message)."""
        return self.message_text is not None or self.state in (
            TaskState.TASK_STATE_COMPLETED,
            *_FAILED,
        )

    def take(self, response: StreamResponse) -> None:
        """Fold one event of the remote's stream in, publishing what the run should see."""
        name = self.name
        kind = response.WhichOneof("payload")
        if kind == "message":
            self.message_text = self._count("\n".join(_texts(response.message.parts)))
        elif kind == "task":
            task = response.task
            self.task_id = task.id
            for artifact in task.artifacts:
                self._artifact(artifact.artifact_id, list(artifact.parts), append=False)
            self._usage(MessageToDict(task.metadata))
            self._status(task.status.state, "\n".join(_texts(task.status.message.parts)))
        elif kind == "status_update":
            update = response.status_update
            self.task_id = self.task_id or update.task_id
            self._usage(MessageToDict(update.metadata))
            self._status(update.status.state, "\n".join(_texts(update.status.message.parts)))
        elif kind == "artifact_update":
            update = response.artifact_update
            self.task_id = self.task_id or update.task_id
            self._usage(MessageToDict(update.artifact.metadata))
            delta = self._artifact(
                update.artifact.artifact_id,
                list(update.artifact.parts),
                append=update.append,
                last_chunk=update.last_chunk,
            )
            if delta and self.scope.text_deltas:
                self.scope.emit(events.TextDelta, agent_name=name, text=delta)
        else:
            raise ValueError(f"an event with no payload ({kind!r})")

    def _status(self, state: TaskState, text: str) -> None:
        if state == TaskState.TASK_STATE_UNSPECIFIED:
            return
        text = redact(text, *self.secrets)  # whole, before it is shown, stored or cut
        if state == self.state and text == self.status_text:
            return  # the same status again (a task polled while it works): nothing new to say
        self.state = state
        if text:
            self.status_text = text
        self.scope.emit(
            events.RemoteStatus,
            agent_name=self.name,
            url=self.url,
            state=state_name(state),
            message=text,
        )

    def _artifact(
        self, artifact_id: str, parts: list[Part], *, append: bool, last_chunk: bool = False
    ) -> str:
        """Add an artifact (chunk); the text it adds to what was streamed of it.

        A chunk that replaces an artifact adds only what goes past the text it
        replaces; and as the last chunk, nothing when it is a different text (the
        whole answer sent again once streamed, as FastA2A and swarmcore's server
        do, is not said twice).
        """
        before = "" if append else self._text_of(artifact_id)
        if not append or artifact_id not in self.artifacts:
            dropped = self.artifacts.pop(artifact_id, [])  # a replaced artifact no longer counts
            self.chars -= sum(len(p.text or "") for p in dropped)
            self.artifacts[artifact_id] = []
        pieces = self.artifacts[artifact_id]
        added: list[str] = []
        for part in parts:
            kind = part.WhichOneof("content")
            if kind == "text":
                self._count(part.text)
                added.append(part.text)
                if append and pieces and pieces[-1].text is not None:
                    pieces[-1].text += part.text
                else:
                    pieces.append(_Piece(text=part.text))
            elif kind == "data":
                pieces.append(_Piece(data=_whole(MessageToDict(part).get("data"))))
            # files (raw or url parts) are not text a later agent can read: left out
            append = True  # the parts of one chunk follow each other
        text = "".join(added)
        if not before:
            return text
        if text.startswith(before):
            return text[len(before) :]
        return "" if last_chunk else text

    def _text_of(self, artifact_id: str) -> str:
        return "".join(p.text or "" for p in self.artifacts.get(artifact_id, []))

    def _count(self, text: str) -> str:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise Refused(
                f"answered more than {self.max_chars:,} characters "
                "(max_output_chars=); raise the limit if answers this large are expected"
            )
        return text

    def _usage(self, metadata: Mapping[str, Any]) -> None:
        """Take the usage a remote reports, when it is usage: counts are whole and not negative.

        A report that is not (``-9940000`` tokens, ``1.5``, ``"100"``) is ignored, with a debug
        log, and the answer kept: a negative count would hand the run's budget back, and a
        remote that wants to under-report can already say 0. A cost that is not a finite
        number, 0 or more, is ignored the same way.
        """
        usage = metadata.get("usage")
        if not isinstance(usage, Mapping):
            return
        numbers: Mapping[str, Any] = usage  # pyright: ignore[reportUnknownVariableType]
        prompt = numbers.get("prompt_tokens", numbers.get("input_tokens", 0))
        completion = numbers.get("completion_tokens", numbers.get("output_tokens", 0))
        if _count(prompt) and _count(completion):
            self.usage = TokenUsage(prompt_tokens=int(prompt), completion_tokens=int(completion))
        else:
            logger.debug(
                "A2A agent at %s: ignored the usage it reported (token counts are whole numbers, "
                "0 or more): prompt %r, completion %r",
                self.url,
                prompt,
                completion,
            )
        if "cost" not in numbers:
            return
        cost = numbers["cost"]
        if _number(cost) and math.isfinite(cost) and cost >= 0:
            self.cost = float(cost)
        else:
            logger.debug(
                "A2A agent at %s: ignored the cost it reported (a finite number, 0 or more): %r",
                self.url,
                cost,
            )

    def check_finished(self) -> None:
        """Raise unless the remote finished with an answer."""
        what = state_name(self.state)
        said = f": {short(self.status_text)}" if self.status_text else ""
        if self.state in _FAILED:
            raise Refused(f"{_FAILED[self.state]}{said}", state=what)
        if self.state in _INTERRUPTED:
            raise Refused(
                f"{_INTERRUPTED[self.state]}{said}. A flow step cannot answer a remote agent's "
                "question: put what it needs in the task",
                state=what,
            )
        if not self.done:
            # The protocol ends a stream only at a final or interrupted state: this one was cut.
            where = f"finished (still {what})" if what else "began (no task event came)"
            raise Refused(
                f"ended its event stream before the task {where}: cut off on the way, or not "
                "an A2A stream",
                state=what,
                retryable=True,
            )

    def result(self, model: str, duration: float, started_at: float) -> AgentResult:
        """The step's result, from the finished answer."""
        texts: list[str] = []
        data: list[Any] = []
        for pieces in self.artifacts.values():
            for piece in pieces:
                if piece.text is not None:
                    texts.append(piece.text)
                else:
                    data.append(piece.data)
                    texts.append(json.dumps(piece.data, ensure_ascii=False))
        if not self.artifacts:  # an answer in a message, or in the final status
            texts = [self.message_text if self.message_text is not None else self.status_text]
        output = "\n".join(texts)
        if not output.strip():
            raise Refused("finished without an answer (no text or data parts)")
        return AgentResult(
            agent_name=self.name,
            output=output,
            summary=short(output.strip().split("\n", 1)[0], 200),
            model=model,
            duration_seconds=duration,
            token_usage=self.usage or TokenUsage(),
            # The remote task as one call: its time, and what it reported spending.
            llm_calls=[
                LLMCallRecord(
                    model=model,
                    duration_seconds=duration,
                    token_usage=self.usage or TokenUsage(),
                    cost=self.cost,
                    finish_reason=state_name(self.state) or None,
                    started_at=started_at,
                )
            ],
            parsed=(data[0] if len(data) == 1 else data) if data else None,
            started_at=started_at,
        )


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: object) -> bool:
    """Whether ``value`` is a token count: whole, 0 or more (protobuf carries it as a double)."""
    if not _number(value):
        return False
    number: float = value  # pyright: ignore[reportAssignmentType] -- checked just above
    return math.isfinite(number) and number == int(number) and number >= 0


def _texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.WhichOneof("content") == "text"]


def state_name(state: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` as the protocol's ``input-required``."""
    if state == TaskState.TASK_STATE_UNSPECIFIED:
        return ""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")  # pyright: ignore[reportArgumentType]


def short(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _whole(value: Any) -> Any:
    """``value`` with whole floats as ints: protobuf's Value holds every number as a double."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_whole(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value
