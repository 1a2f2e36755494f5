"""Sensitivity grids: alignment as the decision threshold (τ or θ) or ε moves, per subgroup.

Every grid point relabels the programs and scores the labels against ``y_true`` with every
registered label rate and AUC (:mod:`mcu_exp.evaluation.registry`), with the conventions of
:mod:`mcu_exp.evaluation.metrics`. Frames lead with F1 and its two parts, then the other
label metrics in registry order, then the positive rate; the ε grid keeps the metrics marked
``series`` (not accuracy). Grid ends usually label every program alike; there a metric
whose denominator is zero (precision with nothing labelled High) is NaN (undefined: a gap
in the curves, "undefined" in tables), and each distinct warning is emitted once per sweep
(once per group in :func:`by_subgroup`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.calibration import empirical_coverage, threshold
from mcu_exp.evaluation.metrics import (
    ArrayLike,
    as_binary,
    as_score,
    batch_metrics,
    degeneracy_messages,
    unique_warnings,
)
from mcu_exp.evaluation.registry import INTERVAL_KINDS, PRIMARY, metric_names

SWEEP_LEAD = (PRIMARY, "precision", "recall")  # column order only: every label metric is swept
POSITIVE_RATE = "positive_rate"


def sweep_metrics(series: bool | None = None) -> list[str]:
    """The registered label rates and AUCs in grid-frame column order (``series``: only
    those on the ε grid and in the MLflow series)."""
    names = metric_names(INTERVAL_KINDS, score=False, series=series)
    return [*[n for n in SWEEP_LEAD if n in names], *[n for n in names if n not in SWEEP_LEAD]]


def series_columns() -> list[str]:
    """The metrics a grid logs as MLflow series: those of :func:`sweep_metrics` marked
    ``series`` (f1, precision, recall, auc_binary for the built-ins)."""
    return sweep_metrics(series=True)


def _sweep(truth: np.ndarray, labels: np.ndarray, key: str, grid: np.ndarray) -> pd.DataFrame:
    """One row per grid value: metrics of each row of ``labels`` (grid × n) vs ``truth``."""
    with unique_warnings(prefix=f"{key} sweep: "):
        for row in labels:
            for category, message in degeneracy_messages(truth, row):
                warnings.warn(message, category, stacklevel=2)
    metrics = batch_metrics(np.broadcast_to(truth, labels.shape), labels)
    columns = [*sweep_metrics(), POSITIVE_RATE]
    return pd.DataFrame({key: grid, **{name: metrics[name] for name in columns}})


def _labels_and_values(y_true: ArrayLike, values: ArrayLike, name: str) -> tuple[np.ndarray, np.ndarray]:
    truth = as_binary(y_true, "y_true")
    return truth, as_score(values, name, truth.size)


def threshold_sweep(
    y_true: ArrayLike,
    alpha_test: ArrayLike,
    grid: ArrayLike | None = None,
    n_points: int = 41,
) -> pd.DataFrame:
    """Metrics of the rule High iff α_test ≤ threshold, over thresholds spanning the observed
    α range (``n_points`` evenly spaced, min and max included) plus any explicit ``grid``
    values (e.g. the calibrated τ). Columns: threshold, then :func:`sweep_metrics` (f1,
    precision, recall, accuracy, auc_binary for the built-ins), positive_rate; sorted by
    threshold."""
    if n_points < 2:
        raise ValueError(f"evaluation.threshold_grid must be at least 2, got {n_points}")
    truth, alpha = _labels_and_values(y_true, alpha_test, "alpha_test")
    points = np.linspace(alpha.min(), alpha.max(), n_points)
    extra = np.asarray([] if grid is None else grid, dtype=float)
    if not np.isfinite(extra).all():
        raise ValueError(f"threshold grid values must be finite, got {extra.tolist()}")
    points = np.unique(np.concatenate([points, extra]))
    labels = (alpha[None, :] <= points[:, None]).astype(np.int64)
    return _sweep(truth, labels, "threshold", points)


def similarity_sweep(
    y_true: ArrayLike,
    similarity: ArrayLike,
    thetas: Sequence[float] | None = None,
) -> pd.DataFrame:
    """Metrics of P2's fixed rule High iff SSC_meta ≥ θ, for each θ in ``thetas`` (in [0, 1];
    default 0, 0.05, …, 1). Columns: theta, then those of :func:`threshold_sweep`."""
    truth, sim = _labels_and_values(y_true, similarity, "similarity")
    grid = np.linspace(0.0, 1.0, 21) if thetas is None else np.asarray(thetas, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not ((grid >= 0.0) & (grid <= 1.0)).all():
        raise ValueError(f"decision.theta values must lie in [0, 1], got {grid.tolist()}")
    labels = (sim[None, :] >= grid[:, None]).astype(np.int64)
    return _sweep(truth, labels, "theta", grid)


def epsilon_sweep(
    alpha_cal: ArrayLike,
    alpha_test: ArrayLike,
    epsilons: Sequence[float],
    quantile_rule: str = "empirical",
    y_true: ArrayLike | None = None,
) -> pd.DataFrame:
    """For each ε: τ = the calibrated threshold under ``quantile_rule``, and the empirical
    coverage (fraction with α_test ≤ τ) beside the nominal 1 − ε; with ``y_true`` also the
    alignment (:func:`series_columns`: f1, precision, recall, auc_binary for the built-ins)
    of the labels α_test ≤ τ."""
    alpha = np.asarray(alpha_test, dtype=float)
    if alpha.ndim != 1 or not np.isfinite(alpha).all():
        raise ValueError("alpha_test must be a 1-D array of finite nonconformity scores")
    eps = [float(e) for e in epsilons]
    if not eps:
        raise ValueError("evaluation.epsilon_grid is empty: give at least one ε")
    taus = np.array([threshold(alpha_cal, e, quantile_rule) for e in eps])
    frame = pd.DataFrame(
        {
            "epsilon": eps,
            "nominal": [1.0 - e for e in eps],
            "tau": taus,
            "coverage": [empirical_coverage(alpha, tau) for tau in taus],
        }
    )
    if y_true is None:
        return frame
    truth, alpha = _labels_and_values(y_true, alpha, "alpha_test")
    labels = (alpha[None, :] <= taus[:, None]).astype(np.int64)
    aligned = _sweep(truth, labels, "epsilon", np.asarray(eps))
    return frame.join(aligned[series_columns()])


SweepName = Literal["threshold", "similarity", "epsilon"]


def by_subgroup(
    labels: Mapping[str, pd.Series],
    scores: pd.Series,
    sweep: SweepName | Callable[..., pd.DataFrame] = "threshold",
    **sweep_kwargs: object,
) -> pd.DataFrame:
    """Run one sweep per human subgroup and stack the results with a ``group`` column.

    ``labels`` maps a group name to its 0/1 labels indexed by program_id; ``scores`` holds
    one value per program_id (α_test for "threshold" and "epsilon", SSC_meta for
    "similarity"). Each group uses the programs present, non-missing, in both. A callable
    ``sweep`` is called as ``sweep(y_true, scores, **sweep_kwargs)``; "epsilon" needs
    ``alpha_cal`` and ``epsilons`` in ``sweep_kwargs`` (τ is calibrated without labels, so it
    is the same for every group). Single-class groups still get rows; each distinct warning
    is emitted once per group, prefixed with the group name.
    """
    if not scores.index.is_unique:
        raise ValueError("scores index (program_id) has duplicates")
    frames = []
    for group, group_labels in labels.items():
        if not group_labels.index.is_unique:
            raise ValueError(f"labels[{group!r}] index (program_id) has duplicates")
        joined = pd.concat({"y": group_labels, "s": scores}, axis=1, join="inner").dropna()
        if joined.empty:
            raise ValueError(f"labels[{group!r}] shares no labelled program_id with scores")
        y, s = joined["y"].to_numpy(), joined["s"].to_numpy(dtype=float)
        with unique_warnings(prefix=f"group {group!r}: "):
            frame = _run_sweep(sweep, y, s, dict(sweep_kwargs))
        frame.insert(0, "group", group)
        frame.insert(1, "n", len(joined))
        frames.append(frame)
    if not frames:
        raise ValueError("labels is empty: give at least one subgroup")
    return pd.concat(frames, ignore_index=True)


def _run_sweep(
    sweep: SweepName | Callable[..., pd.DataFrame], y: np.ndarray, s: np.ndarray, kwargs: dict[str, object]
) -> pd.DataFrame:
    if callable(sweep):
        return sweep(y, s, **kwargs)
    if sweep == "threshold":
        return threshold_sweep(y, s, **kwargs)  # type: ignore[arg-type]
    if sweep == "similarity":
        return similarity_sweep(y, s, **kwargs)  # type: ignore[arg-type]
    if sweep == "epsilon":
        if "alpha_cal" not in kwargs or "epsilons" not in kwargs:
            raise ValueError("by_subgroup(sweep='epsilon') needs alpha_cal= and epsilons=")
        return epsilon_sweep(alpha_test=s, y_true=y, **kwargs)  # type: ignore[arg-type]
    raise ValueError(f"sweep must be 'threshold', 'similarity', 'epsilon' or a callable, got {sweep!r}")


def _grouped(labels: Mapping[str, pd.Series], values: pd.Series) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per group: its name, the labels and the values on the programs of ``values`` it has
    labels for (in ``values``' order); groups sharing no program are left out."""
    found = []
    for name, group in labels.items():
        common = values.index[values.index.isin(group.index)]
        if len(common):
            found.append((name, group.loc[common].to_numpy(), values.loc[common].to_numpy(dtype=float)))
    return found


