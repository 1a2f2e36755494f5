"""Measures keep one scale when calibration and test subsets differ in size (issue 23, item 2).

A threshold τ from α_cal on k_cal summaries must carry over to α_test on the other k − k_cal,
and to programs that lost failed samples: simulated coverage of α_test ≤ τ stays within
binomial error of 1 − ε for every measure. Also: equal sizes change nothing, the batched
versions equal the single-matrix ones, and P1 takes every measure at its smallest subset.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from measures.test_p1_measures import outcome, p1

from mcu_exp.measures import MEASURES, common_size, mean_pairwise, measure, sized
from mcu_exp.measures.definitions import deg_many, ecc_many, eigv_many
from mcu_exp.measures.sizing import MAX_SUBSETS, subsets

EPSILON, PROGRAMS = 0.1, 500


def bertscore_like(rng: np.random.Generator, m: int, level: float, noise: float = 0.05) -> np.ndarray:
    """A symmetric m × m similarity matrix: every pair near the program's level, diagonal 1."""
    e = rng.normal(0.0, noise, (m, m))
    s = np.clip(level + (e + e.T) / np.sqrt(2.0), 0.0, 1.0)
    np.fill_diagonal(s, 1.0)
    return s


def coverage(cal: list[np.ndarray], test: list[np.ndarray], name: str) -> float:
    """Share of α_test ≤ τ, τ the empirical (1 − ε) quantile of α_cal, as P1 computes them."""
    size = common_size([*cal, *test])
    alpha_cal, alpha_test = sized(name, cal, size), sized(name, test, size)
    tau = np.sort(alpha_cal)[math.ceil(len(cal) * (1.0 - EPSILON)) - 1]
    return float(np.mean(alpha_test <= tau))


def within_binomial_error(found: float) -> bool:
    return abs(found - (1.0 - EPSILON)) <= 3.0 * math.sqrt(EPSILON * (1.0 - EPSILON) / PROGRAMS)


@pytest.fixture(scope="module")
def levels() -> np.ndarray:
    return np.random.default_rng(11).uniform(0.4, 0.9, PROGRAMS)


@pytest.mark.parametrize("name", ["ssc", "eigv", "deg", "ecc"])
def test_coverage_with_more_test_than_calibration_summaries(name: str, levels: np.ndarray) -> None:
    rng = np.random.default_rng(1)
    cal = [bertscore_like(rng, 10, level) for level in levels]
    test = [bertscore_like(rng, 20, level) for level in levels]
    assert within_binomial_error(coverage(cal, test, name)), coverage(cal, test, name)


@pytest.mark.parametrize("name", ["ssc", "eigv", "deg", "ecc"])
def test_coverage_when_programs_lost_failed_samples(name: str, levels: np.ndarray) -> None:
    rng = np.random.default_rng(2)
    lost = rng.random(PROGRAMS) < 0.3  # these programs kept 7 or 8 of their 10 test summaries
    cal = [bertscore_like(rng, 10, level) for level in levels]
    test = [bertscore_like(rng, int(10 - lose * rng.integers(2, 4)), level) for level, lose in zip(levels, lost)]
    assert common_size([*cal, *test]) == 7
    assert within_binomial_error(coverage(cal, test, name)), coverage(cal, test, name)


def test_equal_sizes_change_nothing() -> None:
    rng = np.random.default_rng(3)
    matrices = [bertscore_like(rng, 10, level) for level in rng.uniform(0.4, 0.9, 20)]
    for name, fn in MEASURES.items():
        assert np.array_equal(sized(name, matrices, 10), [fn(m) for m in matrices])  # bit for bit


def test_the_formula_and_the_batched_versions() -> None:
    rng = np.random.default_rng(4)
    s = bertscore_like(rng, 6, 0.6)
    # U^(4)(S): the mean over all 15 subsets of 4 responses, each measure on its own
    every = subsets(6, 4)
    assert len(every) == math.comb(6, 4) <= MAX_SUBSETS
    for name in ("eigv", "deg", "ecc"):
        expected = np.mean([measure(name)(s[np.ix_(c, c)]) for c in every])
        assert sized(name, [s], 4)[0] == pytest.approx(expected, abs=1e-12)
    # Deg at size m0 is (1 − 1/m0)(1 − SSC) for similarities in [0, 1]; SSC needs no rescaling
    assert sized("deg", [s], 4)[0] == pytest.approx((1 - 1 / 4) * (1 - mean_pairwise(s)), abs=1e-12)
    assert sized("ssc", [s], 4)[0] == measure("ssc")(s)
    # beyond MAX_SUBSETS: a seeded draw, the same for every matrix of that size
    drawn = subsets(20, 10)
    assert drawn.shape == (MAX_SUBSETS, 10) and np.array_equal(drawn, subsets(20, 10))
    stack = np.stack([bertscore_like(rng, 5, level) for level in (0.2, 0.5, 0.9)])
    for fn, name in ((eigv_many, "eigv"), (deg_many, "deg"), (ecc_many, "ecc")):
        assert fn(stack.copy()) == pytest.approx([measure(name)(m) for m in stack], abs=1e-12)
    with pytest.raises(ValueError, match="subset of 5 responses out of 4"):
        subsets(4, 5)


def test_p1_takes_every_measure_at_its_smallest_subset(tmp_path: Path) -> None:
    result = outcome(p1(tmp_path, "proxy.k=7", "proxy.k_cal=3", "proxy.measure=deg"))  # 3 calibration, 4 test
    table = result.table
    assert result.params["measure_size"] == 3
    # the word-overlap similarities lie in [0, 1], so Deg at size 3 is (2/3)(1 − SSC), not (3/4)(1 − SSC)
    assert table["measure.deg"].to_numpy() == pytest.approx(-(2 / 3) * (1 - table["ssc_test"].to_numpy()), abs=1e-12)
    assert table["alpha_cal"].to_numpy() == pytest.approx((2 / 3) * (1 - table["ssc_cal"].to_numpy()), abs=1e-12)
    assert np.array_equal(table["measure.ssc"].to_numpy(), table["ssc_test"].to_numpy() - 1)
