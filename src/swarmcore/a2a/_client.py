"""RemoteAgent: an Agent2Agent (A2A) agent, anywhere, as a step of a flow or a tool.

A RemoteAgent is an :class:`~swarmcore.agent.Agent` that runs its own step:
the walk's seam (:func:`~swarmcore._walk.run_in_process`) hands it the step
instead of starting a model loop, so it goes wherever an Agent goes (``>>``,
``|``, routes, loops) and is recorded like one. It talks to the remote through
the a2a-sdk's own client (card resolution, transport choice, streaming when the
card says so) over an httpx client of ours that carries the caller's headers
and caps how much a response may hold.

What the remote is sent: the run's task, then (when the step sees earlier
outputs) every one of them in full, framed as push mode frames them. In both
context modes: a remote agent has no ``get_context`` tool to read more, so
anything left out would be lost to it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import httpx
from a2a.client import (
    Client,
    ClientConfig,
    ClientFactory,
)
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
)
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from swarmcore import events
from swarmcore._checks import DEFAULT, check_number
from swarmcore._policies import RetryPolicy
from swarmcore._tools import Tool, function_tool
from swarmcore._walk import AgentStep
from swarmcore.a2a._answer import Answer, Refused
from swarmcore.a2a._explain import explain
from swarmcore.a2a._http import ACCEPT_ENCODING, CappedTransport, OriginCheck, origin_of
from swarmcore.a2a._lenient import LenientTransport
from swarmcore.agent import Agent
from swarmcore.errors import AgentError, UserError
from swarmcore.llm._redaction import env_secrets, redact, secret_values
from swarmcore.results import AgentResult
from swarmcore.scope import RunScope, current_call

DEFAULT_TIMEOUT = 300.0
"""Seconds a remote task may take, retries included, when ``timeout`` is not given."""
MAX_OUTPUT_CHARS = 1_000_000
"""The most text a remote answer may hold by default; one HTTP response may hold 4x
as many bytes (JSON framing and escapes)."""
CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection: a remote that is down fails fast, and is retried."""
_CANCEL_TIMEOUT = 5.0
ACCEPTED_OUTPUT_MODES = ("text/plain", "application/json")
"""What a RemoteAgent reads of an answer (text and data parts), sent with every message:
strict servers (FastA2A 0.6) refuse a message that does not say."""
_POLL_FIRST, _POLL_MOST = 0.05, 2.0
"""Seconds between polls of a task the remote answered before finishing (it does not stream)."""


class RemoteAgentError(AgentError):
    """A remote A2A agent failed, could not be reached, or answered something unusable.

    Attributes:
        url: The remote agent's URL.
        state: The remote task's last state (``failed``, ``input-required``...),
            when the remote reported one.
    """

    def __init__(
        self, message: str, *, agent_name: str, url: str, retryable: bool = False, state: str = ""
    ) -> None:
        super().__init__(message, agent_name=agent_name, retryable=retryable)
        self.url = url
        self.state = state