def _stamped(frame: pd.DataFrame, group: str, n: int) -> pd.DataFrame:
    frame.insert(0, "group", group)
    frame.insert(1, "n", n)
    return frame


EPSILON_CODE = (
    "mcu_exp.evaluation.sensitivity",
    "mcu_exp.calibration.threshold",
    "mcu_exp.evaluation.metrics",
    "mcu_exp.evaluation.registry",
    "mcu_exp.evaluation.definitions",
)  # what the ε grid is computed by (and any plugin label metric's module, added)


def epsilon_grid(
    cache_dir: str | Path | None,
    alpha_cal: ArrayLike,
    alpha_test: np.ndarray,
    y_true: np.ndarray,
    epsilons: Sequence[float],
    quantile_rule: str,
) -> pd.DataFrame:
    """:func:`epsilon_sweep` with labels, computed once per input under ``cache_dir``
    (:func:`mcu_exp.result_cache.cached_result`; None: computed every time). It depends on the
    calibration and test scores, the labels, the ε grid and the quantile rule, not on the
    job's ε, threshold or reader group, so a decision-only sweep's jobs share it; the key also
    holds the registered label metrics and the source of the modules that define them."""
    if cache_dir is None:
        return epsilon_sweep(alpha_cal, alpha_test, epsilons, quantile_rule, y_true=y_true)
    from mcu_exp.evaluation.registry import registered
    from mcu_exp.result_cache import cached_result

    chosen = registered(INTERVAL_KINDS, score=False)
    code = tuple(dict.fromkeys([*EPSILON_CODE, *sorted({m.compute.__module__ for m in chosen})]))
    key = [
        [m.name for m in chosen],
        np.asarray(alpha_cal, dtype=float),
        np.asarray(alpha_test, dtype=float),
        np.asarray(y_true),
        [float(e) for e in epsilons],
        quantile_rule,
    ]
    return cached_result(
        cache_dir,
        "epsilon_grid",
        key,
        lambda: epsilon_sweep(alpha_cal, alpha_test, epsilons, quantile_rule, y_true=y_true),
        code=code,
        kind=pd.DataFrame,
    )


