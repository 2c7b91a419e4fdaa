"""Which backend serves a model: the native OpenAI one, or LiteLLM."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from swarmcore import Agent, AgentDefaults, UserError
from swarmcore.llm import choice
from swarmcore.llm._litellm_backend import LiteLLMBackend
from swarmcore.llm._openai_backend import OpenAIBackend
from swarmcore.llm._types import CallSpec
from swarmcore.llm.backends import backend_for
from swarmcore.llm.choice import model_backend
from swarmcore.testing import offline_model
from tests.helpers import QUICK_EXIT


@pytest.fixture(autouse=True)
def _auto() -> Iterator[None]:
    yield
    with pytest.deprecated_call():
        choice.set_model_backend(None)


def _backend(model: str, backend: Any = None, **settings: Any) -> str:
    call = CallSpec(agent_name="a", model=model, settings=settings, backend=backend)
    return _served(call, model)


def _served(call: CallSpec, model: str) -> str:
    backend = backend_for(call, model)
    assert isinstance(backend, OpenAIBackend | LiteLLMBackend)
    return "native" if isinstance(backend, OpenAIBackend) else "litellm"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("openai/gpt-4o-mini", "native"),
        ("openai/any-name-a-local-server-serves", "native"),
        ("gpt-4o-mini", "native"),  # a bare OpenAI name, as LiteLLM takes it
        ("anthropic/claude-sonnet-4-5", "litellm"),
        ("groq/llama-3.1-8b-instant", "litellm"),
        ("claude-3-5-sonnet-20240620", "litellm"),  # bare, but not OpenAI's
        (offline_model(), "native"),  # answered in process, beneath the native backend
    ],
)
def test_openai_models_use_the_native_backend_by_default(model: str, expected: str) -> None:
    assert _backend(model) == expected


def test_test_models_stay_native_whatever_backend_is_chosen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMCORE_MODEL_BACKEND", "litellm")
    assert _backend(offline_model()) == "native"
    assert _backend(offline_model(), backend="litellm") == "native"
    assert _backend(offline_model(), success_callback=["langfuse"]) == "native"


def test_an_agent_can_force_either_backend() -> None:
    assert _backend("openai/gpt-4o-mini", backend="litellm") == "litellm"
    assert _backend("groq/llama-3.1-8b-instant", backend="native") == "native"


def _chosen(agent: Agent, defaults: AgentDefaults | None = None) -> str:
    """The backend serving ``agent``'s model, with its settings resolved as a run resolves them."""
    settings = (defaults or AgentDefaults()).resolve(agent)
    call = CallSpec(agent_name=agent.name, model=agent.model, backend=settings.backend)
    return _served(call, agent.model)


def test_the_backend_is_an_agent_setting_with_a_swarm_default() -> None:
    mini = "openai/gpt-4o-mini"
    assert _chosen(Agent("a", "x", model=mini, backend="litellm")) == "litellm"
    assert _chosen(Agent("a", "x", model="groq/llama", backend="native")) == "native"
    assert _chosen(Agent("a", "x", model=mini), AgentDefaults(backend="litellm")) == "litellm"
    agent = Agent("a", "x", model=mini, backend="auto")  # the agent's own wins over the default
    assert _chosen(agent, AgentDefaults(backend="litellm")) == "native"
    assert Agent("a", "x").backend is None
    assert AgentDefaults().backend is None


