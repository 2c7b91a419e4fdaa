"""Flows: the model (``>>``, ``|``, groups, control nodes), its expression language, its shape.

- :mod:`~swarmcore._flow.model`: :class:`Flow`, :func:`chain`, :func:`parallel`,
  the node classes and parallel groups with their policies.
- :mod:`~swarmcore._flow.parse`: reading ``a >> (b | c)`` safely (``Flow.parse``).
- :mod:`~swarmcore._flow.shape`: the flow's shape, one value every consumer
  reads (``flow.shape()``; the store keeps its JSON).
- :mod:`~swarmcore._flow.render`: drawing a shape as an expression, a Mermaid
  chart or a terminal tree.

Imports point one way: ``model`` uses ``parse``, ``render`` and ``shape``;
``render`` uses ``shape``; none of them imports ``model``, and nothing here
imports the agent, the swarm or the faces.
"""

from __future__ import annotations

from swarmcore._flow.model import (
    Composable as Composable,
)
from swarmcore._flow.model import (
    ControlNode as ControlNode,
)
from swarmcore._flow.model import (
    Flow as Flow,
)
from swarmcore._flow.model import (
    FlowNode as FlowNode,
)
from swarmcore._flow.model import (
    Group as Group,
)
from swarmcore._flow.model import (
    Member as Member,
)
from swarmcore._flow.model import (
    Step as Step,
)
from swarmcore._flow.model import (
    chain as chain,
)
from swarmcore._flow.model import (
    control_nodes as control_nodes,
)
from swarmcore._flow.model import (
    parallel as parallel,
)
from swarmcore._flow.model import (
    shape_of as shape_of,
)
from swarmcore._flow.model import (
    step_entries as step_entries,
)
from swarmcore._flow.model import (
    step_exits as step_exits,
)
from swarmcore._flow.render import render_expression as render_expression
from swarmcore._flow.render import render_mermaid as render_mermaid
from swarmcore._flow.render import render_tree as render_tree
from swarmcore._flow.render import step_expression as step_expression
from swarmcore._flow.shape import (
    AgentShape as AgentShape,
)
from swarmcore._flow.shape import (
    ControlShape as ControlShape,
)
from swarmcore._flow.shape import (
    FlowShape as FlowShape,
)
from swarmcore._flow.shape import (
    GroupShape as GroupShape,
)
from swarmcore._flow.shape import (
    LoopShape as LoopShape,
)
from swarmcore._flow.shape import (
    MemberShape as MemberShape,
)
from swarmcore._flow.shape import (
    NodeShape as NodeShape,
)
from swarmcore._flow.shape import (
    PlanShape as PlanShape,
)
from swarmcore._flow.shape import (
    RouteShape as RouteShape,
)
from swarmcore._flow.shape import (
    StepShape as StepShape,
)
