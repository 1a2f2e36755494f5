"""A run logged before ``vs_p0.`` became ``vs_reference.`` still shows its cross-proxy metrics
in a report, under today's name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mcu_exp.names import current_metric_key
from mcu_exp.report.build import make_report
from support.mlflow_runs import METRICS, Store, log_job


def test_old_vs_p0_keys_read_as_vs_reference(store: Store, tmp_path: Path) -> None:
    old = {"vs_p0.f1": 0.95, "vs_p0.f1_ci_low": 0.9, "vs_p0.f1_ci_high": 0.99}
    log_job(store, "legacy_keys", ["model=gpt-4o"], metrics={**METRICS, **old})
    log_job(store, "legacy_keys", ["model=qwen3-14b"], metrics={**METRICS, "vs_reference.f1": 0.5})
    out = make_report(store.uri, experiments=["legacy_keys"], out=tmp_path / "r", log=False)
    summary = pd.read_csv(out / "summary.csv").set_index("model")
    assert not any(c.startswith("vs_p0.") for c in summary.columns)
    assert summary.loc["gpt-4o", "vs_reference.f1"] == pytest.approx(0.95)
    assert summary.loc["gpt-4o", "vs_reference.f1_ci_high"] == pytest.approx(0.99)
    assert summary.loc["qwen3-14b", "vs_reference.f1"] == pytest.approx(0.5)
    assert "F1 vs reference" in (out / "report.md").read_text()


def test_current_metric_key_renames_only_the_old_prefix() -> None:
    assert current_metric_key("vs_p0.auc_binary") == "vs_reference.auc_binary"
    assert current_metric_key("group.vs_p0.f1") == "group.vs_p0.f1"
    assert current_metric_key("f1") == "f1"
