"""The folders a job writes to, checked before anything is created: ``paths.outputs`` or
``cache.dir`` on a read-only file system, behind a file, with a folder name longer than the
file system allows, or under a system folder (unless ``paths.allow_system=true``) is one line
and exit status 1, never a traceback, and leaves nothing behind. The ``mcu-exp`` command's exit
status and stderr are checked in a subprocess once per kind of boundary (a single run, a
sweep); the other refusals are the same check, so they run the job in this process and check
its one-line error there."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcu_exp.config.schema import typed_config
from mcu_exp.job.paths import folder_problem
from mcu_exp.job.validate import config_problems
from mcu_exp.pipeline import run_job
from support.compose import compose
from support.sweeps import STANDIN, mcu_exp

JOB = (STANDIN, "quiet=true", "evaluation.bootstrap_resamples=1000")


def refused(done: subprocess.CompletedProcess[str], key: str, needle: str) -> str:
    """The one error line of a refused command (checked: exit 1, no traceback)."""
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "warn" not in done.stderr.lower(), done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mcu-exp: error: {key}="), done.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def refused_in_process(key: str, needle: str, *overrides: str) -> str:
    """The one-line error of the job ``JOB + overrides`` run in this process (what the command
    prints after ``mcu-exp: error:``), raised before the job makes anything."""
    cfg = compose(*JOB, *overrides)
    with pytest.raises(ValueError) as info:
        run_job(cfg)
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{key}="), line
    assert needle in line, line
    return line


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (an empty tmpfs mounted ``ro``): root's writes fail there too."""
    folder = tmp_path / "ro"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs ({done.stderr.decode().strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_read_only_outputs_or_cache_folder_is_one_line(read_only: Path, outputs: Path) -> None:
    line = refused(mcu_exp(*JOB, f"paths.outputs={read_only}/outputs", outputs=outputs), "paths.outputs", "read-only")
    assert str(read_only) in line
    refused_in_process("cache.dir", "read-only file system", f"cache.dir={read_only}")
    assert not list(outputs.glob("runs/*/*"))  # no job folder was made


def test_a_file_in_the_way_is_one_line(tmp_path: Path, outputs: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    refused_in_process("paths.outputs", "is a file", f"paths.outputs={tmp_path}/a-file/outputs")


@pytest.mark.parametrize("key", ["paths.outputs", "cache.dir"])
def test_a_folder_name_longer_than_the_file_system_allows_is_one_line(key: str, tmp_path: Path, outputs: Path) -> None:
    value = tmp_path / ("n" * 300) / "inner"
    refused_in_process(key, "is 300 bytes long; expected at most 255", f"{key}={value}")
    assert [p.name for p in tmp_path.iterdir()] == ["outputs"]  # nothing made beside the outputs fixture


@pytest.fixture
def etc_folder() -> Iterator[Path]:
    """A name under /etc that nothing uses, removed afterwards should a job have made it."""
    path = Path("/etc") / f"mcu-exp-test-{uuid.uuid4().hex[:8]}"
    assert not path.exists()
    try:
        yield path
    finally:
        if path.is_dir():
            subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


def test_outputs_under_a_system_folder_are_refused_before_anything_is_made(etc_folder: Path, outputs: Path) -> None:
    line = refused(mcu_exp(*JOB, f"paths.outputs={etc_folder}", outputs=outputs), "paths.outputs", "/etc is a system")
    assert "paths.allow_system=true" in line
    assert not etc_folder.exists()
    sweep = mcu_exp("-m", *JOB, f"paths.outputs={etc_folder}", "decision.epsilon=0.1,0.2", outputs=outputs)
    refused(sweep, "paths.outputs", "/etc is a system")
    assert not etc_folder.exists()
    refused_in_process("cache.dir", "/usr is a system", "cache.dir=/usr/share/mcu-exp-cache")
    assert not Path("/usr/share/mcu-exp-cache").exists()


def test_system_folders_only_when_forced(tmp_path: Path) -> None:
    for value in ("/", "/etc/mcu", "/usr/local/mcu", "/var/lib/mcu", "/proc/x", "/boot", "/sys/fs/mcu", "/dev/shm/x"):
        found = folder_problem("paths.outputs", value)
        assert found is not None and "system folder" in found, value
    (tmp_path / "etc-link").symlink_to("/etc")  # followed: what it points to decides
    assert "/etc is a system folder" in (folder_problem("cache.dir", str(tmp_path / "etc-link" / "mcu")) or "")
    for value in ("/tmp/mcu", str(tmp_path / "outputs"), "outputs", "/var/tmp/mcu", "/etcetera/mcu", "/usrdata/x"):
        assert folder_problem("paths.outputs", value) is None, value
    assert folder_problem("paths.outputs", "/etc/mcu", allow_system=True) is None
    forced = typed_config(compose("paths.outputs=/etc/mcu", "paths.allow_system=true"))
    plain = typed_config(compose("cache.dir=/etc/mcu-cache"))
    assert [p for p in config_problems(forced) if "system folder" in p] == []
    assert [p for p in config_problems(plain) if p.startswith("cache.dir=/etc/mcu-cache: /etc is a system")]
