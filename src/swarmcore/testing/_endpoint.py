"""The in-process endpoint behind every test model: the native backend's exchange, in memory.

Every test model registers under a name (``model_string``) and is reached as
``swarmcore-test/<name>``. The native backend sends such a model's request
here (``llm._local``) instead of over HTTP: the body it would POST to any
endpoint, answered as an OpenAI-compatible server answers it (a chat
completion's JSON, server-sent events when the request streams, or an error
status with its JSON body and headers), and read back by the code that reads
a server's reply. So agents on test models run the default path, and never
import LiteLLM.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from collections.abc import Mapping
from typing import Any, Protocol

from swarmcore.llm import _local as local
from swarmcore.testing._replies import (
    Fail,
    RecordedRequest,
    Step,
    completion_body,
    error_object,
    stream_chunks,
)

PROVIDER = local.PREFIX.rstrip("/")


class Responder(Protocol):
    """A test model: answers one request with a reply or a failure."""

    async def respond(self, request: RecordedRequest) -> Step:
        """Answer ``request``."""
        ...


_responders: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
# Names ever registered, to tell "collected" apart from "never existed" in the error.
_registered: set[str] = set()
# What each model declares it supports, as the price map's ``supports_*`` flags.
_declared: dict[str, Mapping[str, bool]] = {}


def model_string(
    name: str, responder: Responder, supports: Mapping[str, bool] | None = None
) -> str:
    """Register ``responder`` under ``name``; returns the string for ``Agent(model=...)``.

    Args:
        name: The model's name, unique in the process.
        responder: What answers its requests.
        supports: Capabilities it declares, e.g. ``{"response_schema": True}``: what
            model data says of a hosted model (``llm.supports``); unknown when absent.
    """
    _responders[name] = responder
    _registered.add(name)
    if supports:
        _declared[name] = {f"supports_{k}": bool(v) for k, v in supports.items()}
    local.serve(_ENDPOINT)
    return f"{local.PREFIX}{name}"


class _Endpoint:
    """Answers the native backend's requests for test models (``llm._local.LocalEndpoint``)."""

    async def post(self, name: str, body: str) -> local.Response:
        sent: dict[str, Any] = json.loads(body)
        responder = _responders.get(name)
        if responder is None:
            return _missing(name)
        params = {k: v for k, v in sent.items() if k not in ("model", "messages", "tools")}
        request = RecordedRequest(
            model=name,
            messages=list(sent.get("messages") or []),
            tools=list(sent.get("tools") or []),
            params=params,
        )
        # A turn of the event loop, as a network round trip gives one: parallel agents'
        # requests are all in flight before the first answer, as with a real endpoint.
        await asyncio.sleep(0)
        step = await responder.respond(request)
        if step.delay:
            await asyncio.sleep(step.delay)
        if isinstance(step, Fail):
            return local.LocalResponse.json(
                step.status_code, {"error": error_object(step)}, step.headers
            )
        reply = step.for_request(request)
        if not sent.get("stream"):
            return local.LocalResponse.json(200, completion_body(request, reply), reply.headers)
        options: Mapping[str, Any] = sent.get("stream_options") or {}
        pieces = re.findall(r"\S+\s*|\s+", reply.text or "")  # a word a delta
        chunks = stream_chunks(
            request, reply, pieces, include_usage=bool(options.get("include_usage"))
        )
        lines = [line for chunk in chunks for line in (f"data: {json.dumps(chunk)}", "")]
        return local.LocalResponse.stream([*lines, "data: [DONE]", ""], reply.headers)

    def model_info(self, name: str) -> Mapping[str, object]:
        return _declared.get(name, {})


def _missing(name: str) -> local.Response:
    if name in _registered:
        message = (
            f"Test model {name!r} was garbage-collected: keep a reference to the "
            "model object (model = ScriptedModel(...); Agent(..., model=model.model))."
        )
    else:
        message = f"No test model named {name!r}; build one with swarmcore.testing."
    return local.LocalResponse.json(404, {"error": {"message": message, "type": "not_found"}})


_ENDPOINT = _Endpoint()
