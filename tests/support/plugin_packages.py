"""Build a real plugin package (its own ``pyproject.toml``) and install it with ``pip install
--target`` (no network, no build isolation) into a folder only a job's ``PYTHONPATH`` names,
so the shared virtual environment, and every other test, never sees it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "{version}"

[project.entry-points."mcu_exp.plugins"]
{entry_point} = "{target}"

[tool.hatch.build.targets.wheel]
packages = ["src/{package}"]
"""


def install_plugin(
    factory: pytest.TempPathFactory,
    name: str,
    version: str,
    entry_point: str,
    target: str,
    files: Mapping[str, str],
) -> Path:
    """Distribution ``name`` (``version``; its package is ``name`` with underscores, holding
    ``files``) with one ``mcu_exp.plugins`` entry point, built and installed into a fresh
    folder; returns that folder (for ``PYTHONPATH``)."""
    package = name.replace("-", "_")
    source = factory.mktemp(name)
    (source / "src" / package).mkdir(parents=True)
    pyproject = PYPROJECT.format(name=name, version=version, entry_point=entry_point, target=target, package=package)
    (source / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    for file, text in files.items():
        (source / "src" / package / file).write_text(text, encoding="utf-8")
    site = factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    res = subprocess.run([*pip, "--target", str(site), str(source)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    entry_points = next(site.glob(f"{package}-*.dist-info")) / "entry_points.txt"
    assert "[mcu_exp.plugins]" in entry_points.read_text(encoding="utf-8")
    return site


def with_site(env: dict[str, str], site: Path) -> dict[str, str]:
    """``env`` with ``site`` first on ``PYTHONPATH``."""
    return {**env, "PYTHONPATH": f"{site}{':' + env['PYTHONPATH'] if env.get('PYTHONPATH') else ''}"}
