"""Offline token counting (cl100k_base from LiteLLM's package, no network)."""

from __future__ import annotations

import subprocess
import sys

from swarmcore._tokens import count_tokens


def test_counts_cl100k_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("Hello world") == 2  # cl100k_base: "Hello", " world"
    assert count_tokens("<|endoftext|>") > 1  # special-token text is plain text here


def test_counting_imports_no_litellm_and_needs_no_network() -> None:
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k): raise OSError('no network in this test')\n"
        "socket.socket.connect = refuse\n"
        "from swarmcore._tokens import count_tokens\n"
        "assert count_tokens('a b c') == 3\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
