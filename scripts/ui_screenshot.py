"""Make the README's picture of ``swarmcore ui``: a run's page in Chromium.

    uv run python scripts/ui_screenshot.py [OUT]   # default: docs/images/ui-run.png

It stores the browser tests' runs (``tests/ui/runs.py``, on in-process models),
serves them as the tests do, and saves the diamond run's page at 1280 pixels wide
with agent ``b`` opened (its output, tool call and model calls). Needs Debian's
``chromium`` (or ``SWARMCORE_CHROMIUM``); Playwright downloads nothing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.ui

from playwright.sync_api import sync_playwright  # noqa: E402

from swarmcore.store import SQLiteStore  # noqa: E402
from swarmcore._ui.app import create_app  # noqa: E402
from tests.ui.browser import chromium_executable, serve  # noqa: E402
from tests.ui.runs import make_store  # noqa: E402


def main() -> None:
    """Save the screenshot; its path is the first argument, if any."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "ui-run.png"
    executable = chromium_executable()
    if executable is None:
        sys.exit("no Chromium: apt-get install chromium, or set SWARMCORE_CHROMIUM")
    with tempfile.TemporaryDirectory() as tmp:
        # The first runs in a process pay one-off imports; keep them off the picture's timeline.
        make_store(Path(tmp) / "warm-up.db")
        runs = make_store(Path(tmp) / "runs.db")
        store = SQLiteStore(runs.path)
        try:
            with serve(create_app(store)) as url, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(f"{url}/runs/{runs.diamond}")
                page.locator('details.agent[data-agent="b"] > summary').click()
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=out, full_page=True)
                browser.close()
        finally:
            store.close()
    print(f"{out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
