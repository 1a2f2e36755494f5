"""A plugin package cannot silently change a job: replacing a built-in entry is refused unless
``plugins.allow_replace`` names it (and is then recorded in ``specs.json``, the MLflow tags
and the run bundle), and a plugin entry that raises or calls ``sys.exit`` stops the job with
one line naming the distribution and the entry, its MLflow run FAILED.

One real package (``mcu-rogue-plugin``, built and installed with ``pip install --target``
into a folder only the job's ``PYTHONPATH`` names) does what ``$MCU_ROGUE`` says when its
entry point loads: ``f1`` replaces the built-in F1 with a metric always 0.999 (``replace=True``),
``exit``/``raise`` add a metric that calls ``sys.exit(3)``/raises, ``proxy`` adds a proxy
whose outcome raises. The jobs are the stand-in proxy's (no model) at ``debug=quick``; the
dataset's own warnings may come before the error line on stderr.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.cli.bundle import main as bundle_main
from support.mlflow_store import seed_store
from support.plugin_packages import install_plugin, with_site
from support.sweeps import REPO, STANDIN, app_env

INIT = '''\
"""A rogue mcu-exp plugin: what it registers depends on $MCU_ROGUE."""

import dataclasses
import os
import sys

import numpy as np


def always_high(c):
    """A "metric" that flatters every proxy."""
    return np.full(np.shape(c.tp), 0.999)


def exits(c):
    sys.exit(3)


def raises(c):
    raise RuntimeError("rogue metric broke")


def register():
    from mcu_exp.evaluation.registry import METRICS, register as register_metric

    mode = os.environ.get("MCU_ROGUE", "")
    if mode == "f1":
        METRICS.add("f1", dataclasses.replace(METRICS["f1"], compute=always_high), replace=True)
    elif mode == "exit":
        register_metric("rogue_exit")(exits)
    elif mode == "raise":
        register_metric("rogue_raise")(raises)
    elif mode == "proxy":
        from mcu_exp.proxies.registry import PROXIES

        PROXIES.add_lazy("rogue", "mcu_rogue_plugin.proxy:RogueProxy")
'''

PROXY = '''\
"""A proxy whose outcome fails."""

from support.standin_proxy import StandInProxy


class RogueProxy(StandInProxy):
    def outcome(self, done):
        raise ValueError("rogue proxy has no outcome")
'''

NAME = "mcu-rogue-plugin==0.2.0"


@pytest.fixture(scope="module")
def rogue_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rogue package built and installed into its own folder."""
    files = {"__init__.py": INIT, "proxy.py": PROXY}
    return install_plugin(tmp_path_factory, "mcu-rogue-plugin", "0.2.0", "rogue", "mcu_rogue_plugin:register", files)


def job(
    site: Path, outputs: Path, mode: str, *overrides: str, proxy: str = STANDIN
) -> subprocess.CompletedProcess[str]:
    """A ``debug=quick`` job (the stand-in proxy's by default) with the rogue plugin in ``mode``,
    in a process of its own (plugins load from entry points when the command starts); its
    outputs folder holds a ready MLflow store (a fresh one costs MLflow's schema migrations)."""
    env = with_site(app_env(seed_store(outputs), MCU_ROGUE=mode), site)
    args = [proxy, "reference=null", "debug=quick", "quiet=true", "evaluation.bootstrap_resamples=1000", *overrides]
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


def only_run(outputs: Path) -> object:
    """The one MLflow run under ``outputs``."""
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    (run,) = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    return run


def test_a_plugin_replacing_a_built_in_metric_is_refused_in_one_line(rogue_site: Path, tmp_path: Path) -> None:
    res = job(rogue_site, tmp_path / "outputs", "f1")
    assert res.returncode == 1, res.stderr[-3000:]
    assert res.stderr.strip().splitlines() == [
        f"mcu-exp: error: plugin {NAME} replaces the metric 'f1'; refused: allow it with plugins.allow_replace=[f1]"
    ]
    assert not list((tmp_path / "outputs").glob("runs/*/*/results"))  # refused before the job started


@pytest.mark.slow  # one debug=quick stand-in job in a subprocess
def test_an_allowed_replacement_runs_and_is_recorded(
    rogue_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "outputs"
    res = job(rogue_site, outputs, "f1", "plugins.allow_replace=[f1]", "tracking.bundle=true")
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = (path.parents[1] for path in outputs.glob("runs/*/*/results/metrics.json"))
    metrics = json.loads((run_dir / "results" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["f1"] == pytest.approx(0.999)  # the plugin's F1 is what ran
    record = [
        {"distribution": "mcu-rogue-plugin", "version": "0.2.0", "entry_points": ["rogue"], "replaced": ["metric:f1"]}
    ]
    specs = json.loads((run_dir / "results" / "specs.json").read_text(encoding="utf-8"))
    assert specs["plugins"] == record
    tags = only_run(outputs).data.tags  # type: ignore[attr-defined]
    assert tags["mcu.plugins"] == NAME
    assert tags["mcu.plugins.replaced"] == f"metric:f1 ({NAME})"
    (bundle,) = run_dir.glob("bundle/*.zip")
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["environment"]["plugins"] == record
    # The replay in this process, which loaded no plugin (`mcu-exp bundle replay` itself runs in a
    # subprocess in tests/bundle/test_hostile_bundles.py).
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "replay"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    capsys.readouterr()
    with contextlib.suppress(SystemExit):  # it exits 1: without the plugin's F1 the results differ
        bundle_main(["replay", str(bundle)])
    replayed = capsys.readouterr()
    said = f"The bundle's run had plugins: {NAME} (replaced metric:f1); this replay runs without them"
    assert said in replayed.out.splitlines(), replayed.out[-3000:] + replayed.err[-3000:]


@pytest.mark.slow  # a debug=quick stand-in job in a subprocess each
@pytest.mark.parametrize(
    ("mode", "what"),
    [
        ("exit", "(metric 'rogue_exit') called sys.exit(3)"),
        ("raise", "(metric 'rogue_raise') raised RuntimeError: rogue metric broke"),
    ],
)
def test_a_plugin_metric_that_exits_or_raises_fails_the_job_in_one_line(
    rogue_site: Path, tmp_path: Path, mode: str, what: str
) -> None:
    outputs = tmp_path / "outputs"
    res = job(rogue_site, outputs, mode)
    assert res.returncode == 1, res.stderr[-3000:]
    line = f"plugin {NAME} {what}; the job stopped"
    assert res.stderr.strip().splitlines()[-1] == f"mcu-exp: error: {line}" and "Traceback" not in res.stderr
    run = only_run(outputs)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]
    assert line in run.data.tags["mcu.error"]  # type: ignore[attr-defined]


@pytest.mark.slow  # one debug=quick stand-in job in a subprocess
def test_a_plugin_proxy_that_raises_fails_the_job_in_one_line(rogue_site: Path, tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    res = job(rogue_site, outputs, "proxy", proxy="proxy._target_=rogue")
    assert res.returncode == 1, res.stderr[-3000:]
    line = f"plugin {NAME} (proxy 'rogue') raised ValueError: rogue proxy has no outcome; the job stopped"
    assert res.stderr.strip().splitlines()[-1] == f"mcu-exp: error: {line}" and "Traceback" not in res.stderr
    assert only_run(outputs).info.status == "FAILED"  # type: ignore[attr-defined]
