"""Fixtures for the viewer: a store of real runs, made once per test process."""

from __future__ import annotations

import pytest

from tests.ui.runs import SECRET_KEY, StoredRuns, make_store


@pytest.fixture(scope="session")
def stored_runs(tmp_path_factory: pytest.TempPathFactory) -> StoredRuns:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", SECRET_KEY)
        return make_store(tmp_path_factory.mktemp("ui") / "runs.db")
