"""A throwaway single-node SLURM cluster on this machine, for the tests of ``hydra/launcher=slurm``.

:func:`start` writes a ``slurm.conf`` into a temp folder and starts ``munged`` (its own key and
socket there), ``slurmctld`` and ``slurmd`` as the current user (root on CI), on free ports;
:func:`stop` kills them. Clients (``sbatch``, ``sacct``, submitit) find the cluster through
``SLURM_CONF`` (:attr:`Cluster.env`). There is no slurmdbd: the job-completion plugin
``jobcomp/filetxt`` records every finished job, and ``sacct --completion`` (:meth:`Cluster.sacct`)
reads it, which is all the tests need to show that a job ran under SLURM. Needs Debian's
``slurm-wlm`` and ``munge``; without them the fixture fails with the command that installs them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.postgres import free_port

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sacct", "sinfo")
INSTALL = "apt-get update && apt-get install -y slurm-wlm munge"
# The node's CPUs, more than a 2-core CI machine has (``SlurmdParameters=config_overrides``): the
# tests' three jobs run at once instead of the longest one queueing behind the others.
CPUS = 4
MEMORY_MB = 2048  # what the node offers; jobs ask for 1 GB
START_TIMEOUT_S = 60
SACCT_FIELDS = ("JobID", "JobName", "Partition", "State", "ExitCode", "NodeList", "Start", "End")


@dataclass
class Cluster:
    """A running single-node cluster: its folder, config and the daemons' processes."""

    folder: Path
    conf: Path
    jobcomp: Path
    env: dict[str, str]  # variables that point SLURM clients at this cluster
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A SLURM client command against this cluster (its output as text)."""
        return subprocess.run(command, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout)

    def sacct(self, *job_ids: str) -> list[dict[str, str]]:
        """The finished jobs as ``sacct --completion`` reports them (one dict per job, the
        fields of :data:`SACCT_FIELDS`), all of them or those of ``job_ids``."""
        select = ["--jobs", ",".join(job_ids)] if job_ids else []
        res = self.run(
            "sacct", "--completion", "--allusers", "--parsable2", "--format", ",".join(SACCT_FIELDS), *select
        )
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        names = lines[0].split("|")
        return [dict(zip(names, line.split("|"))) for line in lines[1:] if line]

    def completed(self) -> list[dict[str, str]]:
        """Every record of the job-completion log (``key=value`` fields: ``JobId``,
        ``ArrayJobId``, ``ArrayTaskId``, ``JobState``, ...), which ``sacct --completion`` reads."""
        if not self.jobcomp.exists():
            return []
        return [
            dict(field.split("=", 1) for field in line.split() if "=" in field)
            for line in self.jobcomp.read_text().splitlines()
            if line.strip()
        ]

    def wait_idle(self, timeout: float = 60) -> None:
        """Wait until no job is pending, running or completing: then every job is in the
        completion log (a submitit client returns as soon as a job wrote its result, a moment
        before SLURM has recorded the job's end)."""
        deadline = time.monotonic() + timeout
        while self.run("squeue", "--noheader", "--states=PD,R,CG", "--format=%i").stdout.strip():
            if time.monotonic() > deadline:
                raise TimeoutError(f"SLURM jobs still queued or running after {timeout} s")
            time.sleep(0.2)

    def sacct_text(self) -> str:
        """``sacct --completion`` as a person reads it (for logs and the issue's note)."""
        return self.run(
            "sacct",
            "--completion",
            "--allusers",
            "--format",
            "JobID%12,JobName%14,Partition,State,ExitCode,NodeList,Start,End",
        ).stdout

    def logs(self) -> str:
        """The tails of the daemons' logs, for a failure message."""
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted(self.folder.glob("*.log"))
        )


def search_path() -> str:
    """``PATH`` with /usr/sbin and /sbin, where Debian puts the daemons, appended."""
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def missing_binaries() -> list[str]:
    """The SLURM and MUNGE programs not on :func:`search_path`."""
    return [b for b in BINARIES if shutil.which(b, path=search_path()) is None]


