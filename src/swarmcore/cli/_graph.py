"""``swarmcore graph``: a flow as Mermaid, its expression, or a tree for the terminal."""

from __future__ import annotations

import argparse

from swarmcore._flow import render_tree
from swarmcore.cli._targets import as_flow, load_target


def command_graph(args: argparse.Namespace) -> int:
    """``swarmcore graph``: print the target flow as Mermaid, its expression or a tree."""
    flow = as_flow(load_target(args.target))
    if args.format == "text":
        print(flow.expression())
    elif args.format == "tree":
        print(render_tree(flow.shape()))
    else:
        print(flow.to_mermaid())
    return 0
