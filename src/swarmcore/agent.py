"""Agent: a frozen definition, and the tool-calling loop that runs it.

The loop, as its own specification:

1. Check the turn budget (``max_turns``), then call the model through ``llm.complete``.
2. Record the reply: the assistant message, usage, cost.
3. Tool calls (native, or JSON text for models without native tool calling):
   run them concurrently, append the results in call order, and go to 1. An
   agent without tools makes one call (direct mode) and never gets here.
4. Otherwise the reply is the answer: parse its ``<summary>`` (or, with an
   ``output_type``, its JSON), run the output validators, and stop; a rejected
   answer goes back to the model with the reason, up to ``output_retries`` times.

Everything a run accumulates lives in a ``_RunState`` made by ``Agent.run`` and
thrown away after, so one Agent can run in any number of flows at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import math
import re
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from swarmcore import events, llm
from swarmcore.context import SharedContext, parse_summary
from swarmcore.errors import (
    AgentError,
    DelegationDepthExceeded,
    MaxTurnsExceeded,
    OutputValidationError,
    UserError,
)
from swarmcore.flow import FlowNode
from swarmcore.models import AgentResult, LLMCallRecord, ToolCallRecord, sum_usage
from swarmcore.policies import RetryPolicy
from swarmcore.tools import (
    Approver,
    Tool,
    Toolset,
    function_tool,
    run_tool_call,
    to_tools,
    validate_name,
)

if TYPE_CHECKING:
    from typing import Self

    from swarmcore.structured import OutputSpec, OutputValidator

__all__ = ["DEFAULT_MODEL", "SUMMARY_INSTRUCTION", "Agent", "AgentDefaults", "run_sync"]

Protocol = Literal["auto", "native", "text"]
"""How an agent talks to its model about tools or structured output: ``auto`` asks
LiteLLM's model data, ``native`` uses the provider's feature, ``text`` uses
instructions plus JSON extraction (for models without the feature)."""

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
    """Most model calls in one run before ``MaxTurnsExceeded`` (answers sent back by
    ``output_retries`` come on top)."""
    output_type: Any = None
    """A type the answer must be, as JSON: a pydantic model, dataclass, TypedDict,
    ``list[...]``... The validated object is ``AgentResult.parsed``; ``output`` holds
    it as JSON text, which later agents read."""
    output_validators: Sequence[OutputValidator] = ()
    """Functions (sync or async) given the parsed object (or the text, without an
    ``output_type``): return None to accept, or feedback text (or raise ValueError)
    to send the answer back to the model."""
    output_retries: int = 2
    """How many rejected answers go back to the model before ``OutputValidationError``."""
    output_protocol: Protocol = "auto"
    """``native``: the provider's JSON-schema response format; ``text``: the schema in
    the instructions and the JSON extracted from the answer; ``auto``: native where
    LiteLLM says the model supports it (and the schema is an object), else text."""
    tool_protocol: Protocol = "auto"
    """``native``: the provider's tool calling; ``text``: tools described in the
    instructions and called by writing JSON; ``auto``: text only where LiteLLM says
    the model has no tool calling."""
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
    """Extra arguments for the model call: ``temperature``, ``max_tokens``, ``seed``...
    Copied when the agent is built; change them with :meth:`clone`, not in place (its
    runs keep the call arguments they built from them)."""
    api_base: str | None = None
    """The provider endpoint, for OpenAI-compatible servers."""
    api_key: str | None = field(default=None, repr=False)
    """The provider key; by default LiteLLM reads the provider's environment variable."""
    _tool_map: dict[str, Tool] = field(init=False, repr=False)
    _toolsets: tuple[Toolset, ...] = field(init=False, repr=False)
    _output: OutputSpec | None = field(init=False, repr=False)
    _variables: frozenset[str] = field(init=False, repr=False)
    _reach: tuple[Agent, ...] | None = field(init=False, repr=False, default=None)
    """This agent and those it can call through ``as_tool``: fixed once built, so kept."""
    _plan: _Plan | None = field(init=False, repr=False, default=None)
    """What its runs under the last defaults and tools shared (see ``_plan_for``)."""

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
        self._check_output(owner)
        object.__setattr__(self, "_variables", placeholders(self.instructions))

    def _check_output(self, owner: str) -> None:
        for setting in ("output_protocol", "tool_protocol"):
            if getattr(self, setting) not in ("auto", "native", "text"):
                raise UserError(
                    f"{owner}: {setting} must be 'auto', 'native' or 'text', "
                    f"got {getattr(self, setting)!r}."
                )
        if isinstance(self.output_retries, bool) or not isinstance(self.output_retries, int):
            raise UserError(
                f"{owner}: output_retries must be 0 or more, got {self.output_retries!r}."
            )
        if self.output_retries < 0:
            raise UserError(
                f"{owner}: output_retries must be 0 or more, got {self.output_retries!r}."
            )
        validators = self.output_validators
        if callable(validators) or not all(callable(v) for v in validators):
            raise UserError(
                f"{owner}: output_validators must be a list of functions, got {validators!r}."
            )
        object.__setattr__(self, "output_validators", tuple(validators))
        spec = None
        if self.output_type is not None:
            from swarmcore.structured import OutputSpec  # only agents with an output_type

            spec = OutputSpec.of(self.output_type, owner)
        if spec is not None and self.output_protocol == "native" and not spec.is_object:
            raise UserError(
                f"{owner}: output_protocol='native' needs an output_type whose JSON schema is "
                f"an object (a pydantic model, dataclass or TypedDict), not {self.output_type!r}; "
                "wrap it in a model or use output_protocol='text'."
            )
        object.__setattr__(self, "_output", spec)

    def __repr__(self) -> str:
        names = [t.name for t in self._tool_map.values()] + [repr(t) for t in self._toolsets]
        tools = f", tools={names}" if names else ""
        fallbacks = f", fallback_models={list(self.fallback_models)!r}" * bool(self.fallback_models)
        return f"Agent({self.name!r}, model={self.model!r}{fallbacks}{tools})"

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        """The toolsets (MCP servers) among ``tools``, whose tools are fetched at run time."""
        return self._toolsets

    def _plan_for(
        self, defaults: AgentDefaults, extra: Sequence[Callable[..., Any] | Tool]
    ) -> _Plan:
        """What every run under ``defaults`` with ``extra`` tools shares; the last one is kept.

        Kept only for extra tools that come back: none, or a tuple (a Swarm's context
        tools, the same tuple every run). A list can change under the same identity,
        and a plan made for one run would only push the kept plan out. Nothing mutates
        a plan's tool map: runs share it as they share the agent's own.
        """
        cached = self._plan
        if cached is not None and cached.defaults is defaults and cached.extra is extra:
            return cached  # a Swarm's step, every run: no merge either
        tools = self._merge_tools(extra)
        if cached is not None and cached.defaults is defaults and cached.tools is tools:
            return cached  # no extra tools, in a new empty sequence
        plan = _Plan.of(self, defaults, extra, tools)
        if tools is self._tool_map or isinstance(extra, tuple):
            object.__setattr__(self, "_plan", plan)
        return plan

    @property
    def variables(self) -> frozenset[str]:
        """The ``{name}`` placeholders in ``instructions``, filled at run time."""
        return self._variables

    def clone(self, **changes: Any) -> Self:
        """A copy with some fields changed: ``agent.clone(name="critic_2", model=...)``."""
        return replace(self, **changes)

    def renamed(self, name: str) -> Agent:
        """This agent under a run-time name such as ``writer#2`` (a loop's iteration).

        Unlike :meth:`clone`, the name is not checked as a tool name: it keys
        the context and the history, and is never sent as a tool name.
        """
        twin = copy.copy(self)
        object.__setattr__(twin, "name", name)
        object.__setattr__(twin, "_reach", None)  # the cached walk names the original
        object.__setattr__(twin, "_plan", None)  # its call spec names the original
        return twin

    def as_tool(
        self, *, name: str | None = None, description: str | None = None, max_depth: int = 3
    ) -> Tool:
        """This agent as a tool another agent can call to delegate a task.

        The caller's result lists each delegated run in ``delegations``, and
        its tokens and cost include theirs. The delegate sees only the task
        the caller writes; it shares the caller's settings defaults, budget,
        approval callback and prompt variables. A delegate that fails is a
        tool error the caller can act on.

        Args:
            name: The tool name; the agent's name by default.
            description: What the agent does, for the caller's model.
            max_depth: The most nested delegations (agent calling agent calling
                agent...) allowed through this tool before DelegationDepthExceeded
                stops the run.

        Raises:
            UserError: An invalid name or ``max_depth``.
        """
        _check_positive(f"Agent {self.name!r}", "max_depth", max_depth, True, optional=False)
        agent = self

        async def delegate(task: str) -> str:
            """Delegate a task.

            Args:
                task: The whole task, with everything the agent needs to know: it sees
                    nothing else of this conversation.
            """
            return await agent._delegated(task, _current_run.get(), max_depth)

        tool = function_tool(
            delegate,
            name=name or self.name,
            description=description
            or f"Ask the agent {self.name!r} to do a task; returns its answer. "
            + _first_sentence(self.instructions),
        )
        return replace(tool, delegate=self)

    async def _delegated(self, task: str, caller: _RunState | None, max_depth: int) -> str:
        chain = (*(caller.chain if caller else ()), self.name)
        if len(chain) - 1 > max_depth:
            path = " -> ".join(chain)
            raise DelegationDepthExceeded(
                f"Delegation too deep: {path} is {len(chain) - 1} levels, past max_depth="
                f"{max_depth} of {self.name!r}.as_tool(); stop agents calling each other in a "
                "loop, or raise max_depth.",
                agent_name=caller.agent.name if caller else self.name,
                chain=list(chain),
                max_depth=max_depth,
            )
        spent: list[AgentResult] = []  # a failed run's partial result lands here
        options = RunOptions(chain=chain, spent=spent)
        if caller is not None:
            options = replace(caller.options, chain=chain, history=None, spent=spent)
        position = _call_position.get()
        try:
            result = await self._start(task, None, (), options)
        except (DelegationDepthExceeded, UserError):
            raise
        except AgentError as exc:  # the caller's model is told, and can try something else
            if caller is not None and spent:  # what it spent before failing still counts
                caller.delegations = [*caller.delegations, (position, spent[0])]
            raise _DelegateFailed(f"agent {self.name!r} failed: {exc}") from exc
        if caller is not None:
            caller.delegations = [*caller.delegations, (position, result)]
        return result.output

    async def run(
        self,
        task: str,
        context: SharedContext | None = None,
        *,
        extra_tools: Sequence[Callable[..., Any] | Tool] = (),
        context_hint: str | None = None,
        defaults: AgentDefaults | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        variables: Mapping[str, object] | None = None,
        approve: Approver | None = None,
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
            history: Earlier messages to continue from, e.g. an earlier
                result's ``messages``; the task is added as the next user
                message. Its system message is replaced by this agent's. The
                history is copied, so two runs from one history are independent.
            variables: Values for ``{name}`` placeholders in the instructions.
            approve: The approval callback for tools marked ``requires_approval``.

        Returns:
            The output (summary parsed out, or the validated JSON with an
            ``output_type``), usage summed over every turn, and a record of
            every model and tool call.

        Raises:
            UserError: An empty task, a missing variable, a tool that needs
                approval without ``approve``, or an extra tool whose name the
                agent already uses.
            MaxTurnsExceeded: No final answer within ``max_turns`` model calls.
            OutputValidationError: The answer failed ``output_type`` or a
                validator ``output_retries`` + 1 times.
            ModelError: The model call failed for good, on every fallback model.
            AgentError: The run outlasted ``timeout`` (``retryable`` is True).
        """
        if not isinstance(task, str) or not task.strip():
            raise UserError(f"Agent {self.name!r}: the task must be a non-empty string.")
        if context_hint is None and context is not None and len(context):
            context_hint = "# Context from earlier agents\n\n" + context.format_for_prompt()
        values = normalize_variables(variables)
        if approve is None:
            check_approvals([self])
        options = RunOptions(
            defaults=defaults or _DEFAULTS,
            variables=values,
            approve=approve,
            history=_copy_history(self.name, history),
            chain=(self.name,),
        )
        return await self._start(task, context_hint, extra_tools, options, context)

    def run_sync(self, task: str, **kwargs: Any) -> AgentResult:
        """:meth:`run` for scripts and notebooks: blocks until the result is ready.

        Inside a running event loop (a notebook cell) the run goes to a fresh
        loop on a worker thread. Takes the same arguments as :meth:`run`.
        """
        return run_sync(lambda: self.run(task, **kwargs))

    def _start(
        self,
        task: str,
        context_hint: str | None,
        extra_tools: Sequence[Callable[..., Any] | Tool],
        options: RunOptions,
        context: SharedContext | None = None,
    ) -> Coroutine[Any, Any, AgentResult]:
        """The run: its state is made here, its turns run in the coroutine handed back.

        A plain function, so that while the model is out no frame holds what the run
        was given (the run state keeps what it needs): with thousands of calls in
        flight, each object held is one more for the garbage collector to walk. An
        agent with toolsets fetches their tools first, inside an MCP connection scope
        when none is open. For other agents bad input (a missing variable, a tool name
        used twice) raises here, when the run starts rather than when it is awaited;
        every caller does both in one place.
        """
        if self._toolsets:
            run = self._fetch_and_run(task, context_hint, extra_tools, options, context)
            from swarmcore import mcp  # only agents with toolsets need it

            if mcp.current_scope() is not None:  # a Swarm run: its connections outlive it
                return run
            return _in_own_scope(run)
        return self._run(self._prepare(task, context_hint, extra_tools, options, context))

    async def _fetch_and_run(
        self,
        task: str,
        context_hint: str | None,
        extra_tools: Sequence[Callable[..., Any] | Tool],
        options: RunOptions,
        context: SharedContext | None,
    ) -> AgentResult:
        fetched: list[Tool] = []
        for toolset in self._toolsets:
            fetched.extend(await toolset.tools())
        state = self._prepare(task, context_hint, [*extra_tools, *fetched], options, context)
        return await self._run(state)

    def _prepare(
        self,
        task: str,
        context_hint: str | None,
        extra_tools: Sequence[Callable[..., Any] | Tool],
        options: RunOptions,
        context: SharedContext | None,
    ) -> _RunState:
        if self._variables and not self._variables <= options.variables.keys():
            check_variables([self], options.variables)  # delegates check their own when they run
        plan = self._plan_for(options.defaults, extra_tools)
        state = _RunState(self, plan, options, context)
        state.messages = self._messages(task, context_hint, state)
        return state

    def _run(self, state: _RunState) -> Coroutine[Any, Any, AgentResult]:
        # No timeout, no Timeout object and no frame for one: most runs have none.
        timeout = state.settings.timeout
        return self._turns(state) if timeout is None else self._timed(state, timeout)

    async def _timed(self, state: _RunState, seconds: float) -> AgentResult:
        start = time.perf_counter()
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await self._turns(state)
        except TimeoutError as exc:
            if not deadline.expired():  # raised inside the run (which kept what it spent)
                raise
            error = AgentError(
                f"Agent {self.name!r} did not finish within timeout={seconds:g}s "
                f"({len(state.llm_calls)} model calls made); raise timeout or simplify the task.",
                agent_name=self.name,
                retryable=True,
            )
            state.keep_partial(error, time.perf_counter() - start)
            raise error from exc

    async def _turns(self, state: _RunState) -> AgentResult:
        """Model calls, and the tool calls they ask for, until an answer is accepted."""
        start = time.perf_counter()
        try:
            while True:
                state.check_turn_budget()
                span = events.Span.child()
                if span is None:  # unobserved: no coroutine around the call
                    reply = await llm.complete(state.request())
                    calls = state.calls_of(reply)
                else:
                    reply, calls = await state.observed_call(span)
                state.record(reply, calls)
                if calls:
                    state.add_tool_results(await state.run_tools(calls))
                    continue
                text = reply.text or ""
                answer, checked, feedback = state.parse_answer(text)
                if feedback is None and self.output_validators:  # no coroutine for the rest
                    feedback = await state.validate(checked)
                if feedback is None:
                    break
                state.reject(text, feedback)
        except Exception as exc:  # the timeout's cancellation is not one: _timed keeps that
            state.keep_partial(exc, time.perf_counter() - start)
            raise
        output, summary, parsed = answer
        return state.result(output, summary, parsed, time.perf_counter() - start)

    def _messages(self, task: str, hint: str | None, state: _RunState) -> list[llm.Message]:
        plan = state.plan
        head = plan.head
        if head is None:  # instructions with variables: rendered for each run
            head = render(self.instructions, state.options.variables).strip()
        parts = (head, hint.strip() if hint else "", plan.tail)
        system: llm.Message = {"role": "system", "content": "\n\n".join(filter(None, parts))}
        question: llm.Message = {"role": "user", "content": task}
        if not state.options.history:
            return [system, question]
        earlier = [m for m in state.options.history if m.get("role") != "system"]
        return [system, *earlier, question]

    def _merge_tools(self, extra: Sequence[Callable[..., Any] | Tool]) -> dict[str, Tool]:
        if not extra:
            return self._tool_map
        if all(isinstance(t, Tool) for t in extra):
            merged = {**self._tool_map, **{t.name: t for t in cast("Sequence[Tool]", extra)}}
            if len(merged) == len(self._tool_map) + len(extra):  # no name used twice
                return merged
        merged = dict(self._tool_map)  # convert, and say which name is used twice
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


@dataclass(frozen=True, slots=True)
class _Plan:
    """What every run of an agent under one set of defaults and tools shares.

    Made once and kept on the agent (see ``Agent._plan_for``), so a run does not
    look up the model's capabilities, list the tool specs, build the call's fixed
    arguments or render instructions that have no variables again.
    """

    defaults: AgentDefaults
    extra: tuple[Callable[..., Any] | Tool, ...] | None
    """The extra tools it was made for (a Swarm's context tools), when a tuple: a list
    could change under the same identity."""
    tools: dict[str, Tool]
    settings: _Settings
    native_tools: bool
    call: llm.CallSpec
    head: str | None
    """The instructions, rendered and stripped; None when they have variables to fill."""
    tail: str
    """What follows the context hint in the system prompt: tool protocol, answer format."""

    @classmethod
    def of(
        cls,
        agent: Agent,
        defaults: AgentDefaults,
        extra: Sequence[Callable[..., Any] | Tool],
        tools: dict[str, Tool],
    ) -> _Plan:
        settings = _Settings.of(agent, defaults)
        native_tools = bool(tools) and _native(agent.tool_protocol, agent.model, "tools")
        spec = agent._output  # pyright: ignore[reportPrivateUsage] -- same module
        native_output = (
            spec is not None
            and spec.is_object
            and _native(agent.output_protocol, agent.model, "output")
        )
        call = llm.CallSpec(
            agent_name=agent.name,
            model=agent.model,
            tools=tuple(t.spec for t in tools.values()) if native_tools else (),
            settings=agent.model_settings,
            retry=settings.retry,
            call_timeout=settings.call_timeout,
            fallback_models=agent.fallback_models,
            api_base=agent.api_base,
            api_key=agent.api_key,
            response_format=spec.response_format if native_output and spec else None,
        )
        tail: list[str] = []
        if tools and not native_tools:
            from swarmcore.structured import text_tool_instructions

            tail.append(text_tool_instructions([t.spec for t in tools.values()]))
        if spec is None:
            tail.append(SUMMARY_INSTRUCTION)
        elif native_output:
            tail.append(f"Answer with only a JSON value that matches the {spec.name} schema.")
        else:
            tail.append(spec.instructions)
        head = None if agent.variables else render(agent.instructions, {}).strip()
        return cls(
            defaults,
            extra if isinstance(extra, tuple) else None,
            tools,
            settings,
            native_tools,
            call,
            head,
            "\n\n".join(filter(None, tail)),
        )


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a caller passes to one run, beyond the task: shared with its delegates.

    A Swarm makes one for all the agent runs of a flow run (see ``start_in_flow``).
    """

    defaults: AgentDefaults = field(default_factory=lambda: _DEFAULTS)
    variables: Mapping[str, object] = field(default_factory=dict[str, object])
    approve: Approver | None = None
    history: Sequence[llm.Message] | None = None
    chain: tuple[str, ...] = ()
    """Agent names from the outermost caller down to this run (delegation depth)."""
    spent: list[AgentResult] | None = None
    """Where a delegated run that fails leaves its partial result (what it spent)."""


class _DelegateFailed(Exception):
    """A delegate agent failed: reported to the calling model as a tool error."""


_current_run: ContextVar[_RunState | None] = ContextVar("swarmcore_agent_run", default=None)
"""The agent run whose tools are executing: how a delegate finds its caller."""


def run_context() -> SharedContext:
    """The shared context the running agent sees, from inside one of its tool calls.

    How the Swarm's context tools (one set per process) find the outputs of the
    agents before the caller's step.

    Raises:
        RuntimeError: Called outside an agent run's tool call, or in a run
            given no context.
    """
    state = _current_run.get()
    if state is None or state.context is None:
        raise RuntimeError(
            "A context tool ran outside an agent run given a SharedContext; pass the "
            "context to Agent.run(context=...) or run the agent in a Swarm."
        )
    return state.context


_call_position: ContextVar[int] = ContextVar("swarmcore_tool_call_position", default=0)
"""The running tool call's place in its agent's run, so delegations keep call order."""


class _RunState:
    """Everything one run of one agent accumulates."""

    __slots__ = (
        "agent",
        "chain",
        "context",
        "delegations",
        "llm_calls",
        "messages",
        "native_tools",
        "options",
        "plan",
        "rejected",
        "settings",
        "tool_records",
        "tools",
    )

    def __init__(
        self,
        agent: Agent,
        plan: _Plan,
        options: RunOptions,
        context: SharedContext | None,
    ) -> None:
        self.agent = agent
        self.plan = plan
        self.settings = plan.settings
        self.tools = plan.tools
        self.native_tools = plan.native_tools
        self.options = options
        self.context = context  # what the context tools read (see run_context)
        self.chain = options.chain or (agent.name,)
        self.messages: list[llm.Message]  # set by the agent right after: needs this state
        # Empty tuples until something lands: a run in flight holds no empty lists (with
        # thousands in flight, each object held is one more for the collector to walk).
        self.llm_calls: Sequence[LLMCallRecord] = ()
        self.tool_records: Sequence[ToolCallRecord] = ()
        self.delegations: Sequence[tuple[int, AgentResult]] = ()
        self.rejected = 0

    def check_turn_budget(self) -> None:
        if len(self.llm_calls) >= self.agent.max_turns + self.rejected:
            raise MaxTurnsExceeded(
                f"Agent {self.agent.name!r} made {len(self.llm_calls)} model calls without a "
                f"final answer (max_turns={self.agent.max_turns}); raise max_turns or say in "
                "its instructions when to stop calling tools.",
                agent_name=self.agent.name,
                max_turns=self.agent.max_turns,
            )

    def request(self, stream: bool = False) -> llm.LLMRequest:
        return llm.LLMRequest(self.plan.call, self.messages, stream)

    def calls_of(self, reply: llm.LLMReply) -> Sequence[llm.ToolCall]:
        """The tool calls of a reply to run: native ones, JSON ones (text protocol), or none."""
        if not self.tools:  # direct mode: one call, whatever the reply holds
            return ()
        if self.native_tools:
            return reply.tool_calls
        from swarmcore.structured import parse_text_tool_calls

        found = parse_text_tool_calls(reply.text or "", self.tools)
        first = len(self.tool_records) + 1  # per run, so a replayed run sends the same ids
        return [
            llm.ToolCall(id=f"call_{first + i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(found)
        ]

    def record(self, reply: llm.LLMReply, calls: Sequence[llm.ToolCall]) -> None:
        """Keep the reply and what it cost."""
        if self.native_tools and calls:
            self.messages.append(reply.as_message())
        else:  # an answer, or tool calls written as text: no native tool_calls to keep
            self.messages.append({"role": "assistant", "content": reply.text})
        record = LLMCallRecord(
            model=reply.model or self.agent.model,
            duration_seconds=reply.duration_seconds,
            token_usage=reply.usage,
            cost=reply.cost,
            finish_reason=reply.finish_reason,
            tool_calls=len(calls),
            attempts=reply.attempts,
        )
        self.llm_calls = [*self.llm_calls, record]

    def parse_answer(self, text: str) -> tuple[tuple[str, str | None, Any], Any, str | None]:
        """The answer as (output, summary, parsed), what validators check, and why it fails.

        The last is None when the answer parsed (the output validators have yet to see it).
        """
        spec = self.agent._output  # pyright: ignore[reportPrivateUsage] -- its own agent
        if spec is None:
            output, summary = parse_summary(text)
            return (output, summary, None), output, None
        parsed, feedback = spec.parse(text)
        output = spec.dump(parsed) if feedback is None else text
        return (output, None, parsed), parsed, feedback

    async def validate(self, checked: Any) -> str | None:
        """Feedback from the first output validator that rejects the answer, or None."""
        from swarmcore.structured import run_validators

        return await run_validators(self.agent.output_validators, checked)

    def reject(self, text: str, feedback: str) -> None:
        """Send the answer back for a retry, with why it was rejected.

        Raises:
            OutputValidationError: No retries are left.
        """
        agent = self.agent
        spec = agent._output  # pyright: ignore[reportPrivateUsage] -- its own agent
        if self.rejected >= agent.output_retries:
            raise OutputValidationError(
                f"Agent {agent.name!r}: the answer was rejected {self.rejected + 1} times; "
                f"last reason: {feedback}. Make the instructions clearer about the expected "
                "answer, use a stronger model, or raise output_retries.",
                agent_name=agent.name,
                last_output=text,
                feedback=feedback,
                attempts=self.rejected + 1,
            )
        self.rejected += 1
        fix = "only the corrected JSON value" if spec is not None else "a corrected answer"
        self.messages.append(
            {"role": "user", "content": f"Your answer was rejected: {feedback}. Reply with {fix}."}
        )

    async def observed_call(self, span: events.Span) -> tuple[llm.LLMReply, Sequence[llm.ToolCall]]:
        """One turn's model call and the tool calls to run, reported to the event stream."""
        name, turn = self.agent.name, len(self.llm_calls) + 1
        span.bus.publish(
            events.ModelCallStarted(
                **span.ids,
                agent_name=name,
                model=self.agent.model,
                turn=turn,
                messages=len(self.messages),
                tools=len(self.tools),
            )
        )
        reply: llm.LLMReply | None = None
        calls: Sequence[llm.ToolCall] = ()
        try:
            with span.inside():
                reply = await llm.complete(self.request(stream=span.bus.text_deltas))
                calls = self.calls_of(reply)
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
                    tool_calls=len(calls),
                    error=span.error,
                )
            )
        assert reply is not None  # the try either set it or raised
        return reply, calls

    async def run_tools(self, calls: Sequence[llm.ToolCall]) -> list[ToolCallRecord]:
        """Run one reply's tool calls, at most ``max_parallel_tools`` at once, in call order."""
        first = len(self.tool_records)
        if len(calls) <= self.settings.max_parallel_tools:
            return await asyncio.gather(*(self._tool(c, first + i) for i, c in enumerate(calls)))
        gate = asyncio.Semaphore(self.settings.max_parallel_tools)

        async def gated(call: llm.ToolCall, position: int) -> ToolCallRecord:
            async with gate:
                return await self._tool(call, position)

        return await asyncio.gather(*(gated(c, first + i) for i, c in enumerate(calls)))

    async def _tool(self, call: llm.ToolCall, position: int) -> ToolCallRecord:
        # Each call runs in a task of its own, so neither needs a reset. The run is set
        # here, not around the whole run: litellm's logging tasks copy the context of the
        # model call and would keep the run's tools and messages alive until they finish.
        _current_run.set(self)
        _call_position.set(position)
        run = run_tool_call(
            self.tools,
            call.id,
            call.name,
            call.arguments,
            default_timeout=self.settings.tool_timeout,
            max_result_chars=self.settings.max_tool_result_chars,
            approve=self.options.approve,
            agent_name=self.agent.name,
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
                    arguments=record.arguments if record else call.arguments,
                    server=server,
                    duration_seconds=span.elapsed,
                    result_chars=len(record.result) if record else 0,
                    error=record.error if record else "cancelled",
                    truncated_from=record.truncated_from if record else None,
                    approval=record.approval if record else None,
                )
            )
        assert record is not None  # the try either set it or raised
        return record

    def add_tool_results(self, records: Sequence[ToolCallRecord]) -> None:
        self.tool_records = [*self.tool_records, *records]
        if self.native_tools:
            for r in records:
                self.messages.append(
                    {"role": "tool", "tool_call_id": r.call_id, "content": r.result}
                )
            return
        parts = [f"## {r.tool_name} ({r.call_id})\n{r.result}" for r in records]
        self.messages.append({"role": "user", "content": "Tool results:\n\n" + "\n\n".join(parts)})

    def keep_partial(self, error: BaseException, duration: float) -> None:
        """For a delegated run that failed: leave what it spent where its caller looks."""
        if self.options.spent is not None:
            failed = f"(failed) {type(error).__name__}: {error}"
            self.options.spent.append(self.result(failed, None, None, duration))

    def result(self, output: str, summary: str | None, parsed: Any, duration: float) -> AgentResult:
        # Validated: pydantic-core's check is faster than model_construct's Python loop (~2x).
        # Comprehensions are functions of their own in 3.11: none run for the common empty case.
        delegations = (
            [r for _, r in sorted(self.delegations, key=lambda d: d[0])] if self.delegations else []
        )
        calls = self.llm_calls
        if len(calls) == 1 and not delegations:
            usage = calls[0].token_usage  # frozen: shared, not summed
        else:
            usage = sum_usage([c.token_usage for c in calls] + [d.token_usage for d in delegations])
        return AgentResult(
            agent_name=self.agent.name,
            output=output,
            summary=summary or output,
            model=calls[-1].model if calls else self.agent.model,
            duration_seconds=duration,
            token_usage=usage,
            tool_calls=list(self.tool_records),
            llm_calls=list(calls),
            messages=self.messages,
            attempts=1,
            parsed=parsed,
            delegations=delegations,
        )


