"""The README's promise, end to end offline: a sweep over P1, P2, P3 and two ε values,
decision-only jobs that load no model, and a report that renders. The models are the tiny
random Llama (the mechanics, not the text, are under test; `make run` runs SmolLM2)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.cli.report import main as report_main
from mcu_exp.pipeline import run_job
from support.browser import check_screenshot, chromium
from support.hydra_job import hydra_job
from support.mlflow_store import all_metrics, seed_store
from support.sweeps import multirun_in_process
from support.tiny_llama import LOCAL_EXPERTS, model_overrides

pytestmark = [pytest.mark.slow]

TINY = [
    "debug=quick",
    "dataset.limit=4",
    "proxy.k=4",
    "proxy.k_cal=2",
    "model.max_new_tokens=12",
    "experts.m=3",
    "experts.top_n=1",
    "++proxy.r=2",
    "quiet=true",
    "evaluation.plots=false",
    "tracking.sweep_report=false",
]  # the test makes its own report


@dataclass(frozen=True)
class Swept:
    """The first sweep's outputs folder, its MLflow client and experiment, its runs by proxy
    (P1's by ε)."""

    outputs: Path
    client: MlflowClient
    experiment_id: str
    by_proxy: dict[str, list[Any]]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> Swept:
    """The sweep over P1, P2, P3 and two ε values, run once for this file's tests, in this
    process through Hydra's own multirun and launcher (what is read is the sweep's runs and
    caches; the command's own sweeps run in tests/app and tests/tracking)."""
    outputs = seed_store(tmp_path_factory.mktemp("sweep") / "outputs")
    multirun_in_process(outputs, "proxy=p1,p2,p3", "decision.epsilon=0.05,0.3", *tiny(tiny_llama))
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    assert client.get_experiment_by_name("mcu_exp") is None  # smoke runs (dataset.limit) never land there
    exp = client.get_experiment_by_name("mcu_exp-debug")
    runs = [
        r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("mcu.kind") not in ("report", "sweep")
    ]
    assert len(runs) == 6 and {r.info.status for r in runs} == {"FINISHED"}
    by_proxy: dict[str, list[Any]] = {}
    for r in runs:
        by_proxy.setdefault(r.data.tags["mcu.proxy"], []).append(r)
    by_proxy["p1"].sort(key=lambda r: float(r.data.params["decision.epsilon"]))
    return Swept(outputs, client, exp.experiment_id, by_proxy)


def tiny(tiny_llama: Path) -> list[str]:
    return [*TINY, *model_overrides(tiny_llama, ("model", *LOCAL_EXPERTS))]


def test_offline_sweep_reuses_caches(swept: Swept, tiny_llama: Path) -> None:
    client, by_proxy = swept.client, swept.by_proxy
    assert sorted(by_proxy) == ["p1", "p2", "p3"]
    # P1 at the first ε generates the target summaries; every later P1 job and P2/P3's use of
    # those summaries comes from the cache. Decision-only jobs load neither model nor encoder.
    p1 = by_proxy["p1"]
    assert all_metrics(client, p1[0])["model_loaded"] == 1.0
    for r in p1[1:]:
        m = all_metrics(client, r)
        assert m["model_loaded"] == 0.0 and m["scorer_loaded"] == 0.0
        assert m["generation_cache_misses"] == 0.0
    taus = [r.data.metrics["tau"] for r in p1]
    assert taus == sorted(taus, reverse=True) and taus[0] > taus[-1]

    # Later jobs over ε alone are served entirely from the caches (run here in this process, as
    # the app runs a job: the launcher is the first sweep's).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCU_EXP_OUTPUTS", str(swept.outputs))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        for epsilon in (0.2, 0.4):
            with hydra_job(*tiny(tiny_llama), f"decision.epsilon={epsilon}") as cfg:
                run_job(cfg)
    newest = [
        r
        for r in client.search_runs([swept.experiment_id], order_by=["attributes.start_time DESC"], max_results=5)
        if r.data.tags.get("mcu.kind") not in ("report", "sweep")
    ][:2]
    assert {float(r.data.params["decision.epsilon"]) for r in newest} == {0.2, 0.4}
    assert all(
        all_metrics(client, r)["model_loaded"] == 0.0 and all_metrics(client, r)["scorer_loaded"] == 0.0 for r in newest
    )


def test_report_of_the_sweep_renders_in_chromium(swept: Swept, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report over the first sweep: tables and every figure, rendered in Chromium."""
    sweep = swept.by_proxy["p1"][0].data.tags["mcu.sweep"]
    out = tmp_path / "report"
    # `mcu-exp report`'s entry point in this process (the command itself runs in tests/report).
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(swept.outputs))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    report_main(["--experiment", "mcu_exp-debug", "--debug", "--sweep", sweep, "--out", str(out)])
    summary = pd.read_csv(out / "summary.csv")
    # P3 calibrates nothing, so its two ε jobs are one configuration, run twice.
    assert len(summary) == 5 and sorted(summary["runs"]) == [1, 1, 1, 1, 2]
    page = out / "report.html"
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text().replace(
            "</body>",
            "<script>window.addEventListener('load', () => { document.body.dataset.decoded = "
            "[...document.images].filter(i => i.complete && i.naturalWidth > 0).length; });"
            "</script></body>",
        )
    )
    shot = tmp_path / "report.png"
    res = chromium(
        probe.as_uri(), tmp_path / "profile", "--window-size=1200,2400", "--dump-dom", f"--screenshot={shot}"
    )
    assert res.returncode == 0, res.stderr[-2000:]
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', res.stdout)
    assert len(images) >= 4
    assert f'data-decoded="{len(images)}"' in res.stdout, "the browser could not decode every figure"
    for proxy in ("p1", "p2", "p3"):
        assert proxy in res.stdout
    check_screenshot(shot, (1200, 2400))
