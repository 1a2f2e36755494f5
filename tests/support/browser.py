"""Headless Chromium for tests that look at what a user sees (MLflow pages, HTML reports)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Without these, headless Chromium stops before MLflow's single-page app has rendered.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--virtual-time-budget=15000",
)


def chromium_binary() -> str:
    """The Chromium executable, or a failed test saying how to install it."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "Chromium is not installed, and the UI tests need it: install it with "
        "`apt-get install -y chromium` (Debian/Ubuntu); CI must install it when missing"
    )


def chromium(url: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``url`` with a fresh profile folder."""
    return subprocess.run(
        [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        text=True,
        timeout=180,
    )


def check_screenshot(path: Path, size: tuple[int, int]) -> None:
    """The PNG exists, has the window's size, and is a picture rather than one flat colour."""
    assert path.is_file(), f"no screenshot at {path}"
    assert path.stat().st_size > 20_000
    from PIL import Image

    with Image.open(path) as image:
        assert image.size == size
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    colours = np.unique(pixels[:: max(1, len(pixels) // 200_000)], axis=0)
    assert len(colours) > 64, f"{path} holds {len(colours)} colours: the page did not render"
