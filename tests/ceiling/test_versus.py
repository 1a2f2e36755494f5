"""A job's ceiling figures: both bounds and the proxy's paired differences on the same programs,
what the results table, the verdict, the per-group ceiling table and the MLflow headline say."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from test_ceiling_bounds import bb_dataset

from mcu_exp.ceiling.concordance import concordance
from mcu_exp.ceiling.program_bootstrap import compare_to_bounds
from mcu_exp.ceiling.versus import ceilings, with_ceilings
from mcu_exp.config import EvaluationConfig, LabelsConfig
from mcu_exp.data import Dataset
from mcu_exp.data.labels import human_labels, label_evaluations
from mcu_exp.evaluation import evaluate, metrics_for_mlflow, render_table
from mcu_exp.evaluation.ceiling_lines import position, render_ceiling_table
from mcu_exp.tracking.headline import MAIN, MAX_HEADLINE, OTHER, SORT_KEYS, headline, headline_metrics

EV = EvaluationConfig(ceiling_resamples=200, ceiling_splits=100, ceiling_inner_splits=10)


def case(seed: int = 5, programs: int = 60) -> tuple[Dataset, pd.Series]:
    rng = np.random.default_rng(seed)
    ds, pi = bb_dataset(3.0, 3.0, rng.integers(2, 10, size=programs), rng)
    return ds, pd.Series(pi + 0.3 * rng.normal(size=pi.size), index=[f"p{i}" for i in range(pi.size)])


def test_krippendorffs_alpha_is_on_the_scored_programs_like_every_other_figure() -> None:
    """A proxy that leaves half the programs unscored: α beside its figures is the readers'
    agreement on the scored half (it was on every program), computed here with the
    ``krippendorff`` package on those programs' ABU50; with every program scored it is the
    dataset's α, bit for bit."""
    import krippendorff

    ds, score = case()
    half = score.where(np.arange(score.size) % 2 == 0)
    scored = set(half.dropna().index)
    rows = ds.evaluations[ds.evaluations["program_id"].isin(scored)]
    understood = (rows["correct"] / rows["total"] >= 0.5).astype(float)
    matrix = (
        pd.DataFrame({"p": rows["participant_id"].astype(str), "q": rows["program_id"], "v": understood})
        .pivot_table(index="p", columns="q", values="v", aggfunc="first")
        .to_numpy(dtype=float)
    )
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    on_half = ceilings(ds, half, LabelsConfig(), EV, [])["all"]["ceiling.krippendorff_alpha"]
    assert on_half == pytest.approx(expected, abs=1e-12)
    everything = ceilings(ds, score, LabelsConfig(), EV, [])["all"]["ceiling.krippendorff_alpha"]
    alone = ceilings(ds, None, LabelsConfig(), EV, [])["all"]["ceiling.krippendorff_alpha"]
    assert everything == alone and abs(everything - on_half) > 1e-6


def report_of(ds: Dataset, score: pd.Series):  # -> an AlignmentReport
    labels = human_labels(ds, LabelsConfig()).labels
    truth = labels.to_numpy()
    values = score.reindex(labels.index).to_numpy()
    return evaluate(truth, (values > np.median(values)).astype(int), values, resamples=1000, permutations=0)


