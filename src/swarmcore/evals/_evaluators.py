"""Evaluators: small deterministic checks of a replay, each a class users can write their own of.

An evaluator reads a :class:`~swarmcore.evals.CaseRun` (the case, with its
expectations, and the replay's trace, result, error and misses) and returns a
:class:`Check`: its name, whether it passed, and what differs. Subclass
:class:`Evaluator` and implement :meth:`~Evaluator.evaluate`; pass yours to
``Suite(..., evaluators=[...])`` beside the defaults a case gives
(:func:`default_evaluators`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from swarmcore.agent import Agent
from swarmcore.errors import SwarmError
from swarmcore.evals._case import Case, ToolMatch, cassette_entries
from swarmcore.evals._replay import CaseRun, judge_model
from swarmcore.evals._trace import AgentTrace, ToolUse, Trace


class Check(BaseModel):
    """One evaluator's verdict on one replay."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    """The evaluator's name (``output``, ``path``, ``budget``...)."""
    passed: bool
    detail: str = ""
    """What differs (empty when it passed)."""


class Evaluator(ABC):
    """A check of a replayed case. Subclass it, set ``name``, implement :meth:`evaluate`.

    ```python
    class Polite(Evaluator):
        name = "polite"

        def evaluate(self, run: CaseRun) -> Check:
            ok = "please" in run.trace.output.lower()
            return self.verdict(ok, "the answer never says please")
    ```
    """

    name: ClassVar[str] = "check"
    """The check's name in reports."""

    @abstractmethod
    def evaluate(self, run: CaseRun) -> Check | Awaitable[Check]:
        """The verdict on ``run``; an ``async def`` for an evaluator that calls a model."""

    def verdict(self, passed: bool, detail: str = "") -> Check:
        """A :class:`Check` under this evaluator's name (``detail`` kept only on failure)."""
        return Check(name=self.name, passed=passed, detail="" if passed else detail)

    def failures(self, problems: Iterable[str]) -> Check:
        """Passed when ``problems`` is empty, else failed with them joined by ``; ``."""
        found = list(problems)
        return self.verdict(not found, "; ".join(found))


class Replayed(Evaluator):
    """The replay found every request and tool call in the cassettes, and the run finished.

    Fails naming the agent and the first message that differs from its recorded
    conversation (or the tool call the tool cassette lacks). A run its budget
    stopped is left to :class:`Budget`.
    """

    name = "replay"

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        problems = [
            f"{m.kind} request of {m.detail}" if m.kind == "model" else m.detail for m in run.misses
        ]
        if run.error is not None and not run.misses and run.budget_error is None:
            problems.append(f"the run failed: {type(run.error).__name__}: {run.error}")
        return self.failures(
            problems[:3] + ([f"{len(problems) - 3} more"] if len(problems) > 3 else [])
        )


class Models(Evaluator):
    """Each agent is configured with the models it was recorded with.

    A case made with the flow at hand (``Case.models``) holds each agent's model
    and fallback models: the current flow's must be the same, in the same order.
    A case made without it holds only the model that answered each agent: that
    model must be one the agent is configured with now (its model or a fallback),
    so an answer a fallback model gave is never taken for a swapped model.
    """

    name = "models"

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        problems: list[str] = []
        configured = run.case.models or {}
        for key, recorded in _by_base(run.expect.agents).items():
            now = run.models.get(key)
            if now is None:  # the agent is gone: the path reports it
                continue
            was = configured.get(key)
            if was is not None and now != was:
                problems.append(f"agent {key!r} runs on {_models(now)}, recorded on {_models(was)}")
            elif was is None and recorded.model not in now:
                problems.append(
                    f"agent {key!r} runs on {_models(now)}; its recorded answer came from "
                    f"{recorded.model!r}"
                )
        return self.failures(problems)


class ToolSchemas(Evaluator):
    """Each agent's tools have the names, descriptions and parameters they were recorded with.

    Checked only for cases made with the flow at hand (``Case.tool_specs``).
    """

    name = "tool_schemas"

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        problems: list[str] = []
        specs = run.case.tool_specs
        if specs is None:  # made without the flow: nothing to compare with
            return self.verdict(True)
        for agent in sorted(specs.keys() | run.tool_specs.keys()):
            recorded, now = specs.get(agent, {}), run.tool_specs.get(agent, {})
            for tool in sorted(recorded.keys() | now.keys()):
                if tool not in now:
                    problems.append(f"agent {agent!r} no longer has tool {tool!r}")
                elif tool not in recorded:
                    problems.append(f"agent {agent!r} has a new tool {tool!r}")
                elif now[tool] != recorded[tool]:
                    parts = [
                        k
                        for k in ("description", "parameters")
                        if now[tool].get(k) != recorded[tool].get(k)
                    ]
                    problems.append(
                        f"agent {agent!r}: tool {tool!r} changed its {' and '.join(parts)}"
                    )
        return self.failures(problems)


