"""The CLI's own error: a user error, printed as one line."""

from __future__ import annotations


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""
