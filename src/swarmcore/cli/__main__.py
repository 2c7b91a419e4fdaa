"""``python -m swarmcore.cli``: the ``swarmcore`` command."""

from swarmcore.cli._app import console

console()
