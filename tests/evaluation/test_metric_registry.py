"""The metric registry: every registered metric equals scikit-learn on random and degenerate
data, one implementation scores any shape, and a metric registered here reaches the report,
the bootstrap, the sweeps, MLflow and the comparison tables without touching other code."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)

from mcu_exp.evaluation import (
    Counts,
    Ranking,
    alignment_metrics,
    always_positive,
    bootstrap_ci,
    epsilon_sweep,
    evaluate,
    metric,
    metric_names,
    metrics_for_mlflow,
    random_expected,
    register,
    registered,
    render_table,
    resample_metrics,
    similarity_sweep,
    stratified_indices,
    sweep_metrics,
    threshold_sweep,
    unregister,
)
from mcu_exp.evaluation.registry import INTERVAL_KINDS, safe_ratio
from mcu_exp.report import tables

Reference = Callable[[np.ndarray, np.ndarray, np.ndarray], float]
NAN = float("nan")


def _auc(y: np.ndarray, values: np.ndarray) -> float:
    return NAN if y.min() == y.max() else float(roc_auc_score(y, values))  # undefined with one class


def _count(i: int) -> Reference:
    return lambda y, p, s: float(confusion_matrix(y, p, labels=[0, 1]).ravel()[i])


def human_of(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """A continuous human value per program (mean correctness), tied to y and, loosely, s."""
    return np.clip(np.round(0.4 + 0.3 * y + 0.1 * np.tanh(s), 2), 0.0, 1.0)


def _corr(fn: Callable[..., object]) -> Reference:
    def ref(y: np.ndarray, p: np.ndarray, s: np.ndarray) -> float:
        h = human_of(y, s)
        if s.min() == s.max() or h.min() == h.max():
            return NAN
        return float(fn(s, h).statistic)  # type: ignore[attr-defined]

    return ref


SKLEARN: dict[str, Reference] = {  # scikit-learn (SciPy for the correlations), NaN where undefined
    "accuracy": lambda y, p, s: accuracy_score(y, p),
    "precision": lambda y, p, s: precision_score(y, p, zero_division=np.nan),
    "recall": lambda y, p, s: recall_score(y, p, zero_division=np.nan),
    "f1": lambda y, p, s: f1_score(y, p, zero_division=np.nan),
    "auc_binary": lambda y, p, s: _auc(y, p),
    "auc_score": lambda y, p, s: _auc(y, s),
    "mcc": lambda y, p, s: matthews_corrcoef(y, p) if 0 < np.sum(y) < len(y) else np.nan,
    "spearman": _corr(stats.spearmanr),
    "kendall": _corr(stats.kendalltau),
    "tn": _count(0),
    "fp": _count(1),
    "fn": _count(2),
    "tp": _count(3),
}


def _cases() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    out = []
    for i in range(12):
        n = int(rng.integers(2, 120))
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        out.append(
            (f"random{i}", y, np.where(rng.random(n) < 0.7, y, 1 - y), np.round(y + rng.normal(0.0, 1.0, n), 1))
        )  # rounding makes ties
    y = rng.integers(0, 2, 30)
    y[:2] = [0, 1]
    out += [
        ("truth all 1", np.ones(15, int), rng.integers(0, 2, 15), rng.normal(size=15)),
        ("truth all 0", np.zeros(15, int), rng.integers(0, 2, 15), rng.normal(size=15)),
        ("predict all 0", y, np.zeros(30, int), np.round(rng.normal(size=30))),
        ("predict all 1", y, np.ones(30, int), rng.normal(size=30)),
        ("constant score", y, 1 - y, np.zeros(30)),
        ("ties but two", y, y, np.r_[-1.0, 1.0, np.zeros(28)]),
        ("one program", np.ones(1, int), np.ones(1, int), np.zeros(1)),
        ("one class, constant labels", np.zeros(9, int), np.zeros(9, int), np.arange(9.0)),
    ]
    return out


CASES = _cases()


def _reference(name: str, y: np.ndarray, p: np.ndarray, s: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn on single-class data
        return float(SKLEARN[name](y, p, s))


def test_every_registered_metric_has_a_sklearn_reference() -> None:
    assert set(metric_names()) == set(SKLEARN)


@pytest.mark.parametrize(("case", "y", "pred", "score"), CASES, ids=[c[0] for c in CASES])
def test_point_metrics_equal_sklearn(case: str, y: np.ndarray, pred: np.ndarray, score: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = alignment_metrics(y, pred, score, human_of(y, score))
    for m in registered():
        assert got[m.name] == pytest.approx(_reference(m.name, y, pred, score), abs=1e-12, nan_ok=True), m.name


def test_one_implementation_scores_one_labelling_or_an_array_of_them() -> None:
    singles = [Counts.from_labels(y, pred) for _, y, pred, _ in CASES]
    grid = Counts(*(np.reshape([getattr(c, f) for c in singles], (4, -1)) for f in ("tp", "fp", "fn", "tn")))
    for m in registered(score=False):
        values = m.compute(grid)  # type: ignore[arg-type]
        assert np.shape(values) == (4, len(CASES) // 4), m.name
        for i, (case, y, pred, score) in enumerate(CASES):
            single = m.compute(singles[i])  # type: ignore[arg-type]
            assert np.array_equal(values.ravel()[i], single, equal_nan=True), (m.name, case)
            assert values.ravel()[i] == pytest.approx(_reference(m.name, y, pred, score), abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("case", [0, 5, 14, 16])  # random, random, predict all 0, constant score
def test_bootstrap_rows_equal_sklearn_for_every_rate_and_auc(case: int) -> None:
    _, y, pred, score = CASES[case]
    idx = stratified_indices(y, 20, np.random.default_rng(case))
    got = resample_metrics(y, pred, idx, score, human_of(y, score))
    assert list(got) == metric_names(INTERVAL_KINDS)
    for r, row in enumerate(idx):
        for name, values in got.items():
            expected = _reference(name, y[row], pred[row], score[row])
            assert values[r] == pytest.approx(expected, abs=1e-12, nan_ok=True), (r, name)


def test_sweep_rows_equal_sklearn_for_every_label_metric() -> None:
    _, y, _, score = CASES[3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = threshold_sweep(y, -score, n_points=9)
    assert list(frame.columns) == ["threshold", *sweep_metrics(), "positive_rate"]
    for _, row in frame.iterrows():
        labels = (-score <= row["threshold"]).astype(int)
        for name in sweep_metrics():
            assert row[name] == pytest.approx(_reference(name, y, labels, score), abs=1e-12, nan_ok=True), name


@pytest.mark.parametrize("case", [0, 12, 13])
def test_baselines_use_each_metric(case: int) -> None:
    _, y, _, _ = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        always = always_positive(y, human_of(y, np.zeros(y.size)))
    for m in registered():
        expected = _reference(m.name, y, np.ones_like(y), np.zeros(y.size))
        assert always[m.name] == pytest.approx(expected, abs=1e-12, nan_ok=True), m.name
    assert list(random_expected(y)) == [*metric_names(), "n", "prevalence"]


def test_registry_api() -> None:
    assert metric("f1").format(0.5) == "50.0%" and metric("f1").header == "F1"
    assert metric("auc_binary").format(0.5) == "0.500" and metric("auc_binary").short == "AUC"
    assert (metric("tp").format(3.0), metric("tp").format(2.5, expected=True)) == ("3", "2.5")
    assert metric_names(("count",)) == ["tn", "fp", "fn", "tp"]
    assert metric_names(score=True) == ["auc_score", "spearman", "kendall"]
    assert [m.name for m in registered(score=True) if m.uses_human] == ["spearman", "kendall"]
    with pytest.raises(KeyError, match=r"^unknown metric 'nope' \(metric name\) \(known: accuracy, "):
        metric("nope")
    with pytest.raises(ValueError, match="already registered"):
        register("f1")(lambda c: c.tp)
    with pytest.raises(ValueError, match="kind must be one of"):
        register("ratio_metric", kind="ratio")(lambda c: c.tp)  # type: ignore[arg-type]
    assert "ratio_metric" not in metric_names()


NEW = ("balanced_accuracy", "specificity", "gini_score")


@pytest.fixture
def new_metrics() -> Iterator[None]:
    """Three metrics defined here: a rate with a random baseline, a rate without one (and not
    on the ε grid), and a score metric."""
    try:

        @register("balanced_accuracy", header="balanced accuracy", random=lambda r: 0.5)
        def balanced_accuracy(c: Counts) -> np.ndarray:
            return 0.5 * (safe_ratio(c.tp, c.tp + c.fn, 0.0) + safe_ratio(c.tn, c.tn + c.fp, 0.0))

        @register("specificity", series=False)
        def specificity(c: Counts) -> np.ndarray:
            return safe_ratio(c.tn, c.tn + c.fp, 0.0)

        @register("gini_score", header="Gini (score)", kind="auc", uses_score=True)
        def gini_score(r: Ranking) -> np.ndarray:
            return 2.0 * metric("auc_score").compute(r) - 1.0  # type: ignore[arg-type]

        yield
    finally:
        for name in NEW:
            if name in metric_names():
                unregister(name)


def _data(n: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    y = (rng.random(n) < 0.6).astype(int)
    return y, np.where(rng.random(n) < 0.7, y, 1 - y), np.round(y + rng.normal(0.0, 0.8, n), 1)


def test_a_registered_metric_reaches_the_report_bootstrap_and_mlflow(new_metrics: None) -> None:
    y, pred, score = _data()
    report = evaluate(y, pred, score, resamples=1000, seed=2)
    assert report.metric_names == [
        "accuracy",
        "precision",
        "recall",
        "f1",
        "balanced_accuracy",
        "specificity",
        "auc_binary",
        "auc_score",
        "gini_score",
        "mcc",
        "tn",
        "fp",
        "fn",
        "tp",
    ]
    assert report.metrics["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred), abs=1e-12)
    assert report.metrics["specificity"] == pytest.approx(recall_score(y, pred, pos_label=0), abs=1e-12)
    assert report.metrics["gini_score"] == pytest.approx(2 * roc_auc_score(y, score) - 1, abs=1e-12)
    assert report.ci == bootstrap_ci(y, pred, score, resamples=1000, seed=2)
    for name in NEW:
        low, high = report.ci[name]
        assert low <= report.metrics[name] <= high, name
    frame = report.to_frame()
    assert frame.loc["balanced_accuracy", ["always_positive", "random_expected"]].tolist() == [0.5, 0.5]
    assert frame.loc["gini_score", "always_positive"] == 0.0  # a constant score
    assert frame.loc[["specificity", "gini_score"], "random_expected"].isna().all()  # no closed form
    text = render_table(report)
    assert f"{100 * report.metrics['balanced_accuracy']:.1f}%" in text and "gini_score" in text
    flat = metrics_for_mlflow(report)
    for name in NEW:
        assert {name, f"{name}_ci_low", f"{name}_ci_high", f"baseline_always_{name}"} <= set(flat), name
    assert "baseline_random_balanced_accuracy" in flat and "baseline_random_specificity" not in flat
    assert "gini_score" not in evaluate(y, pred, resamples=1000).metric_names  # needs a score


def test_a_registered_metric_reaches_the_sweeps(new_metrics: None) -> None:
    y, _, score = _data()
    alpha = -score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        thr = threshold_sweep(y, alpha, n_points=7)
        sim = similarity_sweep(y, (score - score.min()) / np.ptp(score), [0.2, 0.5, 0.8])
        eps = epsilon_sweep(alpha[::-1], alpha, [0.1, 0.3], y_true=y)
    label_metrics = ["f1", "precision", "recall", "accuracy", "balanced_accuracy", "specificity", "auc_binary"]
    assert list(thr.columns) == ["threshold", *label_metrics, "mcc", "positive_rate"]
    assert list(sim.columns) == ["theta", *label_metrics, "mcc", "positive_rate"]
    assert list(eps.columns) == [
        "epsilon",
        "nominal",
        "tau",
        "coverage",
        "f1",
        "precision",
        "recall",
        "balanced_accuracy",
        "auc_binary",
        "mcc",
    ]
    for _, row in thr.iterrows():
        labels = (alpha <= row["threshold"]).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = 0.5 if labels.min() == labels.max() else balanced_accuracy_score(y, labels)
        assert row["balanced_accuracy"] == pytest.approx(expected, abs=1e-12)


def test_a_registered_metric_reaches_the_comparison_tables(new_metrics: None) -> None:
    y, pred, score = _data()
    flat = metrics_for_mlflow(evaluate(y, pred, score, resamples=1000))
    frame = tables.runs_frame(
        [tables.run_record("r", "m · p1", "1", "FINISHED", 1, {"mcu.model": "m", "mcu.proxy": "p1"}, {}, flat)]
    )
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    assert {"balanced_accuracy", "balanced_accuracy_ci_low", "gini_score_ci_high"} <= set(summary.columns)
    shown = tables.display_table(summary, keys)
    assert shown.loc[0, "balanced accuracy"].startswith(f"{100 * flat['balanced_accuracy']:.1f}% [")
    assert shown.loc[0, "Gini (score)"].startswith(f"{flat['gini_score']:.3f} [")
