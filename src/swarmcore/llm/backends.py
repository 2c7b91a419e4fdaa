"""The backends that make one attempt at a model call, and which one serves a call.

A backend makes one attempt (``Backend.attempt``); ``complete`` wraps it in
retries, fallbacks, limits and budgets, the same for every backend. Which
backend serves a model is ``choice.is_native``'s answer (an in-process test
model's is always the native one); the backends' modules
(and the libraries under them) are imported when first chosen.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Protocol

from swarmcore.errors import UserError
from swarmcore.llm import _local as local
from swarmcore.llm._types import CallSpec, LLMReply, LLMRequest
from swarmcore.llm.choice import is_native, is_openai_model

__all__ = ["Backend", "backend_for", "preload"]


class Backend(Protocol):
    """How one attempt at a model call is made: one provider protocol."""

    async def attempt(self, request: LLMRequest, model: str, attempt: int) -> LLMReply:
        """Call ``model`` once with the request; ``attempt`` counts from 1, for messages.

        Raises:
            ModelError: The provider failed or refused the call; ``retryable``
                says whether another attempt may succeed.
        """
        ...


def backend_for(call: CallSpec, model: str) -> Backend:
    """The backend that makes this agent's attempts at ``model``.

    An in-process test model (``swarmcore-test/...``) is always the native
    backend's, whatever backend is chosen: it has no LiteLLM provider.

    Raises:
        UserError: The agent chose the Responses API, which only the native
            backend speaks, and ``model``, an OpenAI model, goes through LiteLLM.
    """
    if local.is_local(model) or is_native(call, model):
        return _native()
    # Another provider's model has neither OpenAI API: the setting is not for it (so one
    # AgentDefaults(api=...) serves a Swarm that mixes providers). An OpenAI one sent
    # through LiteLLM would silently lose what the agent chose the API for.
    if call.api == "responses" and is_openai_model(model):
        raise UserError(
            f"Agent {call.agent_name!r}: api='responses' is spoken by the native backend "
            f"only, and {model!r} goes through LiteLLM (its backend setting, "
            "$SWARMCORE_MODEL_BACKEND, or a LiteLLM-only setting or callback); choose "
            "backend='native' for it, or drop api='responses'."
        )
    return _litellm()


@functools.cache
def _native() -> Backend:
    from swarmcore.llm._openai_backend import OpenAIBackend

    return OpenAIBackend()


@functools.cache
def _litellm() -> Backend:
    from swarmcore.llm._litellm_backend import LiteLLMBackend

    return LiteLLMBackend()


def preload(calls: Iterable[CallSpec]) -> None:
    """Import the model libraries these calls will use, ahead of their first call.

    A long-lived process (a worker) calls it before taking work, so its first
    runs do not wait for an import while holding the CPU its other runs need:
    LiteLLM's takes seconds, aiohttp's (the native backend's) a fifth of one.
    """
    for call in calls:
        for model in (call.model, *call.fallback_models):
            if local.is_local(model):
                continue  # answered in process: nothing to import
            if is_native(call, model):
                from swarmcore.llm import _endpoints as endpoints
                from swarmcore.llm import _price_data as price_data

                endpoints.preload()
                price_data.is_priced(model)
            else:
                from swarmcore.llm._loader import load_litellm

                load_litellm()
