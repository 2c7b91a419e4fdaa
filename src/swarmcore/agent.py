"""Agent: a frozen definition, and the tool-calling loop that runs it.

The loop, as its own specification:

1. Check the turn budget (``max_turns``), then call the model through ``llm.complete``.
2. Record the reply: the assistant message, usage, cost.
3. A reply without tool calls is the final answer: parse its ``<summary>`` and stop.
4. Otherwise run every tool call of the reply concurrently, append the results
   in call order with their ``tool_call_id``s, and go to 1.

Everything a run accumulates lives in a ``_RunState`` made by ``Agent.run`` and
thrown away after, so one Agent can run in any number of flows at once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from swarmcore import events, llm
from swarmcore.context import SharedContext, parse_summary
from swarmcore.errors import AgentError, MaxTurnsExceeded, UserError
from swarmcore.flow import FlowNode
from swarmcore.models import AgentResult, LLMCallRecord, ToolCallRecord, sum_usage
from swarmcore.policies import RetryPolicy
from swarmcore.tools import Tool, Toolset, run_tool_call, to_tools, validate_name

if TYPE_CHECKING:
    from typing import Self

__all__ = ["DEFAULT_MODEL", "SUMMARY_INSTRUCTION", "Agent", "AgentDefaults"]

DEFAULT_MODEL = "openai/gpt-4o-mini"
"""The model an Agent uses when none is given."""

SUMMARY_INSTRUCTION = (
    "End your answer with a one-line summary of it inside <summary></summary> tags."
)
"""Appended to every system prompt; the summary is what later agents see first."""


@dataclass(frozen=True, slots=True)
class AgentDefaults:
    """Settings for agents that leave them unset (None): pass one to ``Swarm(defaults=...)``.

    An Agent's own setting always wins. ``math.inf`` means no limit.

    Args:
        retry: How model calls retry transient failures; an int is a number of retries.
        call_timeout: Seconds for one model call attempt.
        timeout: Seconds for an agent's whole run (every turn and tool); None for no limit.
        tool_timeout: Seconds for one tool call; None for no limit.
        max_tool_result_chars: Longer tool results are cut to this many
            characters, with a marker; None keeps them whole.
        max_parallel_tools: The most tool calls of one reply run at once.

    Raises:
        UserError: A setting that is not a positive number (or None where allowed).
    """

    retry: RetryPolicy | int = field(default_factory=RetryPolicy)
    call_timeout: float | None = 120.0
    timeout: float | None = None
    tool_timeout: float | None = 120.0
    max_tool_result_chars: int | None = 50_000
    max_parallel_tools: int = 8

    def __post_init__(self) -> None:
        object.__setattr__(self, "retry", RetryPolicy.of(self.retry))
        for name in ("call_timeout", "timeout", "tool_timeout"):
            _check_positive("AgentDefaults", name, getattr(self, name))
        _check_positive("AgentDefaults", "max_tool_result_chars", self.max_tool_result_chars)
        _check_positive("AgentDefaults", "max_parallel_tools", self.max_parallel_tools, True)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Agent(FlowNode):
    """A named LLM worker: instructions, a model and tools. Stateless and frozen.

    Compose agents into flows with ``>>`` and ``|``; make a variant with
    :meth:`clone`. Settings after ``tools`` are keyword-only.

    Raises:
        UserError: An invalid name or setting, or a tool that cannot become a
            schema (the message names the parameter).
    """

    name: str
    """Unique within a flow; keys the shared context and must be a valid tool name."""
    instructions: str
    """The system prompt."""
    model: str = DEFAULT_MODEL
    """Any LiteLLM model string, e.g. ``openai/gpt-4o-mini`` or ``anthropic/claude-sonnet-4-5``."""
    tools: Sequence[Callable[..., Any] | Tool | Toolset] = ()
    """Plain functions (sync or async), Tools, or toolsets such as MCP servers
    (``MCPServer.stdio(...)``), whose tools are fetched when the agent runs."""
    _: KW_ONLY
    fallback_models: Sequence[str] = ()
    """Models tried in order when transient failures outlast the retry policy on ``model``."""
    max_turns: int = 10
    """Most model calls in one run before ``MaxTurnsExceeded``."""
    retry: RetryPolicy | int | None = None
    """How model calls retry 429s, timeouts, connection errors and 5xx; an int is a
    number of retries. None: the Swarm's default (2 retries with jittered backoff)."""
    call_timeout: float | None = None
    """Seconds for one model call attempt. None: the Swarm's default (120 s)."""
    timeout: float | None = None
    """Seconds for the whole run (every turn and tool). None: the Swarm's default (no limit)."""
    tool_timeout: float | None = None
    """Seconds for one tool call (a Tool's own ``timeout`` wins). None: the Swarm's default
    (120 s)."""
    max_tool_result_chars: int | None = None
    """Tool results longer than this are cut, with a marker. None: the Swarm's default
    (50,000)."""
    max_parallel_tools: int | None = None
    """The most tool calls of one reply run at once. None: the Swarm's default (8)."""
    model_settings: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Extra arguments for the model call: ``temperature``, ``max_tokens``, ``seed``..."""
    api_base: str | None = None
    """The provider endpoint, for OpenAI-compatible servers."""
    api_key: str | None = field(default=None, repr=False)
    """The provider key; by default LiteLLM reads the provider's environment variable."""
    _tool_map: dict[str, Tool] = field(init=False, repr=False)
    _toolsets: tuple[Toolset, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        validate_name(self.name, "Agent")
        if not isinstance(self.instructions, str):
            raise UserError(f"Agent {self.name!r}: instructions must be a string.")
        if not isinstance(self.model, str) or not self.model.strip():
            raise UserError(
                f"Agent {self.name!r}: model must be a LiteLLM model string such as "
                f"{DEFAULT_MODEL!r}, got {self.model!r}."
            )
        owner = f"Agent {self.name!r}"
        _check_positive(owner, "max_turns", self.max_turns, True, optional=False)
        for setting in ("timeout", "call_timeout", "tool_timeout", "max_tool_result_chars"):
            _check_positive(owner, setting, getattr(self, setting))
        _check_positive(owner, "max_parallel_tools", self.max_parallel_tools, True)
        if self.retry is not None:
            object.__setattr__(self, "retry", RetryPolicy.of(self.retry))
        if isinstance(self.fallback_models, str) or not all(
            isinstance(m, str) and m.strip() for m in self.fallback_models
        ):
            raise UserError(
                f"Agent {self.name!r}: fallback_models must be a list of LiteLLM model "
                f"strings, got {self.fallback_models!r}."
            )
        object.__setattr__(self, "fallback_models", tuple(self.fallback_models))
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Iterable):
            raise UserError(f"Agent {self.name!r}: tools must be a list of functions.")
        toolsets = tuple(t for t in self.tools if isinstance(t, Toolset))
        tools = to_tools(
            [t for t in self.tools if not isinstance(t, Toolset)], owner=f"Agent {self.name!r}"
        )
        object.__setattr__(self, "tools", (*tools, *toolsets))
        object.__setattr__(self, "_toolsets", toolsets)
        object.__setattr__(self, "model_settings", dict(self.model_settings))
        object.__setattr__(self, "_tool_map", {t.name: t for t in tools})

    def __repr__(self) -> str:
        names = [t.name for t in self._tool_map.values()] + [repr(t) for t in self._toolsets]
        tools = f", tools={names}" if names else ""
        fallbacks = f", fallback_models={list(self.fallback_models)!r}" * bool(self.fallback_models)
        return f"Agent({self.name!r}, model={self.model!r}{fallbacks}{tools})"

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        """The toolsets (MCP servers) among ``tools``, whose tools are fetched at run time."""
        return self._toolsets

    def clone(self, **changes: Any) -> Self:
        """A copy with some fields changed: ``agent.clone(name="critic_2", model=...)``."""
        return replace(self, **changes)

    async def run(
        self,
        task: str,
        context: SharedContext | None = None,
        *,
        extra_tools: Sequence[Callable[..., Any] | Tool] = (),
        context_hint: str | None = None,
        defaults: AgentDefaults | None = None,
    ) -> AgentResult:
        """Run the tool-calling loop on ``task`` until the model answers in text.

        Args:
            task: What to do; sent as the user message.
            context: Outputs of earlier agents. When given without
                ``context_hint``, it is rendered in full into the system prompt.
            extra_tools: Run-local tools added for this run only (the Swarm's
                context tools); the Agent itself never changes.
            context_hint: Text added to the system prompt for this run only
                (the Swarm's context-mode hint); it replaces rendering ``context``.
            defaults: Values for the settings this Agent leaves as None (the
                Swarm passes its own); library defaults when None.

        Returns:
            The output (summary parsed out), usage summed over every turn, and
            a record of every model and tool call.

        Raises:
            UserError: An empty task, or an extra tool whose name the agent already uses.
            MaxTurnsExceeded: No final answer within ``max_turns`` model calls.
            ModelError: The model call failed for good, on every fallback model.
            AgentError: The run outlasted ``timeout`` (``retryable`` is True).
        """
        if not isinstance(task, str) or not task.strip():
            raise UserError(f"Agent {self.name!r}: the task must be a non-empty string.")
        if context_hint is None and context is not None and len(context):
            context_hint = "# Context from earlier agents\n\n" + context.format_for_prompt()
        settings = _Settings.of(self, defaults or _DEFAULTS)
        if not self._toolsets:
            return await self._run(task, context_hint, settings, extra_tools)
        from swarmcore import mcp  # only agents with toolsets need it

        scope = mcp.current_scope()
        if scope is not None:  # a Swarm run: its connections outlive this agent
            return await self._run(task, context_hint, settings, extra_tools)
        scope = mcp.ConnectionScope()
        token = mcp.enter_scope(scope)
        try:
            return await self._run(task, context_hint, settings, extra_tools)
        finally:
            await scope.close()
            mcp.exit_scope(token)

    async def _run(
        self,
        task: str,
        context_hint: str | None,
        settings: _Settings,
        extra_tools: Sequence[Callable[..., Any] | Tool],
    ) -> AgentResult:
        fetched: list[Tool] = []
        for toolset in self._toolsets:
            fetched.extend(await toolset.tools())
        tools = self._merge_tools([*extra_tools, *fetched])
        state = _RunState(self, settings, tools, self._messages(task, context_hint))
        start = time.perf_counter()
        deadline = asyncio.timeout(settings.timeout)
        try:
            async with deadline:
                text = await self._loop(state)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise AgentError(
                f"Agent {self.name!r} did not finish within timeout={settings.timeout:g}s "
                f"({len(state.llm_calls)} model calls made); raise timeout or simplify the task.",
                agent_name=self.name,
                retryable=True,
            ) from exc
        output, summary = parse_summary(text)
        return state.result(output, summary, time.perf_counter() - start)

    async def _loop(self, state: _RunState) -> str:
        while True:
            state.check_turn_budget()
            reply = await state.call_model()
            state.record(reply)
            if not reply.tool_calls:
                return reply.text or ""
            state.add_tool_results(await state.run_tools(reply.tool_calls))

    def _messages(self, task: str, hint: str | None) -> list[llm.Message]:
        parts = [self.instructions.strip(), (hint or "").strip(), SUMMARY_INSTRUCTION]
        system = "\n\n".join(p for p in parts if p)
        return [{"role": "system", "content": system}, {"role": "user", "content": task}]

    def _merge_tools(self, extra: Sequence[Callable[..., Any] | Tool]) -> dict[str, Tool]:
        if not extra:
            return self._tool_map
        merged = dict(self._tool_map)
        for tool in to_tools(extra, owner=f"Agent {self.name!r} (extra_tools)"):
            if tool.name in merged:
                source = getattr(tool, "server", None)
                fix = (
                    f"give the MCP server {source!r} a prefix= or select() its tools"
                    if source
                    else "rename the agent's tool"
                )
                raise UserError(
                    f"Agent {self.name!r} already has a tool named {tool.name!r}, which the "
                    f"run also adds; {fix}."
                )
            merged[tool.name] = tool
        return merged


