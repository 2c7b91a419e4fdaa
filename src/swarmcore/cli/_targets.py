"""Loading what the command runs: a Flow, Agent or Swarm from a file or a module."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from swarmcore._flow import Flow, FlowNode
from swarmcore._swarm import Swarm
from swarmcore._walk import runs_its_step
from swarmcore.agent import Agent
from swarmcore.cli._errors import CLIError

_loaded_modules: list[ModuleType] = []
"""Flow files loaded by this process: kept alive, since test models are held weakly."""


def load_target(spec: str, *, cwd: Path | None = None) -> Flow | Agent | Swarm:
    """Load ``path/to/file.py:name`` or ``package.module:name``.

    Args:
        spec: The target, as given on the command line.
        cwd: The directory a relative file path (and a module) is found from;
            the current directory by default.

    Raises:
        CLIError: The spec is malformed, the file or attribute is missing, the
            file fails to import, or the object is not a Flow, Agent or Swarm.
    """
    location, sep, attr = spec.rpartition(":")
    if not sep or not location or not attr:
        raise CLIError(f"expected FILE_OR_MODULE:NAME (e.g. flows.py:flow), got {spec!r}")
    base = cwd or Path.cwd()
    path = base / location
    if location.endswith(".py") or path.is_file():
        module = _load_file(location, path)
    else:
        if str(base) not in sys.path:
            sys.path.insert(0, str(base))
        try:
            module = importlib.import_module(location)
        except ImportError as exc:
            raise CLIError(f"cannot import module {location!r}: {exc}") from exc
        except Exception as exc:
            raise CLIError(f"importing {location} raised {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise CLIError(f"{location} has no attribute {attr!r}")
    target: object = getattr(module, attr)
    if not isinstance(target, Flow | Agent | Swarm):
        raise CLIError(f"{spec} is a {type(target).__name__}, not a Flow, Agent or Swarm")
    return target


def _load_file(location: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise CLIError(f"no such file: {location}")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise CLIError(f"cannot import {location}")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise CLIError(f"importing {location} raised {type(exc).__name__}: {exc}") from exc
    _loaded_modules.append(module)
    return module


def as_flow(target: Flow | Agent | Swarm) -> Flow:
    """The flow of a Swarm, an Agent as a one-step flow, or the flow itself."""
    if isinstance(target, Swarm):
        return target.flow
    return Flow([target]) if isinstance(target, Agent) else target


def model_name(model: str) -> str:
    """``model``, with ``offline`` (or the offline model's string) registered in this process."""
    from swarmcore.testing import offline_model

    offline = offline_model()
    return offline if model in ("offline", offline) else model


def on_model(flow: Flow, model: str) -> Flow:
    """``flow`` with every agent on ``model`` and no fallback models.

    A remote agent (an A2A ``RemoteAgent``) has no model: it stays as it is.
    """
    name = model_name(model)

    def swap(node: FlowNode) -> FlowNode:
        if not isinstance(node, Agent):
            raise CLIError(f"--model applies to Agents; {node!r} is not one")
        if runs_its_step(node):
            return node
        # The agent's own backend was chosen for its own model; the Swarm's still applies.
        return node.clone(model=name, fallback_models=(), backend=None)

    return flow.map_agents(swap)