@dataclass(frozen=True, slots=True, eq=False, repr=False, init=False)
class RemoteAgent(Agent):
    """A remote A2A agent as a flow step: ``a >> RemoteAgent(url, name="r") >> b``.

    It needs no model and no key: it sends the task (and the earlier outputs it
    sees) to the remote, streams the remote's progress into the run's events
    (:class:`~swarmcore.events.RemoteStatus`, and ``TextDelta`` for answer text
    when the run streams text), and records the answer as its AgentResult:
    text parts as ``output``, data parts as JSON text and as ``parsed``, usage
    when the remote reports it (``{"usage": {"prompt_tokens": ..,
    "completion_tokens": ..}}`` in a task, status or artifact's metadata),
    ``model`` as ``a2a:<url>``.

    A remote task that ends ``input-required`` fails the step (a flow cannot
    answer it; the Swarm's approval callback is not asked): give the task all it
    needs. A dry run or ``--model`` cannot swap a RemoteAgent onto a model.

    ``headers`` go only to the origin of ``url`` (where the card is fetched)
    and the origins named in ``trusted_origins``: a card naming its endpoint
    anywhere else fails the step, naming both origins, before a byte is sent.

    Args:
        url_or_card: The agent's base URL (its card is fetched from
            ``<url>/.well-known/agent-card.json`` on each run), or its
            ``a2a.types.AgentCard``.
        name: The step's name, unique in the flow.
        headers: HTTP headers sent with every request (card included), e.g.
            ``{"Authorization": "Bearer ..."}``; never shown in reprs or errors.
        trusted_origins: Other origins (``https://host[:port]``; a URL stands
            for its origin) the headers may go to: the agent's endpoint, when
            its card names one on another origin than ``url``.
        timeout: Seconds for the whole remote task, retries included;
            None for no limit.
        retries: How many times a transient failure (connection refused, 5xx,
            429, a timed-out request) is retried, or a RetryPolicy.
        description: What the agent does (for ``as_tool``); the card's by default.
        max_output_chars: The most text the answer may hold; more is an error.

    Raises:
        UserError: A URL that is not http(s), a card without a URL, or a bad setting.
    """

    url: str = ""
    card: AgentCard | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    trusted_origins: tuple[str, ...] = ()
    """The origins besides ``url``'s the headers may go to, as ``scheme://host:port``."""
    max_output_chars: int = MAX_OUTPUT_CHARS

    def __init__(
        self,
        url_or_card: str | AgentCard,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        trusted_origins: Sequence[str] = (),
        timeout: float | None = DEFAULT_TIMEOUT,
        retries: int | RetryPolicy = 2,
        description: str | None = None,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        card = url_or_card if isinstance(url_or_card, AgentCard) else None
        url = _card_url(card, name) if card is not None else url_or_card
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"RemoteAgent {name!r}: url_or_card must be an http(s) URL or an a2a AgentCard, "
                f"got {url_or_card!r}."
            )
        if description is None:
            description = card.description if card is not None and card.description else None
        Agent.__init__(  # the Agent checks name and timeout, and makes retries a policy
            self,
            name,
            description or f"A remote A2A agent at {url}.",
            model=f"a2a:{url}",
            timeout=timeout,
            retry=retries,
        )
        owner = f"RemoteAgent {name!r}"
        check_number(owner, "max_output_chars", max_output_chars, whole=True)
        if headers is not None and not isinstance(headers, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"{owner}: headers must be a mapping of names to values.")
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "headers", dict(headers or {}))
        object.__setattr__(self, "trusted_origins", _origins(owner, trusted_origins))
        object.__setattr__(self, "max_output_chars", max_output_chars)

    def __repr__(self) -> str:
        return f"RemoteAgent({self.name!r}, url={self.url!r})"

    @property
    def retry_policy(self) -> RetryPolicy:
        """How transient failures are retried."""
        assert isinstance(self.retry, RetryPolicy)  # __init__ made it one
        return self.retry

    def clone(self, **changes: Any) -> RemoteAgent:
        """A copy with some settings changed (those ``__init__`` takes, but the URL).

        Raises:
            UserError: A change a remote agent does not have (a model, tools...).
        """
        own = {
            "name",
            "headers",
            "trusted_origins",
            "timeout",
            "retries",
            "description",
            "max_output_chars",
        }
        other = sorted(set(changes) - own)
        if other:
            raise UserError(
                f"RemoteAgent {self.name!r} runs on its remote, so {', '.join(other)} cannot "
                f"change; it takes {', '.join(sorted(own))}. (A dry run cannot move a remote "
                "step onto a model: take it out of the flow for that.)"
            )
        settings: dict[str, Any] = {
            "name": self.name,
            "headers": self.headers,
            "trusted_origins": self.trusted_origins,
            "timeout": self.timeout,
            "retries": self.retry_policy,
            "description": self.instructions,
            "max_output_chars": self.max_output_chars,
        }
        settings.update(changes)
        return RemoteAgent(self.card or self.url, **settings)

    def as_tool(
        self, *, name: str | None = None, description: str | None = None, max_depth: int = 3
    ) -> Tool:
        """This remote agent as a tool a local agent calls to delegate a task to it.

        The caller's result lists each remote run in ``delegations`` (usage
        included, when reported). A remote failure is a tool error the caller's
        model is told of.

        Args:
            name: The tool name; the agent's name by default.
            description: What the agent does, for the caller's model.
            max_depth: Unused (a remote agent delegates nothing here); kept so
                ``as_tool`` takes what ``Agent.as_tool`` takes.
        """
        check_number(f"RemoteAgent {self.name!r}", "max_depth", max_depth, whole=True)
        remote = self

        async def delegate(task: str) -> str:
            """Delegate a task.

            Args:
                task: The whole task, with everything the agent needs to know: it sees
                    nothing else of this conversation.
            """
            running = current_call()  # the tool call this is, and the agent run that made it
            try:
                result = await remote.call(task, scope=running.scope if running else None)
            except RemoteAgentError as exc:  # the caller's model is told, and can act on it
                raise _RemoteToolFailed(str(exc)) from None
            if running is not None and running.caller is not None:
                running.caller.delegated(running.position, result)
            return result.output

        return function_tool(
            delegate,
            name=name or self.name,
            description=description
            or f"Ask the remote agent {self.name!r} to do a task; returns its answer. "
            + self.instructions[:200],
        )

    async def run_step(self, step: AgentStep) -> AgentResult:
        """Run this step on the remote: what the walk's seam calls instead of a model loop."""
        view = step.view
        context = None
        if len(view) or view.failures():
            context = "# Context from earlier agents\n\n" + view.format_for_prompt()
        return await self.call(step.task, context, scope=step.scope)

    async def call(
        self, task: str, context: str | None = None, *, scope: RunScope | None = None
    ) -> AgentResult:
        """Send ``task`` (and ``context``, as a second text part) to the remote; its result.

        A flow step calls this with the earlier outputs it sees; ``as_tool``
        with the task alone. Transient failures are retried, and the whole
        call is bounded by ``timeout``.

        Args:
            task: What to do.
            context: Earlier outputs, already formatted, if any.
            scope: The calling run's scope (its budget, and its events' span).

        Raises:
            RemoteAgentError: The remote failed, asked for input, timed out,
                could not be reached after the retries, or answered something
                malformed or too large.
        """
        scope = scope or RunScope()
        meter = scope.meter
        if meter is not None:  # a spent budget stops a remote step as it stops a model call
            meter.check(self.name, self.model, lambda _: True)  # priced by what it reports
        began, began_at = time.perf_counter(), time.time()
        parts = [Part(text=task)] + ([Part(text=context)] if context else [])
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts)
        answer = Answer(
            self.name, self.url, self.max_output_chars, secrets=self._secrets(), scope=scope
        )
        limit = DEFAULT_TIMEOUT if self.timeout is DEFAULT else self.timeout  # None: no limit
        try:
            async with asyncio.timeout(limit):
                await self._with_retries(message, answer)
        except TimeoutError:
            await self._cancel_quietly(answer)
            self._fail(
                f"did not finish within {self.timeout:g}s (timeout=); raise timeout= "
                "if it needs longer, or check that the remote is not stuck",
                retryable=True,
            )
        try:
            result = answer.result(self.model, time.perf_counter() - began, began_at)
        except Refused as refused:
            self._fail(refused.what, state=refused.state)
        if meter is not None:
            meter.charge(result.token_usage.total_tokens, answer.cost)
        return result

    async def _with_retries(self, message: Message, answer: Answer) -> None:
        policy = self.retry_policy

        def transient(exc: BaseException) -> bool:
            return isinstance(exc, RemoteAgentError) and exc.retryable

        def report(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            answer.scope.emit(
                events.RetryScheduled,
                agent_name=self.name,
                scope="model_call",
                attempt=state.attempt_number,
                delay_seconds=state.next_action.sleep if state.next_action else 0.0,
                error=str(error),
                model=self.model,
            )

        retrying = AsyncRetrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(policy.max_retries + 1),
            wait=lambda state: policy.delay(state.attempt_number),
            before_sleep=report,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                answer.reset()
                await self._attempt(message, answer)

    async def _attempt(self, message: Message, answer: Answer) -> None:
        """One send of the task, its events folded into ``answer`` as they come."""
        transport = self._transport()
        async with self._http(transport) as http:
            factory = ClientFactory(
                ClientConfig(
                    streaming=True,
                    httpx_client=http,
                    accepted_output_modes=list(ACCEPTED_OUTPUT_MODES),
                )
            )
            failed: tuple[str, bool, str] | None = None  # (what, retryable, state)
            try:
                if self.card is not None:
                    client = factory.create(self.card)
                else:
                    client = await factory.create_from_url(self.url)
                try:
                    stream: AsyncIterator[StreamResponse] = client.send_message(
                        SendMessageRequest(message=message)
                    )
                    async for response in stream:
                        answer.take(response)
                    # A task still at work after one JSON reply is polled; after an event
                    # stream, the stream was cut (the protocol ends one only when the task
                    # stops), and check_finished says so.
                    if answer.task_id and answer.pending and not transport.streamed:
                        await self._poll(client, answer)
                    if answer.task_id and not answer.done:  # an interrupted task: do not leave it
                        await self._cancel_with(client, answer.task_id)
                    answer.check_finished()
                finally:
                    await client.close()
            except Refused as refused:
                failed = (refused.what, refused.retryable, refused.state)
            except (RemoteAgentError, asyncio.CancelledError):
                raise
            except Exception as exc:  # the SDK's errors, httpx's, or a parser's
                limit, secrets = self._byte_limit, self._secrets()
                explained = explain(exc, byte_limit=limit, secrets=secrets)
                failed = (explained.what, explained.retryable, "")
        if failed is not None:
            # Raised outside the except blocks: the SDK's exception may quote what the remote
            # said (our token, echoed) unredacted, so it is no __context__ of ours.
            self._fail(failed[0], retryable=failed[1], state=failed[2])

    @property
    def _byte_limit(self) -> int:
        """The most bytes one response may hold, decoded: the text, JSON framing and escapes."""
        return self.max_output_chars * 4 + 65_536

    def _transport(self) -> LenientTransport:
        """The transports under one attempt's HTTP client (see ``_http`` and ``_lenient``)."""
        inner: httpx.AsyncBaseTransport = CappedTransport(
            httpx.AsyncHTTPTransport(), self._byte_limit
        )
        if self.headers:  # without headers there is nothing to keep from another origin
            home = origin_of(self.url)
            inner = OriginCheck(inner, home, {home, *self.trusted_origins})
        # Decoded and capped as it arrives; then each result's malformed optional fields dropped.
        return LenientTransport(inner, self._secrets())

    def _http(self, transport: httpx.AsyncBaseTransport) -> httpx.AsyncClient:
        headers = httpx.Headers(dict(self.headers))
        headers["Accept-Encoding"] = ACCEPT_ENCODING  # only what CappedTransport decodes itself
        return httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),  # the task's timeout bounds it
            transport=transport,
        )

    @staticmethod
    async def _poll(client: Client, answer: Answer) -> None:
        """Get the task until it is no longer submitted or working (the call's timeout bounds it).

        A remote that does not stream answers a message with the task as it stands,
        maybe just submitted (FastA2A always does): its end comes by ``GetTask``.
        """
        delay = _POLL_FIRST
        while answer.pending:
            await asyncio.sleep(delay)
            delay = min(delay * 2, _POLL_MOST)
            task = await client.get_task(GetTaskRequest(id=answer.task_id))
            answer.take(StreamResponse(task=task))

    async def _cancel_quietly(self, answer: Answer) -> None:
        """Ask the remote to cancel a task we gave up on; a failure here changes nothing."""
        if not answer.task_id:
            return
        try:
            async with asyncio.timeout(_CANCEL_TIMEOUT):
                async with self._http(self._transport()) as http:
                    factory = ClientFactory(ClientConfig(streaming=False, httpx_client=http))
                    client = factory.create(self.card) if self.card is not None else None
                    if client is None:
                        client = await factory.create_from_url(self.url)
                    await self._cancel_with(client, answer.task_id)
        except Exception:
            pass

    @staticmethod
    async def _cancel_with(client: Any, task_id: str) -> None:
        try:
            async with asyncio.timeout(_CANCEL_TIMEOUT):
                await client.cancel_task(CancelTaskRequest(id=task_id))
        except Exception:
            pass

    def _secrets(self) -> tuple[str, ...]:
        """Our credentials a remote may quote back: the headers, and the environment's."""
        return (*secret_values(settings={"headers": self.headers}), *env_secrets())

    def _fail(self, what: str, *, retryable: bool = False, state: str = "") -> NoReturn:
        # Whole: the remote's words were redacted before they were cut; this catches the rest
        # (a connection error's text, credentials in the URL).
        message = f"Remote agent {self.name!r} at {self.url} {what}"
        raise RemoteAgentError(
            redact(message, *self._secrets()) + ("" if what.endswith("?") else "."),
            agent_name=self.name,
            url=self.url,
            retryable=retryable,
            state=state,
        )


class _RemoteToolFailed(Exception):
    """A remote agent called as a tool failed: reported to the calling model as a tool error."""


def _card_url(card: AgentCard, name: str) -> str:
    for interface in card.supported_interfaces:
        if interface.url:
            return interface.url
    raise UserError(
        f"RemoteAgent {name!r}: the agent card {card.name!r} names no URL "
        "(supported_interfaces); pass the agent's URL instead."
    )


def _origins(owner: str, origins: Sequence[str]) -> tuple[str, ...]:
    """``trusted_origins`` as origins; UserError for one that is no http(s) URL."""
    if isinstance(origins, str) or not isinstance(origins, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(
            f"{owner}: trusted_origins must be a list of origins such as "
            f"['https://agents.example.com'], got {origins!r}."
        )
    found: list[str] = []
    for origin in origins:
        if not isinstance(origin, str) or not origin.startswith(("http://", "https://")):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"{owner}: each of trusted_origins is an http(s) origin such as "
                f"'https://agents.example.com', got {origin!r}."
            )
        try:
            found.append(origin_of(origin))
        except (httpx.InvalidURL, ValueError) as error:
            raise UserError(f"{owner}: trusted_origins has {origin!r}: {error}.") from None
    return tuple(found)
