"""Where runs execute. The in-process engine is the default; others wrap the same walk.

An engine takes a run set up by the :class:`~swarmcore.Swarm` facade and walks
its flow, calling each agent through the walk's one seam
(:data:`~swarmcore.walk.AgentRunner`).
"""

from swarmcore.engines.local import Budget, Engine, LocalEngine, Subscriber, stream_events

__all__ = ["Budget", "Engine", "LocalEngine", "Subscriber", "stream_events"]
