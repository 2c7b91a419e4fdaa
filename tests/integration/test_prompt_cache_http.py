"""The stable prefix marked for providers that cache only what a request marks (Anthropic).

LiteLLM speaks Anthropic's Messages API to a local server here, so the test sees
the request Anthropic would receive, not swarmcore's idea of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from swarmcore import Agent, Swarm
from swarmcore.testing import MockOpenAIServer, Reply
from tests.helpers import http_server

ANSWER = "Tea is steeped.\n<summary>Tea.</summary>"


class _Anthropic(BaseHTTPRequestHandler):
    """Answers ``POST /v1/messages`` as Anthropic does, keeping every request body."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        type(self).bodies.append({"path": self.path, **body})
        reply = json.dumps(
            {
                "id": f"msg_{len(type(self).bodies)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude"),
                "content": [{"type": "text", "text": ANSWER}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 120, "output_tokens": 9},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def anthropic_server() -> Iterator[str]:
    """An Anthropic-speaking server on 127.0.0.1; yields its base URL."""
    _Anthropic.bodies = []
    with http_server(_Anthropic) as base:
        yield base


@pytest.mark.parametrize(
    ("model", "settings"),
    [
        ("anthropic/claude-sonnet-4-5", {}),
        ("claude-sonnet-4-5", {}),  # a bare name the price map files under Anthropic
        ("my-claude", {"custom_llm_provider": "anthropic"}),
    ],
    ids=["prefixed", "bare-name", "custom-provider"],
)
async def test_requests_to_anthropic_mark_the_system_prompt_as_a_cacheable_prefix(
    anthropic_server: str, model: str, settings: dict[str, Any]
) -> None:
    first = Agent(
        "first",
        "You research tea.",
        model=model,
        api_base=anthropic_server,
        api_key="sk-ant-test",
        model_settings=settings,
    )
    second = first.clone(name="second", instructions="You write about tea.")
    result = await Swarm(first >> second, context_mode="push").run("Tell me about tea.")
    assert result.output == "Tea is steeped."
    assert [b["path"] for b in _Anthropic.bodies] == ["/v1/messages", "/v1/messages"]
    for sent, agent in zip(_Anthropic.bodies, result.history, strict=True):
        system = agent.messages[0]["content"]
        assert sent["system"] == [
            {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
        ]
        assert "Tell me about tea." in json.dumps(sent["messages"])
        assert "cache_control" not in json.dumps(sent["messages"])  # the prefix alone
    # What swarmcore keeps of the run stays plain: the mark is the request's alone.
    assert isinstance(result.history[1].messages[0]["content"], str)


@pytest.mark.usefixtures("each_backend")
async def test_requests_to_other_providers_carry_no_mark(
    mock_openai_server: MockOpenAIServer,
) -> None:
    server = mock_openai_server
    server.add(Reply(text=ANSWER))
    await Agent("a", "You research tea.", **server.model_kwargs).run("Tell me about tea.")
    [sent] = server.requests
    assert sent.messages[0] == {"role": "system", "content": sent.system}
    assert "cache_control" not in json.dumps(sent.messages)
