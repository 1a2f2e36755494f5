"""`mcu-exp report` pools the selected runs that share a configuration but differ in dataset
(not only a sweep's end): its "Pooled across datasets" section, pooled/<k>/ files, forest plots
and the report run's artifacts, from runs logged as a job logs them in a real MLflow store."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.evaluation.pooling import pool_correlations, pool_disattenuated
from mcu_exp.names import KIND_REPORT
from mcu_exp.report.build import make_report
from mcu_exp.tracking.artifacts import RunArtifacts
from support.ceiling_keys import bounds_metrics
from support.md_tables import section, table_rows
from support.mlflow_runs import METRICS, Store, log_job

PNG = b"\x89PNG\r\n\x1a\n"
NAN = float("nan")
# configuration (ε) → dataset → (ρ, n, ceiling on ρ); ε=0.2 ran on one dataset only, and
# ε=0.05's atoms run has an undefined ρ
DESIGN = {
    "0.1": {"scalabrino": (0.243, 50, 0.713), "stakelab": (0.12, 49, 0.730), "atoms": (0.41, 126, 0.971)},
    "0.05": {"scalabrino": (0.30, 50, 0.713), "atoms": (NAN, 126, 0.971)},
    "0.2": {"scalabrino": (0.20, 50, 0.713)},
}


def job_metrics(rho: float, n: int, ceiling: float) -> dict[str, float]:
    """What a job logs that the pooled section reads, beside the ordinary metrics."""
    score = {"auc_score": 0.61, "auc_score_ci_low": 0.45, "auc_score_ci_high": 0.77}
    spearman = {"spearman": rho, "spearman_ci_low": rho - 0.2, "spearman_ci_high": rho + 0.2}
    return {**METRICS, "n": float(n), **score, **spearman, **bounds_metrics(rho=ceiling)}


def log_design(store: Store, exp: str) -> dict[str, dict[str, dict[str, float]]]:
    """Every run of :data:`DESIGN`; configuration → dataset → the metrics it logged."""
    logged: dict[str, dict[str, dict[str, float]]] = {}
    for eps, datasets in DESIGN.items():
        for name, figures in datasets.items():
            metrics = job_metrics(*figures)
            log_job(store, exp, [f"dataset={name}", f"decision.epsilon={eps}"], metrics=metrics)
            logged.setdefault(eps, {})[name] = metrics
    return logged


def expected_pools(metrics: dict[str, dict[str, float]]) -> tuple:
    plain = pool_correlations([(d, m["spearman"], int(m["n"])) for d, m in metrics.items()])
    reliable = [(d, m["spearman"], int(m["n"]), m["ceiling.reliability"]) for d, m in metrics.items()]
    return plain, pool_disattenuated(reliable)


def cell(pool) -> str:
    return f"{pool.rho:.3f} [{pool.ci_low:.3f}, {pool.ci_high:.3f}]"


def test_report_pools_runs_of_one_configuration_across_datasets(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logged = log_design(store, "pooled_report")
    out = make_report(store.uri, ["pooled_report"], out=tmp_path / "report", echo=True)
    printed = capsys.readouterr().out

    plain, disattenuated = expected_pools(logged["0.1"])
    assert plain.k == 3 and math.isfinite(plain.pi_low)
    csv = pd.read_csv(out / "pooled" / "0" / "pooled.csv").set_index("name")
    assert csv.loc["pooled", "rho"] == pytest.approx(plain.rho, abs=1e-12)
    assert csv.loc["pooled", "ci_low"] == pytest.approx(plain.ci_low, abs=1e-12)
    frame = pd.read_csv(out / "pooled" / "0" / "pooled_disattenuated.csv").set_index("name")
    assert frame.loc["pooled", "rho"] == pytest.approx(disattenuated.rho, abs=1e-12)
    assert (out / "pooled" / "0" / "forest.png").read_bytes().startswith(PNG)
    assert (out / "figures" / "forest_0.png").read_bytes().startswith(PNG)

    rows = table_rows(section((out / "report.md").read_text(), "Pooled across datasets"))
    assert {r["configuration"] for r in rows} == {"smollm2-135m · p1 · ε=0.1", "smollm2-135m · p1 · ε=0.05"}
    first = {r["dataset"]: r for r in rows if r["configuration"].endswith("ε=0.1")}
    assert set(first) == {"scalabrino", "stakelab", "atoms", "pooled ρ", "pooled ρ/√reliability"}
    assert first["pooled ρ"]["ρ"] == cell(plain) and first["pooled ρ/√reliability"]["ρ"] == cell(disattenuated)
    assert first["pooled ρ"]["τ²"] == f"{plain.tau2:.3g}" and first["pooled ρ"]["I²"] == f"{plain.i2:.0%}"
    assert first["pooled ρ"]["prediction interval"] == f"[{plain.pi_low:.3f}, {plain.pi_high:.3f}]"
    assert first["atoms"]["ceiling on ρ"] == "0.971" and first["stakelab"]["AUC (score)"] == "0.610 [0.450, 0.770]"

    second, _ = expected_pools(logged["0.05"])  # atoms left out: one dataset, nothing pooled
    assert second.excluded == (("atoms", "rho is undefined (NaN)"),) and second.reason is not None
    assert next(r for r in rows if r["configuration"].endswith("ε=0.05") and r["dataset"] == "pooled ρ")["ρ"] == (
        "undefined"
    )
    assert (
        "smollm2-135m · p1 · ε=0.05: left out of the pool: atoms: rho is undefined (NaN)"
        in (out / "report.md").read_text()
    )
    assert sorted(p.name for p in (out / "pooled").iterdir()) == ["0", "1"]  # ε=0.2: one dataset, no row

    assert (
        f"Pooled over 3 datasets, smollm2-135m · p1 · ε=0.1's Spearman ρ with the humans' mean correctness is {cell(plain)}"
        in " ".join(printed.split())
    )
    assert 'id="forest_1.png"' in (out / "report.html").read_text()
    client = MlflowClient(tracking_uri=store.uri)
    experiment = client.get_experiment_by_name("pooled_report").experiment_id
    report = next(r for r in client.search_runs([experiment]) if r.data.tags.get("mcu.kind") == KIND_REPORT)
    files = RunArtifacts(client, report.info.run_id, report.info.artifact_uri).list("pooled/0")
    assert {"pooled/0/pooled.csv", "pooled/0/forest.png"} <= files


def test_report_without_a_configuration_on_two_datasets_has_no_pooled_section(store: Store, tmp_path: Path) -> None:
    for eps in ("0.1", "0.2"):
        log_job(store, "unpooled", ["dataset=stakelab", f"decision.epsilon={eps}"], metrics=job_metrics(0.2, 49, 0.7))
    out = make_report(store.uri, ["unpooled"], out=tmp_path / "report", log=False)
    assert "Pooled across datasets" not in (out / "report.md").read_text()
    assert not (out / "pooled").exists() and not (out / "figures" / "forest_0.png").exists()
