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
are kept: the calibration set is resampled like the run's own. Other programs that both runs
calibrated on (unlabelled in one or both, so no pair shares them) are drawn jointly, the same
ones for both arms (:func:`paired_arms`); those one run alone has, by that run's own draws.
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
    gives back ``labels``; else labels fixed, ``missing`` or the reason as the note. Alone:
    its other programs are all drawn with ``seed`` (see :func:`paired_arms` for two runs)."""
    found = prepare(calibration, program_ids, labels, missing)
    return found if isinstance(found, Arm) else found.arm(seed)


@dataclass(frozen=True)
class Calibrated:
    """A run ready to be recalibrated in each resample (:func:`prepare`): its rule's scores
    over every program it calibrated on, the shared programs' positions among them (``pos``)
    and its other programs (``others``: positions; ``other_ids``; ``other_labels``: human label
    1, 0, or -1 for none)."""

    scores: Scores
    decision: DecisionConfig
    relabel_rule: Callable[[Scores, DecisionConfig, np.ndarray], np.ndarray]
    pos: np.ndarray
    others: np.ndarray
    other_ids: np.ndarray
    other_labels: np.ndarray
    described: str

    def arm(self, seed: int, common: Mapping[str, int] | None = None, common_seed: int | Sequence[int] = 0) -> Arm:
        """The recalibrated arm. Its other programs are drawn in each resample with
        replacement, stratified by human label; those in ``common`` (program id → stratum
        key, the same mapping for both runs of a pair) are drawn from ``common_seed``'s own
        generator, per stratum in program-id order, so two runs that both calibrated on them
        draw the same ones in every resample; the rest from ``seed``'s."""
        common = common or {}
        shared = np.array([i in common for i in self.other_ids], dtype=bool)
        own_labels = self.other_labels[~shared]
        own = [self.others[~shared][own_labels == v] for v in (1, 0, -1) if (own_labels == v).any()]
        keys = {i: common[i] for i in self.other_ids[shared]}
        by_id = dict(zip(self.other_ids.tolist(), self.others.tolist(), strict=True))
        joint = [
            np.array([by_id[i] for i in sorted(i for i in keys if keys[i] == key)], dtype=self.others.dtype)
            for key in sorted(set(keys.values()))
        ]
        relabel_rule, scores, cfg, pos, n = self.relabel_rule, self.scores, self.decision, self.pos, self.pos.size
        rng, both = np.random.default_rng(seed), np.random.default_rng(common_seed)

        def relabel(idx: np.ndarray) -> np.ndarray:
            rows = idx.shape[0]
            extra = [g[both.integers(0, g.size, size=(rows, g.size))] for g in joint]
            extra += [g[rng.integers(0, g.size, size=(rows, g.size))] for g in own]
            return relabel_rule(scores, cfg, np.hstack([pos[idx], *extra]))[:, :n]

        return Arm(relabel, RECALIBRATED, self.described)


def paired_arms(a: Calibrated | Arm, b: Calibrated | Arm, seed: int) -> tuple[Arm, Arm]:
    """The two arms of a pair from what :func:`prepare` gave for each run. Programs both runs
    calibrated on but that are not shared (no human label in one of them) are drawn jointly,
    the same ones for both arms in every resample, stratified by the pair of human labels
    the runs give them; programs one run alone has, by its own draws (seeds ``2·seed + 1``
    and ``2·seed + 2``). Drawing the joint ones apart broke the pairing: a run compared with
    itself got a ΔF1 interval around 0 instead of exactly 0."""
    if isinstance(a, Calibrated) and isinstance(b, Calibrated):
        label_a = dict(zip(a.other_ids.tolist(), a.other_labels.tolist(), strict=True))
        label_b = dict(zip(b.other_ids.tolist(), b.other_labels.tolist(), strict=True))
        common = {i: int(3 * (label_a[i] + 1) + label_b[i] + 1) for i in label_a if i in label_b}
        joint_seed = [seed, 0x5EED]  # one generator for both arms, apart from each arm's own
        return a.arm(seed * 2 + 1, common, joint_seed), b.arm(seed * 2 + 2, common, joint_seed)
    first = a if isinstance(a, Arm) else a.arm(seed * 2 + 1)
    second = b if isinstance(b, Arm) else b.arm(seed * 2 + 2)
    return first, second


def prepare(
    calibration: RunCalibration | None,
    program_ids: Sequence[Any] | np.ndarray,
    labels: np.ndarray,
    missing: str = "no calibration scores",
) -> Calibrated | Arm:
    """A run ready to be recalibrated on the shared ``program_ids`` (whose labels are
    ``labels``), or the fixed arm it gets and why (see :func:`arm`). Prepared once per run and
    set of shared programs, whatever the number of pairs it is in."""
    if calibration is None:
        return fixed(missing)
    cfg = calibration.decision
    try:
        rule = get_rule(cfg.rule)
    except ValueError:
        return fixed(f"unknown decision rule {cfg.rule!r}")
    if rule.relabel is None:
        return fixed(f"rule {cfg.rule} calibrates no threshold")
    lacking = [name for name in rule.needs if name not in calibration.scores.columns]
    if lacking:
        return fixed(f"its scores lack {', '.join(lacking)}")
    values = calibration.scores[list(rule.needs)].apply(pd.to_numeric, errors="coerce")
    values = values[np.isfinite(values.to_numpy(dtype=float)).all(axis=1)]
    values.index = values.index.astype(str)
    ids = pd.Index([str(i) for i in program_ids])
    pos = values.index.get_indexer(ids)
    if (pos < 0).any():
        return fixed(f"no calibration scores for {int((pos < 0).sum())} of {ids.size} shared programs")
    others = np.setdiff1d(np.arange(len(values)), pos)
    human = pd.Series(np.nan, index=values.index)
    if HUMAN_LABEL in calibration.scores.columns:
        given = pd.to_numeric(calibration.scores[HUMAN_LABEL], errors="coerce")
        human = given.set_axis(given.index.astype(str)).reindex(values.index)
    scores = Scores({name: values[name].to_numpy(dtype=float) for name in rule.needs})
    n = ids.size
    again = rule.relabel(scores, cfg, np.concatenate([pos, others])[None, :])[0, :n]
    differ = int((again != np.asarray(labels, dtype=int)).sum())
    if differ:
        return fixed(
            f"recalibrating with its settings ({calibration.describe()}) gives other labels than "
            f"the run's on {differ} of {n} programs"
        )
    return Calibrated(
        scores=scores,
        decision=cfg,
        relabel_rule=rule.relabel,
        pos=pos,
        others=others,
        other_ids=values.index.to_numpy(dtype=str)[others],
        other_labels=human.fillna(-1).to_numpy()[others],
        described=calibration.describe(),
    )
