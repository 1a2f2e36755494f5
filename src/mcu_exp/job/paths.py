"""The folders a job writes to (``paths.outputs`` and ``cache.dir``), checked before anything
is created in them: a system folder, a folder name longer than the file system allows, a
place that is not a folder, or one this user cannot write is one line naming the key.

Hydra creates the job's folder under ``paths.outputs`` before the job's own code runs, so
:class:`PathCheck` (a Hydra callback, first in ``conf/config.yaml``) checks when the run or
sweep starts, and stops the command with the line (Hydra turns a callback's exception into a
warning and goes on, so it exits instead); :func:`path_problems` is also part of every job's
config checks, for a sweep whose jobs set their own ``cache.dir``. A system folder (``/``, ``/etc``, ``/usr``, …) is
refused unless ``paths.allow_system=true``: a mistyped override must not fill it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

ALLOW_KEY = "paths.allow_system"
NAME_MAX = 255  # bytes in one folder name, on every file system a job is likely to write to
PATH_MAX = 4096
# Refused with every folder below them ("/" itself only: every path lies below it).
SYSTEM_FOLDERS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib",
    "/var/cache",
    "/var/log",
    "/var/spool",
    "/var/run",
    "/System",
    "/Library",
    "/private/etc",
)


def system_folder(path: str | Path) -> str | None:
    """The system folder ``path`` is or lies in (as written, made absolute, and with its links
    followed), or None."""
    absolute = os.path.abspath(os.path.expanduser(str(path)))
    for candidate in dict.fromkeys([absolute, os.path.realpath(absolute)]):
        if candidate == "/":
            return "/"
        for folder in SYSTEM_FOLDERS:
            if candidate == folder or candidate.startswith(folder + "/"):
                return folder
    return None


def _long_name(path: str) -> str | None:
    for name in Path(path).parts:
        if len(os.fsencode(name)) > NAME_MAX:
            return name
    return None


def _nearest(path: Path) -> Path:
    """``path`` or the nearest of its parents that exists."""
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            return folder
    return Path(path.anchor or ".")


def folder_problem(key: str, value: str, allow_system: bool = False) -> str | None:
    """What is wrong with writing a job's files under ``value`` (the value of ``key``), or None."""
    shown = f"{key}={value}"
    long = _long_name(value)
    if long is not None:
        return (
            f"{shown}: the folder name {long[:24]}… is {len(os.fsencode(long))} bytes long; "
            f"expected at most {NAME_MAX} (the file system's limit)"
        )
    if len(os.fsencode(os.path.abspath(value))) > PATH_MAX:
        return f"{shown}: the path is longer than {PATH_MAX} bytes; expected a shorter one"
    found = system_folder(value)
    if found is not None and not allow_system:
        return (
            f"{shown}: {found} is a system folder; expected a folder of your own "
            f"(set {ALLOW_KEY}=true to write there anyway)"
        )
    path = Path(os.path.abspath(os.path.expanduser(value)))
    nearest = _nearest(path)
    if not nearest.is_dir():
        return f"{shown}: {nearest} is a file; expected a folder (or a path whose folders can be created)"
    if not os.access(nearest, os.W_OK | os.X_OK):
        why = _why_unwritable(nearest)
        what = "the folder" if nearest == path else f"{nearest}, where its folders would be created,"
        return f"{shown}: {what} cannot be written ({why}); expected a folder this user can write"
    return None


def _why_unwritable(folder: Path) -> str:
    """Read-only file system, or permission denied (what ``access(2)`` said)."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS).lower()
    except (OSError, AttributeError):
        pass
    return os.strerror(errno.EACCES).lower()


def path_problems(outputs: str, cache_dir: str | None, allow_system: bool = False) -> Iterator[str]:
    """The problems of ``paths.outputs`` and ``cache.dir`` (:func:`folder_problem`)."""
    for key, value in (("paths.outputs", outputs), ("cache.dir", cache_dir)):
        if value:
            found = folder_problem(key, str(value), allow_system)
            if found is not None:
                yield found


def check_paths(config: Any) -> None:
    """Stop the command (``mcu-exp: error: <line>`` on stderr, exit status 1) at the first
    problem of a composed config's folders; a value that does not resolve is left to the
    job's own checks."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.redact import redact_text

    try:
        outputs = OmegaConf.select(config, "paths.outputs")
        cache_dir = OmegaConf.select(config, "cache.dir")
        allow = bool(OmegaConf.select(config, ALLOW_KEY, default=False))
    except OmegaConfBaseException:
        return
    for problem in path_problems(str(outputs or ""), None if cache_dir is None else str(cache_dir), allow):
        raise SystemExit(f"mcu-exp: error: {redact_text(problem)}")


class PathCheck(Callback):
    """Hydra callback: :func:`check_paths` when a run or a sweep starts, before Hydra creates
    the job's folder (it must come before any callback that writes under ``paths.outputs``)."""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        check_paths(config)

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        check_paths(config)
