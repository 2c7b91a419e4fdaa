"""The line a remote client is shown for an error: what the serving faces (A2A, AG-UI) send.

A client on the other side of a socket gets the error's first line, every
credential in the environment masked, never a traceback.
"""

from __future__ import annotations

from swarmcore.llm._redaction import env_secrets, redact

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
