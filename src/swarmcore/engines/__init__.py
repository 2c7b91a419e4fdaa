"""Where runs execute. The in-process engine is the default; others wrap the same walk.

An engine takes a run set up by the :class:`~swarmcore.Swarm` facade and walks
its flow, calling each agent through the walk's one seam
(:data:`~swarmcore._walk.AgentRunner`). :class:`Engine` is what every engine
does; a durable engine (in its own package under ``swarmcore.engines``) declares what it
adds with :class:`DurableEngine`, :class:`CanEnqueue`, :class:`CanApprove` and
:class:`CanMap`, and the Swarm uses a capability only on an engine that declares it;
the viewer decides waiting calls only through an :class:`ApprovalInbox`.
"""

from swarmcore.engines._base import (
    ApprovalInbox,
    Budget,
    CanApprove,
    CanEnqueue,
    CanMap,
    CanRequeue,
    DurableEngine,
    Engine,
    Execution,
    RecordedOutcome,
    Requeued,
    RunHandle,
    RunInputs,
    Subscriber,
)
from swarmcore.engines._local import LocalEngine, stream_events

__all__ = [
    "ApprovalInbox",
    "Budget",
    "CanApprove",
    "CanEnqueue",
    "CanMap",
    "CanRequeue",
    "DurableEngine",
    "Engine",
    "Execution",
    "LocalEngine",
    "RecordedOutcome",
    "Requeued",
    "RunHandle",
    "RunInputs",
    "Subscriber",
    "stream_events",
]