def start_in_flow(
    agent: Agent,
    task: str,
    context_hint: str | None,
    extra_tools: Sequence[Tool],
    options: RunOptions,
    context: SharedContext,
) -> Coroutine[Any, Any, AgentResult]:
    """Run ``agent`` as one step of a Swarm run: :meth:`Agent.run` without its checks.

    The Swarm checked the task, variables and approvals once for all its agents.
    ``context`` is what this step sees, read by the context tools in ``extra_tools``.
    """
    return agent._start(task, context_hint, extra_tools, options, context)  # pyright: ignore[reportPrivateUsage] -- same module


async def _in_own_scope(run: Coroutine[Any, Any, AgentResult]) -> AgentResult:
    """Run an agent alone (not in a Swarm): its MCP connections close when it ends."""
    from swarmcore import mcp

    scope = mcp.ConnectionScope()
    token = mcp.enter_scope(scope)
    try:
        return await run
    finally:
        await scope.close()
        mcp.exit_scope(token)


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

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(text: str) -> frozenset[str]:
    """The ``{name}`` placeholders in ``text`` (``{{`` and ``}}`` are literal braces)."""
    return frozenset(m.group(1) for m in _PLACEHOLDER.finditer(text) if m.group(1))


def render(text: str, variables: Mapping[str, object]) -> str:
    """``text`` with each ``{name}`` replaced by its variable and ``{{``/``}}`` made single.

    Any other brace (a JSON example, say) is left as it is.
    """
    if "{" not in text and "}" not in text:
        return text

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        return str(variables[name])

    return _PLACEHOLDER.sub(fill, text)


