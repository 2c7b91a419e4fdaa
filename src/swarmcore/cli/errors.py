"""The CLI's own error: a user error, printed as one line."""

from __future__ import annotations

__all__ = ["CLIError"]


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""
