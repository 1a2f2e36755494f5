"""The `mcu-exp` command: typed-config errors, one-line value errors, and an installed wheel
(composition itself is checked in-process in test_config_groups.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist

REPO = Path(__file__).resolve().parents[2]


def mcu_exp(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "mcu_exp", *args],
        cwd=cwd or REPO,
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bad_config_fails_at_startup_with_hydras_message(outputs: Path) -> None:
    """A value of the wrong type (a misspelled key and a missing config group are checked, with
    their exact one-line messages, in test_first_screen.py)."""
    res = mcu_exp("proxy.k=many")
    assert res.returncode != 0
    assert "proxy.k" in res.stderr
    assert "Traceback" not in res.stderr or "Set the environment variable HYDRA_FULL_ERROR" in res.stderr


def test_installed_wheel_ships_configs(tmp_path: Path) -> None:
    """Build the wheel, install it into a fresh venv, run `mcu-exp --cfg job` outside the repo."""
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(dist.glob("mcu_exp-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    vpy = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # Install the wheel with this venv's pip, into the new venv; dependencies come from ours.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    (site / "_deps_from_dev_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {**os.environ, "MCU_EXP_OUTPUTS": str(tmp_path / "out")}
    where = subprocess.run(
        [str(vpy), "-c", "import mcu_exp.app as a; print(a.config_dir())"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(site)), where.stdout
    res = mcu_exp("--cfg", "job", cwd=outside, env=env, python=str(vpy))
    assert res.returncode == 0, res.stderr
    assert "name: scalabrino" in res.stdout and "name: p1" in res.stdout


@pytest.mark.parametrize(
    "override,needle",
    [
        ("decision.epsilon=1.5", "decision.epsilon=1.5: expected a value in (0, 1)"),  # the shared checks
        ("proxy.k_cal=1", "proxy.k=20, proxy.k_cal=1"),  # the proxy's own checks
    ],
)
def test_out_of_range_values_fail_in_one_line(outputs: Path, override: str, needle: str) -> None:
    """The command's contract for bad values: exit 1, one line, no traceback (every value
    check's message is tested in-process in test_config_groups.py)."""
    res = mcu_exp(override)
    assert res.returncode == 1
    errors = [line for line in res.stderr.splitlines() if line.startswith("mcu-exp: error:")]
    assert len(errors) == 1 and needle in errors[0], res.stderr
    assert "Traceback" not in res.stderr


def test_missing_custom_dataset_folder_is_one_line(outputs: Path, tmp_path: Path) -> None:
    res = mcu_exp("dataset=custom", f"dataset.root={tmp_path / 'nowhere'}")
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert str(tmp_path / "nowhere") in res.stderr


def test_data_warnings_print_as_one_line(outputs: Path) -> None:
    res = mcu_exp("preview_only=true", "tracking=none", "quiet=true")
    assert res.returncode == 0, res.stderr[-2000:]
    (line,) = [x for x in res.stderr.splitlines() if "repeated (participant, program) pairs" in x]
    assert line.startswith("warning: ") and line.rstrip().endswith("437 evaluations")
    assert "read_scalabrino(" not in res.stderr and "DatasetWarning" not in res.stderr
