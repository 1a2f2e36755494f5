"""``mcu-exp cache export|import --url …`` never prints a password given in one of libpq's
keyword forms (``?password=``, ``?sslpassword=``, a ``key=value`` string, quoted or not),
whatever line reports the URL: the command runs for real, against a port nothing listens on.
Each form runs the command's entry in this process, as ``mcu-exp`` dispatches it (what reaches
file descriptors 1 and 2 captured, its secrets remembered afresh as in a new process); the
command in its own process, exit status and all, is :func:`test_a_password_in_the_url_variable_is_masked_too`."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from mcu_exp import redact
from mcu_exp.app import config_dir
from mcu_exp.cli.commands import SUBCOMMANDS
from mcu_exp.job.validate import config_problems
from support.compose import compose
from support.postgres import free_port

SECRET = "Zq8-unique-SECRET-4711"
FORMS = [
    "postgresql://me@127.0.0.1:{port}/mcu?sslpassword=" + SECRET + "&connect_timeout=2",
    "postgresql://me@127.0.0.1:{port}/mcu?connect_timeout=2&password=" + SECRET,
    "host=127.0.0.1 port={port} dbname=mcu password=" + SECRET,
    "host=127.0.0.1 port={port} dbname=mcu password='" + SECRET + " " + SECRET + "' connect_timeout=2",
    "host=127.0.0.1 port={port} sslpassword=" + SECRET + " dbname=mcu",
    "postgresql://me:" + SECRET + "@127.0.0.1:{port}/mcu?connect_timeout=2",
]


def cache_command(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    """``mcu-exp cache …`` in its own process; ``url`` goes in ``$MCU_EXP_CACHE_URL``."""
    env = {k: v for k, v in os.environ.items() if k != "MCU_EXP_CACHE_URL"}
    if url is not None:
        env["MCU_EXP_CACHE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", "cache", *args], env=env, capture_output=True, text=True, timeout=120
    )


def cache_in_process(
    *args: str, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> subprocess.CompletedProcess[str]:
    """``mcu-exp cache …`` through the app's subcommand table in this process, as a new process
    would run it: no secret remembered before, ``$MCU_EXP_CACHE_URL`` unset; its exit status and
    what it wrote to file descriptors 1 and 2. A warning or a log record (WARNING and up) it
    raises counts as a line on stderr, as a process of its own would print them."""
    monkeypatch.delenv("MCU_EXP_CACHE_URL", raising=False)
    monkeypatch.setattr(redact, "_known", set())
    capfd.readouterr()
    caplog.clear()
    code: object = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            SUBCOMMANDS["cache"](list(args), config_dir())
        except SystemExit as exc:
            code = exc.code
    out, err = capfd.readouterr()
    quiet_by_default = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
    err += "".join(
        f"{w.category.__name__}: {w.message}\n" for w in caught if not issubclass(w.category, quiet_by_default)
    )
    err += "".join(f"{r.getMessage()}\n" for r in caplog.records if r.levelno >= logging.WARNING)
    return subprocess.CompletedProcess(["mcu-exp", "cache", *args], code if isinstance(code, int) else 1, out, err)


@pytest.mark.parametrize("form", FORMS)
def test_the_cache_command_masks_every_keyword_form_of_a_password(
    form: str,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = form.format(port=free_port())
    (tmp_path / "generations.sqlite").touch()  # an import gets past the folder check
    for action, folder in (("export", tmp_path / "dest"), ("import", tmp_path)):
        done = cache_in_process(
            action, str(folder), "--url", url, "--quiet", capfd=capfd, caplog=caplog, monkeypatch=monkeypatch
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"mcu-exp cache {action}: error: ") and done.stderr.count("\n") == 1
        assert SECRET not in done.stdout + done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()  # nothing was created for a store never reached


def test_a_password_in_the_url_variable_is_masked_too(tmp_path: Path) -> None:
    done = cache_command("export", str(tmp_path), "--quiet", url=FORMS[2].format(port=free_port()))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert SECRET not in done.stdout + done.stderr, done.stderr


@pytest.mark.parametrize("form", [FORMS[0], FORMS[4]])
def test_a_job_refuses_an_ssl_passphrase_in_cache_url_without_showing_it(form: str) -> None:

    from mcu_exp.config.schema import typed_config
    from mcu_exp.redact import redact_text

    cfg = typed_config(compose(f"cache.url='{form.format(port=1)}'"))
    found = [redact_text(p) for p in config_problems(cfg) if p.startswith("cache.")]
    assert len(found) == 1 and SECRET not in found[0], found


def test_an_echoed_url_keeps_everything_but_its_secrets() -> None:
    from mcu_exp.store.postgres import redact_conninfo

    assert redact_conninfo("postgresql://me:pw@db:5433/mcu?sslpassword=abc&sslmode=require") == (
        "postgresql://me:***@db:5433/mcu?sslpassword=***&sslmode=require"
    )
    assert redact_conninfo("host=db password='a b' dbname=mcu") == "host=db password=*** dbname=mcu"
    assert redact_conninfo("postgresql://me@db/mcu") == "postgresql://me@db/mcu"  # the user is no secret
