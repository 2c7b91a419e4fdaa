"""The CLI's own error: a user error, printed as one line; and the extras commands need."""

from __future__ import annotations

import importlib

__all__ = ["CLIError", "require_dbos"]


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def require_dbos(command: str) -> None:
    """Check that the ``dbos`` extra is installed, before ``command`` needs it.

    Raises:
        CLIError: DBOS or psycopg is missing; the message names the extra to install.
    """
    for module in ("dbos", "psycopg"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise CLIError(
                f"{command} needs the [dbos] extra ({exc.name or module} is missing): "
                "pip install 'swarmcore[dbos]'"
            ) from exc