@dataclass(frozen=True, slots=True)
class _Settings:
    """An agent's settings with the defaults filled in, for one run."""

    retry: RetryPolicy
    call_timeout: float | None
    timeout: float | None
    tool_timeout: float | None
    max_tool_result_chars: int | None
    max_parallel_tools: int

    @classmethod
    def of(cls, agent: Agent, defaults: AgentDefaults) -> _Settings:
        def pick(name: str) -> Any:
            own = getattr(agent, name)
            value = own if own is not None else getattr(defaults, name)
            return None if value == math.inf else value

        retry = agent.retry if agent.retry is not None else defaults.retry
        assert isinstance(retry, RetryPolicy)  # both __post_init__s convert ints
        return cls(
            retry=retry,
            call_timeout=pick("call_timeout"),
            timeout=pick("timeout"),
            tool_timeout=pick("tool_timeout"),
            max_tool_result_chars=pick("max_tool_result_chars"),
            max_parallel_tools=pick("max_parallel_tools") or 1,
        )


class _RunState:
    """Everything one run of one agent accumulates."""

    __slots__ = ("agent", "llm_calls", "messages", "settings", "specs", "tool_records", "tools")

    def __init__(
        self,
        agent: Agent,
        settings: _Settings,
        tools: dict[str, Tool],
        messages: list[llm.Message],
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.tools = tools
        self.specs = tuple(t.spec for t in tools.values())
        self.messages = messages
        self.llm_calls: list[LLMCallRecord] = []
        self.tool_records: list[ToolCallRecord] = []

    def check_turn_budget(self) -> None:
        if len(self.llm_calls) >= self.agent.max_turns:
            raise MaxTurnsExceeded(
                f"Agent {self.agent.name!r} made {len(self.llm_calls)} model calls without a "
                f"final answer (max_turns={self.agent.max_turns}); raise max_turns or say in "
                "its instructions when to stop calling tools.",
                agent_name=self.agent.name,
                max_turns=self.agent.max_turns,
            )

    def request(self, stream: bool = False) -> llm.LLMRequest:
        a = self.agent
        return llm.LLMRequest(
            agent_name=a.name,
            model=a.model,
            messages=self.messages,
            tools=self.specs,
            settings=a.model_settings,
            retry=self.settings.retry,
            call_timeout=self.settings.call_timeout,
            fallback_models=a.fallback_models,
            api_base=a.api_base,
            api_key=a.api_key,
            stream=stream,
        )

    def record(self, reply: llm.LLMReply) -> None:
        self.messages.append(reply.as_message())
        self.llm_calls.append(
            LLMCallRecord.model_construct(
                model=reply.model or self.agent.model,
                duration_seconds=reply.duration_seconds,
                token_usage=reply.usage,
                cost=reply.cost,
                finish_reason=reply.finish_reason,
                tool_calls=len(reply.tool_calls),
                attempts=reply.attempts,
            )
        )

    async def call_model(self) -> llm.LLMReply:
        """One turn's model call, reported to the event stream when anyone listens."""
        span = events.Span.child()
        if span is None:
            return await llm.complete(self.request())
        name, turn = self.agent.name, len(self.llm_calls) + 1
        span.bus.publish(
            events.ModelCallStarted(
                **span.ids,
                agent_name=name,
                model=self.agent.model,
                turn=turn,
                messages=len(self.messages),
                tools=len(self.specs),
            )
        )
        reply: llm.LLMReply | None = None
        try:
            with span.inside():
                reply = await llm.complete(self.request(stream=span.bus.text_deltas))
        finally:
            span.bus.publish(
                events.ModelCallFinished(
                    **span.ids,
                    agent_name=name,
                    model=reply.model if reply else self.agent.model,
                    turn=turn,
                    duration_seconds=reply.duration_seconds if reply else span.elapsed,
                    usage=reply.usage if reply else None,
                    cost=reply.cost if reply else None,
                    finish_reason=reply.finish_reason if reply else None,
                    attempts=reply.attempts if reply else 1,
                    tool_calls=len(reply.tool_calls) if reply else 0,
                    error=span.error,
                )
            )
        assert reply is not None  # the try either set it or raised
        return reply

    async def run_tools(self, calls: Sequence[llm.ToolCall]) -> list[ToolCallRecord]:
        """Run one reply's tool calls, at most ``max_parallel_tools`` at once, in call order."""
        if len(calls) <= self.settings.max_parallel_tools:
            return await asyncio.gather(*(self._tool(c) for c in calls))
        gate = asyncio.Semaphore(self.settings.max_parallel_tools)

        async def gated(call: llm.ToolCall) -> ToolCallRecord:
            async with gate:
                return await self._tool(call)

        return await asyncio.gather(*(gated(c) for c in calls))

    async def _tool(self, call: llm.ToolCall) -> ToolCallRecord:
        run = run_tool_call(
            self.tools,
            call.id,
            call.name,
            call.arguments,
            default_timeout=self.settings.tool_timeout,
            max_result_chars=self.settings.max_tool_result_chars,
        )
        span = events.Span.child()
        if span is None:
            return await run
        server: str | None = getattr(self.tools.get(call.name), "server", None)
        span.bus.publish(
            events.ToolCallStarted(
                **span.ids,
                agent_name=self.agent.name,
                tool_name=call.name,
                call_id=call.id,
                arguments=call.arguments,
                server=server,
            )
        )
        record: ToolCallRecord | None = None
        try:
            with span.inside():
                record = await run
        finally:
            span.bus.publish(
                events.ToolCallFinished(
                    **span.ids,
                    agent_name=self.agent.name,
                    tool_name=call.name,
                    call_id=call.id,
                    arguments=call.arguments,
                    server=server,
                    duration_seconds=span.elapsed,
                    result_chars=len(record.result) if record else 0,
                    error=record.error if record else "cancelled",
                    truncated_from=record.truncated_from if record else None,
                )
            )
        assert record is not None  # the try either set it or raised
        return record

    def add_tool_results(self, records: Sequence[ToolCallRecord]) -> None:
        for r in records:
            self.tool_records.append(r)
            self.messages.append({"role": "tool", "tool_call_id": r.call_id, "content": r.result})

    def result(self, output: str, summary: str | None, duration: float) -> AgentResult:
        # Built from values this module made: construct, do not re-validate (hot path).
        return AgentResult.model_construct(
            agent_name=self.agent.name,
            output=output,
            summary=summary or output,
            model=self.llm_calls[-1].model if self.llm_calls else self.agent.model,
            duration_seconds=duration,
            token_usage=sum_usage([c.token_usage for c in self.llm_calls]),
            tool_calls=list(self.tool_records),
            llm_calls=list(self.llm_calls),
            messages=list(self.messages),
        )


def _check_positive(
    owner: str, name: str, value: object, integer: bool = False, *, optional: bool = True
) -> None:
    if value is None and optional:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value <= 0
        or (integer and not isinstance(value, int))
    ):
        kind = "a positive whole number" if integer else "a positive number"
        raise UserError(f"{owner}: {name} must be {kind}, got {value!r}.")


_DEFAULTS = AgentDefaults()  # after _check_positive, which its validation uses
