"""pytest fixtures from swarmcore.testing, and eval suites as tests: a plugin swarmcore installs.

The eval suites named by the ``swarmcore_evals`` ini option are collected as
tests, one per case file, each replaying its case offline against the suite's
target (see docs/evals.md)::

    [tool.pytest.ini_options]
    swarmcore_evals = ["tests/evals = flows.py:flow"]
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarmcore.testing._postgres import TemporaryPostgres, find_postgres_bindir
from swarmcore.testing._server import MockOpenAIServer

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr  # what Item.repr_failure returns


@pytest.fixture
def mock_openai_server() -> Iterator[MockOpenAIServer]:
    """A started :class:`MockOpenAIServer` on 127.0.0.1, stopped after the test.

    Script it with ``mock_openai_server.add(Reply(...))`` and point agents at it
    with ``Agent(..., **mock_openai_server.model_kwargs)``.
    """
    with MockOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[TemporaryPostgres]:
    """A started :class:`TemporaryPostgres`, one for the whole session, stopped at its end.

    Give each test a database of its own with ``postgres.new_database()``. The
    tests that use it are skipped only where no PostgreSQL binaries exist (and
    fail instead when ``$SWARMCORE_REQUIRE_POSTGRES`` is set, as in CI).
    """
    bindir = find_postgres_bindir()
    if bindir is None:
        reason = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found via $SWARMCORE_PG_BINDIR, "
            "`pg_config --bindir`, /usr/lib/postgresql/*/bin or PATH; install PostgreSQL "
            "(Debian: apt-get install postgresql-15) to run the durable-engine tests"
        )
        if os.environ.get("SWARMCORE_REQUIRE_POSTGRES"):  # CI: never skip them
            pytest.fail(f"$SWARMCORE_REQUIRE_POSTGRES is set, but {reason}")
        pytest.skip(reason)
    with TemporaryPostgres(bindir) as server:
        yield server


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``swarmcore_evals`` ini option: eval suites to collect as tests."""
    parser.addini(
        "swarmcore_evals",
        type="linelist",
        help="eval suites run as tests, one test per case: 'DIR = FILE_OR_MODULE:NAME' per line "
        "(the suite's directory, the flow its cases replay against)",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A case file of a configured eval suite: a test that replays it (``swarmcore_evals``)."""
    if file_path.suffix != ".json":
        return None
    target = _eval_targets(parent.config).get(file_path.parent.resolve())
    if target is None:
        return None
    node = EvalCaseFile.from_parent(parent, path=file_path)  # pyright: ignore[reportUnknownMemberType] -- pytest's **kw
    node.target = target
    return node


def _eval_targets(config: pytest.Config) -> dict[Path, str]:
    """Each configured suite's directory (resolved from the rootdir) and its target."""
    found: dict[Path, str] = {}
    lines: list[str] = config.getini("swarmcore_evals")
    for line in lines:
        folder, sep, target = line.partition("=")
        if not sep or not folder.strip() or not target.strip():
            raise pytest.UsageError(
                f"swarmcore_evals: {line!r} is not 'DIR = FILE_OR_MODULE:NAME' (e.g. "
                "'tests/evals = flows.py:flow')"
            )
        found[(config.rootpath / folder.strip()).resolve()] = target.strip()
    return found


class EvalCaseFile(pytest.File):
    """A case file of an eval suite: collects one test, its replay."""

    target: str = ""
    """The suite's target, ``FILE_OR_MODULE:NAME``."""

    def collect(self) -> Iterator[pytest.Item]:
        """The case's one test, named after the case."""
        item = EvalCaseItem.from_parent(self, name=self.path.stem)  # pyright: ignore[reportUnknownMemberType] -- pytest's **kw
        item.target = self.target
        yield item


class EvalCaseItem(pytest.Item):
    """One eval case replayed offline against its suite's target; fails naming each check."""

    target: str = ""
    """The suite's target, ``FILE_OR_MODULE:NAME``."""

    def runtest(self) -> None:
        """Replay the case; an AssertionError lists the failed checks."""
        from swarmcore.agent import run_sync
        from swarmcore.cli._targets import load_target
        from swarmcore.evals import Case, Suite

        case = Case.load(self.path)
        target = load_target(self.target, cwd=self.config.rootpath)
        run_sync(lambda: Suite([case]).check(case, target))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """The failed checks, without a traceback into swarmcore."""
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # pyright: ignore[reportArgumentType]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test comes from: the case file."""
        return self.path, None, f"eval case {self.name} against {self.target}"