def test_a_job_reports_both_bounds_and_the_paired_differences() -> None:
    ds, score = case()
    found = ceilings(ds, score, LabelsConfig(), EV, [])["all"]
    direct = compare_to_bounds(ds, score, resamples=200, splits=100, seed=0, inner_splits=10)
    assert found["ceiling.auc_score"] == direct.ceiling.figures["auc_score"].point
    assert found["ceiling.upper_auc_score_ci_low"] == direct.ceiling.figures["upper_auc_score"].ci_low
    assert found["vs_ceiling.upper"] == pytest.approx(found["vs_ceiling.auc_score"] - found["ceiling.upper_auc_score"])
    assert found["vs_ceiling.lower"] == pytest.approx(found["vs_ceiling.auc_score"] - found["ceiling.auc_score"])
    assert 0 <= found["vs_ceiling.upper_p_below"] <= 1 and found["disattenuated.flagged"] in (0.0, 1.0)
    assert found["ceiling.programs"] + found["ceiling.programs_left_out"] == 60
    pairs = concordance(label_evaluations(ds), score, resamples=200, confidence=0.95, seed=0)
    assert pairs.proxy is not None and found["concordance.proxy"] == pairs.proxy.value
    assert found["concordance.ceiling_ci_low"] == pairs.ceiling.ci[0]
    # The proxy's AUC here is on the splittable programs alone: sklearn on exactly those.
    labels = human_labels(ds, LabelsConfig())
    readers = ds.evaluations.groupby("program_id").size()
    kept = [p for p in labels.labels.index if readers[p] >= 2]
    assert found["vs_ceiling.auc_score"] == pytest.approx(roc_auc_score(labels.labels[kept], score[kept]), abs=1e-12)


def test_table_verdict_and_mlflow_carry_the_bounds() -> None:
    ds, score = case(6)
    rep = report_of(ds, score)
    (attached,) = with_ceilings({"all": rep}, ceilings(ds, score, LabelsConfig(), EV, [])).values()
    flat = metrics_for_mlflow(attached)
    assert {"ceiling.upper_auc_score", "vs_ceiling.lower_ci_low", "disattenuated.spearman"} <= set(flat)
    assert not any(key.startswith("share.") for key in flat)
    text = " ".join(render_table(attached).split())
    assert "lower bound, pessimistic (half panel vs half panel, 100 splits):" in text
    assert "upper bound (beta-binomial reader model, ICC" in text and "95 % CI over programs (200 program" in text
    assert "− upper bound" in text and "disattenuated ρ = ρ/√reliability" in text
    assert "Krippendorff's α of the readers' ABU50" in text
    assert f"proxy {flat['concordance.proxy']:.3f}" in text and "reader-pair ceiling" in text
    where = position(flat["vs_ceiling.auc_score"], flat["ceiling.auc_score"], flat["ceiling.upper_auc_score"])
    assert f"against the humans' bounds its point estimate lies {where}" in attached.verdict
    assert "share" not in text and "humans' own" not in rep.verdict


def test_where_a_proxy_lies_between_chance_and_the_bounds() -> None:
    assert position(0.45, 0.65, 0.88) == "at or below chance"
    assert position(0.6, 0.65, 0.88) == "between chance and the lower bound"
    assert position(0.7, 0.65, 0.88) == "between the lower and the upper bound"
    assert position(0.9, 0.65, 0.88) == "at or above the upper bound"
    assert position(0.7, 0.65, math.nan) == "above the lower bound"


def test_a_subgroup_is_scored_on_the_programs_its_ceiling_uses() -> None:
    """A Scalabrino-like master group: most programs have one master reader. The ceiling can
    only use programs with two; the proxy's AUC beside it must be on the same programs."""
    ds, score = case(7, programs=80)
    evaluations = ds.evaluations.copy()
    rng = np.random.default_rng(8)
    evaluations["group"] = np.where(rng.random(len(evaluations)) < 0.25, "master", "bachelor")
    ds = dataclasses.replace(ds, evaluations=evaluations)
    found = ceilings(ds, score, LabelsConfig(), EV, ["master"])["master"]
    master = evaluations[evaluations["group"] == "master"]
    counts = master.groupby("program_id").size()
    two = counts[counts >= 2].index
    assert found["ceiling.programs"] == len(two) and found["ceiling.programs_left_out"] == int((counts == 1).sum())
    labels = human_labels(ds, LabelsConfig(group="master")).labels
    same = roc_auc_score(labels[two], score[two])
    everything = roc_auc_score(labels, score[labels.index])
    assert found["vs_ceiling.auc_score"] == pytest.approx(same, abs=1e-12)
    assert abs(same - everything) > 1e-6  # the group's all-program AUC is another number
    table = render_ceiling_table({"master": found}, "t", 0.95)
    assert f"{len(two)} ({int((counts == 1).sum())})" in table


