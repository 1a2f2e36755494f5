"""Each arm of a paired comparison recalibrated in every resample, as its own intervals are.

A run whose decision rule calibrates a threshold on the programs (``conformal``,
``p1_and_theta``: P1, P2) reports single-run intervals that recompute τ inside each bootstrap
resample (``evaluation.ci=recalibrate``, :mod:`mcu_exp.evaluation.bootstrap`). A paired
interval of ΔF1 means the same thing only when both arms are recalibrated on the same
resamples; keeping one run's labels fixed makes its half of the difference look more certain
than it is. :func:`arm` builds a run's ``relabel`` for :func:`mcu_exp.evaluation.paired.paired_bootstrap`
from what the run left behind: its ``scores.csv`` (``alpha_cal``, ``alpha_test``… per program)
and its decision settings (rule, ε, quantile, θ), through the decision-rule registry's own
``relabel`` (:mod:`mcu_exp.calibration.rules`), so no threshold maths is repeated here.

The run calibrated τ on all the programs of its ``scores.csv``. In each resample row the
shared programs drawn by the paired bootstrap are joined by a bootstrap draw of the run's
other programs (with replacement, stratified by their ``human_label`` in ``scores.csv``:
understood, not, unlabelled), τ is recomputed on the lot and only the shared programs' labels
are kept: the calibration set is resampled like the run's own, whatever the other run lacks.
Before use, recalibrating on the programs as they are must give back the run's own labels; a
run whose scores or settings do not (an older quantile rule, edited files) keeps its labels
fixed, and the comparison says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.calibration.rules import Scores, get_rule
from mcu_exp.config import DecisionConfig
from mcu_exp.evaluation.bootstrap import Relabel
from mcu_exp.names import HUMAN_LABEL

RECALIBRATED = "recalibrated"
LABELS_FIXED = "labels fixed"
SETTINGS = ("rule", "epsilon", "quantile", "theta")  # the decision.* settings a run is relabelled with


@dataclass(frozen=True)
class RunCalibration:
    """What recalibrating a run needs: its ``scores.csv`` (index ``program_id`` as text,
    columns named as the :class:`mcu_exp.calibration.Scores` arrays its rule needs) and its decision settings."""

    scores: pd.DataFrame
    decision: DecisionConfig

    def describe(self) -> str:
        """The settings in words, e.g. ``conformal, ε = 0.1, empirical quantile``."""
        d = self.decision
        text = f"{d.rule}, ε = {d.epsilon:g}, {d.quantile} quantile"
        return text + (f", θ = {d.theta:g}" if d.rule != "conformal" else "")


@dataclass(frozen=True)
class Arm:
    """One run's side of the paired bootstrap: ``relabel`` (None: labels fixed), whether it is
    recalibrated (:data:`RECALIBRATED` or :data:`LABELS_FIXED`) and a note (the settings used,
    or why the labels stay fixed)."""

    relabel: Relabel | None
    labels: str
    note: str


def fixed(why: str) -> Arm:
    """An arm whose labels stay fixed in every resample, and why."""
    return Arm(None, LABELS_FIXED, why)


def decision_from(settings: Mapping[str, Any]) -> DecisionConfig | None:
    """The decision settings from a run's ``decision.*`` params or its config's ``decision``
    section (keys ``rule``, ``epsilon``, ``quantile``, ``theta``; a ``decision.`` prefix is
    dropped). None when the rule, ε or the quantile is missing (None, empty or NaN); θ
    defaults as in the config (only θ rules use it, and a run logs it)."""
    found = {
        str(k).removeprefix("decision."): v
        for k, v in settings.items()
        if not (v is None or v == "" or (isinstance(v, float) and np.isnan(v)))
    }
    if any(key not in found for key in ("rule", "epsilon", "quantile")):
        return None
    try:
        return DecisionConfig(
            epsilon=float(found["epsilon"]),
            quantile=str(found["quantile"]),
            rule=str(found["rule"]),
            theta=float(found.get("theta", DecisionConfig.theta)),
        )
    except (TypeError, ValueError):
        return None


def arm(
    calibration: RunCalibration | None,
    program_ids: Sequence[Any] | np.ndarray,
    labels: np.ndarray,
    seed: int,
    missing: str = "no calibration scores",
) -> Arm:
    """The arm of a run whose labels of ``program_ids`` (the shared programs, in the paired
    bootstrap's order) are ``labels``: recalibrated on each resample when the run's rule
    calibrates, its scores cover every shared program and recalibrating on all its programs
    gives back ``labels``; else labels fixed, ``missing`` or the reason as the note."""
    return arm_builder(calibration, program_ids, labels, missing)(seed)


def arm_builder(
    calibration: RunCalibration | None,
    program_ids: Sequence[Any] | np.ndarray,
    labels: np.ndarray,
    missing: str = "no calibration scores",
) -> Callable[[int], Arm]:
    """:func:`arm` less the seed: the checks and the run's scores are prepared once, and each
    call with a seed gives an arm with its own random draws. A run compared with several
    others on the same programs (a sweep's report) is prepared once, not once per pair."""
    if calibration is None:
        return _fixed_builder(fixed(missing))
    cfg = calibration.decision
    try:
        rule = get_rule(cfg.rule)
    except ValueError:
        return _fixed_builder(fixed(f"unknown decision rule {cfg.rule!r}"))
    if rule.relabel is None:
        return _fixed_builder(fixed(f"rule {cfg.rule} calibrates no threshold"))
    lacking = [name for name in rule.needs if name not in calibration.scores.columns]
    if lacking:
        return _fixed_builder(fixed(f"its scores lack {', '.join(lacking)}"))
    values = calibration.scores[list(rule.needs)].apply(pd.to_numeric, errors="coerce")
    values = values[np.isfinite(values.to_numpy(dtype=float)).all(axis=1)]
    values.index = values.index.astype(str)
    ids = pd.Index([str(i) for i in program_ids])
    pos = values.index.get_indexer(ids)
    if (pos < 0).any():
        return _fixed_builder(fixed(f"no calibration scores for {int((pos < 0).sum())} of {ids.size} shared programs"))
    others = np.setdiff1d(np.arange(len(values)), pos)
    human = pd.Series(np.nan, index=values.index)
    if HUMAN_LABEL in calibration.scores.columns:
        given = pd.to_numeric(calibration.scores[HUMAN_LABEL], errors="coerce")
        human = given.set_axis(given.index.astype(str)).reindex(values.index)
    strata = human.fillna(-1).to_numpy()[others]
    groups = [others[strata == v] for v in (1, 0, -1) if (strata == v).any()]
    scores = Scores({name: values[name].to_numpy(dtype=float) for name in rule.needs})
    relabel_rule = rule.relabel
    n = ids.size
    again = relabel_rule(scores, cfg, np.concatenate([pos, others])[None, :])[0, :n]
    differ = int((again != np.asarray(labels, dtype=int)).sum())
    if differ:
        return _fixed_builder(
            fixed(
                f"recalibrating with its settings ({calibration.describe()}) gives other labels than "
                f"the run's on {differ} of {n} programs"
            )
        )
    described = calibration.describe()

    def build(seed: int) -> Arm:
        rng = np.random.default_rng(seed)

        def relabel(idx: np.ndarray) -> np.ndarray:
            extra = [g[rng.integers(0, g.size, size=(idx.shape[0], g.size))] for g in groups]
            return relabel_rule(scores, cfg, np.hstack([pos[idx], *extra]))[:, :n]

        return Arm(relabel, RECALIBRATED, described)

    return build


def _fixed_builder(found: Arm) -> Callable[[int], Arm]:
    """A builder of an arm with fixed labels (the seed draws nothing)."""
    return lambda seed: found
