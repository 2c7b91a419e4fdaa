"""The model seam: the only package that imports litellm or aiohttp, and only on first use.

``complete(request) -> LLMReply`` is the one coroutine the rest of swarmcore
calls. Requests and replies are swarmcore-owned dataclasses; no litellm type
leaves this package. Transient failures (rate limits, timeouts, connection
errors, 5xx) are retried with jittered exponential backoff, then each fallback
model is tried; everything else becomes a ``ModelError`` that says what to fix.

Modules, by concern:

* ``types``: the request, reply, tool-call and call-spec values;
* ``call``: ``complete()``, retries and fallbacks around one attempt;
* ``choice``: which backend serves a model (``Agent(backend=...)``,
  ``AgentDefaults(backend=...)``), known without importing either library;
* ``target``: where a call goes (provider, the model's name there, endpoint),
  for traces;
* ``backends``: the ``Backend`` protocol an attempt goes through, dispatching by
  that choice;
* ``openai_backend``: the native attempt at OpenAI-protocol endpoints, the
  protocol spoken over aiohttp, with ``endpoints`` saying where each request
  goes (URL, headers, proxy, certificates) on which pool (one per event loop),
  and ``completion`` reading what a reply says, each field checked;
* ``local``: in-process models (``swarmcore.testing``'s), answered beneath
  the native backend's exchange in place of an HTTP server;
* ``litellm_backend``: the LiteLLM attempt (keyword arguments, streaming,
  response to reply), with ``loader`` importing LiteLLM on first use;
* ``errors``: provider exceptions classified into ``ModelError`` (their text
  redacted), alike on both backends, with ``malformed`` recognising a reply
  that is no chat completion in either backend's exception;
* ``prechecks``: what is checked before a call (its key, a misspelt model name);
* ``redaction``: credentials removed from text by value, then by shape;
* ``pricing``: one pricing rule for both backends (a gateway's reported cost,
  else LiteLLM's model data), with ``price_data`` reading that data as a file;
* ``limits``: per-model concurrency and rate limits;
* ``budget``: a run's cost and token budget.
"""

from __future__ import annotations

from swarmcore.llm._call import complete
from swarmcore.llm._loader import load_litellm
from swarmcore.llm._prechecks import missing_keys
from swarmcore.llm._pricing import is_priced, prompt_cost, supports
from swarmcore.llm._redaction import redact
from swarmcore.llm._types import CallSpec, LLMReply, LLMRequest, Message, ToolCall
from swarmcore.llm.backends import Backend
from swarmcore.llm.choice import set_model_backend

__all__ = [
    "Backend",
    "CallSpec",
    "LLMReply",
    "LLMRequest",
    "Message",
    "ToolCall",
    "complete",
    "is_priced",
    "load_litellm",
    "missing_keys",
    "prompt_cost",
    "redact",
    "set_model_backend",
    "supports",
]
