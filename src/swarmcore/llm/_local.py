"""Models served inside the process: the native backend's exchange, without the network.

A model named ``swarmcore-test/<name>`` (the offline, scripted, function and
replay models of ``swarmcore.testing``) is answered by a ``LocalEndpoint``
instead of an HTTP server. The native backend builds the request's body as
for any endpoint and reads the ``Response`` with the code that reads an HTTP
one: a chat completion's JSON, server-sent event lines when the request
streams, or an error status with its JSON body and headers (``Retry-After``).
So an agent on a test model takes the default path, request to reply, and
never LiteLLM's, whichever backend is chosen.

``swarmcore.testing`` installs its endpoint (``serve``) when imported; this
package never imports it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

PREFIX = "swarmcore-test/"
"""The prefix of every in-process model's string."""


class Response(Protocol):
    """What the native backend reads of an endpoint's answer, over HTTP or in process."""

    @property
    def status(self) -> int:
        """The HTTP status."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        ...

    @property
    def content_type(self) -> str:
        """The media type, without parameters: ``application/json``, ``text/event-stream``."""
        ...

    async def head(self, size: int) -> bytes:
        """The first ``size`` bytes of the body (an error's text)."""
        ...

    async def body(self) -> bytes:
        """The whole body."""
        ...

    def lines(self) -> AsyncIterator[str]:
        """The body's lines (server-sent events), then ``""`` for its end."""
        ...


class LocalEndpoint(Protocol):
    """Answers chat-completions requests in process, as an OpenAI-compatible server would."""

    async def post(self, name: str, body: str) -> Response:
        """Answer one request for the model ``name`` (the part after ``PREFIX``).

        Args:
            name: The model's name, e.g. ``scripted-1``.
            body: The request body, the JSON text an HTTP endpoint would receive.
        """
        ...

    def model_info(self, name: str) -> Mapping[str, object]:
        """What the model ``name`` declares of itself (``supports_*`` flags); empty if nothing."""
        ...


@dataclass(frozen=True, slots=True)
class LocalResponse:
    """An in-process answer: a JSON body, or server-sent event lines.

    Args:
        status: The HTTP status (200, or an error's).
        headers: Response headers; ``Content-Type`` is added from the body's kind.
        data: The JSON body (a chat completion, or an ``error`` object).
        events: The lines of a streamed reply (``data: {...}``, ``""``...), for a
            request that streams; None for a JSON body.
    """

    status: int
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    data: bytes = b""
    events: Sequence[str] | None = None

    @classmethod
    def json(
        cls, status: int, payload: object, headers: Mapping[str, str] | None = None
    ) -> LocalResponse:
        """A JSON answer with ``status``."""
        data = json.dumps(payload).encode()
        return cls(status, {**(headers or {}), "Content-Type": "application/json"}, data)

    @classmethod
    def stream(
        cls, events: Sequence[str], headers: Mapping[str, str] | None = None
    ) -> LocalResponse:
        """A streamed answer: ``events``' lines as a ``text/event-stream`` body."""
        return cls(200, {**(headers or {}), "Content-Type": "text/event-stream"}, events=events)

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` header's media type."""
        for name, value in self.headers.items():
            if name.lower() == "content-type":
                return value.partition(";")[0].strip().lower()
        return "application/octet-stream"

    async def head(self, size: int) -> bytes:
        """The first ``size`` bytes of the JSON body."""
        return self.data[:size]

    async def body(self) -> bytes:
        """The JSON body."""
        return self.data

    async def lines(self) -> AsyncIterator[str]:
        """The event lines, then ``""``; a JSON body's lines when no events were given."""
        for line in self.events if self.events is not None else self.data.decode().splitlines():
            yield line
        yield ""


_served: LocalEndpoint | None = None


def serve(local: LocalEndpoint) -> None:
    """Answer every ``swarmcore-test/...`` model with ``local`` (``swarmcore.testing`` does)."""
    global _served
    _served = local


def is_local(model: str) -> bool:
    """Whether ``model`` is answered in process (``swarmcore-test/...``)."""
    return model.startswith(PREFIX)


def endpoint() -> LocalEndpoint:
    """The endpoint serving in-process models; one that knows none before ``serve``."""
    return _served or _Nobody()


def model_info(model: str) -> Mapping[str, object]:
    """What an in-process model declares of itself: its ``supports_*`` flags, or nothing."""
    return endpoint().model_info(model.removeprefix(PREFIX))


class _Nobody:
    """Stands for ``swarmcore.testing``'s endpoint before it is imported: every model unknown."""

    async def post(self, name: str, body: str) -> Response:
        message = f"No test model named {name!r}; build one with swarmcore.testing."
        return LocalResponse.json(404, {"error": {"message": message, "type": "not_found"}})

    def model_info(self, name: str) -> Mapping[str, object]:
        return {}
