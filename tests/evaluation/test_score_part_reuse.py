"""The score metrics' intervals and AUC(score)'s permutation test do not depend on the proxy's
labels, so a sweep over ε computes them once (``evaluate(reuse=...)``, the result cache in a
job): every report stays what computing everything gives, whatever CI method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.calibration import Scores, get_rule
from mcu_exp.calibration.threshold import threshold
from mcu_exp.config import DecisionConfig, EvaluationConfig
from mcu_exp.evaluation import evaluate
from mcu_exp.evaluation.bootstrap import Relabel
from mcu_exp.job.alignment import alignment

EV = EvaluationConfig(bootstrap_resamples=1000, permutations=1000)


class Memo:
    """A ``reuse`` that remembers values by name and key, counting what it computed."""

    def __init__(self) -> None:
        self.kept: dict[str, Any] = {}
        self.computed: list[str] = []

    def __call__(self, name: str, key: tuple[Any, ...], compute: Any) -> Any:
        digest = name + repr([np.asarray(k).tobytes() if isinstance(k, np.ndarray) else k for k in key])
        if digest not in self.kept:
            self.computed.append(name)
            self.kept[digest] = compute()
        return self.kept[digest]


def _same(a: Any, b: Any) -> None:
    assert a.metrics.keys() == b.metrics.keys()
    np.testing.assert_array_equal([a.metrics[k] for k in a.metrics], [b.metrics[k] for k in a.metrics])
    assert list(a.ci) == list(b.ci)  # same metrics, same order
    np.testing.assert_array_equal([a.ci[k] for k in a.ci], [b.ci[k] for k in a.ci])
    assert a.tests == b.tests and a.warnings == b.warnings


def _panel(epsilon: float, n: int = 40) -> tuple[pd.DataFrame, pd.Series, pd.Series, Relabel]:
    rng = np.random.default_rng(3)
    ids = [f"p{i:02d}" for i in range(n)]
    y = (rng.random(n) < 0.6).astype(int)
    alpha_cal = np.clip(0.5 - 0.1 * y + rng.normal(0.0, 0.12, n), 0, 1)
    alpha_test = np.clip(0.5 - 0.1 * y + rng.normal(0.0, 0.12, n), 0, 1)
    decision = DecisionConfig(epsilon=epsilon)
    tau = threshold(alpha_cal, epsilon)
    table = pd.DataFrame({names.LABEL: (alpha_test <= tau).astype(int), names.SCORE: -alpha_test}, index=ids)
    scores = Scores(alpha_cal=alpha_cal, alpha_test=alpha_test)
    rule = get_rule("conformal")
    human = pd.Series(rng.random(n), index=ids)
    return table, pd.Series(y, index=ids), human, lambda positions: rule.relabel(scores, decision, positions)


@pytest.mark.parametrize("ci", ["conditional", "relabel", "calibration"])
def test_reports_with_the_score_part_reused_equal_those_computed_in_full(ci: str) -> None:
    memo = Memo()
    for epsilon in (0.1, 0.2, 0.3):
        table, labels, human, relabel = _panel(epsilon)
        y, pred, score = labels.to_numpy(), table[names.LABEL].to_numpy(), table[names.SCORE].to_numpy()
        kwargs: dict[str, Any] = {"resamples": 1000, "seed": 5, "human": human.to_numpy(), "permutations": 1000}
        if ci == "relabel":
            kwargs["relabel"] = relabel
        if ci == "calibration":
            from mcu_exp.evaluation.bootstrap import Calibration

            kwargs["calibration"] = Calibration(strata=y, scored=np.arange(y.size), relabel=relabel)
        _same(evaluate(y, pred, score, reuse=memo, **kwargs), evaluate(y, pred, score, **kwargs))
    assert memo.computed == ["score_bootstrap", "auc_permutation_p"]  # once for the three decisions


def test_a_jobs_alignment_reads_the_score_part_from_the_cache_folder(tmp_path: Path) -> None:
    """Two decisions on one cache folder: the second job's report comes partly from the
    entries the first wrote, and equals the report computed without a cache."""
    for epsilon in (0.1, 0.3):
        table, labels, human, relabel = _panel(epsilon)
        cached = alignment(table, labels, EV, relabel, human, cache_dir=tmp_path)
        assert cached is not None
        _same(cached, alignment(table, labels, EV, relabel, human))
    assert len(list((tmp_path / "results").rglob("*"))) >= 2
