"""Headless Chromium for the browser tests: where Debian installs it, the flags every
test launches it with (no sandbox as root, nothing fetched from the network), and why a
test skips where it cannot run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing(*modules: str) -> str | None:
    """Why a browser test cannot run here (Chromium or one of `modules` is not
    installed); None when it can."""
    if not CHROMIUM.exists():
        return "Debian's Chromium is not installed (apt-get install chromium; .ci/run does it)"
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[browser]')"
    return None


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless, through a started `sync_playwright()`."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
