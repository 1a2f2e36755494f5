"""A separate, pip-installed package plugs a proxy, a metric and a backend into mcu-exp through
the ``mcu_exp.plugins`` entry-point group, and a real job uses all three with no file of
mcu_exp touched.

The package is written here (its own ``pyproject.toml``), built by hatchling and installed
with ``pip install --target`` (no network, no build isolation) into a folder that only the
job's ``PYTHONPATH`` names. Its one entry point registers: the backend ``echo`` (a provider
whose samples are made from the prompt, counting what it wrote in ``$MCU_TOY_ECHO_LOG``) and a
``model=toy-echo`` config entry for it, the metric ``toy_specificity``, and the proxy ``toy``
(lazy ``"module:Class"``, composed with ``proxy=toy`` from the generated group entry).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.mlflow_store import seed_store
from support.plugin_packages import install_plugin, with_site
from support.sweeps import REPO, app_env

INIT = '''\
"""A toy mcu-exp plugin: a backend, a metric and a proxy."""

import os

import numpy as np


def specificity(c):
    """TN / (TN + FP): the share of hard programs the proxy calls hard."""
    from mcu_exp.plugin import safe_ratio

    return safe_ratio(c.tn, c.tn + c.fp)


class EchoBackend:
    """Samples made from the prompt: no model, deterministic."""

    def __init__(self, cfg):
        self.model_id = str(cfg.model_id)

    def identity(self):
        return {"backend": "echo", "model_id": self.model_id}

    def stream(self, jobs):
        from mcu_exp.plugin import Sample

        written = 0
        for position, job in enumerate(jobs):
            prompt = job.request.messages[-1].content
            for index in job.indices:
                words = " ".join(["word"] * ((len(prompt) * (index + 3)) % 13 + 1))
                yield position, index, Sample(text=words, finish_reason="stop")
                written += 1
        log = os.environ.get("MCU_TOY_ECHO_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{written}\\n")


def register():
    """The entry point: add the plugin's entries to mcu-exp's registries."""
    from hydra.core.config_store import ConfigStore

    from mcu_exp.plugin import PROVIDERS, PROXIES, Provider, register_metric

    register_metric("toy_specificity", header="specificity", kind="rate")(specificity)
    PROVIDERS.add(
        "echo",
        Provider(
            name="echo",
            create=lambda cfg, progress=True: EchoBackend(cfg),
            identity=lambda cfg: {"backend": "echo", "model_id": str(cfg.model_id)},
            extra="",
            base_url="unused",
        ),
    )
    ConfigStore.instance().store(
        group="model", name="toy-echo", node={"name": "toy-echo", "backend": "echo", "model_id": "echo-1"}
    )
    PROXIES.add_lazy("toy", "mcu_toy_plugin.proxy:ToyProxy")
'''

PROXY = '''\
"""The toy proxy: the target's summaries, α from their lengths, the configured rule."""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcu_exp.plugin import ProxyOutcome, Scores, SummaryConfig, SummaryProxy, apply_rule


@dataclass
class ToyConfig(SummaryConfig):
    name: str = "toy"
    k: int = 4
    k_cal: int = 2


class ToyProxy(SummaryProxy):
    Config = ToyConfig
    calibrated = True
    offers = ("alpha_cal", "alpha_test")

    def stages(self, done):
        yield self.target_stage()

    def outcome(self, done):
        ids, summaries, splits = self.ctx.program_ids, self.summaries(done), self.splits(done)

        def alpha(pid, part):
            return float(np.mean([len(summaries[pid][i]) for i in splits[pid][part]])) / 100.0

        alpha_cal = np.array([alpha(pid, 0) for pid in ids])
        alpha_test = np.array([alpha(pid, 1) for pid in ids])
        scores = Scores(alpha_cal=alpha_cal, alpha_test=alpha_test)
        decision = apply_rule(self.ctx.decision.rule, scores, self.ctx.decision)
        table = pd.DataFrame(
            {"alpha_cal": alpha_cal, "alpha_test": alpha_test, "score": -alpha_test, "label": decision.labels},
            index=pd.Index(ids, name="program_id"),
        )
        return ProxyOutcome(
            table=table, params=decision.params, metrics=dict(decision.metrics), scores=scores,
            quantile=self.ctx.decision.quantile,
        )
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy package built and installed (``pip install --target``) into its own folder."""
    files = {"__init__.py": INIT, "proxy.py": PROXY}
    return install_plugin(tmp_path_factory, "mcu-toy-plugin", "0.1.0", "toy", "mcu_toy_plugin:register", files)


@pytest.mark.slow  # one debug=quick job in a subprocess (~10 s of CPU)
def test_a_plugin_package_adds_a_proxy_a_metric_and_a_backend_a_job_uses(plugin_site: Path, tmp_path: Path) -> None:
    outputs, echo_log = seed_store(tmp_path / "outputs"), tmp_path / "echo.log"  # a ready MLflow store
    env = with_site(app_env(outputs, MCU_TOY_ECHO_LOG=str(echo_log)), plugin_site)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcu_exp",
            "proxy=toy",
            "model=toy-echo",
            "reference=null",
            "debug=quick",
            "quiet=true",
            f"cache.dir={tmp_path / 'cache'}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, textwrap.shorten(res.stderr[-3000:], 3000)
    assert sum(int(n) for n in echo_log.read_text().split()) == 6 * 6  # debug=quick: 6 programs × k = 6
    (run_dir,) = (path.parents[1] for path in outputs.glob("runs/*/*/results/metrics.json"))
    metrics = json.loads((run_dir / "results" / "metrics.json").read_text(encoding="utf-8"))
    tn, fp = metrics["tn"], metrics["fp"]
    assert metrics["toy_specificity"] == pytest.approx(tn / (tn + fp))  # the plugin's metric, on the job's labels
    assert "toy_specificity_ci_low" in metrics and "group.master.toy_specificity" in metrics  # bootstrapped, per group
    config = (run_dir / ".hydra" / "config.yaml").read_text(encoding="utf-8")
    assert "  name: toy\n" in config and "  backend: echo\n" in config


def test_a_plugin_that_fails_to_load_stops_the_job_in_one_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "broken_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "broken_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n"
    )
    (site / "broken_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[mcu_exp.plugins]\nbroken = broken_plugin\n"
    )
    (site / "broken_plugin.py").write_text("raise RuntimeError('this plugin is broken')\n")
    env = app_env(tmp_path / "outputs")
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    res = subprocess.run(
        [sys.executable, "-m", "mcu_exp", "debug=quick"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        "mcu-exp: error: plugin 'broken' (broken_plugin, from broken-plugin) failed to load: this plugin is broken"
    ]
