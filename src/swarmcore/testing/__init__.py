"""Test your flows without API keys: offline models and a local OpenAI-compatible server.

* :func:`offline_model` / :class:`OfflineModel`: a deterministic model that
  calls the tools it is offered, reads the shared context and answers with a
  ``<summary>``. Examples and the demo run on it when no key is set.
* :class:`ScriptedModel`: replies a test dictates (``Reply``, ``Fail``),
  recording every request and failing loudly past the end of its script.
* :class:`FunctionModel`: answers with a function of the request.
* :class:`ReaderModel`: a careful deterministic reader of the shared context:
  it states the facts its instructions name, finds the ones it needs with the
  context tools, and records what it delivered (:func:`score_facts` scores a run).
* :class:`ReplayModel`: answers from a stored run's recording, matched by
  content, so a real run becomes a deterministic offline test.
* :class:`MockOpenAIServer`: a real HTTP server on 127.0.0.1 speaking the
  OpenAI chat API, for tests of the real HTTP path (either backend). The pytest
  fixture ``mock_openai_server`` (installed with swarmcore) starts one per test.
  :class:`LiteLLMProxy` makes its steps answer as a LiteLLM Proxy gateway does.
* :class:`TemporaryPostgres`: a throwaway PostgreSQL server on 127.0.0.1 in a
  temporary folder, for tests of a durable engine on PostgreSQL. The
  session fixture ``postgres`` starts one, or skips where PostgreSQL is not
  installed; ``postgres.new_database()`` gives each test a database of its own.

The in-process models are answered beneath the native backend (``llm._local``):
the request is built and the answer read by the code that speaks to an
OpenAI-compatible server, so agents on them run the default path of hosted
models. They never go through LiteLLM, and neither importing this module nor
running on its models imports litellm.
"""

from swarmcore.testing._choose import choose_model
from swarmcore.testing._litellm_proxy import LiteLLMProxy
from swarmcore.testing._models import (
    FunctionModel,
    OfflineModel,
    ScriptedModel,
    UnconsumedSteps,
    UnexpectedModelCall,
    example_arguments,
    offline_model,
)
from swarmcore.testing._postgres import PostgresNotFound, TemporaryPostgres
from swarmcore.testing._reader import (
    FactScore,
    ReaderAnswer,
    ReaderModel,
    facts_in,
    needed_facts,
    score_facts,
    stated_facts,
)
from swarmcore.testing._replay import ReplayModel
from swarmcore.testing._replies import Call, Fail, RecordedRequest, Reply
from swarmcore.testing._server import MockOpenAIServer

__all__ = [
    "Call",
    "FactScore",
    "Fail",
    "FunctionModel",
    "LiteLLMProxy",
    "MockOpenAIServer",
    "OfflineModel",
    "PostgresNotFound",
    "ReaderAnswer",
    "ReaderModel",
    "RecordedRequest",
    "ReplayModel",
    "Reply",
    "ScriptedModel",
    "TemporaryPostgres",
    "UnconsumedSteps",
    "UnexpectedModelCall",
    "choose_model",
    "example_arguments",
    "facts_in",
    "needed_facts",
    "offline_model",
    "score_facts",
    "stated_facts",
]
