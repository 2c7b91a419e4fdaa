"""The reader model: a careful, deterministic reader of the shared context.

It answers from what it can see and, where a fact it needs is missing, uses
the context tools as a sensible model would. Facts follow one convention:

* A fact's id is ``F`` and digits: ``F07``.
* Instructions say in words which facts the agent needs, in a sentence that
  starts with "You need": ``You need the launch date (fact F07) and the budget
  (fact F12).`` The words before each ``(fact F..)`` are its topic.
* Instructions say which facts the agent states itself: ``State fact F03: the
  vendor is Acme.``
* A fact is stated as its id, a colon and a sentence that runs to the first
  full stop followed by a space or a line end: ``F07: the launch date is 14
  March.`` A stated fact's topic is the words before its verb (is, are, was,
  were), without a leading "the".
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from swarmcore.testing._endpoint import model_string
from swarmcore.testing._replies import Call, RecordedRequest, Reply, Step, tool_calls_of

_names = itertools.count(1)

SummaryStyle = Literal["facts", "topic"]
"""What the reader's ``<summary>`` names: each fact's id and topic, or only the work's topic."""
SearchStyle = Literal["id", "words"]
"""How the reader writes a search: the fact's id, or its topic in plain words."""

_FACT_ID = r"F\d+"
_STATEMENT = re.compile(rf"\b({_FACT_ID}): ([^\n]+?)\.(?=\s|$|<)")
_NEED_SENTENCE = re.compile(r"\bYou need\b([^.]*)\.")
_NEED = re.compile(rf"\(fact ({_FACT_ID})\)")
_STATE = re.compile(rf"\bState fact ({_FACT_ID}): ([^\n]+?)\.(?=\s|$)")
_VERB = re.compile(r"\s(?:is|are|was|were)\s")
_FRAME = re.compile(
    r'<output agent="([^"]+)"(?: kind="[^"]+")? id="([0-9a-f]+)">(.*?)</output id="\2">', re.DOTALL
)
_READERS = ("get_context", "expand_context")
_LISTED = re.compile(r"^- (\S+) \(", re.MULTILINE)
_SUMMARISED = re.compile(r'^<output agent="([^"]+)" kind="summary" id="[0-9a-f]+">$', re.MULTILINE)

_FILLER = (
    "The working group met twice this week and went through the open questions one by one.",
    "Most of the discussion turned on how the rollout should be staged across the teams.",
    "Several people asked for a clearer owner for each task before anything is signed off.",
    "The notes from the last review were circulated and nobody raised a new objection.",
    "A short pilot is still the safest way to learn what the users really need.",
    "The risks listed last month remain, though two of them now look less likely.",
    "Support staff want written guidance before the first customers are moved over.",
    "The design was simplified after the feedback from the second round of interviews.",
    "There is broad agreement that the documentation has to be ready on day one.",
    "Training sessions will be recorded so that later joiners can catch up on their own.",
    "The legal review found nothing blocking but asked for two wording changes.",
    "Dependencies on other departments are tracked in the shared planning sheet.",
    "A fallback plan exists if the integration tests do not pass in time.",
    "The steering committee will see a one-page status note every Friday.",
    "Feedback from the field has been mostly positive, with a few usability complaints.",
    "The data migration scripts were rehearsed on a copy and ran without errors.",
    "Everyone agreed to keep the scope fixed until the first milestone is reached.",
    "Two open tickets concern the reporting screens and are being worked on now.",
    "The communication plan names who tells which customers, and when.",
    "Performance looked acceptable in the load test, with headroom to spare.",
    "Accessibility checks are part of the acceptance criteria this time.",
    "The team will revisit the estimates once the pilot results are in.",
    "Nobody expects the remaining work to change the overall direction.",
    "A handful of minor defects were fixed and verified during the week.",
)


@dataclass(frozen=True, slots=True)
class ReaderAnswer:
    """One final answer of a :class:`ReaderModel`: what its agent needed and delivered."""

    agent: str
    """The first line of the agent's instructions (where a name usually is)."""
    needed: frozenset[str]
    """Ids of the facts the instructions say the agent needs."""
    delivered: frozenset[str]
    """Ids of the needed facts the answer states."""
    calls: int
    """Context tool calls made before answering."""


