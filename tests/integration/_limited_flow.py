"""A flow whose models are limited, served by the shared-limits test's two workers.

``slow >> paced`` on the server at ``$SWARMCORE_TEST_API_BASE``: ``slow`` calls
``openai/slow-model`` (at most one call in flight), ``paced`` calls
``openai/paced-model`` (60 requests a minute: one a second). Under the DBOS
engine both limits hold across every worker together. The limits are set only
where ``$SWARMCORE_TEST_LIMITS`` is set (in the workers), so importing this
module for ``build`` leaves the test process's limits alone.
"""

from __future__ import annotations

import os

from swarmcore import Agent, Flow, limit_model

SLOW_MODEL = "openai/slow-model"
PACED_MODEL = "openai/paced-model"


def build(api_base: str) -> Flow:
    """``slow >> paced`` on the server at ``api_base``."""
    key = "sk-test-local"
    slow = Agent("slow", "slow drafts.", model=SLOW_MODEL, api_base=api_base, api_key=key)
    paced = Agent("paced", "paced polishes.", model=PACED_MODEL, api_base=api_base, api_key=key)
    return slow >> paced


if os.environ.get("SWARMCORE_TEST_LIMITS"):
    limit_model(SLOW_MODEL, max_in_flight=1)
    limit_model(PACED_MODEL, requests_per_minute=60)

flow = build(os.environ.get("SWARMCORE_TEST_API_BASE", "http://127.0.0.1:9/v1"))
