"""Test models run on the default path: the native backend's exchange, answered in process.

The body is built as for any OpenAI-protocol endpoint, and the answer (a
completion, server-sent events, an error status with its headers) is read by
the code that reads an HTTP server's: what holds for one holds for the other.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swarmcore import Agent, ModelError, Swarm
from swarmcore.events import TextDelta
from swarmcore.llm import supports
from swarmcore.testing import Fail, FunctionModel, Reply, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def _tokens(text: str) -> int:
    """docs/testing.md's rule, written out: four characters a token, rounded up."""
    return math.ceil(len(text) / 4)


async def test_the_request_is_the_body_the_native_backend_sends() -> None:
    model = ScriptedModel(["done"])
    settings = {"temperature": 0.3, "api_key": "sk-not-in-the-body", "extra_body": {"seed": 7}}
    await Agent("a", "You answer.", model=model.model, model_settings=settings).run("go")
    (request,) = model.requests
    assert request.model == model.model.removeprefix("swarmcore-test/")
    assert request.params == {"temperature": 0.3, "seed": 7}  # client settings left out
    assert request.messages[0] == {"role": "system", "content": request.system}
    assert request.user == "go"


async def test_a_failure_is_an_error_status_read_as_a_servers() -> None:
    model = ScriptedModel([Fail(429, "slow down", headers={"Retry-After": "7"})])
    agent = Agent("a", "x", model=model.model, retry=0)
    with pytest.raises(ModelError) as caught:
        await agent.run("go")
    error = caught.value
    assert (error.status_code, error.retryable, error.retry_after) == (429, True, 7.0)
    assert "(RateLimitError, status 429): slow down" in str(error)


async def test_a_gateways_cost_header_prices_the_reply_as_over_http() -> None:
    model = ScriptedModel([Reply(text="done", headers={"x-litellm-response-cost": "0.25"})])
    result = await Agent("a", "x", model=model.model).run("go")
    assert result.cost == 0.25


async def test_a_test_model_is_unpriced_without_a_gateways_figure() -> None:
    model = ScriptedModel(["done"])
    result = await Agent("a", "x", model=model.model).run("go")
    assert result.cost is None


async def test_a_streamed_reply_arrives_as_server_sent_events() -> None:
    model = ScriptedModel([Reply(text="tea is good", prompt_tokens=5, completion_tokens=3)])
    deltas: list[str] = []
    async for event in Swarm(Agent("a", "x", model=model.model)).stream("go", text=True):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
    assert deltas == ["tea ", "is ", "good"]  # a word a delta
    assert model.requests[0].params["stream"] is True
    assert model.requests[0].params["stream_options"] == {"include_usage": True}


async def test_tokens_a_reply_does_not_give_are_counted_by_the_documented_rule() -> None:
    model = ScriptedModel([Reply.tool("lookup", term="tea"), Reply(text="Tea is good for you.")])

    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    result = await Agent("a", "x", model=model.model, tools=[lookup]).run("go")
    first, second = result.llm_calls
    for call, request in zip(result.llm_calls, model.requests, strict=True):
        sent = json.dumps(request.messages) + json.dumps(request.tools)
        assert call.token_usage.prompt_tokens == _tokens(sent)
    assert first.token_usage.completion_tokens == _tokens('{"term": "tea"}')
    assert second.token_usage.completion_tokens == _tokens("Tea is good for you.")


async def test_a_given_count_wins_over_the_rule() -> None:
    model = ScriptedModel([Reply(text="done", prompt_tokens=11, completion_tokens=2)])
    result = await Agent("a", "x", model=model.model).run("go")
    usage = result.token_usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (11, 2)


async def test_test_models_stay_in_process_when_litellm_is_chosen() -> None:
    model = FunctionModel(lambda request: "ok")
    result = await Agent("a", "x", model=model.model, backend="litellm").run("go")
    assert result.output == "ok"
    assert len(model.requests) == 1  # answered in process: LiteLLM has no such provider


def test_a_test_model_declares_what_it_supports() -> None:
    told = ScriptedModel([], supports={"response_schema": True, "function_calling": False})
    untold = ScriptedModel([])
    assert supports(told.model, "response_schema") is True
    assert supports(told.model, "function_calling") is False
    assert supports(untold.model, "response_schema") is None


def test_the_quickstart_and_a_dry_run_never_import_litellm(tmp_path: Path) -> None:
    """Offline, with no key: the quickstart as its first run, then a dry run, in one process."""
    script = textwrap.dedent(
        """
        import asyncio, runpy, sys
        sys.argv = ["quickstart.py"]
        runpy.run_path("examples/quickstart.py", run_name="__main__")
        from swarmcore import Agent, Swarm
        flow = Agent("a", "x", model="openai/gpt-4o-mini") >> Agent("b", "y")
        asyncio.run(Swarm(flow).dry_run("task"))
        print("litellm" in sys.modules)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["SWARMCORE_STORE"] = str(tmp_path / "runs.db")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Running offline" in done.stdout  # it did run on the offline model
    assert done.stdout.splitlines()[-1] == "False"


def test_a_test_model_string_without_swarmcore_testing_is_an_unknown_model() -> None:
    """In a fresh process where nothing imported ``swarmcore.testing``: a 404, said so."""
    script = textwrap.dedent(
        """
        import sys
        from swarmcore import Agent, ModelError
        try:
            Agent("a", "x", model="swarmcore-test/nothing", retry=0).run_sync("go")
        except ModelError as error:
            print(error.status_code, error)
        print("litellm" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    first, last = done.stdout.splitlines()[0], done.stdout.splitlines()[-1]
    assert first.startswith("404 ")
    assert "No test model named 'nothing'; build one with swarmcore.testing" in first
    assert last == "False"
