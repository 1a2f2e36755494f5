"""A run bundle from the shared PostgreSQL cache (``cache.url``): it holds exactly the rows the
job read, not the other jobs' rows in the store, and replays on a machine without the store."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from mcu_exp.cli.bundle import main as bundle_main
from mcu_exp.config import register_configs
from mcu_exp.llm.cache import GenerationCache
from mcu_exp.pipeline import run_job
from support import fake_api
from support.postgres import PostgresCluster

REPO = Path(__file__).resolve().parents[2]
QUICK = [
    "model=gpt-4o",
    "debug=quick",
    "scorer=rougel",
    "dataset.limit=3",
    "proxy.k_cal=2",
    "quiet=true",
    "evaluation.plots=false",
    "model.requests_per_minute=null",
    "model.tokens_per_minute=null",
    "tracking.enabled=false",
    "tracking.bundle=true",
]


def job(outputs: Path, *overrides: str) -> Path:
    """Run one job in this process; its bundle."""
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        run_job(compose("config", overrides=[*QUICK, f"paths.outputs={outputs}", *overrides]))
    (bundle,) = outputs.glob("runs/*/*/bundle/run-bundle.zip")
    return bundle


def test_bundle_from_the_shared_store_holds_the_jobs_rows_only_and_replays_without_it(
    postgres_cluster: PostgresCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = postgres_cluster.database(f"bundle_{os.getpid()}")
    server = fake_api.FakeServer().start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", fake_api.PLANTED_KEY)
        url = f"model.base_url={server.url}/v1"
        job(tmp_path / "other", url, f"cache.url={store}", "proxy.k=6")  # another job's rows in the store
        bundle = job(tmp_path / "node-a", url, f"cache.url={store}", "proxy.k=4")
        with GenerationCache(store) as cache:
            assert len(cache) == 3 * 6  # the k = 4 job read 4 of each program's 6 samples
        with zipfile.ZipFile(bundle) as archive:
            manifest = json.loads(archive.read("manifest.json"))
        assert manifest["counts"]["samples"] == 3 * 4 and manifest["counts"]["requests"] == 3
        sent = len(server.answered())
        monkeypatch.delenv("OPENAI_API_KEY")
        capsys.readouterr()
        bundle_main(["replay", str(bundle)])
        out = capsys.readouterr().out
        assert "files identical to the bundle's" in out, out[-2000:]
        assert len(server.answered()) == sent
    finally:
        server.stop()
