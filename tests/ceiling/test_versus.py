"""Share of the humans' ceiling, its interval by corners, what the results table and verdict
say about it, and the headline metrics it may take."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mcu_exp.ceiling.split_half import SPREAD, Reliability
from mcu_exp.ceiling.versus import share, share_interval, with_ceilings
from mcu_exp.evaluation import evaluate, metrics_for_mlflow, render_table
from mcu_exp.evaluation.groups_table import render_group_table
from mcu_exp.tracking.headline import MAIN, MAX_HEADLINE, OTHER, SORT_KEYS, headline, headline_metrics


def reliability(auc: float, low: float, high: float, rho: float = 0.8, programs: int = 50) -> Reliability:
    figures = {f"{k}{s}": math.nan for k in SPREAD for s in ("", "_ci_low", "_ci_high")}
    figures.update(
        {
            "auc_score": auc,
            "auc_score_ci_low": low,
            "auc_score_ci_high": high,
            "spearman": rho,
            "spearman_ci_low": rho - 0.1,
            "spearman_ci_high": rho + 0.05,
            "krippendorff_alpha": 0.14,
            "programs": float(programs),
            "programs_left_out": 2.0,
        }
    )
    return Reliability(group="all", figures=figures, splits=1000, confidence=0.95, seed=0)


def report():  # -> an AlignmentReport
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1], 25)
    score = truth + rng.normal(0, 1.5, 50)
    return evaluate(
        truth, (score > 0.5).astype(int), score, resamples=1000, human=score + rng.normal(0, 1, 50), permutations=0
    )


def test_share_is_the_proxys_distance_from_chance_over_the_ceilings() -> None:
    assert share(0.6, 0.7, 0.5) == pytest.approx(0.5)
    assert share(0.3, 0.6, 0.0) == pytest.approx(0.5)
    assert math.isnan(share(0.6, 0.5, 0.5)) and math.isnan(share(0.6, 0.45, 0.5))  # no room above chance
    # Corners: the lowest share pairs the proxy's low bound with the ceiling's high one.
    assert share_interval((0.55, 0.75), (0.6, 0.8), 0.5) == pytest.approx(((0.05 / 0.3), 2.5))
    assert share_interval((0.40, 0.75), (0.6, 0.8), 0.5) == pytest.approx((-1.0, 2.5))
    assert all(math.isnan(v) for v in share_interval((0.55, 0.75), (0.5, 0.8), 0.5))


def test_report_carries_ceiling_share_table_lines_and_verdict_clause() -> None:
    rep = report()
    (attached,) = with_ceilings({"all": rep}, {"all": reliability(0.65, 0.56, 0.75)}).values()
    found = metrics_for_mlflow(attached)
    expected = (rep.metrics["auc_score"] - 0.5) / 0.15
    assert found["share.auc_score"] == pytest.approx(expected)
    low, high = rep.ci["auc_score"]
    assert found["share.auc_score_ci_low"] == pytest.approx(min((low - 0.5) / 0.25, (low - 0.5) / 0.06))
    assert found["share.auc_score_ci_high"] == pytest.approx(max((high - 0.5) / 0.06, (high - 0.5) / 0.25))
    assert found["share.spearman"] == pytest.approx(rep.metrics["spearman"] / 0.8)
    assert found["ceiling.auc_score"] == 0.65 and found["ceiling.programs_left_out"] == 2.0
    assert "ceiling.auc_score" not in metrics_for_mlflow(rep)  # none without a ceiling

    text = " ".join(render_table(attached, ceiling_splits=1000).split())
    assert "Humans' ceiling: 1,000 random split-halves of each program's readers" in text
    assert "50 programs split, 2 with one reader left out; Krippendorff's α = 0.140" in text
    assert "half-panel: AUC (score) 0.650 [0.560, 0.750]" in text and "ceiling on ρ 0.800 [0.700, 0.850]" in text
    assert f"share of ceiling: AUC (score) {expected:.0%}" in text
    assert attached.verdict.endswith(
        f"the humans' own split-half AUC is 0.650 [0.560, 0.750], of which the "
        f"proxy reaches {expected:.0%} [{found['share.auc_score_ci_low']:.0%}, "
        f"{found['share.auc_score_ci_high']:.0%}]."
    )
    assert "humans' own" not in rep.verdict


def test_too_few_programs_say_undefined_everywhere() -> None:
    rep = report()
    few = dataclasses.replace(reliability(math.nan, math.nan, math.nan, math.nan, programs=8))
    (attached,) = with_ceilings({"all": rep}, {"all": few}).values()
    assert math.isnan(metrics_for_mlflow(attached)["share.auc_score"])
    assert "the humans' own split-half AUC is undefined: 8 programs with two or more readers" in attached.verdict
    assert "undefined: 8 programs with two or more readers (at least 10 needed)" in render_table(attached)
    groups = with_ceilings({"all": rep, "phd": rep}, {"all": reliability(0.65, 0.56, 0.75), "phd": few})
    table = render_group_table(groups, {})
    assert "ceiling AUC (score)" in table and "share of ceiling" in table
    phd = next(line for line in table.splitlines() if line.startswith("│ phd"))
    assert phd.count("undefined") == 2


def test_ceiling_headline_keys_fill_only_the_room_left() -> None:
    groups = ["all", "bachelor", "master", "phd", "professional"]
    metrics = dict.fromkeys((*SORT_KEYS, *MAIN, *OTHER), 0.5)
    metrics.update({f"{m}{suffix}": 0.5 for m in headline_metrics() for suffix in ("", "_ci_low", "_ci_high")})
    metrics.update({f"group.{g}.{m}": 0.5 for g in groups[1:] for m in ("f1", "auc_score")})
    base = len(headline(metrics, groups))  # every non-ceiling headline key
    assert base == len(metrics)
    metrics.update({"ceiling.auc_score": 0.65, "share.auc_score": 0.7, "share.spearman": 0.3, "ceiling.f1": 0.6})
    assert set(headline(metrics, groups, series=0)) >= {"ceiling.auc_score", "share.auc_score", "share.spearman"}
    assert len(headline(metrics, groups, series=MAX_HEADLINE - base - 3)) == base + 3
    one = headline(metrics, groups, series=MAX_HEADLINE - base - 1)
    assert "ceiling.auc_score" in one and "share.auc_score" not in one
    assert not {"ceiling.auc_score", "ceiling.f1"} & set(headline(metrics, groups, series=MAX_HEADLINE - base))