def write_conf(folder: Path, user: str, munge_socket: Path) -> Path:
    """``slurm.conf`` for one node ``localhost`` with :data:`CPUS` CPUs, every state, spool,
    log and pid file inside ``folder``, no cgroups and no accounting database."""
    ctld_port, slurmd_port = free_port(), free_port()
    lines = {
        "ClusterName": "mcuexp",
        "SlurmctldHost": "localhost",
        "SlurmctldPort": ctld_port,
        "SlurmdPort": slurmd_port,
        "SlurmUser": user,
        "SlurmdUser": user,
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={munge_socket}",
        "StateSaveLocation": folder / "state",
        "SlurmdSpoolDir": folder / "spool",
        "SlurmctldPidFile": folder / "slurmctld.pid",
        "SlurmdPidFile": folder / "slurmd.pid",
        "SlurmctldLogFile": folder / "slurmctld.log",
        "SlurmdLogFile": folder / "slurmd.log",
        "SlurmctldDebug": "info",
        "SlurmdDebug": "info",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": folder / "jobcomp.txt",
        "MpiDefault": "none",
        "SchedulerType": "sched/builtin",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "SlurmdParameters": "config_overrides",  # the node is what this file says, whatever the machine
        "ReturnToService": 2,
        "NodeName": f"localhost NodeAddr=127.0.0.1 CPUs={CPUS} RealMemory={MEMORY_MB} State=UNKNOWN",
        "PartitionName": "debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
    }
    conf = folder / "slurm.conf"
    conf.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
    return conf


def _start_munge(folder: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``munged`` in the foreground with its own key, socket, seed, pid and log in ``folder``."""
    munge = folder / "munge"
    munge.mkdir(mode=0o700)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    sock = munge / "munge.socket"
    with (folder / "munged.err.log").open("wb") as log:
        proc = subprocess.Popen(
            # --force: the socket's folder is private to this user (munged wants it open to all users).
            [
                shutil.which("munged", path=search_path()) or "munged",
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={sock}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'munged.seed'}",
                f"--log-file={folder / 'munged.log'}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    return proc, sock


def _wait(what: str, ready: Callable[[], bool], cluster: Cluster) -> None:
    """Poll ``ready`` until true; stop the cluster and fail the test if a daemon exits first or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        dead = [name for name, p in cluster.procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            stop(cluster)
            why = f"{', '.join(dead)} exited" if dead else f"not within {START_TIMEOUT_S} s"
            pytest.fail(f"the SLURM test cluster did not start ({what}: {why}):\n{cluster.logs()}", pytrace=False)
        time.sleep(0.2)


def start(folder: Path) -> Cluster:
    """Start munged, slurmctld and slurmd with a fresh config in ``folder``; return when the
    node is idle and takes jobs."""
    missing = missing_binaries()
    if missing:
        pytest.fail(f"SLURM is not installed ({', '.join(missing)} not found): run `{INSTALL}`", pytrace=False)
    for sub in ("state", "spool"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    user = pwd.getpwuid(os.getuid()).pw_name
    munge_proc, munge_socket = _start_munge(folder)
    conf = write_conf(folder, user, munge_socket)
    env = {"SLURM_CONF": str(conf), "PATH": search_path()}
    cluster = Cluster(folder, conf, folder / "jobcomp.txt", env, {"munged": munge_proc})
    _wait("munged", munge_socket.exists, cluster)

    def daemon(name: str, *args: str) -> None:
        binary = shutil.which(name, path=env["PATH"]) or name
        with (folder / f"{name}.err.log").open("wb") as log:
            cluster.procs[name] = subprocess.Popen(
                [binary, "-D", "-f", str(conf), *args],
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    daemon("slurmctld", "-i")
    _wait("slurmctld", lambda: cluster.run("scontrol", "ping").stdout.count("UP") > 0, cluster)
    daemon("slurmd", "-N", "localhost")
    _wait("slurmd", lambda: cluster.run("sinfo", "-h", "-N", "-o", "%T").stdout.strip() == "idle", cluster)
    return cluster


def stop(cluster: Cluster) -> None:
    """Cancel what is left in the queue, then stop the daemons (slurmd, slurmctld, munged:
    SIGTERM, then SIGKILL)."""
    if cluster.procs.get("slurmctld") is not None and cluster.procs["slurmctld"].poll() is None:
        cluster.run("scancel", "--full", "--partition", "debug")
    for name in ("slurmd", "slurmctld", "munged"):
        proc = cluster.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            continue
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A single-node SLURM cluster for the session; its folder is removed afterwards."""
    folder = tmp_path_factory.mktemp("slurm")
    cluster = start(folder)
    try:
        yield cluster
    finally:
        stop(cluster)
        shutil.rmtree(folder, ignore_errors=True)
