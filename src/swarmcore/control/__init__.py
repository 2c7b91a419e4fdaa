"""Control flow nodes: routing, loops and planning, composable with ``>>`` and ``|``.

Each node is a FlowNode, so ``a >> route({...}, by=...) >> d`` is an ordinary
three-step flow. The nodes are data: what to choose between, what to repeat,
whom to ask; :func:`execute` runs them for the walk. The agents inside a node (a
router, branches, a loop body, a judge, a planner and the agents it may use)
are agents of the flow: their names are unique and ``flow.agents`` lists them.

- :func:`route` runs one of several branches, chosen by a Python predicate
  over the context or by a router agent whose answer is constrained to the
  branch names.
- :func:`loop` repeats a sub-flow until a predicate or a judge agent says it
  is done, or ``max_iterations``; iteration ``k`` of agent ``writer`` is
  recorded as ``writer#k``, so every iteration stays visible.
- :func:`plan` asks a planner agent to write a flow in the ``>>``/``|``
  language from the agents it is given, parses and validates it (errors go
  back to the planner), and runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swarmcore._flow import ControlNode
from swarmcore.control._common import Predicate, call_predicate
from swarmcore.control._loop import Loop, Verdict, judge_of, loop, run_loop
from swarmcore.control._plan import Plan, PlanAnswer, plan, planner_of, run_plan
from swarmcore.control._route import Route, route, router_of, run_route
from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore._walk import Position, Walk

__all__ = [
    "Loop",
    "Plan",
    "PlanAnswer",
    "Predicate",
    "Route",
    "Verdict",
    "call_predicate",
    "execute",
    "judge_of",
    "loop",
    "plan",
    "planner_of",
    "route",
    "router_of",
]


async def execute(node: ControlNode, walk: Walk, at: Position) -> Position:
    """Run a route, loop or plan at ``at`` of ``walk``; the position after it.

    Raises:
        UserError: A predicate raised or chose no branch, or ``node`` is no control step.
    """
    match node:
        case Route():
            return await run_route(node, walk, at)
        case Loop():
            return await run_loop(node, walk, at)
        case Plan():
            return await run_plan(node, walk, at)
        case _:
            raise UserError(f"Flow step {node!r} is a control step swarmcore cannot run.")
