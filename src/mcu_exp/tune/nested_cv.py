"""How much does tuning the decision on the same programs overstate alignment?

Tunes ε (τ = the (1 − ε) quantile of α_cal) or the threshold τ on α_test directly to
maximise F1 (the metric registry's ``PRIMARY``) against the human labels, with Optuna's TPE
sampler (seeded), two ways:

* **in-sample**: tuned and evaluated on all programs, which is what picking the best ε of a
  sweep amounts to;
* **held-out** (nested cross-validation over programs): for each of K stratified outer
  folds, tune on the other programs, then label the held-out fold with the tuned value
  (τ from the training programs' α_cal in ε mode); F1 is computed once over the pooled
  held-out labels (and per fold for the spread).

The gap between the two is the optimism of tuning on the evaluation set. Only cached scores
are used (α_cal, α_test and human labels of a finished run); no model is loaded.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from mcu_exp.calibration import threshold
from mcu_exp.evaluation import PRIMARY, always_positive, label_metric, random_expected

OBJECTIVE = PRIMARY  # the registered metric tuned for (F1)

SEARCHES = ("epsilon", "threshold")
REQUIRED_COLUMNS = ("alpha_cal", "alpha_test", "human_label")


@dataclass(frozen=True)
class Scores:
    """Per-program nonconformity scores and human labels (1 = understandable)."""

    program_ids: list[str]
    alpha_cal: np.ndarray
    alpha_test: np.ndarray
    labels: np.ndarray
    dropped: int = 0

    def subset(self, index: np.ndarray) -> Scores:
        """The programs at positions ``index``."""
        return Scores(
            [self.program_ids[i] for i in index], self.alpha_cal[index], self.alpha_test[index], self.labels[index]
        )


def read_per_program(path: str | Path) -> Scores:
    """Scores from a run's ``scores.csv`` (or any CSV with its columns); rows without a human label or α are dropped
    (and counted). A file that is not UTF-8 or not a CSV table, a missing column, a program id met twice
    (each program would count twice in F1 and the folds) or a non-0/1 label is a one-line ValueError."""
    from mcu_exp.data.files import read_text

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such per-program file")
    try:
        frame = pd.read_csv(io.StringIO(read_text(path)))
    except pd.errors.ParserError as exc:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise ValueError(f"{path}: not a CSV table ({first})") from None
    except pd.errors.EmptyDataError:
        raise ValueError(
            f"{path}: empty file, expected a CSV table with columns {', '.join(REQUIRED_COLUMNS)}"
        ) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {', '.join(missing)}; the scores.csv of a P1/P2 "
            f"run has {', '.join(REQUIRED_COLUMNS)}"
        )
    ids = frame["program_id"].astype(str) if "program_id" in frame.columns else frame.index.astype(str)
    repeated = ids[ids.duplicated()].unique().tolist()
    if repeated:
        shown = ", ".join(repeated[:5]) + (f" and {len(repeated) - 5} more" if len(repeated) > 5 else "")
        raise ValueError(f"{path}: program ids repeat ({shown}); expected each program once, as in a run's scores.csv")
    numeric = frame[list(REQUIRED_COLUMNS)].apply(pd.to_numeric, errors="coerce")
    keep = numeric.notna().all(axis=1).to_numpy()
    labels = numeric["human_label"].to_numpy()[keep]
    bad = ~np.isin(labels, (0.0, 1.0))
    if bad.any():
        row = int(np.flatnonzero(keep)[np.flatnonzero(bad)[0]]) + 2  # 1-based, after the header
        raise ValueError(f"{path}, line {row}: human_label must be 0 or 1, got {labels[bad][0]!r}")
    if keep.sum() < 4:
        raise ValueError(f"{path}: only {int(keep.sum())} programs with scores and a human label; need at least 4")
    return Scores(
        list(ids[keep]),
        numeric["alpha_cal"].to_numpy(float)[keep],
        numeric["alpha_test"].to_numpy(float)[keep],
        labels.astype(int),
        dropped=int((~keep).sum()),
    )


def digest(scores: Scores, epsilon_range: tuple[float, float]) -> str:
    """12 hex digits identifying the scores, labels and ε range: a stored study is resumed
    only for the same inputs."""
    h = hashlib.sha256()
    for array in (scores.alpha_cal, scores.alpha_test, scores.labels, np.asarray(epsilon_range, dtype=float)):
        h.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return h.hexdigest()[:12]


def decide_labels(
    search: str, value: float, alpha_cal: np.ndarray, alpha_test: np.ndarray, quantile: str
) -> tuple[np.ndarray, float]:
    """High/Low labels of ``alpha_test`` and the τ used: ``value`` is ε (τ from ``alpha_cal``)
    or τ itself."""
    tau = float(value) if search == "threshold" else threshold(alpha_cal, float(value), quantile)
    return (alpha_test <= tau).astype(int), tau


def f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """F1 of the understandable class with the registry's implementation (NaN when nothing is
    predicted or present; the tuning objective counts that as 0)."""
    return label_metric(OBJECTIVE, np.asarray(y_true), np.asarray(y_pred))


@dataclass(frozen=True)
class Tuned:
    """The best value one study found and its F1 on the programs it was tuned on."""

    value: float
    tau: float
    f1: float
    trials: int


def search_range(search: str, scores: Scores, epsilon_range: tuple[float, float]) -> tuple[float, float]:
    """ε range, or [min, max] of the programs' α_test (every split of them reachable)."""
    if search == "epsilon":
        return epsilon_range
    low, high = float(scores.alpha_test.min()), float(scores.alpha_test.max())
    return (low, high) if high > low else (low, low + 1e-9)


