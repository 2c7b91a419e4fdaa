"""A fresh process's first model call: the import, then one call, each timed here.

    python benchmarks/_first_call.py {swarmcore|openai|litellm} API_BASE

``swarmcore`` imports ``Agent`` and ``Swarm`` and runs one agent (one model call);
which backend serves it is the environment's (``SWARMCORE_MODEL_BACKEND``, else
native for this ``openai/...`` model). ``openai`` imports the SDK and makes one
``chat.completions.create`` on a new client, on the SDK's ``DefaultAioHttpClient``
as the native backend's is; ``litellm`` imports litellm and makes
one ``acompletion``. Prints one JSON line after ``@@bench ``: the import's seconds,
the call's (client and event loop included), and whether litellm got imported.
``asyncio`` is imported before the clock starts, for all alike: every variant needs it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

MODEL = "openai/gpt-4o-mini"
API_KEY = "sk-bench-dummy"
MESSAGES: list[Any] = [
    {"role": "system", "content": "You are first, one step of a benchmark flow."},
    {"role": "user", "content": "Benchmark task: do your step and report briefly."},
]


def main() -> None:
    variant, api_base = sys.argv[1], sys.argv[2]
    start = time.perf_counter()
    call: Any
    if variant == "swarmcore":
        from swarmcore import Agent, Swarm

        imported = time.perf_counter()
        agent = Agent(
            "first", str(MESSAGES[0]["content"]), model=MODEL, api_base=api_base, api_key=API_KEY
        )
        call = Swarm(agent).run(str(MESSAGES[1]["content"]))
    elif variant == "openai":
        import openai

        imported = time.perf_counter()

        async def plain_openai() -> Any:
            # The SDK at its fastest, on aiohttp's pool as the native backend is; no retries.
            http = openai.DefaultAioHttpClient()
            async with openai.AsyncOpenAI(
                base_url=api_base, api_key=API_KEY, max_retries=0, http_client=http
            ) as client:
                return await client.chat.completions.create(
                    model=MODEL.removeprefix("openai/"), messages=MESSAGES
                )

        call = plain_openai()
    elif variant == "litellm":
        import litellm

        imported = time.perf_counter()
        call = litellm.acompletion(
            model=MODEL, messages=MESSAGES, api_base=api_base, api_key=API_KEY, num_retries=0
        )
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    asyncio.run(call)
    done = time.perf_counter()
    result = {
        "import": imported - start,
        "call": done - imported,
        "litellm": "litellm" in sys.modules,
    }
    print("@@bench " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