def normalize_variables(variables: Mapping[str, object] | None) -> dict[str, object]:
    """Variables as text (how they are rendered and stored), names checked.

    Raises:
        UserError: Not a mapping, or a name that is not an identifier.
    """
    if variables is None:
        return {}
    if not isinstance(variables, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(f"variables must be a dict of name to value, got {variables!r}.")
    for key in variables:
        if not isinstance(key, str) or not key.isidentifier():  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"Variable names must be identifiers, got {key!r}.")
    return {k: str(v) for k, v in variables.items()}


def reachable(agents: Iterable[Agent]) -> list[Agent]:
    """``agents`` and every agent they can call through ``as_tool``, each once."""
    listed = list(agents)
    if len(listed) == 1 and listed[0]._reach is not None:  # pyright: ignore[reportPrivateUsage]
        return list(listed[0]._reach)  # pyright: ignore[reportPrivateUsage]
    found: dict[int, Agent] = {}
    pending = list(listed)
    while pending:
        agent = pending.pop(0)
        if id(agent) in found:
            continue
        found[id(agent)] = agent
        for tool in agent._tool_map.values():  # pyright: ignore[reportPrivateUsage] -- same module
            if isinstance(tool.delegate, Agent):
                pending.append(tool.delegate)
    if len(listed) == 1:  # an agent's tools never change: walk once
        object.__setattr__(listed[0], "_reach", tuple(found.values()))
    return list(found.values())