def tune(
    scores: Scores,
    search: str,
    trials: int,
    seed: int,
    quantile: str = "empirical",
    epsilon_range: tuple[float, float] = (0.01, 0.6),
    storage: str | None = None,
    study_name: str | None = None,
) -> Tuned:
    """Maximise F1 on ``scores`` over ε or τ with a seeded TPE study.

    With ``storage`` (an Optuna RDB URL) the study is resumed by ``study_name``: only the
    trials still missing are run, by a sampler seeded apart from the first run's (seeded as
    at the start, it drew the first run's random start-up trials again); a stored study that
    holds more trials than asked keeps them all (``Tuned.trials`` says how many).
    """
    import optuna

    if search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {search!r}")
    low, high = search_range(search, scores, epsilon_range)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        storage=storage,
        study_name=study_name,
        load_if_exists=storage is not None,
    )

    def objective(trial: optuna.Trial) -> float:
        value = trial.suggest_float(search, low, high)
        labels, _ = decide_labels(search, value, scores.alpha_cal, scores.alpha_test, quantile)
        achieved = f1(scores.labels, labels)
        return 0.0 if math.isnan(achieved) else achieved  # undefined (nothing present or predicted): no credit

    done = len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE])
    if done:  # a resumed study: a sampler seeded as at the start would draw its first trials again
        study.sampler = optuna.samplers.TPESampler(seed=seed + 7919 * done)
    if trials > done:
        study.optimize(objective, n_trials=trials - done)
    best = study.best_trial
    value = float(best.params[search])
    _, tau = decide_labels(search, value, scores.alpha_cal, scores.alpha_test, quantile)
    return Tuned(value=value, tau=tau, f1=float(study.best_value), trials=len(study.trials))


@dataclass(frozen=True)
class Fold:
    """One outer fold: the value tuned on its training programs and F1 on both sides."""

    fold: int
    n_train: int
    n_test: int
    value: float
    tau: float
    train_f1: float
    test_f1: float


