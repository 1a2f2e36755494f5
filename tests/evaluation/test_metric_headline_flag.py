"""Each metric says whether it is a headline metric (logged to MLflow as a metric), instead of
a fixed list elsewhere: the built-ins flag exactly the metrics the headline set names."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mcu_exp.evaluation.registry import Counts, headline_names, metric, register, unregister


@pytest.fixture
def specificity() -> Iterator[str]:
    register("specificity_h", kind="rate", headline=True)(lambda c: c.tn / np.maximum(c.tn + c.fp, 1))
    yield "specificity_h"
    unregister("specificity_h")


def test_the_builtin_headline_metrics() -> None:
    assert headline_names() == ["f1", "auc_binary", "auc_score", "mcc", "spearman"]
    assert not metric("accuracy").headline and metric("f1").headline


def test_a_new_metric_declares_itself_headline(specificity: str) -> None:
    assert headline_names()[-1] != specificity  # listed in kind order, then registration order
    assert specificity in headline_names() and headline_names().index(specificity) == 1  # the rates come first
    c = Counts.from_labels(np.array([1, 0, 0, 1]), np.array([1, 1, 0, 0]))
    assert metric(specificity).compute(c) == pytest.approx(0.5)  # type: ignore[arg-type]
