"""Debian's Chromium driven by Playwright, for the viewer's browser tests and benchmark.

Playwright's own browser download is not used: the system package is what a
user (and CI, via ``.ci/run``) installs with ``apt-get install chromium``.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

#: Root needs --no-sandbox; the rest keep Chromium off a closed network and fast to start.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
INSTALL_HINT = "install Debian's browser with `apt-get install chromium` (.ci/run does)"


def find_chromium() -> str | None:
    """The system Chromium's path ($LITS_CHROMIUM, /usr/bin/chromium, or chromium on PATH)."""
    for candidate in (
        os.environ.get("LITS_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def launch_chromium(playwright: Playwright) -> Browser:
    """A headless system Chromium from a ``sync_playwright()`` context (RuntimeError if there is none)."""
    path = find_chromium()
    if path is None:
        raise RuntimeError(f"no Chromium found: {INSTALL_HINT}")
    return playwright.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS), headless=True)
