"""``python -m swarmcore.cli``: the ``swarmcore`` command."""

import gc
import sys

from swarmcore.cli._app import main

code = main()
# The process ends here. Freezing what is left spares the interpreter's shutdown the
# collection of every loaded module's objects (LiteLLM, DBOS, pydantic's models: one
# to three seconds per process, paid by every worker a SIGTERM stops).
gc.freeze()
sys.exit(code)
