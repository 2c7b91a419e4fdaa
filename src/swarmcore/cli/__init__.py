"""The ``swarmcore`` command: a thin layer over the public API.

```
swarmcore run FILE_OR_MODULE:FLOW "task"    run a flow (stored, so it can be resumed)
swarmcore demo ["task"]                     the demo flow; offline when no key is set
swarmcore runs list | show | resume | prune stored runs
swarmcore graph FILE_OR_MODULE:FLOW         draw a flow: Mermaid, expression or tree
```

Runs are stored in ``$SWARMCORE_STORE`` (else the user's data directory) unless
``--no-store`` is given. A user error prints one line and exits 2; a run that
fails (an agent, a group, a budget) prints its error and how to resume it, and
exits 1. Commands that make no model call never import litellm, so they start
at once: heavy imports live inside the command functions.

The modules: ``app`` (arguments and ``main``), ``targets`` (loading a flow),
``run`` (``run``, ``demo``), ``runs`` (``runs ...``), ``shape`` (reading a
stored run's shape), ``graph`` (``graph``) and ``format``.
"""

from swarmcore.cli._app import main
from swarmcore.cli._errors import CLIError
from swarmcore.cli._targets import load_target

__all__ = ["CLIError", "load_target", "main"]
