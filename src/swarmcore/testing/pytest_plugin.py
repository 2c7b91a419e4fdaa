"""pytest fixtures from swarmcore.testing, installed as a pytest plugin with swarmcore."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from swarmcore.testing._server import MockOpenAIServer


@pytest.fixture
def mock_openai_server() -> Iterator[MockOpenAIServer]:
    """A started :class:`MockOpenAIServer` on 127.0.0.1, stopped after the test.

    Script it with ``mock_openai_server.add(Reply(...))`` and point agents at it
    with ``Agent(..., **mock_openai_server.model_kwargs)``.
    """
    with MockOpenAIServer() as server:
        yield server
