"""A throwaway PostgreSQL cluster for tests of the services (MLflow tracking on PostgreSQL,
shared stores): ``initdb`` into a temporary folder, ``postgres`` on 127.0.0.1 at a free port
(its Unix socket inside that folder), a new database per caller, everything deleted after.

Uses Debian's ``postgresql`` package (``apt-get install -y postgresql``): the binaries on
``PATH`` or in ``/usr/lib/postgresql/<version>/bin``; without them :func:`postgres_cluster`
fails in one line naming the binary and the apt command, never skips. PostgreSQL refuses
to run as root: as root, the cluster runs as the ``postgres`` user (the package creates it)
or else ``nobody``, in a folder under the system temp dir that user owns (pytest's own temp
folders are private to root). Durability settings are off (``fsync``,
``synchronous_commit``): the data is thrown away after the session. On Linux the server
also stops when the test process is killed outright (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = "apt-get update && apt-get install -y postgresql"
SUPERUSER = "mcu"  # the cluster's superuser; trust authentication on 127.0.0.1 only
PR_SET_PDEATHSIG = 1  # prctl(2)
_LIBC: ctypes.CDLL | None = None  # loaded here: a preexec_fn must not import
if sys.platform == "linux":
    with contextlib.suppress(OSError):
        _LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_binary(name: str) -> str:
    """The path of PostgreSQL's ``name`` binary (``initdb``, ``postgres``): on ``PATH``, else the
    newest ``/usr/lib/postgresql/<version>/bin`` (Debian leaves them off ``PATH``)."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(
        Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if versions:
        return str(versions[-1])
    raise FileNotFoundError(
        f"PostgreSQL's {name} is not installed (not on PATH nor in /usr/lib/postgresql/*/bin): {INSTALL}"
    )


def _stop_with_parent() -> None:
    """In the forked child, before ``exec``: Linux sends SIGQUIT (PostgreSQL's immediate
    shutdown) when the test process dies, so a test run killed outright leaves no server."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGQUIT)


def service_user() -> str | None:
    """The user the cluster runs as: None (this one) unless this is root, then ``postgres``
    when it exists, else ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


class PostgresCluster:
    """One running cluster; :meth:`database` makes a new database and returns its URL."""

    def __init__(self) -> None:
        self.initdb, self.postgres = postgres_binary("initdb"), postgres_binary("postgres")
        self.user = service_user()
        self.root = Path(tempfile.mkdtemp(prefix="mcu-postgres-"))
        self.data, self.sockets, self.log = self.root / "data", self.root / "sockets", self.root / "postgres.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.databases: set[str] = set()

    def _as_user(self) -> dict[str, object]:
        """``subprocess`` arguments that run a command as :attr:`user` (nothing when not root)."""
        if self.user is None:
            return {}
        entry = pwd.getpwnam(self.user)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def start(self, timeout_s: float = 60) -> PostgresCluster:
        """``initdb`` the cluster and start ``postgres``; wait until it accepts connections."""
        self.sockets.mkdir()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, self.sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        res = subprocess.run(
            [
                self.initdb,
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.root,
            **self._as_user(),
        )  # type: ignore[call-overload]
        if res.returncode != 0:
            raise RuntimeError(f"initdb failed: {(res.stdout + res.stderr).strip()[-2000:]}")
        for attempt in range(3):  # another process may take the free port first
            self.port = free_port()
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen(
                    [
                        self.postgres,
                        "-D",
                        str(self.data),
                        "-h",
                        "127.0.0.1",
                        "-p",
                        str(self.port),
                        "-k",
                        str(self.sockets),
                        "-c",
                        "fsync=off",
                        "-c",
                        "synchronous_commit=off",
                        "-c",
                        "full_page_writes=off",
                        "-c",
                        "max_connections=200",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.root,
                    start_new_session=True,
                    preexec_fn=_stop_with_parent,
                    **self._as_user(),
                )  # type: ignore[call-overload]
            if self._wait_ready(timeout_s):
                return self
            if attempt == 2 or "could not bind" not in self.log.read_text(errors="replace"):
                break
        raise RuntimeError(f"postgres did not start on 127.0.0.1:{self.port}:\n{self.tail()}")

    def _wait_ready(self, timeout_s: float) -> bool:
        """Whether the server answers before ``timeout_s`` (False when it exits first)."""
        import psycopg

        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def tail(self, chars: int = 3000) -> str:
        """The end of the server's log."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def url(self, database: str) -> str:
        """The URL of ``database`` on this cluster, as libpq and SQLAlchemy (MLflow) read it;
        SQLAlchemy 2.1 opens ``postgresql://`` with psycopg 3."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def database(self, name: str) -> str:
        """Create the database ``name`` (letters, digits, ``_``) and return its URL."""
        import psycopg

        if not name.replace("_", "").isalnum() or name in self.databases:
            raise ValueError(f"database name {name!r}: expected a new name of letters, digits and _")
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.add(name)
        return self.url(name)

    def query(self, database: str, sql: str, *args: object) -> list[tuple[object, ...]]:
        """The rows of one read-only query on ``database`` (for tests that look at the store itself)."""
        import psycopg

        with psycopg.connect(self.url(database)) as conn:
            return list(conn.execute(sql, args or None).fetchall())

    def stop(self) -> None:
        """Stop the server and delete the cluster's folder: PostgreSQL's immediate shutdown
        (SIGQUIT: no checkpoint, the data is thrown away next), then SIGKILL."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster for the test session; fails (never skips) without PostgreSQL."""
    cluster, error = None, ""
    try:
        cluster = PostgresCluster()
        cluster.start()
    except (FileNotFoundError, RuntimeError) as exc:
        error = str(exc)
    if error:  # outside the except: one message, not a chain of two
        if cluster is not None:
            cluster.stop()
        pytest.fail(error, pytrace=False)
    assert cluster is not None
    try:
        yield cluster
    finally:
        cluster.stop()