def decision_grids(
    alpha_cal: ArrayLike,
    alpha_test: pd.Series,
    labels: Mapping[str, pd.Series],
    *,
    threshold_points: int,
    epsilons: Sequence[float],
    quantile_rule: str,
    tau: float | None = None,
    cache_dir: str | Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """F1/precision/recall/AUC over a threshold grid and coverage over an ε grid, per group
    (``labels``: each group's 0/1 labels by program id; ``alpha_test`` by program id).

    The threshold grid is ``threshold_points`` values spanning the observed α_test range plus
    the calibrated ``tau`` (when finite), the same for every group, so a metric series' step
    means the same threshold everywhere. The ε grid does not depend on ``tau``: with
    ``cache_dir`` each group's is computed once per input (:func:`epsilon_grid`).
    """
    lo, hi = float(alpha_test.min()), float(alpha_test.max())
    points = np.linspace(lo, hi, threshold_points)
    if tau is not None and math.isfinite(float(tau)):
        points = np.unique(np.append(points, float(tau)))
    thresholds, coverages = [], []
    for name, y, a in _grouped(labels, alpha_test):
        frame = threshold_sweep(y, a, grid=points, n_points=2)
        frame = frame[np.isin(frame[names.THRESHOLD_GRID].to_numpy(), points)].reset_index(drop=True)
        thresholds.append(_stamped(frame, name, len(y)))
        eps = epsilon_grid(cache_dir, alpha_cal, a, y, list(epsilons), quantile_rule)
        coverages.append(_stamped(eps, name, len(y)))
    return pd.concat(thresholds, ignore_index=True), pd.concat(coverages, ignore_index=True)


def theta_grid(similarity_test: pd.Series, labels: Mapping[str, pd.Series], thetas: Sequence[float]) -> pd.DataFrame:
    """The fixed rule High iff similarity_test ≥ θ (P2: SSC_meta(test)) over ``thetas``, per
    group (``similarity_test`` by program id)."""
    frames = [
        _stamped(similarity_sweep(y, s, list(thetas)), name, len(y))
        for name, y, s in _grouped(labels, similarity_test.astype(float))
    ]
    return pd.concat(frames, ignore_index=True)


SERIES_COLUMNS = {
    names.THRESHOLD_GRID: ("f1", "auc_binary"),
    names.EPSILON_GRID: ("coverage",),  # nominal is 1 − ε itself: the table and figure show it
    names.THETA_GRID: ("f1", "auc_binary"),
}  # charted in MLflow, all readers only


def grid_series(frame: pd.DataFrame, grid: str) -> dict[str, list[tuple[int, float]]]:
    """MLflow series of one sensitivity grid, all readers only: ``sens.<grid>_x1000.<column>``
    for :data:`SERIES_COLUMNS`, step = the grid value × 1000 rounded, so the UI's x axis
    reads as the threshold (or ε, θ) in thousandths. A grid point whose rounded step repeats
    an earlier one is left out of the series (the CSV keeps every point exactly)."""
    rows = frame[frame["group"] == names.ALL_READERS]
    steps = [round(float(x) * names.SERIES_SCALE) for x in rows[grid]]
    first = [i for i, step in enumerate(steps) if step not in steps[:i]]
    return {
        names.mlflow_series(grid, col): [(steps[i], float(rows[col].iloc[i])) for i in first]
        for col in SERIES_COLUMNS[grid]
        if col in rows.columns
    }
