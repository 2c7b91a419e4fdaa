"""Agent: a frozen definition of an LLM worker (validation, ``clone``, ``as_tool``).

Running one is the business of :mod:`swarmcore._loop` (the tool-calling loop)
and :mod:`swarmcore._prompt` (the system prompt); an Agent holds no run state,
so one Agent can run in any number of flows at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from swarmcore import _loop
from swarmcore import _prompt as prompt
from swarmcore._checks import DEFAULT, Default, check_number, no_limit
from swarmcore._deprecation import warn_deprecated
from swarmcore._flow import FlowNode
from swarmcore._policies import RetryPolicy
from swarmcore._prompt import SUMMARY_INSTRUCTION, normalize_variables, placeholders
from swarmcore._removed import AGENT_REMOVED, explain_removed
from swarmcore._settings import LIMIT_NAMES, AgentDefaults, check_settings
from swarmcore._tools import Approver, Tool, Toolset, function_tool, to_tools, validate_name
from swarmcore.context import SharedContext
from swarmcore.errors import AgentError, DelegationDepthExceeded, UserError
from swarmcore.llm._types import ApiName, BackendName
from swarmcore.llm.choice import api_named, backend_named, check_api_settings
from swarmcore.results import AgentResult
from swarmcore.scope import current_call

if TYPE_CHECKING:
    from typing import Self

    from swarmcore._structured import OutputSpec, OutputValidator

__all__ = [
    "DEFAULT_MODEL",
    "SUMMARY_INSTRUCTION",
    "Agent",
    "AgentDefaults",
    "check_approvals",
    "check_variables",
    "normalize_variables",
    "reachable",
    "run_sync",
]

Protocol = Literal["auto", "native", "text"]
"""How an agent talks to its model about tools or structured output: ``auto`` asks
LiteLLM's model data, ``native`` uses the provider's feature, ``text`` uses
instructions plus JSON extraction (for models without the feature)."""

DEFAULT_MODEL = "openai/gpt-4o-mini"
"""The model an Agent uses when none is given."""
DEFAULT_MAX_TURNS = 10
"""The most model calls in one agent run when ``max_turns`` is not given."""


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
    """Unique within a flow; keys the shared context and must be a valid tool name (so
    it holds no ``#``, which marks a loop's runs: ``writer#2``)."""
    instructions: str
    """The system prompt."""
    model: str = DEFAULT_MODEL
    """Any LiteLLM model string, e.g. ``openai/gpt-4o-mini`` or ``anthropic/claude-sonnet-4-5``."""
    tools: Sequence[Callable[..., Any] | Tool | Toolset] = ()
    """Plain functions (sync or async), Tools, or toolsets such as MCP servers
    (``MCPServer.stdio(...)``), whose tools are fetched when the agent runs; None is none."""
    _: KW_ONLY
    fallback_models: Sequence[str] = ()
    """Models tried in order when transient failures outlast the retry policy on ``model``;
    None is none."""
    max_turns: int = DEFAULT_MAX_TURNS
    """Most model calls in one run before ``MaxTurnsExceeded`` (answers sent back by
    ``output_retries`` come on top); None means the default, 10."""
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
    call_timeout: float | Default | None = DEFAULT
    """Seconds for one model call attempt; None for no limit. Unset (``DEFAULT``): the
    Swarm's default (120 s)."""
    timeout: float | Default | None = DEFAULT
    """Seconds for the whole run (every turn and tool); None for no limit. Unset
    (``DEFAULT``): the Swarm's default (no limit)."""
    tool_timeout: float | Default | None = DEFAULT
    """Seconds for one tool call (a Tool's own ``timeout`` wins); None for no limit.
    Unset (``DEFAULT``): the Swarm's default (120 s)."""
    max_tool_result_chars: int | Default | None = DEFAULT
    """Tool results longer than this are cut, with a marker; None keeps them whole.
    Unset (``DEFAULT``): the Swarm's default (50,000)."""
    max_parallel_tools: int | None = None
    """The most tool calls of one reply run at once. None: the Swarm's default (8)."""
    model_settings: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Extra arguments for the model call: ``temperature``, ``max_tokens``, ``seed``...
    Copied when the agent is built; change them with :meth:`clone`, not in place (its
    runs keep the call arguments they built from them). None means none, the default."""
    backend: BackendName | None = None
    """Which backend makes this agent's model calls: ``"native"`` (the OpenAI protocol,
    spoken by swarmcore, for ``openai/...`` models and any OpenAI-compatible server),
    ``"litellm"`` (every provider), or ``"auto"`` (native for OpenAI-protocol models,
    else LiteLLM). None: the Swarm's default (``AgentDefaults(backend=...)``), else
    ``$SWARMCORE_MODEL_BACKEND``, else auto."""
    api: ApiName | None = None
    """Which OpenAI API the native backend speaks for this agent: ``"chat_completions"``
    or ``"responses"`` (OpenAI's Responses API: a reasoning model's encrypted reasoning
    is handed back on each turn of a run, and reasoning models take tools with
    ``reasoning_effort``). None: the Swarm's default (``AgentDefaults(api=...)``), else
    chosen per model: the Responses API for an OpenAI reasoning model offered tools,
    chat completions for every other. The LiteLLM backend speaks chat completions only."""
    api_base: str | None = None
    """The provider endpoint, for OpenAI-compatible servers."""
    api_key: str | None = field(default=None, repr=False)
    """The provider key; by default LiteLLM reads the provider's environment variable."""
    _tool_map: dict[str, Tool] = field(init=False, repr=False)
    _toolsets: tuple[Toolset, ...] = field(init=False, repr=False)
    _output: OutputSpec | None = field(init=False, repr=False)
    _variables: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        validate_name(self.name, "Agent")
        if not isinstance(self.instructions, str):
            raise UserError(f"Agent {self.name!r}: instructions must be a string.")
        if not isinstance(self.model, str) or not self.model.strip():
            raise UserError(
                f"Agent {self.name!r}: model must be a LiteLLM model string such as "
                f"{DEFAULT_MODEL!r}, got {self.model!r}.{_model_name_hint(self.model)}"
            )
        owner = f"Agent {self.name!r}"
        # None means the default for these four: a spelling many users carry over.
        if cast(object, self.max_turns) is None:
            object.__setattr__(self, "max_turns", DEFAULT_MAX_TURNS)
        if cast(object, self.tools) is None:
            object.__setattr__(self, "tools", ())
        if cast(object, self.model_settings) is None:
            object.__setattr__(self, "model_settings", {})
        if cast(object, self.fallback_models) is None:
            object.__setattr__(self, "fallback_models", ())
        if not isinstance(cast(object, self.model_settings), Mapping):
            raise UserError(
                f"Agent {self.name!r}: model_settings must be a dict of call arguments such "
                f"as {{'temperature': 0.2}}, or None for none; got {self.model_settings!r}."
            )
        check_number(owner, "max_turns", self.max_turns, whole=True)
        default = "the Swarm's default"
        check_settings(owner, self)
        for name in LIMIT_NAMES:
            object.__setattr__(self, name, no_limit(owner, name, getattr(self, name)))
        check_number(owner, "max_parallel_tools", self.max_parallel_tools, whole=True, none=default)
        if self.retry is not None:
            object.__setattr__(self, "retry", RetryPolicy.of(self.retry))
        if (
            isinstance(self.fallback_models, str)
            or not isinstance(cast(object, self.fallback_models), Iterable)
            or not all(isinstance(m, str) and m.strip() for m in self.fallback_models)
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
        self._check_backend(owner)
        object.__setattr__(self, "_tool_map", {t.name: t for t in tools})
        self._check_output(owner)
        object.__setattr__(self, "_variables", placeholders(self.instructions))

    def _check_backend(self, owner: str) -> None:
        backend = None if self.backend is None else backend_named(self.backend, f"{owner}: backend")
        settings = cast("dict[str, Any]", self.model_settings)
        if "backend" in settings:  # the old spelling: a key among the provider's arguments
            given = settings.pop("backend")
            shown = "native" if given == "openai" else given  # the name it has now
            warn_deprecated(
                f"{owner}: model_settings={{'backend': {given!r}}} is deprecated; pass "
                f"Agent(..., backend={shown!r}) (or AgentDefaults(backend=...) for every agent)."
            )
            old = backend_named(given, f"{owner}: model_settings['backend']")
            if backend is not None and backend != old:
                raise UserError(
                    f"{owner}: backend={backend!r} and model_settings['backend']={given!r} "
                    "disagree; keep backend= alone."
                )
            backend = old
        object.__setattr__(self, "backend", backend)
        if self.api is not None:
            object.__setattr__(self, "api", api_named(self.api, f"{owner}: api", backend))
            models = (self.model, *self.fallback_models)
            check_api_settings(self.api, models, self.model_settings, owner)

    def _check_output(self, owner: str) -> None:
        for setting in ("output_protocol", "tool_protocol"):
            if getattr(self, setting) not in ("auto", "native", "text"):
                raise UserError(
                    f"{owner}: {setting} must be 'auto', 'native' or 'text', "
                    f"got {getattr(self, setting)!r}."
                )
        check_number(owner, "output_retries", self.output_retries, whole=True, zero=True)
        validators = self.output_validators
        if callable(validators) or not all(callable(v) for v in validators):
            raise UserError(
                f"{owner}: output_validators must be a list of functions, got {validators!r}."
            )
        object.__setattr__(self, "output_validators", tuple(validators))
        spec = None
        if self.output_type is not None:
            from swarmcore._structured import OutputSpec  # only agents with an output_type

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

    @property
    def tool_map(self) -> Mapping[str, Tool]:
        """The agent's own Python tools by name (toolsets' tools come at run time)."""
        return self._tool_map

    @property
    def output_spec(self) -> OutputSpec | None:
        """How answers are parsed and checked, when the agent has an ``output_type``."""
        return self._output

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
        check_number(f"Agent {self.name!r}", "max_depth", max_depth, whole=True)
        agent = self

        async def delegate(task: str) -> str:
            """Delegate a task.

            Args:
                task: The whole task, with everything the agent needs to know: it sees
                    nothing else of this conversation.
            """
            return await _delegate(agent, task, max_depth)

        tool = function_tool(
            delegate,
            name=name or self.name,
            description=description
            or f"Ask the agent {self.name!r} to do a task; returns its answer. "
            + _first_sentence(self.instructions),
        )
        return replace(tool, delegate=self)

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
        if approve is None:
            check_approvals([self])
        options = _loop.RunOptions(
            defaults=defaults or _loop.DEFAULTS,
            variables=normalize_variables(variables),
            approve=approve,
            history=prompt.copy_history(self.name, history),
            chain=(self.name,),
        )
        return await _loop.run_agent(
            self, task, options, hint=context_hint, extra_tools=extra_tools
        )

    def run_sync(self, task: str, **kwargs: Any) -> AgentResult:
        """:meth:`run` for scripts and notebooks: blocks until the result is ready.

        Inside a running event loop (a notebook cell) the run goes to a fresh
        loop on a worker thread. Takes the same arguments as :meth:`run`.
        """
        return run_sync(lambda: self.run(task, **kwargs))


# A 0.3.x keyword (max_retries=) fails naming what to write now, not just "unexpected".
setattr(Agent, "__init__", explain_removed("Agent", AGENT_REMOVED)(Agent.__init__))  # noqa: B010


class _DelegateFailed(Exception):
    """A delegate agent failed: reported to the calling model as a tool error."""


async def _delegate(agent: Agent, task: str, max_depth: int) -> str:
    """Run ``agent`` on ``task`` for the agent run whose tool is calling it.

    Raises:
        DelegationDepthExceeded: The chain of delegations is deeper than ``max_depth``.
        DelegateFailed: The delegate failed; its caller's model is told.
    """
    running = current_call()  # the tool call this delegation is, and the run that made it
    caller = running.caller if running else None
    chain = (*(caller.chain if caller else ()), agent.name)
    if len(chain) - 1 > max_depth:
        raise DelegationDepthExceeded(
            f"Delegation too deep: {' -> '.join(chain)} is {len(chain) - 1} levels, past "
            f"max_depth={max_depth} of {agent.name!r}.as_tool(); stop agents calling each other "
            "in a loop, or raise max_depth.",
            agent_name=caller.agent_name if caller else agent.name,
            chain=list(chain),
            max_depth=max_depth,
        )
    spent: list[AgentResult] = []  # a failed run's partial result lands here
    options = _loop.RunOptions(chain=chain, spent=spent)
    if caller is not None:
        options = replace(caller.options, chain=chain, history=None, spent=spent)
    position = running.position if running else 0
    try:
        # The caller's scope: the delegate spends its budget, and its events nest in the call.
        scope = running.scope if running else None
        result = await _loop.run_agent(agent, task, options, scope=scope)
    except (DelegationDepthExceeded, UserError):
        raise
    except AgentError as exc:  # the caller's model is told, and can try something else
        if caller is not None and spent:  # what it spent before failing still counts
            caller.delegated(position, spent[0])
        raise _DelegateFailed(f"agent {agent.name!r} failed: {exc}") from exc
    if caller is not None:
        caller.delegated(position, result)
    return result.output


def reachable(agents: Iterable[Agent]) -> list[Agent]:
    """``agents`` and every agent they can call through ``as_tool``, each once."""
    found: dict[int, Agent] = {}  # by identity: two equal agents are still two to check
    pending = list(agents)
    while pending:
        agent = pending.pop(0)
        if id(agent) in found:
            continue
        found[id(agent)] = agent
        pending += [t.delegate for t in agent.tool_map.values() if isinstance(t.delegate, Agent)]
    return list(found.values())


def check_defaults(agents: Iterable[Agent], defaults: AgentDefaults) -> None:
    """Fail at the Swarm's construction where its defaults do not fit an agent that takes them.

    Raises:
        UserError: The defaults choose the Responses API, and an agent (or a
            delegate) that leaves ``api`` unset holds a setting that API refuses.
    """
    if defaults.api is None:
        return
    for agent in reachable(agents):
        if agent.api is None:
            models = (agent.model, *agent.fallback_models)
            where = f"Agent {agent.name!r} (its api from the Swarm's AgentDefaults)"
            check_api_settings(defaults.api, models, agent.model_settings, where)


def check_variables(agents: Iterable[Agent], variables: Mapping[str, object]) -> None:
    """Fail before any model call when an agent (or a delegate) lacks a variable.

    Raises:
        UserError: Naming every missing variable and the agents that use it.
    """
    prompt.check_variables(reachable(agents), variables)


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
        for tool in agent.tool_map.values():
            if tool.requires_approval:
                return agent, tool
    return None


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
        running = False
    else:
        running = True
    if not running:  # not inside the except: every error of the run would chain to its RuntimeError
        return asyncio.run(start())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="swarmcore-run-sync") as pool:
        return pool.submit(lambda: asyncio.run(start())).result()


def _model_name_hint(model: object) -> str:
    """For a test model object (``ScriptedModel``...) passed as ``model=``: pass its name."""
    name = getattr(model, "model", None)
    if isinstance(name, str) and name:
        kind = type(model).__name__
        return (
            f" Pass the {kind}'s name, not the object: model=<your {kind}>.model (here {name!r})."
        )
    return ""
