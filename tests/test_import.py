"""Import-time guarantees, each checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_swarmcore_does_not_import_litellm() -> None:
    out = run_python(
        """
        import sys
        import swarmcore
        from swarmcore import Agent, Swarm
        import swarmcore.testing
        a, b = Agent("a", "x"), Agent("b", "y")
        Swarm(a >> b)
        print("litellm" in sys.modules, "openai" in sys.modules)
        """
    )
    assert out == "False False"


def test_no_network_at_import_or_on_an_offline_run() -> None:
    # An audit hook sees every socket connection and DNS lookup the process makes.
    out = run_python(
        """
        import sys
        events = []
        def hook(name, args):
            if name in ("socket.connect", "socket.getaddrinfo", "urllib.Request"):
                events.append((name, str(args)[:80]))
        sys.addaudithook(hook)
        import asyncio
        from swarmcore import Agent, Swarm
        from swarmcore.testing import offline_model
        def lookup(term: str) -> str:
            "Look a term up."
            return term.upper()
        m = offline_model()
        flow = Agent("a", "x", model=m, tools=[lookup]) >> Agent("b", "y", model=m)
        result = asyncio.run(Swarm(flow).run("task"))
        print(result["a"].tool_calls[0].result, len(result.history), events)
        """
    )
    assert out == "EXAMPLE TERM 2 []"


def test_import_swarmcore_loads_its_names_on_first_use() -> None:
    out = run_python(
        """
        import sys
        import swarmcore
        loaded = sorted(m for m in sys.modules if m.startswith("swarmcore.") or m == "pydantic")
        print(loaded)
        names = [getattr(swarmcore, name) for name in swarmcore.__all__]
        print(all(name in dir(swarmcore) for name in swarmcore.__all__), len(names))
        print(swarmcore.Agent is __import__("swarmcore.agent").agent.Agent)
        try:
            swarmcore.NotAThing
        except AttributeError as exc:
            print(exc)
        """
    )
    loaded, listed, same, missing = out.splitlines()
    assert loaded == "[]"  # nothing, not even pydantic, until a name is used
    assert listed.startswith("True ")
    assert same == "True"
    assert missing == "module 'swarmcore' has no attribute 'NotAThing'"


def test_version_is_the_installed_one_and_above_the_old_releases() -> None:
    # The 0.3.x releases on PyPI were an earlier project of the same name: a lower
    # version would never be reached by `pip install -U swarmcore`.
    from importlib.metadata import version

    from packaging.version import Version

    import swarmcore

    assert swarmcore.__version__ == version("swarmcore")
    assert Version(swarmcore.__version__) >= Version("1.0.0")
