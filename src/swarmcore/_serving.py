"""What the serving faces (A2A, AG-UI) share: what a served run says, and the errors shown.

A served run hands its protocol's stream the run's events, a question for the
client (:class:`Ask`) and its end (:class:`Done`, or the face's own failure).
A client on the other side of a socket gets an error's first line, every
credential in the environment masked, never a traceback.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from swarmcore._tools import Approval, ApprovalRequest
from swarmcore.llm._redaction import env_secrets, redact
from swarmcore.results import SwarmResult

MAX_MESSAGE = 500
"""The most characters of an error's message a client is sent."""


def error_message(error: BaseException | None) -> str:
    """An error's first line, credentials in the environment masked: what the client sees."""
    # Redacted whole, then cut: a key cut in two at the limit would no longer be found.
    text = redact(str(error), *env_secrets()).strip() or type(error).__name__
    line = text.splitlines()[0]
    if len(line) > MAX_MESSAGE:
        line = line[: MAX_MESSAGE - 1] + "…"
    return line


@dataclass
class Ask:
    """The run waits for the client's decision on ``request``."""

    request: ApprovalRequest
    answer: asyncio.Future[Approval]


@dataclass
class Done:
    """The run finished with ``result``."""

    result: SwarmResult
