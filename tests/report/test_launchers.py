"""Launcher configs (joblib, SLURM, Ray), the paper grid, and a parallel sweep with joblib."""

from __future__ import annotations

import sqlite3
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra.errors import ConfigCompositionException
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf

from support.mlflow_store import all_metrics, share_results
from support.sweeps import REPO, standin_sweep

NINE = [
    "phi-4-reasoning",
    "qwen2.5-14b",
    "qwen3-14b",
    "wizardcoder-15b",
    "starcoder2-15b",
    "codellama-13b",
    "gpt-3.5-turbo",
    "gpt-4",
    "gpt-4o",
]


def composed(*overrides: str) -> DictConfig:
    """The config ``mcu-exp --cfg all OVERRIDES`` prints (``hydra`` node included), composed in
    this process (the command's ``--cfg`` itself runs in tests/app/test_cli.py); Hydra's
    warnings on the way fail the test."""
    from hydra import compose, initialize_config_dir

    from mcu_exp.app import config_dir

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with initialize_config_dir(version_base="1.3", config_dir=config_dir()):
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    said = [str(w.message) for w in caught]
    # No automatic schema matching (a deprecation warning): our files extend the plugins'.
    assert not [m for m in said if "deprecated" in m], said
    return cfg


def launcher_block(*overrides: str) -> str:
    """The composed ``hydra.launcher`` section of ``mcu-exp --cfg hydra OVERRIDES``, as YAML."""
    return OmegaConf.to_yaml(composed(*overrides).hydra.launcher)


def test_joblib_launcher_is_the_plugins_own() -> None:
    block = launcher_block("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert "_target_: hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher" in block
    assert "n_jobs: 2" in block and "prefer: processes" in block


def test_slurm_launcher_extends_the_submitit_plugin() -> None:
    try:
        import hydra_plugins.hydra_submitit_launcher  # noqa: F401
    except ImportError:
        pytest.fail(
            "hydra-submitit-launcher is not installed: pip install hydra-submitit-launcher "
            "(it belongs in the test extra)"
        )
    block = launcher_block("hydra/launcher=slurm", "hydra.launcher.partition=gpu")
    for needle in (
        "_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
        "gpus_per_node: 1",
        "timeout_min: 240",
        "partition: gpu",
        "array_parallelism: 16",
        "max_num_timeout: 0",
        "qos: null",
    ):  # qos comes from the plugin's schema
        assert needle in block, f"{needle!r} missing from hydra.launcher:\n{block}"
    with pytest.raises(ConfigCompositionException) as bad:  # typed by the plugin's schema
        composed("hydra/launcher=slurm", "hydra.launcher.gpus_per_nod=2")
    assert "gpus_per_nod" in f"{bad.value} {bad.value.__cause__}"


@dataclass
class RayConf:
    """hydra-ray-launcher 1.2.2's ``RayConf``, for composing without the plugin (it needs ray)."""

    init: dict[str, Any] = field(default_factory=lambda: {"address": None})
    remote: dict[str, Any] = field(default_factory=dict)


@dataclass
class RayLauncherConf:
    """hydra-ray-launcher 1.2.2's ``RayLauncherConf`` (same fields and target)."""

    _target_: str = "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
    ray: RayConf = field(default_factory=RayConf)


def test_ray_cluster_launcher_extends_the_ray_plugin() -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore

    from mcu_exp.app import config_dir

    try:
        import hydra_plugins.hydra_ray_launcher  # noqa: F401
    except ImportError:  # ray is too heavy for the test environment: the plugin's schema, copied
        ConfigStore.instance().store(
            group="hydra/launcher", name="ray", node=RayLauncherConf, provider="test_fake_ray_launcher"
        )
    with initialize_config_dir(version_base="1.3", config_dir=config_dir()):
        cfg = compose("config", overrides=["hydra/launcher=ray_cluster"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
    assert launcher.ray.init.address == "auto"
    assert launcher.ray.remote.num_gpus == 1 and launcher.ray.remote.max_retries == 0


def test_paper_grid_sweeps_the_nine_models_under_the_paper_protocol() -> None:
    cfg = composed("experiment=paper_grid")
    assert f"model: {','.join(NINE)}" in OmegaConf.to_yaml(cfg.hydra)
    for model in NINE:
        assert (REPO / "conf" / "model" / f"{model}.yaml").is_file(), model
    job = OmegaConf.to_yaml({key: value for key, value in cfg.items() if key != "hydra"})
    for needle in ("k: 50", "k_cal: 25", "epsilon: 0.1", "name: deberta_base"):
        assert needle in job


@pytest.mark.slow
def test_joblib_sweep_logs_every_job_to_one_store_and_keeps_the_cache_consistent(tmp_path: Path) -> None:
    # Two jobs, one per core, at once in joblib's worker processes.
    outputs = share_results(tmp_path / "outputs")  # no MLflow store: the jobs race to create it
    res = standin_sweep(
        outputs,
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "proxy._target_=support.cache_standin.CacheStandInProxy",
        "decision.epsilon=0.05,0.2",
        PYTHONPATH=f"{REPO / 'tests'}:{REPO / 'tests' / 'report'}",
    )
    assert res.returncode == 0, (
        "jobs racing to create a new SQLite store must not fail (mcu_exp.tracking "
        "serialises it):\n" + res.stderr[-3000:]
    )
    assert "Joblib.Parallel(n_jobs=2" in res.stdout + res.stderr

    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("mcu_exp").experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("mcu.kind") == "sweep"]
    runs = [r for r in runs if r.data.tags.get("mcu.kind") == "job"]  # the jobs, not the sweep's parent run
    assert len(runs) == 2
    # Jobs in joblib's worker processes still find the sweep's parent run.
    assert {r.data.tags.get("mlflow.parentRunId") for r in runs} == {parent.info.run_id}
    assert parent.info.status == "FINISHED" and len({r.info.run_name for r in runs}) == 2
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert len({r.data.tags["mcu.sweep"] for r in runs}) == 1
    assert sorted(float(r.data.params["decision.epsilon"]) for r in runs) == [0.05, 0.2]
    assert all(all_metrics(client, r)["cache.consistent"] == 1.0 for r in runs)  # metrics.json: not a headline

    with sqlite3.connect(outputs / "cache" / "generations.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = dict(db.execute("SELECT key, text FROM samples").fetchall())
    table = pd.read_csv(Path(runs[0].data.tags["mcu.output_dir"]) / "results" / "per_program.csv")
    assert len(rows) == 50 + 2 * 50  # shared samples once, each job's own once
    for pid, alpha in zip(table["program_id"], table["alpha_test"], strict=True):
        assert float(rows[f"shared/{pid}"]) == pytest.approx(alpha, abs=1e-9)
