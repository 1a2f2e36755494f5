"""The SLURM fixture's own promises: without SLURM it fails in one line naming the install
command (never skips), and a started cluster writes its config where it was asked to."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import slurm
from support.slurm import Cluster


def test_missing_slurm_fails_with_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, sacct, srun here (the daemons' /usr/sbin stays)
    with pytest.raises(pytest.fail.Exception) as failed:
        slurm.start(tmp_path / "cluster")
    message = str(failed.value)
    assert "\n" not in message and "sbatch" in message and slurm.INSTALL in message
    assert not (tmp_path / "cluster" / "slurm.conf").exists()  # failed before writing or starting anything


def test_the_cluster_is_one_idle_node_configured_in_its_own_folder(slurm_cluster: Cluster) -> None:
    conf = dict(line.split("=", 1) for line in slurm_cluster.conf.read_text().splitlines())
    assert slurm_cluster.conf.parent == slurm_cluster.folder
    assert all(str(slurm_cluster.folder) in conf[k] for k in ("StateSaveLocation", "SlurmdSpoolDir", "JobCompLoc"))
    nodes = slurm_cluster.run("sinfo", "--noheader", "--Node", "--format=%N %c %P").stdout.split()
    assert nodes == ["localhost", str(slurm.CPUS), "debug*"]
