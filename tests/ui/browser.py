"""The viewer in a real browser: a uvicorn server in a thread, and the system's Chromium.

Used by the browser tests and by ``scripts/ui_screenshot.py`` (the README's picture).
Playwright drives Debian's ``chromium`` package; it never downloads a browser.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette


def chromium_executable() -> str | None:
    """The Chromium to drive: ``$SWARMCORE_CHROMIUM``, else ``chromium`` on the PATH."""
    return os.environ.get("SWARMCORE_CHROMIUM") or shutil.which("chromium")


@contextmanager
def serve(app: Starlette) -> Generator[str]:
    """Serve ``app`` on 127.0.0.1 at a free port in a background thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # A page's event stream may still be open at the end: don't wait on it for long.
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the viewer's server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
