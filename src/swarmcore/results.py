"""Result records: what a run gives back. Built once, never patched afterwards."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, cast

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, computed_field

from swarmcore._table import text_table

__all__ = [
    "AgentFailure",
    "AgentResult",
    "Decision",
    "ElicitationRecord",
    "LLMCallRecord",
    "SwarmResult",
    "TokenUsage",
    "ToolCallRecord",
]

# defer_build: validators are built on first use, not at import (~9 ms a model).
_FROZEN = ConfigDict(frozen=True, defer_build=True)


class TokenUsage(BaseModel):
    """Tokens spent, as the provider reported them."""

    model_config = _FROZEN

    # Never negative: a negative count would hand a run's token budget back.
    prompt_tokens: int = Field(default=0, ge=0)
    """Tokens sent to the model (the prompt, tools and history)."""
    completion_tokens: int = Field(default=0, ge=0)
    """Tokens the model generated."""
    cached_tokens: int = Field(default=0, ge=0)
    """Of ``prompt_tokens``, how many the provider served from its prompt cache
    (OpenAI's ``usage.prompt_tokens_details.cached_tokens``)."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Of ``completion_tokens``, how many were reasoning
    (OpenAI's ``usage.completion_tokens_details.reasoning_tokens``)."""

    @computed_field
    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens (cached and reasoning tokens are parts of these)."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


def sum_usage(usages: list[TokenUsage]) -> TokenUsage:
    """Add up token usage."""
    if len(usages) == 1:  # frozen: shared, not copied (the common one-call agent run)
        return usages[0]
    return TokenUsage(
        prompt_tokens=sum(u.prompt_tokens for u in usages),
        completion_tokens=sum(u.completion_tokens for u in usages),
        cached_tokens=sum(u.cached_tokens for u in usages),
        reasoning_tokens=sum(u.reasoning_tokens for u in usages),
    )


def sum_cost(costs: list[float | None]) -> float | None:
    """Add up costs; None when any part is unpriced, because a partial sum would understate."""
    if not costs or any(c is None for c in costs):
        return None
    return sum(c for c in costs if c is not None)


class ElicitationRecord(BaseModel):
    """A question an MCP server asked while its tool ran, and who answered what."""

    model_config = _FROZEN

    server: str
    """The MCP server that asked."""
    mode: Literal["form", "url"]
    """``form`` (values fitting a schema) or ``url`` (a page to open)."""
    message: str
    """What the server asked."""
    url: str | None = None
    """For a URL request: the page."""
    fields: list[str] = Field(default_factory=list[str])
    """For a form: the names of the values it asked for (its schema's properties)."""
    action: Literal["accept", "decline", "cancel"]
    """What went back to the server."""
    answered_by: Literal["elicit", "approve", "decide", "nobody"]
    """``elicit``: the server's ``elicit`` callback; ``approve``: the run's approval
    callback; ``decide``: a person, through a durable engine (``swarm.decide``,
    ``swarmcore runs approve``); ``nobody``: no one could be asked, so swarmcore declined."""
    content: str | None = None
    """For an accepted form: the values sent, as JSON (redacted like every tool record)."""
    reason: str = ""
    """Why it was declined or cancelled, as the server was told."""


class ToolCallRecord(BaseModel):
    """One tool call the model asked for, and what came back."""

    model_config = _FROZEN

    call_id: str
    """The provider's ``tool_call_id``."""
    tool_name: str
    """The tool the model named (possibly one that does not exist)."""
    arguments: str
    """The raw JSON arguments the model sent."""
    result: str
    """The text sent back to the model (the error text when ``error`` is set)."""
    error: str | None = None
    """Why the call failed (unknown tool, bad arguments, the tool raised or timed out), or None."""
    truncated_from: int | None = None
    """The result's full length in characters when it was cut to the limit; None if whole."""
    server: str | None = None
    """The MCP server that ran the tool; None for a Python tool."""
    approval: str | None = None
    """For a tool that requires approval: ``allowed``, ``denied`` or ``edited`` (then
    ``arguments`` are the edited ones); None when no one was asked."""
    duration_seconds: float = 0.0
    """Wall time of the call."""
    started_at: float | None = None
    """When the call started, in ``time.time()`` seconds; None in records made before
    swarmcore kept start times."""
    elicitations: list[ElicitationRecord] = Field(default_factory=list[ElicitationRecord])
    """The questions an MCP server asked while the call ran (MCP elicitation), in order."""

    @property
    def parsed_arguments(self) -> dict[str, Any]:
        """``arguments`` as a dict: ``call.parsed_arguments["query"]``.

        A new dict on each read (``arguments`` stays the record of what was
        sent); empty text is ``{}``, as when the tool was called. Not stored:
        a record's JSON holds ``arguments`` only.

        Raises:
            ValueError: The model's arguments are not a JSON object, so the tool
                never ran (``error`` says so); ``arguments`` holds the raw text.
        """
        try:
            value = pydantic_core.from_json(self.arguments.strip() or "{}")
        except ValueError as exc:
            raise ValueError(
                f"Tool call {self.call_id} to {self.tool_name!r}: the model's arguments are "
                f"not valid JSON ({exc}), so the tool did not run. Check the record's "
                "error first; arguments holds the raw text."
            ) from exc
        if not isinstance(value, dict):
            raise ValueError(
                f"Tool call {self.call_id} to {self.tool_name!r}: the model's arguments are "
                "JSON but not an object, so the tool did not run. Check the record's error "
                "first; arguments holds the raw text."
            )
        return cast("dict[str, Any]", value)


class LLMCallRecord(BaseModel):
    """One model call made by an agent."""

    model_config = _FROZEN

    model: str
    """The LiteLLM model string that answered (a fallback model, if the first failed)."""
    duration_seconds: float
    """Wall time of the call, retries and fallbacks included."""
    token_usage: TokenUsage
    """Tokens of this call."""
    cost: float | None
    """Price in USD from LiteLLM's price map; None when the model is unpriced."""
    finish_reason: str | None
    """Why the model stopped (``stop``, ``tool_calls``, ``length``...)."""
    tool_calls: int = 0
    """How many tool calls the reply asked for."""
    attempts: int = 1
    """Attempts made across every model tried (1 when the first attempt answered)."""
    started_at: float | None = None
    """When the call's first attempt started, in ``time.time()`` seconds; None in
    records made before swarmcore kept start times."""


class AgentResult(BaseModel):
    """What one agent produced in one run."""

    model_config = _FROZEN

    agent_name: str
    """The agent's name."""
    output: str
    """The final text, with its ``<summary>`` block (on lines of its own, anywhere) taken out."""
    summary: str
    """The one-line summary; the full output when the model gave none."""
    model: str
    """The LiteLLM model string that gave the final answer (a fallback model, if used)."""
    duration_seconds: float
    """Wall time of the agent's run (of its last attempt, when the step was retried)."""
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    """Tokens summed over every model call of the run."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list[ToolCallRecord])
    """Every tool call, in the order the model asked for them."""
    llm_calls: list[LLMCallRecord] = Field(default_factory=list[LLMCallRecord])
    """Every model call, in order."""
    messages: list[dict[str, Any]] = Field(default_factory=list[dict[str, Any]])
    """The whole conversation in OpenAI message format, final answer included."""
    attempts: int = 1
    """Runs of the agent this result took (more than 1 after step-level retries)."""
    rejections: int = 0
    """Answers sent back to the model for another try (its last run): rejected by
    the ``output_type`` or an output validator, or an unreadable tool-call block."""
    parsed: Any = None
    """For an agent with an ``output_type``: the validated object (``output`` holds it
    as JSON text, which is what later agents read). None otherwise."""
    delegations: list[AgentResult] = Field(default_factory=list["AgentResult"])
    """Results of agents this one called as tools (``agent.as_tool()``), in call order;
    their tokens and cost are included in this result's. A delegate that failed is
    listed too, with what it spent and an output starting ``(failed)``."""
    started_at: float | None = None
    """When the agent's run (its last attempt) started, in ``time.time()`` seconds;
    None in records made before swarmcore kept start times."""

    @computed_field
    @property
    def cost(self) -> float | None:
        """Total price in USD, delegations included; None when any call was unpriced."""
        return sum_cost([c.cost for c in self.llm_calls] + [d.cost for d in self.delegations])


class AgentFailure(BaseModel):
    """An agent that did not finish: it failed, was cancelled, or was never run."""

    model_config = _FROZEN

    agent_name: str
    """The agent's name."""
    error_type: str
    """The exception's class name (``ModelError``, ``MaxTurnsExceeded``...); ``Cancelled``
    for a member stopped once its group's quorum was reached; ``Skipped`` for an agent
    never run because an earlier agent of its branch failed."""
    message: str
    """What went wrong, as the error said it."""
    retryable: bool = False
    """Whether the failure was transient."""
    cancelled: bool = False
    """True when the agent did not fail itself: it was cancelled or never run."""
    attempts: int = 1
    """Runs of the agent made before giving up."""
    model: str = ""
    """The LiteLLM model string the agent ran on; empty when it never ran."""
    duration_seconds: float | None = None
    """Wall time of the agent's last attempt, until it failed; None when it never ran."""
    started_at: float | None = None
    """When the agent's last attempt started, in ``time.time()`` seconds; None when it never
    ran, and in records made before swarmcore kept start times."""


class Decision(BaseModel):
    """A choice a run made at a control step: a route's branch, a loop's end, a plan."""

    model_config = _FROZEN

    kind: Literal["route", "loop", "plan"]
    step: str
    """The control step's name."""
    value: str
    """The branch chosen, the number of iterations run, or the planned flow's expression."""
    by: str = ""
    """Who decided: a route's ``predicate`` or router agent; a loop's judge agent,
    ``until`` (its function) or ``max_iterations``; a plan's planner agent."""
    detail: str = ""
    """The router's or planner's reason, or the judge's last feedback."""
    attempts: int = 1
    """For a plan: answers the planner gave (errors go back to it)."""


class SwarmResult(BaseModel):
    """What a Swarm run produced. On failure, ``error.partial`` is one of these."""

    model_config = _FROZEN

    output: str
    """The final step's output; a final parallel group's outputs joined under
    ``## name`` headers in flow order."""
    context: dict[str, str]
    """Agent name to full output, in flow order."""
    history: list[AgentResult]
    """Every agent's result, in flow order (not completion order)."""
    duration_seconds: float = 0.0
    """Wall time of the run."""
    failures: list[AgentFailure] = Field(default_factory=list[AgentFailure])
    """Agents that did not finish, in flow order: failed members of a best-effort or
    quorum group, members cancelled once a quorum was reached, and on an error's
    ``partial`` result, the agent whose failure ended the run."""
    run_id: str = ""
    """The run's id (also on every event of the run)."""
    decisions: list[Decision] = Field(default_factory=list[Decision])
    """Choices made at routes, loops and plans, in the order they were made."""

    @computed_field
    @property
    def token_usage(self) -> TokenUsage:
        """Tokens summed over every agent."""
        return sum_usage([r.token_usage for r in self.history])

    @computed_field
    @property
    def cost(self) -> float | None:
        """Total price in USD; None when any call was unpriced."""
        return sum_cost([r.cost for r in self.history])

    def usage_table(self) -> str:
        """Tokens, cost and time per agent and in total, as a plain-text table.

        Cost is summed from each model call's own price, so agents that share a
        model are each charged for their own calls. Agents called as tools are
        listed under their caller (``> name``), whose figures include theirs.
        ``unpriced`` marks an agent (and the total) with any call LiteLLM could
        not price. ``status`` is ``done``, ``failed (ErrorType)``,
        ``cancelled`` or ``skipped``; a failed agent's row keeps its model and
        time. The total's time is the run's wall time, not the agents' sum
        (parallel agents overlap). ``cached`` (of the prompt tokens) and
        ``reasoning`` (of the completion tokens) are columns only when some
        call reported them.
        """
        usage = self.token_usage
        shown = (True, usage.cached_tokens > 0, True, usage.reasoning_tokens > 0, True)
        names = ("prompt", "cached", "completion", "reasoning", "total")
        columns = [name for name, on in zip(names, shown, strict=True) if on]

        def counts(u: TokenUsage) -> tuple[str, ...]:
            values = (
                u.prompt_tokens,
                u.cached_tokens,
                u.completion_tokens,
                u.reasoning_tokens,
                u.total_tokens,
            )
            return tuple(f"{n:,}" for n, on in zip(values, shown, strict=True) if on)

        header = ("agent", "model", "calls", *columns, "cost", "time", "status")
        rows: list[tuple[str, ...]] = []

        def add(r: AgentResult, indent: str) -> None:
            rows.append(
                (
                    indent + r.agent_name,
                    r.model,
                    str(_calls(r)),
                    *counts(r.token_usage),
                    format_cost(r.cost),
                    f"{r.duration_seconds:.1f}s",
                    "failed" if indent and r.output.startswith("(failed)") else "done",
                )
            )
            for d in r.delegations:  # included in r's figures; shown for who spent what
                add(d, indent + "  > ")

        for r in self.history:
            add(r, "")
        rows.extend(_failure_row(f, len(columns)) for f in self.failures)
        rows.append(
            (
                "total",
                "",
                str(sum(_calls(r) for r in self.history)),
                *counts(usage),
                format_cost(self.cost),
                f"{self.duration_seconds:.1f}s",
                "",
            )
        )
        right = set(range(2, 5 + len(columns)))  # calls, the token counts, cost and time
        return text_table(header, rows, right=right, rule_before_last=True)

    def __getitem__(self, agent_name: str) -> AgentResult:
        """The result of the agent named ``agent_name``; for a loop's agent, its last iteration.

        ``result["writer"]`` is the newest ``writer#k`` when ``writer`` ran in a
        loop; ``result["writer#1"]`` names one iteration.

        Raises:
            KeyError: No agent of that name finished in this run.
        """
        for r in self.history:
            if r.agent_name == agent_name:
                return r
        iterations = [r for r in self.history if AgentKey.parse(r.agent_name).base == agent_name]
        if iterations:
            return iterations[-1]
        names = ", ".join(r.agent_name for r in self.history) or "none"
        raise KeyError(f"No result for agent {agent_name!r}; finished agents: {names}.")


def failure_status(failure: AgentFailure) -> str:
    """How a table shows ``failure``: ``failed (ModelError)``, ``cancelled`` or ``skipped``."""
    return failure.error_type.lower() if failure.cancelled else f"failed ({failure.error_type})"


def _failure_row(failure: AgentFailure, token_columns: int) -> tuple[str, ...]:
    """A usage-table row for an agent that did not finish: its model and time, if it ran."""
    ran = failure.duration_seconds
    return (
        failure.agent_name,
        failure.model or "-",
        "-",  # what a failed attempt spent is not recorded
        *("-" * token_columns),
        "-",
        "-" if ran is None else f"{ran:.1f}s",
        failure_status(failure),
    )


def _calls(result: AgentResult) -> int:
    return len(result.llm_calls) + sum(_calls(d) for d in result.delegations)


def format_cost(cost: float | None) -> str:
    """USD for people: four decimals, six below a cent; ``unpriced`` for None."""
    if cost is None:
        return "unpriced"
    return f"${cost:.4f}" if cost >= 0.01 or cost == 0 else f"${cost:.6f}"


_ITERATION = re.compile(r"(.+)#([1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class AgentKey:
    """The key an agent's work is kept under: its name, or ``name#k`` for a loop's k-th run.

    Results, failures, the shared context, events and stored runs all carry the
    key as text; this is the one place that writes and reads that text, and
    ``str(AgentKey.parse(text)) == text`` for every string, so records written
    before read the same. Agent names cannot contain ``#`` (they are
    identifiers: ``Agent`` refuses any other name), so the form is unambiguous.
    """

    base: str
    """The agent's name in the flow (``writer`` for ``writer#2``)."""
    iteration: int | None = None
    """Which run of a loop's body this is, from 1; None outside a loop."""

    def __post_init__(self) -> None:
        if self.iteration is not None and self.iteration < 1:
            raise ValueError(f"A loop iteration counts from 1, got {self.iteration}.")
        if self.iteration is None and _ITERATION.fullmatch(self.base):
            # It would read back as an iteration: str() then parse() would not round-trip.
            raise ValueError(f"{self.base!r} is an iteration key; use AgentKey.parse.")

    @classmethod
    def parse(cls, key: str) -> AgentKey:
        """Read ``key``: ``writer#2`` is iteration 2 of ``writer``; any other text is a name."""
        found = _ITERATION.fullmatch(key)
        return cls(found[1], int(found[2])) if found else cls(key)

    def __str__(self) -> str:
        """The stored form: ``writer``, or ``writer#2`` for an iteration."""
        return self.base if self.iteration is None else f"{self.base}#{self.iteration}"
