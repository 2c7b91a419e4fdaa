"""One agent run: the tool-calling loop.

1. Check the turn budget (``max_turns``), then call the model through ``llm.complete``.
2. Record the reply: the assistant message, usage, cost.
3. The turn's outcome is one of three:
   - :class:`ToolCalls` (native, or a marked JSON block for models without
     native tool calling): run them concurrently, append the results in call
     order, go to 1.
     An agent without tools offers none, but a native tool call in its reply
     still runs: it is answered as an unknown tool, so the model can answer.
   - :class:`Answer`: its ``<summary>`` (or, with an ``output_type``, its JSON)
     parsed and every output validator satisfied: the run ends.
   - :class:`Rejected`: the answer (or an unreadable tool-call block) goes back
     to the model with the reason, up to ``output_retries`` times, and the loop
     goes to 1.

Everything a run accumulates lives in a :class:`RunState` made by
:func:`run_agent` and thrown away after, so one Agent can run in any number of
flows at once.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from swarmcore import _prompt as prompt
from swarmcore import _structured as structured
from swarmcore import _text_tools, events, llm
from swarmcore._settings import AgentDefaults
from swarmcore._tools import (
    AnswerNeeded,
    Approval,
    Decided,
    TaskPending,
    Tool,
    ask,
    run_tool_call,
    to_tools,
)
from swarmcore.context import parse_summary
from swarmcore.errors import (
    AgentError,
    MaxTurnsExceeded,
    OutputValidationError,
    UserError,
)
from swarmcore.llm._redaction import secret_values
from swarmcore.llm._target import target
from swarmcore.results import (
    AgentResult,
    ElicitationRecord,
    LLMCallRecord,
    ToolCallRecord,
    sum_usage,
)
from swarmcore.scope import CallInProgress, ConnectionScope, RunOptions, RunScope, in_call

if TYPE_CHECKING:
    from swarmcore.agent import Agent

DEFAULTS = AgentDefaults()


@dataclass(frozen=True, slots=True)
class Answer:
    """A turn that ended the run: the accepted answer."""

    output: str
    summary: str | None
    parsed: Any


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """A turn that asked for tools: run them and call the model again."""

    calls: Sequence[llm.ToolCall]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A turn whose answer failed its type or a validator: sent back with ``feedback``."""

    text: str
    feedback: str


Turn = Answer | ToolCalls | Rejected


async def run_agent(
    agent: Agent,
    task: str,
    options: RunOptions,
    *,
    scope: RunScope | None = None,
    hint: str | None = None,
    extra_tools: Sequence[Callable[..., Any] | Tool] = (),
) -> AgentResult:
    """Run ``agent`` on ``task``: the one entry to the tool-calling loop.

    The caller has checked the task (and, for a flow, every agent's variables
    and approvals). An agent with toolsets fetches their tools first, over the
    run's MCP connections, or connections of its own when the run has none.

    Args:
        agent: The agent.
        task: Its task.
        options: What the caller passes beyond the task.
        scope: The run's scope (budget, events, steps, connections); an agent
            run alone has an empty one.
        hint: Extra text for the system prompt (the context mode's).
        extra_tools: Tools the run adds (context tools).
    """
    scope = scope or RunScope()
    if agent.toolsets:
        if scope.connections is not None:  # a Swarm run: its connections outlive this one
            return await _run_with_toolsets(agent, task, options, scope, hint, extra_tools)
        connections = ConnectionScope()  # an agent run alone: its connections close with it
        try:
            return await _run_with_toolsets(
                agent, task, options, replace(scope, connections=connections), hint, extra_tools
            )
        finally:
            await connections.close()
    return await _run(RunState.start(agent, task, options, scope, hint, extra_tools))