class OutputEquals(Evaluator):
    """The final output equals ``expected`` (the recorded output by default)."""

    name = "output"

    def __init__(self, expected: str | None = None) -> None:
        self.expected = expected

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        expected = run.expect.output if self.expected is None else self.expected
        actual = run.trace.output
        return self.verdict(actual == expected, _differs("output", expected, actual))


class OutputContains(Evaluator):
    """The final output contains ``text``."""

    name = "output_contains"

    def __init__(self, text: str) -> None:
        self.text = text

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        return self.verdict(self.text in run.trace.output, f"the output lacks {self.text!r}")


class OutputMatches(Evaluator):
    """The final output matches the regular expression ``pattern`` (``re.search``)."""

    name = "output_regex"

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        found = self.pattern.search(run.trace.output) is not None
        return self.verdict(found, f"the output does not match {self.pattern.pattern!r}")


class OutputSchema(Evaluator):
    """The final output is JSON that validates as the pydantic model ``schema``."""

    name = "output_schema"

    def __init__(self, schema: type[BaseModel]) -> None:
        self.schema = schema

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        try:
            self.schema.model_validate_json(run.trace.output)
        except ValidationError as exc:
            return self.verdict(
                False, f"the output is not a {self.schema.__name__}: {exc.errors()[0]['msg']}"
            )
        return self.verdict(True)


class Path(Evaluator):
    """The agents ran in the recorded order, a parallel group's members as a set."""

    name = "path"

    def __init__(self, steps: Sequence[Sequence[str]] | None = None) -> None:
        self.steps = None if steps is None else [sorted(s) for s in steps]

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        expected = run.expect.steps if self.steps is None else self.steps
        actual = run.trace.steps
        if actual == expected:
            return self.verdict(True)
        at = next(
            (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b), None
        )
        if at is None:
            more, fewer = (actual, expected) if len(actual) > len(expected) else (expected, actual)
            word = "ran" if more is actual else "did not run"
            what = f"{_step_text(more[len(fewer)])} {word} (step {len(fewer) + 1})"
        else:
            what = (
                f"step {at + 1} ran {_step_text(actual[at])}, recorded {_step_text(expected[at])}"
            )
        paths = f"path {_path_text(actual)}, recorded {_path_text(expected)}"
        return self.verdict(False, f"{what}; {paths}")


class Branches(Evaluator):
    """Each route took the recorded branch; each loop ran the recorded rounds; plans agree."""

    name = "branches"

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        expected = {(d.kind, d.step): d.value for d in run.expect.decisions}
        actual = {(d.kind, d.step): d.value for d in run.trace.decisions}
        problems: list[str] = []
        for kind, step in sorted(expected.keys() | actual.keys()):
            was, now = expected.get((kind, step)), actual.get((kind, step))
            if was != now:
                what = {"route": "took branch", "loop": "ran rounds", "plan": "planned"}.get(
                    kind, "chose"
                )
                problems.append(f"{kind} {step!r} {what} {now!r}, recorded {was!r}")
        return self.failures(problems)


class ToolCalls(Evaluator):
    """Each agent's tool calls, with their arguments, against the recorded ones.

    Args:
        mode: ``strict``: the same calls in the same order; ``unordered``: the same
            calls in any order; ``subset``: every call made was recorded;
            ``superset``: every recorded call was made (others may be added).
        ignore_arguments: Argument names left out of the comparison: ``query``
            for any tool, ``search.query`` for one.
    """

    name = "tool_calls"

    def __init__(self, mode: ToolMatch = "strict", ignore_arguments: Sequence[str] = ()) -> None:
        self.mode: ToolMatch = mode
        self.ignore = frozenset(ignore_arguments)

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        problems: list[str] = []
        for key in sorted(run.expect.agents.keys() | run.trace.agents.keys()):
            if key not in run.trace.agents or key not in run.expect.agents:
                continue  # an agent that did not run (or ran anew) is the path's to report
            expected = [self._plain(c) for c in run.expect.agents[key].tool_calls]
            actual = [self._plain(c) for c in run.trace.agents[key].tool_calls]
            problem = self._compare(expected, actual)
            if problem:
                problems.append(f"agent {key!r}: {problem}")
        return self.failures(problems)

    def _plain(self, call: ToolUse) -> str:
        arguments = call.arguments
        if isinstance(arguments, dict):
            arguments = {
                k: v
                for k, v in arguments.items()  # pyright: ignore[reportUnknownVariableType]
                if k not in self.ignore and f"{call.tool}.{k}" not in self.ignore
            }
        return f"{call.tool}({_json(arguments)})"

    def _compare(self, expected: list[str], actual: list[str]) -> str:
        want, got = Counter(expected), Counter(actual)
        match self.mode:
            case "strict":
                ok = expected == actual
            case "unordered":
                ok = want == got
            case "subset":
                ok = not (got - want)
            case "superset":
                ok = not (want - got)
        if ok:
            return ""
        missing, extra = sorted((want - got).elements()), sorted((got - want).elements())
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unexpected {', '.join(extra)}"] if extra else []
        return f"tool calls differ ({self.mode}): " + (
            "; ".join(parts) or f"order {', '.join(actual)}, recorded {', '.join(expected)}"
        )


