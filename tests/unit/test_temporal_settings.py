"""A TemporalEngine refuses bad settings when it is made, before it connects to anything."""

from __future__ import annotations

import pytest

pytest.importorskip("temporalio", reason="the [temporal] extra (a dev dependency)")

from swarmcore.engines.temporal import TemporalEngine, TemporalHistory
from swarmcore.errors import UserError


@pytest.mark.parametrize("target", ["", "http://127.0.0.1:7233/"])
def test_the_target_is_the_frontends_host_and_port(target: str) -> None:
    with pytest.raises(UserError, match="host:port"):
        TemporalEngine(target)


@pytest.mark.parametrize("setting", ["step_heartbeat", "approval_timeout"])
@pytest.mark.parametrize("seconds", [0.0, -1.0, float("inf"), float("nan")])
def test_waits_take_seconds_above_zero(setting: str, seconds: float) -> None:
    with pytest.raises(UserError, match=f"{setting} takes seconds above 0"):
        TemporalEngine("127.0.0.1:7233", **{setting: seconds})


def test_the_runs_of_an_engine_are_named_by_a_temporal_url() -> None:
    history = TemporalHistory("temporal://127.0.0.1:7233/team")
    assert (history.target, history.namespace) == ("127.0.0.1:7233", "team")
    assert TemporalHistory("temporal://127.0.0.1:7233").namespace == "default"
    with pytest.raises(UserError, match=r"temporal://HOST:PORT\[/NAMESPACE\]"):
        TemporalHistory("postgresql://127.0.0.1/db")
