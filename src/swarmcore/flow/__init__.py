"""Flows: the model (``>>``, ``|``, groups, control nodes), its expression language, its shape.

- :mod:`~swarmcore.flow.model`: :class:`Flow`, :func:`chain`, :func:`parallel`,
  the node classes and parallel groups with their policies.
- :mod:`~swarmcore.flow.parse`: reading ``a >> (b | c)`` safely (``Flow.parse``).
- :mod:`~swarmcore.flow.shape`: the flow's shape, one value every consumer
  reads (``flow.shape()``; the store keeps its JSON).
- :mod:`~swarmcore.flow.render`: drawing a shape as an expression, a Mermaid
  chart or a terminal tree.

Imports point one way: ``model`` uses ``parse``, ``render`` and ``shape``;
``render`` uses ``shape``; none of them imports ``model``, and nothing here
imports the agent, the swarm or the faces.
"""

from __future__ import annotations

from swarmcore.flow.model import (
    Composable,
    ControlNode,
    Flow,
    FlowNode,
    Group,
    Member,
    Step,
    chain,
    control_nodes,
    parallel,
    shape_of,
    step_entries,
    step_exits,
)
from swarmcore.flow.render import render_expression, render_mermaid, render_tree, step_expression
from swarmcore.flow.shape import (
    AgentShape,
    ControlShape,
    FlowShape,
    GroupShape,
    LoopShape,
    MemberShape,
    NodeShape,
    PlanShape,
    RouteShape,
    StepShape,
)

__all__ = [
    "AgentShape",
    "Composable",
    "ControlNode",
    "ControlShape",
    "Flow",
    "FlowNode",
    "FlowShape",
    "Group",
    "GroupShape",
    "LoopShape",
    "Member",
    "MemberShape",
    "NodeShape",
    "PlanShape",
    "RouteShape",
    "Step",
    "StepShape",
    "chain",
    "control_nodes",
    "parallel",
    "render_expression",
    "render_mermaid",
    "render_tree",
    "shape_of",
    "step_entries",
    "step_exits",
    "step_expression",
]
