"""Headless Chromium for tests that look at what a user sees (MLflow pages, HTML reports)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
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


# Starts Chromium with the DevTools pipe on descriptors 3 and 4, where --remote-debugging-pipe
# expects it: the descriptors are moved there in a small launcher process, not in this one.
_LAUNCHER = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
)


class DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``),
    for what only a page's scripts can tell (an image decoded, its natural width), which
    ``--dump-dom`` cannot: :meth:`open` a URL, :meth:`wait` until an expression holds there,
    :meth:`screenshot` the window. Real time, not virtual: :meth:`wait` polls until its timeout."""

    def __init__(self, profile: Path, size: tuple[int, int], timeout: float = 60) -> None:
        self.size, self.timeout = size, timeout
        chrome_in, self._write = os.pipe()
        self._read, chrome_out = os.pipe()
        flags = [f for f in CHROMIUM_FLAGS if not f.startswith("--virtual-time-budget")]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(chrome_in), str(chrome_out), chromium_binary(), *flags]
            + ["--remote-debugging-pipe", f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
            + ["about:blank"],
            pass_fds=(chrome_in, chrome_out),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(chrome_in)
        os.close(chrome_out)
        self._buffer, self._id, self._session = b"", 0, ""
        try:
            page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
            self._session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
            self.call(
                "Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1, mobile=False
            )
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer over the DevTools pipe")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the DevTools pipe (exit status {self.proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(message))

    def call(self, method: str, **params: object) -> dict:
        """One DevTools command (on the page once attached; ``Target.*``, ``Browser.*`` on the
        browser), its result."""
        self._id += 1
        message: dict[str, object] = {"id": self._id, "method": method, "params": params}
        if self._session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._message(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return dict(answer.get("result", {}))

    def open(self, url: str) -> None:
        """Load ``url`` afresh (by way of about:blank: a URL that differs only after ``#`` would
        otherwise be a same-page change a single-page app may ignore)."""
        self.call("Page.navigate", url="about:blank")
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> object:
        """The value of a JavaScript expression on the page (a promise's, once it settles)."""
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return found["result"].get("value")

    def wait(self, expression: str) -> object:
        """Poll ``expression`` until it is truthy; its value (a failed test after the timeout)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        pytest.fail(f"not on the page after {self.timeout:g} s: {expression}")

    def screenshot(self, path: Path) -> None:
        """The window as a PNG at ``path``, once what changed last is painted, checked
        (:func:`check_screenshot`)."""
        self.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))")
        path.write_bytes(base64.b64decode(str(self.call("Page.captureScreenshot", format="png")["data"])))
        check_screenshot(path, self.size)

    def close(self) -> None:
        """Close the browser (killed when it does not go) and the pipe; once."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, RuntimeError, TimeoutError):
                self.call("Browser.close")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._read, self._write):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1