@dataclass(frozen=True, slots=True)
class FactScore:
    """How many needed facts a run's answers delivered, and which ones went missing."""

    needed: int
    """Needed facts, summed over every answer (each iteration of a loop counts)."""
    delivered: int
    """Of those, the facts the answers stated correctly."""
    missing: Mapping[str, tuple[str, ...]]
    """The ids each answer lacked, by context key (``writer#2``); complete answers left out."""

    @property
    def rate(self) -> float:
        """Delivered / needed (1.0 when nothing was needed)."""
        return self.delivered / self.needed if self.needed else 1.0


class _Instructed(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def instructions(self) -> str: ...


def needed_facts(instructions: str) -> dict[str, str]:
    """The facts ``instructions`` say are needed, as id to topic, in order."""
    needs: dict[str, str] = {}
    for sentence in _NEED_SENTENCE.finditer(instructions):
        text, start = sentence.group(1), 0
        for need in _NEED.finditer(text):
            needs[need.group(1)] = _topic_words(text[start : need.start()])
            start = need.end()
    return needs


def stated_facts(instructions: str) -> dict[str, str]:
    """The facts ``instructions`` say to state, as id to statement (``F03: the vendor is X.``)."""
    return {m.group(1): f"{m.group(1)}: {m.group(2)}." for m in _STATE.finditer(instructions)}


def facts_in(text: str) -> dict[str, str]:
    """Every fact statement in ``text``, as id to statement; a later one of an id wins."""
    return {m.group(1): f"{m.group(1)}: {m.group(2)}." for m in _STATEMENT.finditer(text)}


def fact_topic(statement: str) -> str:
    """A statement's topic: its words before the verb, without the id or a leading "the"."""
    body = statement.split(":", 1)[-1]
    verb = _VERB.search(body)
    return _topic_words(body[: verb.start()] if verb else " ".join(body.split()[:3]))


def score_facts(agents: Iterable[_Instructed], outputs: Mapping[str, str]) -> FactScore:
    """Score a run: which facts each answer needed and which it stated correctly.

    ``outputs`` maps context keys to answers (``result.context``); an iteration
    key such as ``writer#2`` is scored by ``writer``'s instructions. A needed
    fact counts as delivered when the answer holds its statement as the
    instructions of the agent that states it word it (case and spacing aside),
    or, for a fact no agent states, any statement of its id.
    """
    by_name = {a.name: a.instructions for a in agents}
    truth: dict[str, str] = {}
    for text in by_name.values():
        truth.update(stated_facts(text))
    needed = delivered = 0
    missing: dict[str, tuple[str, ...]] = {}
    for key, output in outputs.items():
        needs = needed_facts(by_name.get(key.split("#", 1)[0], ""))
        said = _normal(output)
        lacked = tuple(
            f
            for f in needs
            if not (_normal(truth[f].rstrip(".")) in said if f in truth else f in facts_in(output))
        )
        needed += len(needs)
        delivered += len(needs) - len(lacked)
        if lacked:
            missing[key] = lacked
    return FactScore(needed, delivered, missing)


class ReaderModel:
    """A deterministic model that reads the shared context like a careful model.

    From the agent's instructions it knows the facts it needs and the facts it
    states (the convention is in this module's docstring). Each turn it looks
    for every needed fact's statement anywhere in the request (the system
    prompt, the task, tool results). Where one is missing and a context tool is
    offered, it makes, for each missing fact, the first of these calls it has
    not made before (all in one turn; a call serving two facts is made once):

    1. ``get_context`` (or ``expand_context``) of an agent whose framed words
       it can see name the fact's id or topic (a summary in the prompt or in a
       ``list_context`` result), or that its search for the fact hit (a hit
       may be cut off before the fact's full stop), the most recent first;
    2. ``list_context``, once;
    3. ``search_context`` with the fact's id or its topic in plain words
       (``search``);
    4. ``get_context`` (or ``expand_context``) of any earlier agent it knows
       of (listed, or summarised in the prompt), in flow order: a guess.

    Offered auto mode's ``read_context`` instead, it makes the same moves with
    it: an agent's name to read, no arguments to list, a query to search.

    After ``max_rounds`` rounds of tool calls, or when no new call is left, it
    answers with what it has: filler paragraphs seeded by the first line of
    the instructions, the facts it states and the needed facts it found placed
    among them (never leading a paragraph, never in the first), and a
    ``<summary>`` line. It never makes a fact up, and never states a fact it
    does not need. It answers in text only: an agent with an ``output_type``
    needs another test model.

    Args:
        summaries: What the summary names: ``"facts"``, each fact's id and
            topic (``Covers F07 (launch date).``); ``"topic"``, only what the
            work is about (the task's words), so a reader cannot tell from
            it which agent holds which fact.
        search: How searches are written: ``"id"`` (``F07``) or ``"words"``
            (``launch date``, as real models write them).
        max_rounds: Rounds of tool calls before it answers regardless; keep it
            under the agent's ``max_turns``.
        paragraphs: Filler paragraphs per answer.
        name: The model's name (unique in the process); generated when None.
    """

    def __init__(
        self,
        *,
        summaries: SummaryStyle = "facts",
        search: SearchStyle = "id",
        max_rounds: int = 8,
        paragraphs: int = 4,
        name: str | None = None,
    ) -> None:
        self.summaries: SummaryStyle = summaries
        self.search: SearchStyle = search
        self.max_rounds = max_rounds
        self.paragraphs = max(2, paragraphs)
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.answers: list[ReaderAnswer] = []
        """Every final answer, in the order given."""
        self.model = model_string(name or f"reader-{next(_names)}", self)
        """The model string to put in ``Agent(model=...)``."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Record ``request`` and make the next move: context tool calls, or the answer."""
        self.requests.append(request)
        needs = needed_facts(request.system)
        seen = facts_in("\n".join(_texts(request)))
        missing = [f for f in needs if f not in seen]
        made = _calls_made(request)
        rounds = sum(1 for m in _since_task(request) if tool_calls_of(m))
        if missing and rounds < self.max_rounds:
            calls = self._calls_for(missing, needs, request, made)
            if calls:
                return Reply(tool_calls=calls)
        return Reply(text=self._answer(request, needs, seen, len(made)))

    def _calls_for(
        self,
        missing: list[str],
        needs: Mapping[str, str],
        request: RecordedRequest,
        made: set[tuple[str, str]],
    ) -> list[Call]:
        tools = _Tools(set(request.tool_names))
        view = _View(request)
        chosen: list[tuple[str, dict[str, str]]] = []
        for fact in missing:
            query = fact if self.search == "id" else needs[fact]
            named = view.naming(fact, needs[fact]) + view.hits.get(query, [])
            options = [tools.read(agent) for agent in named]
            options += [tools.listing(), tools.search(query)]
            options += [tools.read(agent) for agent in view.known]
            # The first option not made before; one already chosen this turn serves this
            # fact too (one list_context, or one read of an agent naming two facts).
            for option in options:
                if option is None:
                    continue
                name, args = option
                if (name, _canonical(args)) not in made:
                    if option not in chosen:
                        chosen.append(option)
                    break
        return [Call(name, args) for name, args in chosen]

    def _answer(
        self,
        request: RecordedRequest,
        needs: Mapping[str, str],
        seen: Mapping[str, str],
        calls: int,
    ) -> str:
        head = request.system.strip().split("\n", 1)[0]
        own = stated_facts(request.system)
        found = {f: seen[f] for f in needs if f in seen and f not in own}
        facts = {**own, **found}
        paragraphs = _filler(head, self.paragraphs)
        for index, (fact, statement) in enumerate(facts.items()):
            slot = 1 + index % (len(paragraphs) - 1)  # never the first paragraph
            sentences = paragraphs[slot]
            # Anywhere after the paragraph's first two sentences, as a writer places it.
            where = _rng(f"{head}\n{fact}").randint(min(2, len(sentences)), len(sentences))
            sentences.insert(where, statement)
        body = "\n\n".join(" ".join(sentences) for sentences in paragraphs)
        delivered = frozenset(f for f in needs if f in facts)
        self.answers.append(ReaderAnswer(head, frozenset(needs), delivered, calls))
        return f"{body}\n\n<summary>{self._summary(facts, request.user)}</summary>"

    def _summary(self, facts: Mapping[str, str], task: str) -> str:
        if self.summaries == "topic":
            return f"Notes on: {_short(task, 60)}"
        if not facts:
            return "General notes on the work; no specific facts."
        named = [f"{f} ({fact_topic(s)})" for f, s in facts.items()]
        listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        return f"Covers {listed}."


class _Tools:
    """The calls that read, list and search with the context tools offered.

    Pull's three tools, push's ``expand_context``, or auto's ``read_context``
    (one tool that reads, lists or searches by its arguments); None where the
    move has no tool.
    """

    def __init__(self, offered: set[str]) -> None:
        self.one = "read_context" in offered
        self.reader = next((name for name in _READERS if name in offered), None)
        self.offered = offered

    def read(self, agent: str) -> tuple[str, dict[str, str]] | None:
        name = "read_context" if self.one else self.reader
        return (name, {"agent_name": agent}) if name else None

    def listing(self) -> tuple[str, dict[str, str]] | None:
        if self.one:
            return ("read_context", {})
        return ("list_context", {}) if "list_context" in self.offered else None

    def search(self, query: str) -> tuple[str, dict[str, str]] | None:
        if self.one:
            return ("read_context", {"query": query})
        return ("search_context", {"query": query}) if "search_context" in self.offered else None


class _View:
    """What one request shows of the shared context: frames, search hits, agents known."""

    def __init__(self, request: RecordedRequest) -> None:
        self.frames: list[tuple[str, str, str]] = _FRAME.findall("\n".join(_texts(request)))
        calls = {c["id"]: c["function"] for m in _since_task(request) for c in tool_calls_of(m)}
        self.hits: dict[str, list[str]] = {}
        """Agents each search query hit, by query."""
        listed: list[str] = []
        for result in request.tool_results:
            function: dict[str, Any] = calls.get(result["tool_call_id"], {})
            content = str(result["content"])
            name = function.get("name")
            arguments = _arguments(function.get("arguments"))
            query = str(arguments.get("query", ""))
            if name == "read_context" and not query and not arguments.get("agent_name"):
                name = "list_context"
            if name == "search_context" or (name == "read_context" and query):
                agents = [agent for agent, _, _ in _FRAME.findall(content)]
                self.hits[query] = list(dict.fromkeys(agents))
            elif name == "list_context":
                listed = _LISTED.findall(content)
        shown = _LISTED.findall(request.system) + _SUMMARISED.findall(request.system)
        order = listed or shown  # list_context gives flow order; else the prompt's
        self.known = list(dict.fromkeys(order + shown))
        """Earlier agents it knows of (listed, or summarised in the prompt), in flow order."""

    def naming(self, fact: str, topic: str) -> list[str]:
        """Agents whose framed words name ``fact`` by id or topic, the most recent first."""
        named = [agent for agent, _, text in reversed(self.frames) if _mentions(text, fact, topic)]
        return list(dict.fromkeys(named))


def _topic_words(text: str) -> str:
    words = text.replace(",", " ").split()
    while words and words[0].lower() in {"and", "the", "a", "an", "also", "need", "you"}:
        words = words[1:]
    return " ".join(words)


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _mentions(text: str, fact: str, topic: str) -> bool:
    """Whether framed words name ``fact`` by id or by topic."""
    return bool(re.search(rf"\b{fact}\b", text)) or (
        bool(topic) and _normal(topic) in _normal(text)
    )


def _since_task(request: RecordedRequest) -> list[dict[str, Any]]:
    """The messages after the last user message (this agent run's tool rounds)."""
    messages = request.messages
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return messages[last + 1 :]


def _texts(request: RecordedRequest) -> list[str]:
    """What the model can read: the system prompt, the task and every tool result."""
    return [request.system, request.user] + [str(m["content"]) for m in request.tool_results]


def _calls_made(request: RecordedRequest) -> set[tuple[str, str]]:
    return {
        (call["function"]["name"], _canonical(_arguments(call["function"]["arguments"])))
        for message in _since_task(request)
        for call in tool_calls_of(message)
    }


def _arguments(text: object) -> dict[str, Any]:
    """A call's arguments as a dict (empty when they are not a JSON object)."""
    try:
        value: Any = json.loads(str(text or "{}"))
    except json.JSONDecodeError:
        return {}
    return typing.cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _short(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _canonical(args: object) -> str:
    return json.dumps(args, sort_keys=True)


def _rng(seed: str) -> random.Random:
    return random.Random(hashlib.sha256(seed.encode()).digest())


def _filler(seed: str, paragraphs: int) -> list[list[str]]:
    """Paragraphs of plausible project prose, the same for the same seed."""
    rng = _rng(seed)
    return [rng.sample(_FILLER, rng.randint(4, 6)) for _ in range(paragraphs)]