def test_the_old_spellings_of_the_backend_warn_naming_the_new_and_still_work() -> None:
    with pytest.deprecated_call(
        match=r"model_settings=\{'backend': 'litellm'\} is deprecated; "
        r"pass Agent\(\.\.\., backend='litellm'\)"
    ):
        agent = Agent("a", "x", model_settings={"backend": "litellm", "temperature": 0.2})
    assert agent.backend == "litellm"
    assert agent.model_settings == {"temperature": 0.2}  # never sent to the provider
    assert _chosen(agent) == "litellm"
    with pytest.deprecated_call(
        match="the backend name 'openai' is deprecated; it is now 'native'"
    ):
        agent = Agent("a", "x", model="groq/llama", backend="openai")  # type: ignore[arg-type]
    assert agent.backend == "native"
    with pytest.deprecated_call(match="'openai' is deprecated; it is now 'native'"):
        assert AgentDefaults(backend="openai").backend == "native"  # type: ignore[arg-type]
    with pytest.deprecated_call(
        match=r"set_model_backend\(\) is deprecated; .*AgentDefaults\(backend=\.\.\.\)"
    ):
        choice.set_model_backend("litellm")
    assert _backend("openai/gpt-4o-mini") == "litellm"


def test_a_backend_given_twice_must_agree() -> None:
    with pytest.deprecated_call(), pytest.raises(UserError, match="disagree; keep backend= alone"):
        Agent("a", "x", backend="native", model_settings={"backend": "litellm"})
    with pytest.deprecated_call():
        agent = Agent("a", "x", backend="native", model_settings={"backend": "native"})
    assert agent.backend == "native"


def test_settings_only_litellm_understands_keep_an_agent_on_litellm() -> None:
    assert _backend("openai/gpt-4o-mini", mock_response="hi") == "litellm"
    assert _backend("openai/gpt-4o-mini", success_callback=["langfuse"]) == "litellm"
    assert _backend("openai/gpt-4o-mini", temperature=0.2) == "native"


def test_the_global_setting_sends_everything_through_litellm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.deprecated_call():
        choice.set_model_backend("litellm")
    assert _backend("openai/gpt-4o-mini") == "litellm"
    assert _backend("openai/gpt-4o-mini", backend="native") == "native"  # the agent's wins
    monkeypatch.setenv("SWARMCORE_MODEL_BACKEND", "litellm")
    with pytest.deprecated_call():
        choice.set_model_backend("auto")  # set explicitly: wins over the environment
    assert _backend("openai/gpt-4o-mini") == "native"


def test_the_environment_variable_chooses_when_nothing_else_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMCORE_MODEL_BACKEND", "litellm")
    assert model_backend() == "litellm"
    assert _backend("openai/gpt-4o-mini") == "litellm"


def test_an_unknown_backend_name_says_which_exist() -> None:
    with pytest.raises(
        UserError, match=r"unknown model backend 'lightllm'; use one of auto, native, litellm"
    ):
        Agent("a", "x", backend="lightllm")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"AgentDefaults: backend: unknown model backend 'oai'"):
        AgentDefaults(backend="oai")  # type: ignore[arg-type]
    with (
        pytest.deprecated_call(),
        pytest.raises(UserError, match=r"Agent 'a': model_settings\['backend'\]: unknown"),
    ):
        Agent("a", "x", model_settings={"backend": "oai"})


def test_preload_imports_what_the_models_need_and_nothing_else() -> None:
    """What a worker does before taking runs (swarmcore worker), in a fresh interpreter."""
    script = textwrap.dedent(
        """
        import sys
        from swarmcore.llm.backends import preload
        from swarmcore.llm._types import CallSpec

        preload([CallSpec(agent_name="t", model="swarmcore-test/offline")])  # in process
        print("aiohttp" in sys.modules, "litellm" in sys.modules)
        preload([CallSpec(agent_name="a", model="openai/gpt-4o-mini")])
        print("aiohttp" in sys.modules, "openai" in sys.modules, "litellm" in sys.modules)
        preload([CallSpec(agent_name="b", model="anthropic/claude-sonnet-4-5")])
        print("litellm" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script + QUICK_EXIT],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "True", "False", "False", "True"]


def test_a_deprecation_is_attributed_to_the_users_line() -> None:
    """Python shows a DeprecationWarning by default only when it is attributed to __main__."""
    with pytest.warns(DeprecationWarning, match="backend=") as said:
        Agent("a", "x", model_settings={"backend": "litellm"})
    assert said[0].filename == __file__
