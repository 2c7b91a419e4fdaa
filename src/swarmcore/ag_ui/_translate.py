"""swarmcore's run events as AG-UI events: one :class:`Translator` per run.

A swarmcore run may span several AG-UI runs: one that ends on an interrupt
(a tool waiting for approval) and the ones that resume it. AG-UI closes every
step, text message and tool call at the end of each of its runs, so the
translator closes what is open when it pauses (:meth:`Translator.pause`) and
opens the steps still going again when the next AG-UI run begins; an agent
that goes on speaking after a pause does so in a new message.

The mapping:

* a flow step and an agent are each a step (``STEP_STARTED``/``STEP_FINISHED``);
  an agent's step is named after the agent, a flow step ``step: <expression>``;
* each model reply's text is a text message (``TEXT_MESSAGE_*``), named after the
  agent, so parallel agents stream as separate messages at once; the tool calls
  the reply made name it as their parent message;
* a reasoning model's summary of its reasoning (``ReasoningDelta``) is a
  reasoning message (``REASONING_START``, ``REASONING_MESSAGE_*``, ``REASONING_END``);
* a tool call is ``TOOL_CALL_START``/``ARGS``/``END`` (its arguments in pieces as
  the model streams them), then ``TOOL_CALL_RESULT``;
* the state is the shared context: ``{"task", "variables", "context", "failures"}``,
  a ``STATE_SNAPSHOT`` when a run begins and a ``STATE_DELTA`` (JSON Patch) as
  each agent finishes (``/context/<agent>``: output, summary and structured data)
  or fails (``/failures/<agent>``: the message);
* an MCP server's question in the middle of a tool call (an elicitation, with no
  ``elicit`` callback to answer it) is an interrupt too (:meth:`Translator.ask`),
  and the calls still running when a run pauses are sent again, whole, when the
  next AG-UI run begins, so their results answer a call of their own run;
  ``ElicitationRequested``/``ElicitationAnswered`` are ``CUSTOM`` events too;
* each model call's tokens and cost is a ``CUSTOM`` event ``swarmcore.usage``,
  and the run's totals ``swarmcore.run_usage``; routes, loops, plans, retries and
  fallbacks are ``CUSTOM`` events named ``swarmcore.<EventName>``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic_core import to_jsonable_python

from swarmcore import events
from swarmcore._serving import elicitation_answer_schema, elicitation_shown, error_message

if TYPE_CHECKING:
    from swarmcore._tools import ApprovalRequest
    from swarmcore.results import AgentResult, SwarmResult

APPROVAL_REASON = "tool_approval"
"""The ``reason`` of the interrupt a tool that requires approval raises."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "Run the call (true) or not (false)."},
        "reason": {"type": "string", "description": "Why it was denied; the model is told."},
        "arguments": {
            "type": "object",
            "description": "Run the call with these arguments instead (an approval only).",
        },
    },
    "required": ["approved"],
}
"""The answer an approval interrupt expects, as its ``responseSchema``."""

ELICITATION_REASON = "mcp_elicitation"
"""The ``reason`` of the interrupt an MCP server's question (an elicitation) raises."""

_NOTED = (
    events.ElicitationRequested,
    events.ElicitationAnswered,
    events.RouteChosen,
    events.LoopIteration,
    events.LoopFinished,
    events.PlanMade,
    events.RetryScheduled,
    events.ModelFallback,
    events.RemoteStatus,
)
"""Events passed on as ``CUSTOM`` events named ``swarmcore.<EventName>``."""

_IDS = frozenset({"run_id", "span_id", "parent_id", "timestamp", "shape"})


def _now() -> int:
    return int(time.time() * 1000)