async def _run_with_toolsets(
    agent: Agent,
    task: str,
    options: RunOptions,
    scope: RunScope,
    hint: str | None,
    extra_tools: Sequence[Callable[..., Any] | Tool],
) -> AgentResult:
    from swarmcore import mcp  # only agents with toolsets need it

    try:
        # A toolset (an MCP server) finds the run's connections as a tool finds its run.
        fetched = await in_call(
            CallInProgress(scope=scope), lambda: mcp.gather_tools(agent.name, agent.toolsets)
        )
        state = RunState.start(agent, task, options, scope, hint, [*extra_tools, *fetched])
        return await _run(state)
    except AgentError as error:  # a toolset's failure (MCPError) is this agent's, as a model's is
        error.agent_name = error.agent_name or agent.name
        raise


async def _run(state: RunState) -> AgentResult:
    """The turns, under the agent's ``timeout`` when it has one."""
    seconds = state.settings.timeout
    if seconds is None:  # most agents have no timeout of their own
        return await state.turns()
    start = time.perf_counter()
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await state.turns()
    except TimeoutError as exc:
        if not deadline.expired():  # raised inside the run (which kept what it spent)
            raise
        error = AgentError(
            f"Agent {state.agent.name!r} did not finish within timeout={seconds:g}s "
            f"({len(state.llm_calls)} model calls made); raise timeout or simplify the task.",
            agent_name=state.agent.name,
            retryable=True,
        )
        state.keep_partial(error, time.perf_counter() - start)
        raise error from exc


