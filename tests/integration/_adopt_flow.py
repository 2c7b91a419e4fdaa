"""The flow the adoption tests serve from several workers: ``a >> b >> c``.

Each agent asks the OpenAI-compatible server at ``$SWARMCORE_TEST_API_BASE``
(the tests' ``MockOpenAIServer``, which counts the calls across processes).
``flow`` is the bare flow; ``budgeted`` the same flow in a Swarm with
``max_tokens=$SWARMCORE_TEST_MAX_TOKENS`` on a ``DBOSEngine`` (``capped``: the
same without an engine), for ``swarmcore worker _adopt_flow.py:NAME``.
"""

from __future__ import annotations

import os

from swarmcore import Agent, Flow, Swarm


def build(api_base: str) -> Flow:
    """``a >> b >> c`` on the server at ``api_base``."""
    server = {"model": "openai/test-model", "api_base": api_base, "api_key": "sk-test-local"}
    a, b, c = (Agent(name, f"{name} does its part.", **server) for name in "abc")
    return a >> b >> c


flow = build(os.environ.get("SWARMCORE_TEST_API_BASE", "http://127.0.0.1:9/v1"))


def __getattr__(name: str) -> object:
    """``budgeted``: the flow in a Swarm with ``max_tokens``, on the worker's DBOS engine.

    Built only when a worker asks for it (``$SWARMCORE_TEST_DATABASE_URL``), so
    importing this module never creates an engine.
    """
    if name == "capped":  # no engine of its own: the worker puts it on one, budget kept
        return Swarm(flow, max_tokens=int(os.environ["SWARMCORE_TEST_MAX_TOKENS"]))
    if name != "budgeted":
        raise AttributeError(name)
    from swarmcore.engines.dbos import DBOSEngine

    engine = DBOSEngine(os.environ["SWARMCORE_TEST_DATABASE_URL"])
    max_tokens = int(os.environ["SWARMCORE_TEST_MAX_TOKENS"])
    return Swarm(flow, max_tokens=max_tokens, engine=engine)