def test_too_few_programs_say_undefined_everywhere() -> None:
    ds, score = case(9, programs=12)
    few = ceilings(ds, score.iloc[:8], LabelsConfig(), EV, [])["all"]
    rep = report_of(ds, score)
    (attached,) = with_ceilings({"all": rep}, {"all": few}).values()
    assert math.isnan(metrics_for_mlflow(attached)["vs_ceiling.upper"])
    assert "the humans' ceiling is undefined:" in attached.verdict
    assert "(at least 10 needed, in both classes)" in render_table(attached)
    row = next(line for line in render_ceiling_table({"all": few}, "t", 0.95).splitlines() if line.startswith("│ all"))
    assert row.count("undefined") == 6


def test_ceiling_headline_keys_fill_only_the_room_left() -> None:
    groups = ["all", "bachelor", "master", "phd", "professional"]
    metrics = dict.fromkeys((*SORT_KEYS, *MAIN, *OTHER), 0.5)
    metrics.update({f"{m}{suffix}": 0.5 for m in headline_metrics() for suffix in ("", "_ci_low", "_ci_high")})
    metrics.update({f"group.{g}.{m}": 0.5 for g in groups[1:] for m in ("f1", "auc_score")})
    base = len(headline(metrics, groups))  # every non-ceiling headline key
    assert base == len(metrics)
    bounds = {"ceiling.auc_score", "ceiling.upper_auc_score", "vs_ceiling.upper", "disattenuated.spearman"}
    metrics.update(dict.fromkeys(bounds, 0.1) | {"ceiling.f1": 0.6, "vs_ceiling.lower": -0.1})
    assert set(headline(metrics, groups, series=0)) >= bounds
    assert len(headline(metrics, groups, series=MAX_HEADLINE - base - 4)) == base + 4
    one = headline(metrics, groups, series=MAX_HEADLINE - base - 1)
    assert "ceiling.auc_score" in one and "vs_ceiling.upper" not in one
    assert not bounds & set(headline(metrics, groups, series=MAX_HEADLINE - base))


def same(a: object, b: object) -> bool:
    """Equal bit for bit: dataclasses field by field, arrays with their dtype (NaN equal to NaN)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        fields = [f.name for f in dataclasses.fields(a)]
        return type(a) is type(b) and all(same(getattr(a, n), getattr(b, n)) for n in fields)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float):
        return isinstance(b, float) and np.float64(a).tobytes() == np.float64(b).tobytes()
    return a == b


def test_the_humans_side_is_computed_once_per_set_of_scored_programs(tmp_path: Path) -> None:
    """With a cache folder, a second score on the same programs reuses the humans' side of the
    comparison (no new cache entry) and every figure is the one computed without a cache, bit
    for bit; a score that leaves a program out is another set of programs, another entry."""
    ds, score = case()
    other = pd.Series(np.random.default_rng(9).random(score.size), index=score.index)
    fewer = other.copy()
    fewer.iloc[0] = np.nan

    def compare(proxy: pd.Series, cache_dir: Path | None = None) -> object:
        return compare_to_bounds(ds, proxy, resamples=200, splits=100, seed=0, inner_splits=10, cache_dir=cache_dir)

    def entries() -> int:
        return len(list((tmp_path / "results").rglob("*.pkl")))

    for proxy, stored in ((score, 1), (other, 1), (fewer, 2), (other, 2)):
        assert same(compare(proxy, tmp_path), compare(proxy))
        assert entries() == stored
    found = ceilings(ds, other, LabelsConfig(), EV, [], cache_dir=tmp_path)["all"]
    assert same(found, ceilings(ds, other, LabelsConfig(), EV, [])["all"]) and entries() == 2
