"""Every Python block of README.md and docs/ runs, as a newcomer would copy it.

Each block is a whole script. It runs in a child process forked from this one
(so litellm is imported once, and nothing a block sets up leaks into the next),
in an empty directory, with ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` pointing
at a local OpenAI-compatible server that answers as the offline model does: a
block written for ``openai/gpt-4o-mini`` runs through LiteLLM's real HTTP path
with no key and no network. A block that defines ``test_`` functions is a test
file and runs under pytest, with the configuration the testing guide shows.

A block fails the test when it raises or exits non-zero; its output is shown.

A block right after ``<!-- file: NAME.py -->`` is a file the reader saves (an
MCP server, a module of tools): it is written as NAME.py beside every later
block of the same page, and runs when they use it.

A block that reads ``SWARMCORE_DATABASE_URL`` (a durable engine's PostgreSQL)
gets a database of its own, new and empty, on a PostgreSQL server: the one
``$SWARMCORE_DATABASE_URL`` names when it is set, else the session's (the
``postgres`` fixture: skipped only when PostgreSQL's binaries are missing). One
that reads ``SWARMCORE_TEMPORAL_ADDRESS`` gets the session's Temporal dev server
(the ``temporal_server`` fixture).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import runpy
import subprocess
import sys
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmcore.llm import load_litellm
from swarmcore.testing import MockOpenAIServer, OfflineModel, TemporaryPostgres

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"(?:<!-- file: (?P<file>[\w./-]+) -->\s*\n)?"
    r"^(?P<indent> *)```python[^\n]*\n(?P<code>.*?)^(?P=indent)```",
    re.M | re.S,
)
BLOCK_TIMEOUT = 60.0
# What the testing guide tells users to put in pyproject.toml (docs/testing.md).
PYTEST_CONFIG = """\
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""
# Loaded into a block's pytest process (-p _quick_exit, written beside it): once the
# tests ran, the heap is frozen, so the process exits at once instead of collecting every
# loaded module's objects (LiteLLM, DBOS: seconds per process). Nothing a block tests changes.
QUICK_EXIT = """\
import gc

import pytest


@pytest.hookimpl(trylast=True)  # after pytest's own checks for garbage left unraised
def pytest_unconfigure() -> None:
    gc.freeze()
"""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    code: str
    files: tuple[tuple[str, str], ...] = ()
    """Files saved by earlier blocks of the page: (name, code)."""

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        text = page.read_text()
        files: list[tuple[str, str]] = []
        for match in FENCE.finditer(text):
            indent = len(match["indent"])
            code = "\n".join(line[indent:] for line in match["code"].splitlines()) + "\n"
            if match["file"]:
                files.append((match["file"], code))
                continue
            line = text.count("\n", 0, match.start("indent")) + 1
            found.append(Block(page, line, code, tuple(files)))
    return found


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def server() -> Iterator[MockOpenAIServer]:
    load_litellm()  # once, before forking: every child starts with it imported
    with MockOpenAIServer(responder=OfflineModel.reply) as running:
        yield running


@pytest.fixture
def block_env(server: MockOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-offline")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("SWARMCORE_STORE", str(tmp_path / "runs.db"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pages_have_blocks() -> None:
    assert any(b.page.name == "README.md" for b in BLOCKS)
    assert any(b.page.parent.name == "docs" for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs(
    block: Block, block_env: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if any("SWARMCORE_DATABASE_URL" in code for code in (block.code, *(c for _, c in block.files))):
        name, given = f"docs_{uuid.uuid4().hex[:12]}", os.environ.get("SWARMCORE_DATABASE_URL")
        if given:
            url = f"{given.rsplit('/', 1)[0]}/{name}"
        else:  # the session's server, started only for such blocks
            server: TemporaryPostgres = request.getfixturevalue("postgres")
            url = server.new_database(name)
        monkeypatch.setenv("SWARMCORE_DATABASE_URL", url)
    if any(
        "SWARMCORE_TEMPORAL_ADDRESS" in code for code in (block.code, *(c for _, c in block.files))
    ):
        monkeypatch.setenv("SWARMCORE_TEMPORAL_ADDRESS", request.getfixturevalue("temporal_server"))
    for name, code in block.files:
        (block_env / name).parent.mkdir(parents=True, exist_ok=True)
        (block_env / name).write_text(code)
    script = block_env / "block.py"
    script.write_text(block.code)
    if re.search(r"^(async )?def test_", block.code, re.M):
        _run_as_tests(block, block_env)
    else:
        _run_as_script(block, script, block_env / "output.txt")


def _run_as_script(block: Block, script: Path, output: Path) -> None:
    child = multiprocessing.get_context("fork").Process(target=_child, args=(script, output))
    child.start()
    child.join(BLOCK_TIMEOUT)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"{block.id} ran past {BLOCK_TIMEOUT:.0f} s:\n{output.read_text()}")
    if child.exitcode != 0:
        pytest.fail(f"{block.id} failed (exit {child.exitcode}):\n{output.read_text()}")


def _child(script: Path, output: Path) -> None:
    with output.open("w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.argv = [str(script)]
        sys.path.insert(0, str(script.parent))  # as `python block.py` does
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as stop:
            sys.stdout.flush()
            os._exit(stop.code if isinstance(stop.code, int) else 1)
        except BaseException:
            traceback.print_exc()
            sys.stdout.flush()
            os._exit(1)
        sys.stdout.flush()
        os._exit(0)


def _run_as_tests(block: Block, where: Path) -> None:
    (where / "pyproject.toml").write_text(PYTEST_CONFIG)
    (where / "test_block.py").write_text(block.code)
    (where / "_quick_exit.py").write_text(QUICK_EXIT)
    (where / "block.py").unlink()
    options = ["-q", "-p", "no:cacheprovider", "-p", "_quick_exit"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "test_block.py"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT * 2,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{block.id}: its tests failed:\n{done.stdout}\n{done.stderr}")
