"""LiteLLM, imported and configured once, on first use.

``import litellm`` takes a second or more, so nothing imports it at module
level: ``import swarmcore``, building flows and ``swarmcore --help`` never pay
for it. Everything in ``llm`` that needs LiteLLM asks ``load_litellm()``.
"""

from __future__ import annotations

import os
from types import ModuleType

_litellm: ModuleType | None = None


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
    return _litellm
