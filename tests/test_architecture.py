"""The package's layers: no import cycle between its modules, lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "swarmcore"
CORE = (
    "_flow",
    "agent",
    "_loop",
    "_walk",
    "context",
    "modes",
    "llm",
    "_prompt",
    "_settings",
    "durable",
)
FACES = ("console", "cli", "tracing", "store", "testing", "_swarm", "_dryrun", "demo", "engines")


def _module_name(path: Path) -> str:
    parts = ["swarmcore", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every swarmcore module ``path`` imports at run time, inside functions too.

    Imports under ``if TYPE_CHECKING:`` are left out: they never run.
    """
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("swarmcore"))
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("swarmcore")
        ):
            found.add(node.module)
            # `from swarmcore import events` imports the submodule events.
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {_owner(name, modules) for name in found if _owner(name, modules)}


def _owner(name: str, modules: dict[str, Path]) -> str:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {m for m in _imports(path, modules) if m != name and m != "swarmcore"}
        for name, path in modules.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _package_parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(2, len(parts))}


def test_no_import_cycle_between_modules_lazy_imports_included() -> None:
    graph = _graph()
    # A package's __init__ re-exporting its own submodules is not a cycle between concepts.
    for name, deps in graph.items():
        graph[name] = {d for d in deps if d not in _package_parents(name)}
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize("core", CORE)
def test_the_core_never_imports_a_face_the_store_or_testing(core: str) -> None:
    graph = _graph()
    names = [n for n in graph if n == f"swarmcore.{core}" or n.startswith(f"swarmcore.{core}.")]
    assert names, f"no module swarmcore.{core}"
    for name in names:
        bad = [
            dep
            for dep in graph[name]
            if any(dep == f"swarmcore.{f}" or dep.startswith(f"swarmcore.{f}.") for f in FACES)
        ]
        assert not bad, f"{name} imports {bad}"


def test_flow_never_imports_agent() -> None:
    graph = _graph()
    for name, deps in graph.items():
        if name == "swarmcore._flow" or name.startswith("swarmcore._flow."):
            assert "swarmcore.agent" not in deps, name


# The modules users are told to import (docs/contributing.md lists them); every other
# module has an underscore name. A new public module is a decision: add it here and there.
PUBLIC = {
    "swarmcore",
    "swarmcore.a2a",
    "swarmcore.ag_ui",
    "swarmcore.agent",
    "swarmcore.cli",
    "swarmcore.console",
    "swarmcore.context",
    "swarmcore.control",
    "swarmcore.demo",
    "swarmcore.durable",
    "swarmcore.engines",
    "swarmcore.engines.dbos",
    "swarmcore.engines.temporal",
    "swarmcore.errors",
    "swarmcore.evals",
    "swarmcore.events",
    "swarmcore.llm",
    "swarmcore.llm.backends",
    "swarmcore.llm.choice",
    "swarmcore.mcp",
    "swarmcore.models",
    "swarmcore.modes",
    "swarmcore.results",
    "swarmcore.scope",
    "swarmcore.store",
    "swarmcore.store.records",
    "swarmcore.testing",
    "swarmcore.testing.pytest_plugin",
    "swarmcore.tracing",
}


def _private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split(".")[1:])


def _declares_all(path: Path) -> bool:
    for node in ast.parse(path.read_text()).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def test_every_module_outside_the_public_list_has_an_underscore_name() -> None:
    public = {name for name in _modules() if not _private(name) and not name.endswith("__main__")}
    assert public == PUBLIC


def test_public_modules_alone_carry_all() -> None:
    modules = _modules()
    carrying = {name for name, path in modules.items() if _declares_all(path)}
    assert not {name for name in carrying if _private(name)}
    # the pytest plugin is a set of fixtures pytest finds by entry point, not imports
    assert carrying == PUBLIC - {"swarmcore.testing.pytest_plugin"}
