"""Guards (no provider keys leak into tests, litellm never fetches its price map) and peers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

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
