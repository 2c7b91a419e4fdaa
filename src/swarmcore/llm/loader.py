"""LiteLLM, imported and configured once, on first use, with the custom providers registered early.

``import litellm`` takes a second or more, so nothing imports it at module
level: ``import swarmcore``, building flows and ``swarmcore --help`` never pay
for it. Everything in ``llm`` that needs LiteLLM asks ``load_litellm()``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["load_litellm", "register_provider"]

_litellm: ModuleType | None = None
_providers: dict[str, Callable[[ModuleType], object]] = {}


def load_litellm() -> ModuleType:
    """Import and configure litellm once; the import takes seconds, so it happens on first use."""
    global _litellm
    if _litellm is None:
        # Read the bundled price map instead of fetching it from GitHub at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # Otherwise litellm prints provider-list banners to stdout on errors.
        litellm.suppress_debug_info = True
        _litellm = litellm
        for name, factory in _providers.items():
            _install_provider(litellm, name, factory)
    return _litellm


def register_provider(name: str, factory: Callable[[ModuleType], object]) -> None:
    """Register a LiteLLM custom provider, without importing litellm before it is needed.

    ``factory(litellm)`` builds the ``litellm.CustomLLM`` handler when litellm
    loads (at once if it already has). Models named ``"{name}/..."`` then go
    through LiteLLM's real call path to that handler; ``swarmcore.testing``
    registers its offline models this way.
    """
    _providers[name] = factory
    if _litellm is not None:
        _install_provider(_litellm, name, factory)


def _install_provider(lit: Any, name: str, factory: Callable[[ModuleType], object]) -> None:
    entries: list[dict[str, Any]] = [e for e in lit.custom_provider_map if e["provider"] != name]
    entries.append({"provider": name, "custom_handler": factory(lit)})
    lit.custom_provider_map = entries
