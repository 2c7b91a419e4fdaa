"""``swarmcore ui``: what it refuses before listening, and a real server it starts."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from swarmcore.cli import main
from tests.serving import serving_command
from tests.ui.runs import StoredRuns


def test_a_missing_store_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--store", str(tmp_path / "none.db")]) == 2
    err = capsys.readouterr().err
    assert "no run store at" in err
    assert "swarmcore demo" in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--host", "192.168.1.10"], "--allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], "needs a token"),
        (["--port", "70000"], "--port must be between 0 and 65535"),
    ],
)
def test_reaching_beyond_this_machine_needs_a_flag_and_a_token(
    stored_runs: StoredRuns,
    extra: list[str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SWARMCORE_UI_TOKEN", raising=False)
    assert main(["ui", "--store", str(stored_runs.path), *extra]) == 2
    assert says in capsys.readouterr().err


def test_it_serves_the_store_on_loopback_and_prints_the_url(stored_runs: StoredRuns) -> None:
    with serving_command("ui", "--store", str(stored_runs.path), "--port", "0") as line:
        assert line.startswith(f"swarmcore ui: serving {stored_runs.path} at http://127.0.0.1:")
        url = line.split(" at ")[1].strip()
        page = httpx.get(f"{url}runs/{stored_runs.diamond}", timeout=30)
        assert page.status_code == 200
        assert "swarmcore-flow" in page.text
        assert "swarmcore-timeline" in page.text
        assert httpx.post(f"{url}runs/{stored_runs.diamond}/delete", timeout=30).status_code == 403


def test_it_answers_its_own_host_names_and_those_given_only(stored_runs: StoredRuns) -> None:
    command = ("ui", "--store", str(stored_runs.path), "--port", "0", "--allowed-host", "runs.lan")
    with serving_command(*command) as line:
        url = line.split(" at ")[1].strip()
        port = url.rstrip("/").rsplit(":", 1)[1]
        for host in (f"localhost:{port}", f"runs.lan:{port}", "RUNS.LAN"):
            assert httpx.get(url, headers={"Host": host}, timeout=30).status_code == 200, host
        refused = httpx.get(url, headers={"Host": f"evil.example:{port}"}, timeout=30)
        assert refused.status_code == 421
        assert "127.0.0.1, localhost, [::1], runs.lan only" in refused.text


def test_a_host_name_that_is_none_is_refused_before_serving(
    stored_runs: StoredRuns, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--allowed-host", "http://runs.lan:8484/"]
    assert main(["ui", "--store", str(stored_runs.path), "--port", "0", *extra]) == 2
    assert "without scheme, port or path" in capsys.readouterr().err
