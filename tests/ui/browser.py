"""The viewer in a real browser: a uvicorn server in a thread, and the system's Chromium.

Used by the browser tests and by ``scripts/ui_screenshot.py`` (the README's picture).
Playwright drives Debian's ``chromium`` package; it never downloads a browser.
"""

from __future__ import annotations

import os
import shutil

from tests.serving import serve

__all__ = ["chromium_executable", "serve"]


def chromium_executable() -> str | None:
    """The Chromium to drive: ``$SWARMCORE_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("SWARMCORE_CHROMIUM") or shutil.which("chromium")