def check_variables(agents: Iterable[Agent], variables: Mapping[str, object]) -> None:
    """Fail before any model call when an agent's instructions use a variable not given.

    Raises:
        UserError: Naming every missing variable and the agents that use it.
    """
    missing: dict[str, list[str]] = {}
    for agent in reachable(agents):
        for name in sorted(agent.variables - variables.keys()):
            missing.setdefault(name, []).append(agent.name)
    if not missing:
        return
    listed = "; ".join(
        f"{{{name}}} (used by {', '.join(repr(a) for a in users)})"
        for name, users in missing.items()
    )
    example = ", ".join(f"{name!r}: ..." for name in missing)
    raise UserError(
        f"Missing prompt variables: {listed}. Pass them as variables={{{example}}}, or write "
        "{{ and }} for literal braces in instructions."
    )


def check_approvals(agents: Iterable[Agent]) -> None:
    """Fail before any model call when a tool needs approval and no callback was given.

    Raises:
        UserError: Naming the first such tool.
    """
    found = _needing_approval(agents)
    if found is not None:
        agent, tool = found
        raise UserError(
            f"Tool {tool.name!r} of agent {agent.name!r} requires approval, and no "
            "approval callback was given; pass approve=callback to Swarm(...) or "
            "agent.run(...)."
        )


