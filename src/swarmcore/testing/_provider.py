"""The LiteLLM custom provider behind every in-process test model.

One handler is registered under ``swarmcore-test``; the part of the model
string after the slash picks the test model that answers. Registration goes
through ``llm.register_provider``, so importing ``swarmcore.testing`` does not
import litellm, and calls travel LiteLLM's real path (``acompletion``, its
parameter handling, its exception mapping) exactly like a hosted model's.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any, Protocol

from swarmcore import llm
from swarmcore.testing._replies import Fail, RecordedRequest, Reply, Step, usage_details

PROVIDER = "swarmcore-test"

__all__ = ["PROVIDER", "Responder", "model_string"]


class Responder(Protocol):
    """A test model: answers one request with a reply or a failure."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Answer ``request``."""
        ...


_responders: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
# Names ever registered, to tell "collected" apart from "never existed" in the error.
_registered: set[str] = set()


def model_string(name: str, responder: Responder) -> str:
    """Register ``responder`` under ``name``; returns the string for ``Agent(model=...)``."""
    _responders[name] = responder
    _registered.add(name)
    llm.register_provider(PROVIDER, _make_handler)
    return f"{PROVIDER}/{name}"


def _make_handler(lit: ModuleType) -> object:
    from litellm.llms.custom_llm import CustomLLM, CustomLLMError

    async def answer(
        model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]
    ) -> tuple[RecordedRequest, Reply]:
        responder = _responders.get(model)
        if responder is None:
            if model in _registered:
                raise CustomLLMError(
                    404,
                    f"Test model {model!r} was garbage-collected: keep a reference to the "
                    "model object (model = ScriptedModel(...); Agent(..., model=model.model)).",
                )
            raise CustomLLMError(
                404, f"No test model named {model!r}; build one with swarmcore.testing."
            )
        params = dict(optional_params)
        tools = list(params.pop("tools", None) or [])
        request = RecordedRequest(
            model=model, messages=json.loads(json.dumps(messages)), tools=tools, params=params
        )
        step = await responder.respond(request)
        if step.delay:
            await asyncio.sleep(step.delay)
        if isinstance(step, Fail):
            error = CustomLLMError(step.status_code, step.message)
            # LiteLLM copies an exception's .headers (Retry-After...) onto its own error.
            error.headers = dict(step.headers)  # pyright: ignore[reportAttributeAccessIssue]
            raise error
        return request, step.for_request(request)

    class _Handler(CustomLLM):
        async def acompletion(  # pyright: ignore[reportIncompatibleMethodOverride] -- litellm passes these by keyword
            self,
            model: str,
            messages: list[dict[str, Any]],
            *args: Any,
            optional_params: dict[str, Any],
            **kwargs: Any,
        ) -> Any:
            request, reply = await answer(model, messages, optional_params)
            return _response(lit, model, request, reply)

        async def astreaming(  # pyright: ignore[reportIncompatibleMethodOverride] -- litellm passes these by keyword
            self,
            model: str,
            messages: list[dict[str, Any]],
            *args: Any,
            optional_params: dict[str, Any],
            **kwargs: Any,
        ) -> AsyncIterator[dict[str, Any]]:
            request, reply = await answer(model, messages, optional_params)
            whole = _response(lit, model, request, reply)
            for piece in re.findall(r"\S+\s*|\s+", reply.text or ""):
                yield _chunk(text=piece)
            for index, call in enumerate(reply.tool_calls):
                tool_use = {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                    "index": index,
                }
                yield _chunk(tool_use=tool_use)
            usage = whole.usage
            yield _chunk(
                finished=reply.finish_reason,
                usage={
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens,
                    **usage_details(reply),
                },
            )

    return _Handler()


def _chunk(
    *,
    text: str = "",
    tool_use: dict[str, Any] | None = None,
    finished: str = "",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One of LiteLLM's ``GenericStreamingChunk`` dicts."""
    return {
        "text": text,
        "tool_use": tool_use,
        "is_finished": bool(finished),
        "finish_reason": finished,
        "usage": usage,
        "index": 0,
    }


def _response(lit: ModuleType, model: str, request: RecordedRequest, reply: Reply) -> Any:
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = lit.token_counter(messages=request.messages, tools=request.tools or None)
    completion = reply.completion_tokens
    if completion is None:
        generated = (reply.text or "") + "".join(c.arguments_json for c in reply.tool_calls)
        completion = lit.token_counter(text=generated) if generated else 0
    return lit.ModelResponse(
        model=model,
        choices=[{"index": 0, "finish_reason": reply.finish_reason, "message": reply.as_message()}],
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **usage_details(reply),
        },
    )
