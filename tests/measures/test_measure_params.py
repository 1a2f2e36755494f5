"""Measures take parameters: declared with defaults at registration, set from YAML as
``proxy.measure_params.<name>``, checked before anything runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcu_exp.measures import ECC_EIGENVALUE_THRESHOLD, measure, register_measure, sized, unregister_measure
from support.proxies import compose_cfg, make_proxy, synthetic_dataset

S = np.array([[1.0, 0.9, 0.2, 0.3], [0.9, 1.0, 0.5, 0.1], [0.2, 0.5, 1.0, 0.6], [0.3, 0.1, 0.6, 1.0]])


@pytest.fixture
def floor() -> Iterator[str]:
    """A measure with one parameter: the share of off-diagonal similarities below ``at``."""

    @register_measure("below", size_free=True, params={"at": 0.5})
    def below(similarity: np.ndarray, at: float = 0.5) -> float:
        off = similarity[~np.eye(len(similarity), dtype=bool)]
        return float((off < at).mean())

    yield "below"
    unregister_measure("below")


def test_a_parameter_has_its_default_and_can_be_set(floor: str) -> None:
    assert measure(floor)(S) == pytest.approx(6 / 12)  # 0.2, 0.3, 0.1 of the six pairs
    assert measure(floor)(S, at=0.25) == pytest.approx(4 / 12)
    assert sized(floor, [S, S], 4, {"at": 0.25}).tolist() == pytest.approx([4 / 12, 4 / 12])
    with pytest.raises(ValueError, match=r"^proxy.measure_params.cut: measure 'below' takes no such parameter"):
        measure(floor)(S, cut=0.1)


def test_ecc_threshold_is_a_parameter_whose_default_keeps_the_old_value() -> None:
    ecc = measure("ecc")
    assert ecc.params == {"threshold": ECC_EIGENVALUE_THRESHOLD}
    assert ecc(S) == ecc(S, threshold=ECC_EIGENVALUE_THRESHOLD)
    assert ecc(S, threshold=2.0) != ecc(S)  # every eigenvector kept: another embedding
    assert sized("ecc", [S], 3, {"threshold": 2.0})[0] == pytest.approx(
        np.mean([ecc(S[np.ix_(c, c)], threshold=2.0) for c in ([0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3])])
    )


def test_p1_checks_the_measure_params_before_anything_runs(tmp_path: Path) -> None:
    good = compose_cfg("proxy=p1", "proxy.measure=ecc", "+proxy.measure_params.threshold=0.8")
    proxy = make_proxy(good, synthetic_dataset(3, 0), tmp_path)
    assert proxy.cfg.measure_params == {"threshold": 0.8} and list(proxy.problems()) == []
    bad = compose_cfg("proxy=p1", "proxy.measure=eigv", "+proxy.measure_params.threshold=0.8")
    assert list(make_proxy(bad, synthetic_dataset(3, 0), tmp_path).problems()) == [
        "proxy.measure_params.threshold: measure 'eigv' takes no such parameter (its parameters: none)"
    ]
