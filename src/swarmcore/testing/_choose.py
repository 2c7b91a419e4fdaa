"""Picking a real model when a key is set, and the offline model otherwise (for demos)."""

from __future__ import annotations

import os

from swarmcore.testing._models import offline_model

DEMO_MODEL = "openai/gpt-4o-mini"


def choose_model(default: str = DEMO_MODEL) -> tuple[str, str]:
    """The model a demo should run on, and one line saying which and why.

    The model is ``$SWARMCORE_MODEL`` (or ``default``) when the provider's key
    is in the environment, else the offline model. The library
    itself never falls back silently; this helper is for examples and demos,
    and the line it returns is meant to be printed.
    """
    from swarmcore.llm import missing_keys

    wanted = os.environ.get("SWARMCORE_MODEL") or default
    try:
        missing = missing_keys(wanted)
    except Exception as exc:  # an unknown provider: say so instead of guessing
        return offline_model(), f"Running offline: cannot use {wanted!r} ({exc})."
    if missing:
        keys = " or ".join(missing)
        return (
            offline_model(),
            f"Running offline on the built-in test model: set {keys} (and optionally "
            f"SWARMCORE_MODEL) to use {wanted}.",
        )
    return wanted, f"Running on {wanted}."