class Budget(Evaluator):
    """Tokens, cost and model calls per agent and per run within the recorded ones x ``tolerance``.

    Also fails when the run's own budget (``max_tokens``, ``max_cost``) stopped it.
    Wall time is checked where the run has one, a live run's: each agent's and the
    run's must stay within the recorded one x ``wall_tolerance`` + ``wall_grace``
    seconds. An offline replay has no times (its answers take no model's time),
    so it is never failed on them.

    Args:
        tolerance: How many times the recorded tokens, calls and cost may be spent.
        wall_tolerance: How many times the recorded wall time may be taken.
        wall_grace: Seconds added to the wall-time limit (fast calls jitter).
    """

    name = "budget"

    def __init__(
        self, tolerance: float = 1.1, *, wall_tolerance: float = 2.0, wall_grace: float = 1.0
    ) -> None:
        self.tolerance = tolerance
        self.wall_tolerance = wall_tolerance
        self.wall_grace = wall_grace

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        problems: list[str] = []
        if run.budget_error is not None:
            problems.append(f"the run's budget stopped it: {run.budget_error}")
        for key, now in run.trace.agents.items():
            was = run.expect.agents.get(key)
            if was is not None:
                problems += self._over(f"agent {key!r}", now, was)
        problems += self._over("the run", run.trace, run.expect)
        return self.failures(problems)

    def _over(self, who: str, now: AgentTrace | Trace, was: AgentTrace | Trace) -> list[str]:
        found: list[str] = []
        for what, a, b in (
            ("tokens", now.tokens, was.tokens),
            ("calls", now.calls, was.calls),
            ("cost", now.cost, was.cost),
        ):
            if a is not None and b is not None and a > b * self.tolerance + 1e-12:
                shown = f"${a:.6f}" if what == "cost" else f"{a:,}"
                limit = f"${b:.6f}" if what == "cost" else f"{b:,}"
                found.append(
                    f"{who} spent {shown} {what}, recorded {limit} (tolerance x{self.tolerance:g})"
                )
        return found + self._slow(who, now.wall_seconds, was.wall_seconds)

    def _slow(self, who: str, now: float | None, was: float | None) -> list[str]:
        """Over the wall-time limit; never where a time is missing (an offline replay's)."""
        if now is None or was is None or now <= was * self.wall_tolerance + self.wall_grace + 1e-9:
            return []
        return [
            f"{who} took {now:.3f} s, recorded {was:.3f} s "
            f"(limit x{self.wall_tolerance:g} + {self.wall_grace:g} s)"
        ]


class ContextGiven(Evaluator):
    """Each agent was given what it was given when recorded: the same agents' outputs.

    With ``agent`` and ``fact``: that agent was given text containing ``fact``
    (in its prompt or a tool result it read).
    """

    name = "context"

    def __init__(self, agent: str | None = None, fact: str | None = None) -> None:
        if (agent is None) != (fact is None):
            from swarmcore.errors import UserError

            raise UserError("ContextGiven takes both agent and fact, or neither.")
        self.agent = agent
        self.fact = fact

    def evaluate(self, run: CaseRun) -> Check:
        """The verdict on ``run``."""
        if self.agent is not None and self.fact is not None:
            return self._fact(run, self.agent, self.fact)
        problems: list[str] = []
        for key, was in run.expect.agents.items():
            now = run.trace.agents.get(key)
            if now is None:
                continue
            lost = sorted(set(was.given) - set(now.given))
            if lost:
                problems.append(f"agent {key!r} was not given the output of {', '.join(lost)}")
        return self.failures(problems)

    def _fact(self, run: CaseRun, agent: str, fact: str) -> Check:
        from swarmcore.evals._case import base_name

        given = [
            r
            for r in (run.result.history if run.result else [])
            if base_name(r.agent_name) == agent
        ]
        if not given:
            return self.verdict(False, f"agent {agent!r} did not run")
        read = "\n".join(
            str(m.get("content") or "")
            for r in given
            for m in r.messages
            if m.get("role") != "assistant"
        )
        return self.verdict(fact in read, f"agent {agent!r} was not given {fact!r}")


