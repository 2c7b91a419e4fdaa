"""Guards only: no provider keys leak into tests, and litellm never fetches its price map."""

from __future__ import annotations

import os

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
