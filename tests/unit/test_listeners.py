"""One definition of "LiteLLM is listening", alike for the backend choice and the LiteLLM backend.

A LiteLLM callback registered anywhere LiteLLM reads one keeps OpenAI models on
LiteLLM (the choice) and keeps LiteLLM logging each call (the backend); with none
registered, OpenAI models go native and LiteLLM's calls go unlogged.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from typing import Any, cast

import pytest

from swarmcore import Agent
from swarmcore.llm import load_litellm
from swarmcore.llm._litellm_backend import LiteLLMBackend
from swarmcore.llm._types import CallSpec
from swarmcore.llm.backends import backend_for
from swarmcore.llm.choice import LITELLM_LISTENERS, PER_CALL_LISTENERS, BackendSwitchWarning
from tests.helpers import QUICK_EXIT


def _silent_listener() -> Any:
    from litellm.integrations.custom_logger import CustomLogger

    return CustomLogger()  # hears every event and does nothing with it


@pytest.fixture
def listener() -> Iterator[Any]:
    """A LiteLLM callback, taken out of every registry LiteLLM copied it into afterwards."""
    lit = load_litellm()
    made = _silent_listener()
    yield made
    for name in dir(lit):
        registry: Any = getattr(lit, name, None)
        if isinstance(registry, list):
            while made in registry:
                cast(list[object], registry).remove(made)


def _chooses_litellm(**settings: Any) -> bool:
    """The choice's view: does an OpenAI model go through LiteLLM?"""
    call = CallSpec(agent_name="a", model="openai/gpt-4o-mini", settings=settings)
    with warnings.catch_warnings():  # said once per process; its own test is below
        warnings.simplefilter("ignore", BackendSwitchWarning)
        return isinstance(backend_for(call, call.model), LiteLLMBackend)


def _litellm_logs_the_call(**settings: Any) -> bool:
    """The LiteLLM backend's view: is a call it makes one LiteLLM logs?

    The model is a LiteLLM custom provider of this test's own, which answers from
    inside LiteLLM's ``acompletion`` with LiteLLM's "internal call, not logged"
    flag as it finds it there (swarmcore's test models never go through LiteLLM).
    """
    agent = Agent("a", "You answer.", model=_probe(), model_settings=settings)
    return agent.run_sync("Are you heard?").output == "logged"


def _probe() -> str:
    """A LiteLLM custom provider answering whether LiteLLM flags the call as internal."""
    lit = load_litellm()
    from litellm._internal_context import is_internal_call
    from litellm.llms.custom_llm import CustomLLM

    class Probe(CustomLLM):
        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            text = "unlogged" if is_internal_call.get() else "logged"
            return lit.ModelResponse(
                model="probe",
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            )

    others = [e for e in lit.custom_provider_map if e["provider"] != "listen-probe"]
    lit.custom_provider_map = [*others, {"provider": "listen-probe", "custom_handler": Probe()}]
    return "listen-probe/model"


def test_with_no_listener_openai_models_go_native_and_litellm_logs_nothing() -> None:
    load_litellm()
    assert not _chooses_litellm()
    assert not _litellm_logs_the_call()


@pytest.mark.parametrize("name", LITELLM_LISTENERS)
def test_a_callback_on_litellm_is_heard_by_both(name: str, listener: Any) -> None:
    getattr(load_litellm(), name).append(listener)
    assert _chooses_litellm()
    assert _litellm_logs_the_call()


@pytest.mark.parametrize("name", PER_CALL_LISTENERS)
def test_a_callback_in_model_settings_is_heard_by_both(name: str, listener: Any) -> None:
    load_litellm()
    assert _chooses_litellm(**{name: [listener]})
    assert _litellm_logs_the_call(**{name: [listener]})


def test_a_callback_switching_the_backend_says_so_once_and_how_to_choose() -> None:
    """In a fresh interpreter: the warning is once per process."""
    script = textwrap.dedent(
        """
        import os
        import warnings
        from swarmcore.llm import load_litellm
        from swarmcore.llm.backends import backend_for
        from swarmcore.llm._types import CallSpec

        def backend(model, backend=None):
            call = CallSpec(agent_name="a", model=model, backend=backend)
            return type(backend_for(call, model)).__name__

        load_litellm().success_callback.append(lambda *args: None)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            os.environ["SWARMCORE_MODEL_BACKEND"] = "litellm"  # chosen explicitly: nothing to say
            print(backend("openai/gpt-4o-mini"))
            del os.environ["SWARMCORE_MODEL_BACKEND"]
            print(backend("openai/gpt-4o-mini", backend="native"))  # the agent's choice
            print(backend("anthropic/claude-sonnet-4-5"))  # LiteLLM's anyway
            print(len(said))
            print(backend("openai/gpt-4o-mini"), backend("gpt-4o"))  # switched, twice
        print(len(said), said[0].category.__name__)
        print(said[0].message)
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
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "LiteLLMBackend",
        "OpenAIBackend",
        "LiteLLMBackend",
        "0",
        "LiteLLMBackend LiteLLMBackend",
    ]
    assert lines[5] == "1 BackendSwitchWarning"
    message = "\n".join(lines[6:])
    assert "(litellm.success_callback)" in message
    assert "'openai/gpt-4o-mini'" in message
    assert 'backend="litellm" on the agent or in the Swarm\'s AgentDefaults' in message
    assert "SWARMCORE_MODEL_BACKEND=litellm" in message
    assert 'backend="native" keeps it native' in message