@dataclass
class TuneResult:
    """In-sample against held-out F1 of one search, with the references beside them."""

    search: str
    n: int
    prevalence: float
    in_sample: Tuned
    held_out_f1: float
    folds: list[Fold] = field(default_factory=list)
    reference_epsilon: float = 0.1
    reference_f1: float = math.nan
    baseline_always_f1: float = math.nan
    baseline_random_f1: float = math.nan

    @property
    def optimism(self) -> float:
        """In-sample minus held-out F1: how much tuning on the evaluation set flatters."""
        return self.in_sample.f1 - self.held_out_f1

    @property
    def fold_f1(self) -> tuple[float, float]:
        """Mean and standard deviation of the per-fold held-out F1."""
        values = np.array([f.test_f1 for f in self.folds], dtype=float)
        values = values[~np.isnan(values)]  # a fold where F1 is undefined has no F1 to average
        if values.size == 0:
            return math.nan, math.nan
        return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0

    def row(self) -> dict[str, Any]:
        """A flat summary for a table or a CSV."""
        mean, sd = self.fold_f1
        return {
            "search": self.search,
            "n": self.n,
            "in_sample_value": self.in_sample.value,
            "in_sample_f1": self.in_sample.f1,
            "held_out_f1": self.held_out_f1,
            "optimism": self.optimism,
            "fold_f1_mean": mean,
            "fold_f1_sd": sd,
            "reference_epsilon": self.reference_epsilon,
            "reference_f1": self.reference_f1,
            "baseline_always_f1": self.baseline_always_f1,
            "baseline_random_f1": self.baseline_random_f1,
        }


def outer_folds(labels: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified, shuffled (seeded) outer folds over the programs."""
    smallest = int(min(labels.sum(), labels.size - labels.sum()))
    if folds < 2:
        raise ValueError(f"--folds must be at least 2, got {folds}")
    if smallest < folds:
        raise ValueError(
            f"{folds} stratified folds need at least {folds} programs of each class; the smaller class has {smallest}"
        )
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(labels.size), labels))


def nested_cv(
    scores: Scores,
    search: str = "epsilon",
    folds: int = 5,
    trials: int = 100,
    seed: int = 0,
    quantile: str = "empirical",
    epsilon_range: tuple[float, float] = (0.01, 0.6),
    reference_epsilon: float = 0.1,
    storage: str | None = None,
    study_prefix: str = "mcu-tune",
) -> TuneResult:
    """In-sample and nested-CV held-out F1 of tuning ``search`` (see the module docstring)."""
    name = f"{study_prefix}-{digest(scores, epsilon_range)}-{search}-{quantile}-s{seed}-k{folds}"
    whole = tune(scores, search, trials, seed, quantile, epsilon_range, storage, f"{name}-all" if storage else None)
    pooled = np.zeros_like(scores.labels)
    results: list[Fold] = []
    for i, (train, test) in enumerate(outer_folds(scores.labels, folds, seed)):
        inner = scores.subset(train)
        tuned = tune(
            inner,
            search,
            trials,
            seed + 1 + i,
            quantile,
            epsilon_range,
            storage,
            f"{name}-fold{i}" if storage else None,
        )
        labels, tau = decide_labels(search, tuned.value, inner.alpha_cal, scores.alpha_test[test], quantile)
        pooled[test] = labels
        results.append(Fold(i, len(train), len(test), tuned.value, tau, tuned.f1, f1(scores.labels[test], labels)))
    reference, _ = decide_labels("epsilon", reference_epsilon, scores.alpha_cal, scores.alpha_test, quantile)
    return TuneResult(
        search=search,
        n=len(scores.labels),
        prevalence=float(scores.labels.mean()),
        in_sample=whole,
        held_out_f1=f1(scores.labels, pooled),
        folds=results,
        reference_epsilon=reference_epsilon,
        reference_f1=f1(scores.labels, reference),
        baseline_always_f1=float(always_positive(scores.labels)[OBJECTIVE]),
        baseline_random_f1=float(random_expected(scores.labels)[OBJECTIVE]),
    )