class RunState:
    """Everything one run of one agent accumulates, and its turns."""

    def __init__(
        self,
        agent: Agent,
        options: RunOptions,
        tools: dict[str, Tool],
        messages: list[llm.Message],
        scope: RunScope,
    ) -> None:
        self.agent = agent
        self.options = options
        self.scope = scope
        self.tools = tools
        self.settings = options.defaults.resolve(agent)
        self.native_tools = bool(tools) and _native(agent.tool_protocol, agent.model, "tools")
        output = agent.output_spec
        native_output = (
            output is not None
            and output.is_object
            and _native(agent.output_protocol, agent.model, "output")
        )
        self.call = llm.CallSpec(
            agent_name=agent.name,
            model=agent.model,
            tools=tuple(t.spec for t in tools.values()) if self.native_tools else (),
            settings=agent.model_settings,
            retry=self.settings.retry_policy,
            call_timeout=self.settings.call_timeout,
            fallback_models=agent.fallback_models,
            api_base=agent.api_base,
            api_key=agent.api_key,
            response_format=output.response_format if native_output and output else None,
            backend=self.settings.backend,
            api=self.settings.api,
        )
        # Redacted from tool errors, as from the model's (with the environment's).
        self.secrets = secret_values(api_key=agent.api_key, settings=agent.model_settings)
        self.text_tools = bool(tools) and not self.native_tools
        self.native_output = native_output
        self.marker: str | None = None  # the text tool protocol's, set with the first messages
        self.messages = messages
        self.chain = options.chain or (agent.name,)
        self.llm_calls: list[LLMCallRecord] = []
        self.tool_records: list[ToolCallRecord] = []
        self.delegations: list[tuple[int, AgentResult]] = []
        self.rejected = 0
        self.started_at: float | None = None

    @classmethod
    def start(
        cls,
        agent: Agent,
        task: str,
        options: RunOptions,
        scope: RunScope,
        hint: str | None,
        extra_tools: Sequence[Callable[..., Any] | Tool],
    ) -> RunState:
        """A run's state, with its first messages.

        Raises:
            UserError: A variable the instructions use is missing, or an extra
                tool takes a name the agent already uses.
        """
        if not agent.variables <= options.variables.keys():  # a delegate checks its own
            prompt.check_variables([agent], options.variables)
        state = cls(agent, options, merge_tools(agent, extra_tools), [], scope)
        if state.text_tools:
            # A digest of the run's inputs, not a random draw (see _text_tools): a retry
            # or a rerun sends the same bytes, which providers' prompt caches reuse.
            blank = state.first_messages(task, hint, _text_tools.BLANK_MARKER)
            state.marker = _text_tools.marker_for(blank)
        state.messages = state.first_messages(task, hint, state.marker)
        return state

    def first_messages(self, task: str, hint: str | None, marker: str | None) -> list[llm.Message]:
        """The system prompt (with the text tool protocol's ``marker``, if any) and the task."""
        agent = self.agent
        answer = prompt.answer_format(
            list(self.tools.values()), marker, agent.output_spec, self.native_output
        )
        system = prompt.system_prompt(agent.instructions, self.options.variables, hint, answer)
        return prompt.messages(system, task, self.options.history)

    @property
    def agent_name(self) -> str:
        """The agent's name (what a delegate's errors name as its caller)."""
        return self.agent.name

    def delegated(self, position: int, result: AgentResult) -> None:
        """Count a delegate's run in this one, at the place of the tool call that made it."""
        self.delegations.append((position, result))

    async def turns(self) -> AgentResult:
        """Model calls, and the tool calls they ask for, until an answer is accepted."""
        start = time.perf_counter()
        self.started_at = time.time()
        try:
            while True:
                self.check_turn_budget()
                match await self.turn():
                    case ToolCalls(calls):
                        self.add_tool_results(await self.run_tools(calls))
                    case Rejected(text, feedback):
                        self.reject(text, feedback)
                    case Answer() as answer:
                        return self.result(answer, time.perf_counter() - start)
        except Exception as exc:  # the timeout's cancellation is not one: _run keeps that
            self.keep_partial(exc, time.perf_counter() - start)
            raise

    def check_turn_budget(self) -> None:
        """Raises MaxTurnsExceeded once ``max_turns`` calls (plus rejections) are made."""
        if len(self.llm_calls) >= self.agent.max_turns + self.rejected:
            raise MaxTurnsExceeded(
                f"Agent {self.agent.name!r} made {len(self.llm_calls)} model calls without a "
                f"final answer (max_turns={self.agent.max_turns}); raise max_turns or say in "
                "its instructions when to stop calling tools.",
                agent_name=self.agent.name,
                max_turns=self.agent.max_turns,
            )

    async def turn(self) -> Turn:
        """One model call, recorded, and what it means for the run."""
        agent = self.agent
        started: dict[str, object] = {"messages": len(self.messages), "tools": len(self.tools)}
        if self.scope.bus is not None:  # where the call goes: worked out for a listener only
            goes = target(self.call, agent.model)
            started.update(
                provider=goes.provider, provider_model=goes.model, endpoint=goes.endpoint
            )
        with self.scope.span(
            events.ModelCallStarted,
            events.ModelCallFinished,
            agent_name=agent.name,
            model=agent.model,
            turn=len(self.llm_calls) + 1,
            started=started,
        ) as span:
            request = llm.LLMRequest(self.call, self.messages, self.scope.text_deltas)
            reply = await llm.complete(request, self.scope.within(span))
            calls, feedback = self._calls_of(reply)
            span.set(
                model=reply.model,
                duration_seconds=reply.duration_seconds,
                usage=reply.usage,
                cost=reply.cost,
                finish_reason=reply.finish_reason,
                attempts=reply.attempts,
                tool_calls=len(calls),
                response_model=reply.response_model,
                api=reply.api,
            )
        self._record(reply, calls)
        if calls:
            return ToolCalls(calls)
        if feedback is not None:
            return Rejected(reply.text or "", feedback)
        return await self._judge(reply.text or "")

    def _calls_of(self, reply: llm.LLMReply) -> tuple[Sequence[llm.ToolCall], str | None]:
        """The tool calls of a reply to run (native, or the text protocol's marked block).

        Returns the calls, and the feedback for a marked block that cannot be read.
        """
        if self.marker is None:  # native tools, or none offered: a call to one is unknown
            return reply.tool_calls, None
        found, feedback = _text_tools.parse_text_tool_calls(reply.text or "", self.marker)
        first = len(self.tool_records) + 1  # per run, so a replayed run sends the same ids
        calls = [
            llm.ToolCall(id=f"call_{first + i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(found)
        ]
        return calls, feedback

    def _record(self, reply: llm.LLMReply, calls: Sequence[llm.ToolCall]) -> None:
        # Native calls (or calls to tools never offered) are kept; an answer, or tool calls
        # written as text, has no native tool_calls to keep.
        self.messages.append(reply.as_message(with_calls=self.marker is None and bool(calls)))
        self.llm_calls.append(
            LLMCallRecord(
                model=reply.model or self.agent.model,
                duration_seconds=reply.duration_seconds,
                token_usage=reply.usage,
                cost=reply.cost,
                finish_reason=reply.finish_reason,
                tool_calls=len(calls),
                attempts=reply.attempts,
                started_at=reply.started_at,
            )
        )

    async def _judge(self, text: str) -> Answer | Rejected:
        """The answer parsed (summary or JSON) and checked by the output validators."""
        output = self.agent.output_spec
        if output is None:
            plain, summary = parse_summary(text)
            answer, checked = Answer(plain, summary, None), plain
        else:
            parsed, feedback = await output.read(text)
            if feedback is not None:
                return Rejected(text, feedback)
            answer, checked = Answer(output.dump(parsed), None, parsed), parsed
        if self.agent.output_validators:
            feedback = await structured.run_validators(self.agent.output_validators, checked)
            if feedback is not None:
                return Rejected(text, feedback)
        return answer

    def reject(self, text: str, feedback: str) -> None:
        """Send the answer back for a retry, with why it was rejected.

        Raises:
            OutputValidationError: No retries are left.
        """
        agent = self.agent
        reason = _sentence(feedback)
        if self.rejected >= agent.output_retries:
            raise OutputValidationError(
                f"Agent {agent.name!r}: the answer was rejected {self.rejected + 1} times; "
                f"last reason: {reason} Make the instructions clearer about the expected "
                "answer, use a stronger model, or raise output_retries.",
                agent_name=agent.name,
                last_output=text,
                feedback=feedback,
                attempts=self.rejected + 1,
            )
        self.rejected += 1
        fix = "only the corrected JSON value" if agent.output_spec else "a corrected answer"
        self.messages.append(
            {"role": "user", "content": f"Your answer was rejected: {reason} Reply with {fix}."}
        )

    async def run_tools(self, calls: Sequence[llm.ToolCall]) -> list[ToolCallRecord]:
        """Run one reply's tool calls, at most ``max_parallel_tools`` at once, in call order."""
        gate = asyncio.Semaphore(self.settings.max_parallel_tools)
        first = len(self.tool_records)
        # Approvals first, one by one in call order: a durable engine records each
        # wait as it ends, so the order must not depend on who answers first.
        decisions = [await self._decide(call) for call in calls]

        turns = _Turns(len(calls))
        return await asyncio.gather(
            *(
                self._tool(c, first + i, d, turns.at(i), gate)
                for i, (c, d) in enumerate(zip(calls, decisions, strict=True))
            )
        )

    async def _decide(self, call: llm.ToolCall) -> Decided | None:
        """Ask for approval of ``call`` if its tool requires it (None: it does not)."""
        tool = self.tools.get(call.name)
        if tool is None or not tool.requires_approval:
            return None
        approve, scope = self.options.approve, self.scope
        return await ask(
            tool, approve, self.agent.name, call.id, call.arguments, scope.step, scope.decider
        )

    async def _tool(
        self,
        call: llm.ToolCall,
        position: int,
        decided: Decided | None,
        turn: _Turn,
        gate: asyncio.Semaphore,
    ) -> ToolCallRecord:
        server: str | None = getattr(self.tools.get(call.name), "server", None)
        with self.scope.span(
            events.ToolCallStarted,
            events.ToolCallFinished,
            agent_name=self.agent.name,
            tool_name=call.name,
            call_id=call.id,
            arguments=call.arguments,
            server=server,
        ) as span:
            span.set(result_chars=0, error="cancelled")  # what a cancelled call reports
            scope = self.scope.within(span)
            answered: dict[str, Approval] = {}
            task: str | None = None
            try:
                async with gate:
                    try:
                        outcome = await self._try(call, position, decided, scope, answered, task)
                    finally:
                        turn.tried()
                if not isinstance(outcome, ToolCallRecord):  # a durable engine's call goes on
                    await turn.begins()
                while not isinstance(outcome, ToolCallRecord):
                    if isinstance(outcome, TaskPending):  # recorded: follow the task now
                        task = outcome.task_id
                    else:  # wait for the answer here, outside the recorded call
                        if scope.decider is None:  # pragma: no cover - only a decider defers
                            raise outcome
                        answered[outcome.request.call_id] = await scope.decider(outcome.request)
                    outcome = await self._try(call, position, decided, scope, answered, task)
            finally:
                turn.ends()
            record = outcome
            span.set(
                arguments=record.arguments,
                result_chars=len(record.result),
                error=record.error,
                truncated_from=record.truncated_from,
                approval=record.approval,
                result=record.result,
            )
        return record

    async def _try(
        self,
        call: llm.ToolCall,
        position: int,
        decided: Decided | None,
        scope: RunScope,
        answered: dict[str, Approval],
        task: str | None,
    ) -> ToolCallRecord | AnswerNeeded | TaskPending:
        """:meth:`_attempt`, or why a durable engine's call stopped to go on later."""
        try:
            return await self._attempt(call, position, decided, scope, answered, task)
        except (AnswerNeeded, TaskPending) as stopped:
            return stopped

    async def _attempt(
        self,
        call: llm.ToolCall,
        position: int,
        decided: Decided | None,
        scope: RunScope,
        answered: dict[str, Approval],
        task: str | None,
    ) -> ToolCallRecord:
        """Make the tool call once (or follow its server's task), as a step of the run."""
        # What the tool reads of its run (current_call): set for the call alone, not
        # around the whole run, since litellm's logging tasks copy the model call's
        # context and would keep the run alive until they finish.
        asked: list[ElicitationRecord] = []  # an MCP server's questions during the call
        running = CallInProgress(
            scope=scope,
            caller=self,
            position=position,
            call_id=call.id,
            elicitations=asked,
            answered=dict(answered),
            task_id=task,
        )
        return await in_call(
            running,
            lambda: scope.step(
                f"tool:{call.name}",
                lambda: run_tool_call(
                    self.tools,
                    call.id,
                    call.name,
                    call.arguments,
                    default_timeout=self.settings.tool_timeout,
                    max_result_chars=self.settings.max_tool_result_chars,
                    agent_name=self.agent.name,
                    decided=decided,
                    secrets=self.secrets,
                    elicitations=asked,
                ),
            ),
        )

    def add_tool_results(self, records: Sequence[ToolCallRecord]) -> None:
        """Append the tool results to the conversation, in call order."""
        self.tool_records.extend(records)
        if self.marker is None:
            self.messages.extend(
                {"role": "tool", "tool_call_id": r.call_id, "content": r.result} for r in records
            )
            return
        marker = self.marker
        parts = [
            f"## {r.tool_name} ({r.call_id})\n{_text_tools.unmarked(r.result, marker)}"
            for r in records
        ]
        self.messages.append({"role": "user", "content": "Tool results:\n\n" + "\n\n".join(parts)})

    def keep_partial(self, error: BaseException, duration: float) -> None:
        """For a delegated run that failed: leave what it spent where its caller looks."""
        if self.options.spent is not None:
            failed = Answer(f"(failed) {type(error).__name__}: {error}", None, None)
            self.options.spent.append(self.result(failed, duration))

    def result(self, answer: Answer, duration: float) -> AgentResult:
        """The run's result: the answer, with every call it made and what they cost."""
        delegations = [r for _, r in sorted(self.delegations, key=lambda d: d[0])]
        usages = [c.token_usage for c in self.llm_calls] + [d.token_usage for d in delegations]
        return AgentResult(
            agent_name=self.agent.name,
            output=answer.output,
            summary=answer.summary or answer.output,
            model=self.llm_calls[-1].model if self.llm_calls else self.agent.model,
            duration_seconds=duration,
            started_at=self.started_at,
            token_usage=sum_usage(usages),
            tool_calls=list(self.tool_records),
            llm_calls=list(self.llm_calls),
            # Kept as plain dicts: a provider's extra keys must survive the round trip.
            messages=cast("list[dict[str, Any]]", self.messages),
            attempts=1,
            rejections=self.rejected,
            parsed=answer.parsed,
            delegations=delegations,
        )


class _Turns:
    """Where the tool calls of one reply go on after a first recorded attempt stopped them.

    Under a durable engine, a call stops once to wait for an answer
    (:class:`AnswerNeeded`) or to follow its server's task (:class:`TaskPending`),
    and goes on in recorded steps of its own. A replay must make those steps in the
    same order, so they wait until every call of the reply made its first attempt,
    then go one call at a time, in call order (which also keeps one question
    waiting per agent at a time).
    """

    def __init__(self, count: int) -> None:
        self._untried = count
        self._all_tried = asyncio.Event()
        self._ended = [asyncio.Event() for _ in range(count)]
        if count == 0:
            self._all_tried.set()

    def at(self, index: int) -> _Turn:
        """The turn of the reply's call ``index``."""
        return _Turn(self, index)

    def tried(self) -> None:
        self._untried -= 1
        if self._untried == 0:
            self._all_tried.set()

    async def begins(self, index: int) -> None:
        await self._all_tried.wait()
        for earlier in self._ended[:index]:
            await earlier.wait()

    def ends(self, index: int) -> None:
        self._ended[index].set()


@dataclass(frozen=True, slots=True)
class _Turn:
    """One call's place among its reply's (see :class:`_Turns`)."""

    turns: _Turns
    index: int

    def tried(self) -> None:
        """Its first attempt is over (however it ended)."""
        self.turns.tried()

    async def begins(self) -> None:
        """Wait until every call tried once and the earlier calls are over."""
        await self.turns.begins(self.index)

    def ends(self) -> None:
        """It is over: later calls may go on."""
        self.turns.ends(self.index)


def merge_tools(agent: Agent, extra: Sequence[Callable[..., Any] | Tool]) -> dict[str, Tool]:
    """The agent's tools and the run's extra ones (context tools, fetched MCP tools).

    Raises:
        UserError: An extra tool takes a name the agent already uses.
    """
    merged = dict(agent.tool_map)
    for tool in to_tools(extra, owner=f"Agent {agent.name!r} (extra_tools)"):
        if tool.name in merged:
            source = getattr(tool, "server", None)
            fix = (
                f"give the MCP server {source!r} a prefix= or select() its tools"
                if source
                else "rename the agent's tool"
            )
            raise UserError(
                f"Agent {agent.name!r} already has a tool named {tool.name!r}, which the "
                f"run also adds; {fix}."
            )
        merged[tool.name] = tool
    return merged


@functools.cache
def _native(protocol: str, model: str, feature: Literal["tools", "output"]) -> bool:
    """Whether to use the provider's own tool calling or JSON output.

    Asked of ``llm.supports``, the one model-information source: the same answer
    on either backend, whatever was imported before.
    """
    if protocol != "auto":
        return protocol == "native"
    if feature == "tools":  # unknown models are assumed to call tools, as most now do
        return llm.supports(model, "function_calling") is not False
    return llm.supports(model, "response_schema") is True


def _sentence(text: str) -> str:
    """``text`` ending as a sentence: a period added unless it ends with one (or ! or ?)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else f"{text}."