def needs_approval(agents: Iterable[Agent]) -> bool:
    """Whether any of ``agents``, or an agent they delegate to, has a tool that needs approval."""
    return _needing_approval(agents) is not None


def _needing_approval(agents: Iterable[Agent]) -> tuple[Agent, Tool] | None:
    for agent in reachable(agents):
        for tool in agent._tool_map.values():  # pyright: ignore[reportPrivateUsage] -- same module
            if tool.requires_approval:
                return agent, tool
    return None


def _native(protocol: Protocol, model: str, feature: Literal["tools", "output"]) -> bool:
    if protocol != "auto":
        return protocol == "native"
    if feature == "tools":  # unknown models are assumed to call tools, as most now do
        return llm.supports(model, "function_calling") is not False
    return llm.supports(model, "response_schema") is True


def _copy_history(
    owner: str, history: Sequence[Mapping[str, Any]] | None
) -> list[llm.Message] | None:
    if history is None:
        return None
    if (
        not isinstance(history, Sequence)  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        or isinstance(history, (str, bytes))
        or not all(isinstance(m, Mapping) and "role" in m for m in history)
    ):
        raise UserError(
            f"Agent {owner!r}: history must be a list of messages (dicts with a 'role'), "
            "such as an earlier result's messages."
        )
    return [copy.deepcopy(dict(m)) for m in history]


def _first_sentence(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    cut = first.find(". ")
    return (first[: cut + 1] if cut > 0 else first)[:200]


def run_sync(start: Callable[[], Any]) -> Any:
    """Run the coroutine ``start()`` makes to completion from synchronous code.

    With no event loop running, on a new one here; inside a running loop (a
    notebook cell, an async framework), on a new loop in a worker thread, so
    the caller's loop is never re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(start())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="swarmcore-run-sync") as pool:
        return pool.submit(lambda: asyncio.run(start())).result()
