"""A small tmpfs to fill, for the tests of a full disk (mounting needs root: the tests that
use it skip, saying why, where mounting is not allowed)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(folder: Path, size: str = "2m") -> Iterator[Path]:
    """``folder`` (created) with a tmpfs of ``size`` mounted on it; unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill ({done.stderr.strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill ``disk`` until ``leave`` bytes or fewer are free."""
    with (disk / "filler").open("ab") as handle:
        while shutil.disk_usage(disk).free > leave:
            try:
                handle.write(b"\0" * min(65536, max(shutil.disk_usage(disk).free - leave, 1)))
                handle.flush()
            except OSError:
                break