def _pointer(key: str) -> str:
    """``key`` as one JSON Pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _jsonable(value: object) -> Any:
    return to_jsonable_python(value, fallback=str)


@dataclass
class Translator:
    """Turns one swarmcore run's events into AG-UI events (see the module docstring).

    Args:
        thread_id: The AG-UI thread the run belongs to.
        task: The run's task.
        variables: Its prompt variables.
    """

    thread_id: str
    task: str
    variables: Mapping[str, object]
    run_id: str = ""
    """The AG-UI run now streaming."""
    state: dict[str, Any] = field(default_factory=dict[str, Any])
    _steps: dict[int, str] = field(default_factory=dict[int, str])
    """Open steps by span id: an agent's or a flow step's."""
    _messages: dict[str, str] = field(default_factory=dict[str, str])
    """The open text message of each agent speaking now."""
    _said: dict[str, str] = field(default_factory=dict[str, str])
    """Each agent's last text message: the parent of the tool calls its reply made."""
    _thinking: dict[str, str] = field(default_factory=dict[str, str])
    """The open reasoning message of each agent whose reasoning summary streams now."""
    _calls: dict[str, str] = field(default_factory=dict[str, str])
    """Calls whose arguments stream now (started, not ended), and the agent of each."""
    _sent: set[str] = field(default_factory=set[str])
    """Tool calls started in the AG-UI run streaming now."""
    _spoke: set[str] = field(default_factory=set[str])
    """Agents whose text was streamed in their current run."""
    _running: dict[str, tuple[str, str, str]] = field(
        default_factory=dict[str, tuple[str, str, str]]
    )
    """Calls started and not finished: their agent, tool and arguments."""

    def __post_init__(self) -> None:
        self.state = {
            "task": self.task,
            "variables": _jsonable(dict(self.variables)),
            "context": {},
            "failures": {},
        }

    def begin(self, run_id: str, given: RunAgentInput) -> list[BaseEvent]:
        """An AG-UI run begins: its start, the state, and the steps still open."""
        self.run_id = run_id
        self._sent.clear()
        out: list[BaseEvent] = [
            RunStartedEvent(thread_id=self.thread_id, run_id=run_id, input=given, timestamp=_now()),
            StateSnapshotEvent(snapshot=self.state, timestamp=_now()),
        ]
        out += [StepStartedEvent(step_name=name, timestamp=_now()) for name in self._steps.values()]
        for call, (agent, tool, arguments) in self._running.items():  # their results come here
            out += self._tool_call(agent, call, tool, arguments)
        return out

    def translate(self, event: events.Event) -> list[BaseEvent]:
        """The AG-UI events for one of the run's events (none for most)."""
        match event:
            case events.StepStarted(step=step, span_id=span):
                return [self._open_step(span, f"step: {step}")]
            case events.AgentStarted(agent_name=agent, span_id=span):
                self._spoke.discard(agent)
                self._said.pop(agent, None)
                return [self._open_step(span, agent)]
            case events.TextDelta() | events.ReasoningDelta() | events.ToolCallDelta():
                return self._piece(event)
            case events.ToolCallStarted(call_id=call, tool_name=tool, arguments=arguments):
                self._running[call] = (event.agent_name, tool, arguments)
                if call in self._sent:
                    return []  # its arguments streamed, whole, in this AG-UI run
                # Sent whole: a model that did not stream it, or a call sent with its
                # interrupt (a result answers a call started in its own run).
                return self._tool_call(event.agent_name, call, tool, arguments)
            case events.ToolCallFinished(call_id=call):
                self._running.pop(call, None)
                return [self._tool_result(event)]
            case events.AgentFinished():
                return self._agent_finished(event)
            case events.StepFinished(span_id=span):
                return self._close_step(span)
            case events.ModelCallFinished(agent_name=agent):
                # One message per model reply: the next turn (after its tool calls) is another;
                # the reply is whole, and so are the arguments of the calls it streamed.
                return [
                    *self._end_thinking(agent),
                    *self._end_message(agent),
                    *self._end_calls(agent),
                    _usage_event(event),
                ]
            case _ if isinstance(event, _NOTED):
                return [_noted(event)]
            case _:
                return []

    def _piece(
        self, event: events.TextDelta | events.ReasoningDelta | events.ToolCallDelta
    ) -> list[BaseEvent]:
        """A piece of a reply as the model streams it."""
        match event:
            case events.TextDelta(agent_name=agent, text=text):
                return [*self._end_thinking(agent), *self._say(agent, text)]  # thought over
            case events.ReasoningDelta(agent_name=agent, text=text):
                return self._think(agent, text)
            case events.ToolCallDelta(agent_name=agent, call_id=call, name=tool, arguments=piece):
                return self._tool_call_piece(agent, call, tool, piece)

    def ask(
        self,
        request: ApprovalRequest,
        interrupt_id: str | None = None,
        *,
        run_id: str | None = None,
    ) -> list[BaseEvent]:
        """A tool waits for approval: its call, the open things closed, the interrupt.

        Args:
            request: The call waiting.
            interrupt_id: The interrupt's id (the call's id by default).
            run_id: The swarmcore run, named in the interrupt's metadata (a durable
                run's, whose answer may come to another server process).
        """
        if request.elicitation is not None:  # an MCP server's question: the call has started
            interrupt = _elicitation_interrupt(request, interrupt_id, run_id)
            return [*self._close_all(), self._interrupted(interrupt)]
        out: list[BaseEvent] = []
        if request.call_id not in self._sent:
            arguments = json.dumps(_jsonable(request.arguments), ensure_ascii=False)
            out += self._tool_call(
                request.agent_name, request.call_id, request.tool_name, arguments
            )
        out += self._close_all()
        arguments = json.dumps(_jsonable(request.arguments), ensure_ascii=False, default=str)
        about = {"agent": request.agent_name, "tool": request.tool_name}
        if run_id is not None:
            about |= {"run": run_id, "call": request.call_id}
        interrupt = Interrupt(
            id=interrupt_id or request.call_id,
            reason=APPROVAL_REASON,
            message=f"{request.agent_name} wants to call {request.tool_name}({arguments}).",
            tool_call_id=request.call_id,
            response_schema=APPROVAL_SCHEMA,
            metadata={"swarmcore": about},
        )
        out.append(self._interrupted(interrupt))
        return out

    def _interrupted(self, interrupt: Interrupt) -> BaseEvent:
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=[interrupt]),
            timestamp=_now(),
        )

    def finish(self, result: SwarmResult) -> list[BaseEvent]:
        """The run completed: its totals, and ``RUN_FINISHED`` carrying its output."""
        out = self._close_all()
        out.append(_run_usage_event(result))
        last = result.history[-1] if result.history else None
        answer: dict[str, Any] = {"output": result.output}
        if last is not None and last.parsed is not None and last.output == result.output:
            answer["data"] = _jsonable(last.parsed)
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result=answer,
                outcome=RunFinishedSuccessOutcome(),
                usage=_token_usage(result),
                timestamp=_now(),
            )
        )
        return out

    def fail(self, message: str, code: str, partial: SwarmResult | None) -> list[BaseEvent]:
        """The run failed: what it spent so far, and ``RUN_ERROR`` with the clear message."""
        out = self._close_all()
        if partial is not None:
            out.append(_run_usage_event(partial))
        usage = _token_usage(partial) if partial is not None else None
        out.append(RunErrorEvent(message=message, code=code, usage=usage, timestamp=_now()))
        return out

    def refuse(self, run_id: str, given: RunAgentInput, message: str, code: str) -> list[BaseEvent]:
        """An AG-UI run that cannot go on (a bad answer, a busy thread): started, then an error.

        The swarmcore run, if one waits, is untouched and still waits.
        """
        return [
            RunStartedEvent(thread_id=self.thread_id, run_id=run_id, input=given, timestamp=_now()),
            RunErrorEvent(message=message, code=code, timestamp=_now()),
        ]

    def _open_step(self, span: int, name: str) -> BaseEvent:
        taken = set(self._steps.values())
        unique, n = name, 2
        while unique in taken:  # AG-UI step names are unique while open
            unique, n = f"{name} ({n})", n + 1
        self._steps[span] = unique
        return StepStartedEvent(step_name=unique, timestamp=_now())

    def _close_step(self, span: int) -> list[BaseEvent]:
        name = self._steps.pop(span, None)
        return [] if name is None else [StepFinishedEvent(step_name=name, timestamp=_now())]

    def _say(self, agent: str, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        message = self._messages.get(agent)
        if message is None:
            message = self._messages[agent] = self._said[agent] = str(uuid.uuid4())
            out.append(
                TextMessageStartEvent(
                    message_id=message, role="assistant", name=agent, timestamp=_now()
                )
            )
        self._spoke.add(agent)
        if text:
            out.append(TextMessageContentEvent(message_id=message, delta=text, timestamp=_now()))
        return out

    def _think(self, agent: str, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        message = self._thinking.get(agent)
        if message is None:
            message = self._thinking[agent] = str(uuid.uuid4())
            out += [
                ReasoningStartEvent(message_id=message, timestamp=_now()),
                ReasoningMessageStartEvent(message_id=message, timestamp=_now()),
            ]
        if text:
            out.append(
                ReasoningMessageContentEvent(message_id=message, delta=text, timestamp=_now())
            )
        return out

    def _end_thinking(self, agent: str) -> list[BaseEvent]:
        message = self._thinking.pop(agent, None)
        if message is None:
            return []
        return [
            ReasoningMessageEndEvent(message_id=message, timestamp=_now()),
            ReasoningEndEvent(message_id=message, timestamp=_now()),
        ]

    def _end_message(self, agent: str) -> list[BaseEvent]:
        message = self._messages.pop(agent, None)
        return (
            [] if message is None else [TextMessageEndEvent(message_id=message, timestamp=_now())]
        )

    def _tool_call(self, agent: str, call: str, tool: str, arguments: str) -> list[BaseEvent]:
        """A whole tool call: its start, its arguments in one piece, its end."""
        out = self._tool_call_piece(agent, call, tool, arguments)
        del self._calls[call]
        out.append(ToolCallEndEvent(tool_call_id=call, timestamp=_now()))
        return out

    def _tool_call_piece(self, agent: str, call: str, tool: str, piece: str) -> list[BaseEvent]:
        """A piece of a call's arguments, after the call's start if it is the first."""
        out: list[BaseEvent] = []
        if call not in self._calls:
            self._calls[call] = agent
            self._sent.add(call)
            out.append(
                ToolCallStartEvent(
                    tool_call_id=call,
                    tool_call_name=tool,
                    parent_message_id=self._said.get(agent),
                    metadata={"swarmcore": {"agent": agent}},
                    timestamp=_now(),
                )
            )
        if piece:
            out.append(ToolCallArgsEvent(tool_call_id=call, delta=piece, timestamp=_now()))
        return out

    def _end_calls(self, agent: str | None = None) -> list[BaseEvent]:
        """End the streaming calls of ``agent`` (of every agent when None)."""
        ended = [c for c, a in self._calls.items() if agent is None or a == agent]
        for call in ended:
            del self._calls[call]
        return [ToolCallEndEvent(tool_call_id=call, timestamp=_now()) for call in ended]

    def _tool_result(self, event: events.ToolCallFinished) -> BaseEvent:
        content = event.result if event.result is not None else (event.error or "")
        return ToolCallResultEvent(
            message_id=str(uuid.uuid4()),
            tool_call_id=event.call_id,
            content=content,
            role="tool",
            metadata={"swarmcore": {"agent": event.agent_name, "error": event.error}},
            timestamp=_now(),
        )

    def _agent_finished(self, event: events.AgentFinished) -> list[BaseEvent]:
        agent, result = event.agent_name, event.result
        out: list[BaseEvent] = []
        if result is not None and agent not in self._spoke and result.output:
            out += self._say(agent, result.output)  # a model that did not stream
        out += self._end_message(agent)
        out += self._close_step(event.span_id)
        if result is not None:
            out.append(self._patch("context", agent, _context_entry(result)))
        elif event.error is not None:
            out.append(self._patch("failures", agent, error_message(event.error)))
        return out

    def _patch(self, where: str, key: str, value: Any) -> BaseEvent:
        self.state[where][key] = value
        # "add" sets a member whether or not it exists (RFC 6902), so a retried agent just replaces.
        operation = {"op": "add", "path": f"/{where}/{_pointer(key)}", "value": value}
        return StateDeltaEvent.model_validate({"delta": [operation], "timestamp": _now()})

    def _close_all(self) -> list[BaseEvent]:
        """End every open message and step: an AG-UI run ends with nothing open."""
        out: list[BaseEvent] = []
        for agent in list(self._thinking):
            out += self._end_thinking(agent)
        for agent in list(self._messages):
            out += self._end_message(agent)
        out += self._end_calls()
        out += [
            StepFinishedEvent(step_name=name, timestamp=_now()) for name in self._steps.values()
        ]
        return out


def _elicitation_interrupt(
    request: ApprovalRequest, interrupt_id: str | None, run_id: str | None
) -> Interrupt:
    """An MCP server's question as an interrupt: the question, and the answer's schema.

    Its id is the question's (``<tool call id>#elicitation<n>``, after ``<run id>/``
    for a durable run), its ``toolCallId`` the call the server asked in, its
    ``responseSchema`` the answer expected (``{"action", "content"}``, the content
    fitting the server's form), its ``metadata.swarmcore`` the question whole
    (mode, URL or requested schema).
    """
    asked = request.elicitation
    assert asked is not None
    message = asked.message if asked.mode == "form" else f"{asked.message} ({asked.url})"
    shown = elicitation_shown(asked)
    if run_id is not None:  # a durable run's, whose answer may come to another server process
        shown |= {"run": run_id, "call": request.call_id}
    return Interrupt(
        id=interrupt_id or request.call_id,
        reason=ELICITATION_REASON,
        message=message,
        tool_call_id=asked.call_id,
        response_schema=elicitation_answer_schema(asked),
        metadata={"swarmcore": shown},
    )


def _context_entry(result: AgentResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"output": result.output, "summary": result.summary}
    if result.parsed is not None:
        entry["data"] = _jsonable(result.parsed)
    return entry


def _usage_event(event: events.ModelCallFinished) -> BaseEvent:
    usage = event.usage
    return CustomEvent(
        name="swarmcore.usage",
        value={
            "agent": event.agent_name,
            "model": event.model,
            "turn": event.turn,
            "prompt_tokens": usage.prompt_tokens if usage is not None else 0,
            "completion_tokens": usage.completion_tokens if usage is not None else 0,
            "total_tokens": usage.total_tokens if usage is not None else 0,
            "cost": event.cost,
        },
        timestamp=_now(),
    )


def _run_usage_event(result: SwarmResult) -> BaseEvent:
    usage = result.token_usage
    return CustomEvent(
        name="swarmcore.run_usage",
        value={
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "cost": result.cost,
            "agents": {
                r.agent_name: {"total_tokens": r.token_usage.total_tokens, "cost": r.cost}
                for r in result.history
            },
        },
        timestamp=_now(),
    )


def _token_usage(result: SwarmResult) -> list[TokenUsage] | None:
    """The run's tokens per model, in AG-UI's accounting."""
    by_model: dict[str, list[int]] = {}
    for agent in result.history:
        for call in agent.llm_calls:
            counts = by_model.setdefault(call.model, [0, 0, 0, 0])
            usage = call.token_usage
            counts[0] += usage.prompt_tokens
            counts[1] += usage.completion_tokens
            counts[2] += usage.cached_tokens
            counts[3] += usage.reasoning_tokens
    if not by_model:
        return None
    return [
        TokenUsage(
            model=model,
            input_tokens=sent,
            output_tokens=made,
            total_tokens=sent + made,
            cached_input_tokens=cached,
            reasoning_tokens=reasoning,
        )
        for model, (sent, made, cached, reasoning) in by_model.items()
    ]


def _noted(event: events.Event) -> BaseEvent:
    fields = {
        name: _jsonable(getattr(event, name))
        for name in type(event).__dataclass_fields__
        if name not in _IDS
    }
    return CustomEvent(name=f"swarmcore.{type(event).__name__}", value=fields, timestamp=_now())