class JudgeVerdict(BaseModel):
    """What a judge answers: whether the output meets the criteria, and why."""

    passed: bool
    reason: str


JUDGE_INSTRUCTIONS = (
    "You judge an answer another agent gave to a task, against the criteria you are given. "
    "Say whether it meets every criterion (passed) and, in one sentence, why (reason)."
)


class Judge(Evaluator):
    """An agent that rules on the final output against ``criteria``; its calls are cassetted.

    In a replay the judge answers from the case's judge cassette, so a judged
    report replays offline too; an output it has not ruled on (the output
    changed) fails the check, asking for ``--record``. In a live run, and under
    ``--record`` (which stores its calls in the case), it calls its model.

    Args:
        agent: The judge (its instructions and model); it answers a
            :class:`JudgeVerdict` whatever ``output_type`` it had.
        criteria: What a good answer does, in words.
    """

    name = "judge"

    def __init__(self, agent: Agent, criteria: str) -> None:
        self.agent = agent.clone(output_type=JudgeVerdict, tools=())
        self.criteria = criteria

    async def evaluate(self, run: CaseRun) -> Check:
        """The judge's ruling on ``run``'s final output."""
        asked = (
            f"Criteria:\n{self.criteria}\n\nTask:\n{run.case.task}\n\n"
            f"Answer to judge:\n{run.trace.output}"
        )
        judge, misses = self.agent, None
        if not run.judge_live:
            model, misses = judge_model(run.case, self.agent)
            judge = self.agent.clone(model=model, fallback_models=(), backend=None)
        try:
            result = await judge.run(asked)
        except SwarmError as exc:
            if misses is not None and misses():
                return self.verdict(
                    False,
                    "no recorded ruling of the judge on this output (did the output change?): "
                    "record one with `swarmcore eval run TARGET --suite DIR --record`",
                )
            return self.verdict(False, f"the judge failed: {type(exc).__name__}: {exc}")
        if run.judge_live:
            run.judged.extend(cassette_entries(result))
        verdict = result.parsed
        assert isinstance(verdict, JudgeVerdict)  # output_type, validated by the agent
        return self.verdict(verdict.passed, f"the judge: {verdict.reason}")


def default_evaluators(case: Case) -> list[Evaluator]:
    """The evaluators a case's expectations and its ``checks`` options make."""
    options = case.checks
    found: list[Evaluator] = [Replayed(), Models(), ToolSchemas()]
    if options.exact_output:
        found.append(OutputEquals())
    found += [OutputContains(t) for t in options.output_contains]
    if options.output_regex is not None:
        found.append(OutputMatches(options.output_regex))
    found += [
        Path(),
        Branches(),
        ToolCalls(options.tool_calls, options.ignore_arguments),
        Budget(
            options.tolerance,
            wall_tolerance=options.wall_tolerance,
            wall_grace=options.wall_grace,
        ),
        ContextGiven(),
    ]
    found += [ContextGiven(agent, fact) for agent, facts in options.facts.items() for fact in facts]
    if options.judge is not None:
        judge = Agent("judge", JUDGE_INSTRUCTIONS, model=options.judge.model)
        found.append(Judge(judge, options.judge.criteria))
    return found


def _by_base(agents: dict[str, AgentTrace]) -> dict[str, AgentTrace]:
    from swarmcore.evals._case import base_name

    return {base_name(key): trace for key, trace in agents.items()}


def _models(models: Sequence[str]) -> str:
    """``'a'``, or ``'a' (fallbacks 'b', 'c')``."""
    fallbacks = ", ".join(repr(m) for m in models[1:])
    return repr(models[0]) + (f" (fallbacks {fallbacks})" if fallbacks else "")


def _json(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _differs(what: str, expected: str, actual: str) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
        min(len(actual), len(expected)),
    )
    near = slice(max(0, at - 20), at + 40)
    got, recorded = actual[near], expected[near]
    return f"the {what} differs at character {at + 1}: got {got!r}, recorded {recorded!r}"


def _step_text(step: Sequence[str]) -> str:
    return step[0] if len(step) == 1 else "{" + ", ".join(step) + "}"


def _path_text(steps: Sequence[Sequence[str]]) -> str:
    return " >> ".join(_step_text(s) for s in steps) or "(nothing)"
