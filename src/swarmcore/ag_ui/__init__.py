"""AG-UI: a flow served to any AG-UI front end (CopilotKit and the like).

:func:`to_ag_ui` (or ``swarm.to_ag_ui()``, or ``swarmcore serve TARGET --ag-ui``)
serves a Swarm as an AG-UI agent: a ``RunAgentInput`` starts a run, streamed
back as AG-UI events; a tool that requires approval becomes an AG-UI interrupt
that the client's next run answers. ``docs/ag-ui.md`` shows the whole mapping.

Needs the extra: ``pip install 'swarmcore[ag-ui]'``. Importing ``swarmcore``
does not import this package (nor the protocol's package).
"""

from swarmcore.ag_ui._server import ANSWER_WITHIN, MAX_REQUEST_BYTES, to_ag_ui
from swarmcore.ag_ui._translate import APPROVAL_REASON, APPROVAL_SCHEMA

__all__ = [
    "ANSWER_WITHIN",
    "APPROVAL_REASON",
    "APPROVAL_SCHEMA",
    "MAX_REQUEST_BYTES",
    "to_ag_ui",
]
