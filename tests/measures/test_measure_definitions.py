"""Each built-in uncertainty measure against numbers worked out by hand on small matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcu_exp.measures import ECC_EIGENVALUE_THRESHOLD, affinity, measure, normalized_laplacian, uncertainties


def pair(s: float) -> np.ndarray:
    return np.array([[1.0, s], [s, 1.0]])


@pytest.mark.parametrize("s", [0.0, 0.3, 0.5, 0.9, 1.0])
def test_two_responses(s: float) -> None:
    # W = [[1, s], [s, 1]], D = (1 + s)·I, L = [[a, -a], [-a, a]] with a = s / (1 + s):
    # eigenvalues 0 and 2s / (1 + s).
    # EigV = (1 - 0) + max(0, 1 - 2s/(1 + s)) = 1 + (1 - s)/(1 + s) = 2 / (1 + s).
    # Deg = (m² - ΣD) / m² = (4 - 2(1 + s)) / 4 = (1 - s) / 2.
    # SSC = s, so its uncertainty is 1 - s.
    u = uncertainties(pair(s))
    assert u["ssc"] == pytest.approx(1.0 - s)
    assert u["eigv"] == pytest.approx(2.0 / (1.0 + s))
    assert u["deg"] == pytest.approx((1.0 - s) / 2.0)


def test_two_responses_eccentricity_keeps_eigenvectors_below_the_threshold() -> None:
    # s = 0.5: eigenvalues 0 and 2/3, both < 0.9: the 2 x 2 orthonormal eigenbasis is kept;
    # centring an orthonormal m x m basis leaves ‖·‖_F² = m - 1 = 1, so Ecc = 1.
    assert measure("ecc")(pair(0.5)) == pytest.approx(1.0)
    # s = 0.9: eigenvalues 0 and 1.8/1.9 ≈ 0.947 ≥ 0.9: only the λ = 0 vector D^½·1/‖·‖ is
    # kept, constant since both degrees are 1.9; centred it is 0, so Ecc = 0.
    assert ECC_EIGENVALUE_THRESHOLD < 1.8 / 1.9
    assert measure("ecc")(pair(0.9)) == pytest.approx(0.0, abs=1e-12)


def test_two_identical_responses_and_one_unrelated() -> None:
    # W = [[1, 1, 0], [1, 1, 0], [0, 0, 1]]: D = diag(2, 2, 1);
    # L = [[½, -½, 0], [-½, ½, 0], [0, 0, 0]], eigenvalues 0, 0, 1.
    # EigV = 1 + 1 + 0 = 2 (two semantic sets). Deg = (9 - 5) / 9 = 4/9.
    # Ecc: the λ = 0 eigenspace is spanned by (1, 1, 0)/√2 and (0, 0, 1) (both kept); for an
    # orthonormal m x r embedding V, ‖V - mean‖_F² = r - ‖Vᵀ1‖² / m = 2 - (2 + 1)/3 = 1.
    # SSC = mean(1, 0, 0) = 1/3, uncertainty 2/3.
    w = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert np.allclose(np.linalg.eigvalsh(normalized_laplacian(w)), [0.0, 0.0, 1.0])
    u = uncertainties(w)
    assert u == pytest.approx({"ssc": 2 / 3, "eigv": 2.0, "deg": 4 / 9, "ecc": 1.0})


def test_three_graded_responses() -> None:
    # W = [[1, .8, .2], [.8, 1, .4], [.2, .4, 1]]: ΣW = 3 + 2(.8 + .2 + .4) = 5.8,
    # Deg = (9 - 5.8) / 9; SSC = (.8 + .2 + .4) / 3.
    # Σ_j (1 - λ_j) = m - trace(L) = Σ_j W_jj / D_jj = 1/2 + 1/2.2 + 1/1.6, and here every
    # λ_j ≤ 1 (checked), so EigV equals that sum.
    w = np.array([[1.0, 0.8, 0.2], [0.8, 1.0, 0.4], [0.2, 0.4, 1.0]])
    assert np.linalg.eigvalsh(normalized_laplacian(w)).max() <= 1.0
    u = uncertainties(w)
    assert u["deg"] == pytest.approx(3.2 / 9)
    assert u["ssc"] == pytest.approx(1.0 - 1.4 / 3)
    assert u["eigv"] == pytest.approx(1 / 2 + 1 / 2.2 + 1 / 1.6)


@pytest.mark.parametrize("m", [2, 5, 8])
def test_identical_responses_are_the_least_uncertain(m: int) -> None:
    # W = 11ᵀ: D = m·I, L = I - 11ᵀ/m, eigenvalues 0 (once) and 1: EigV = 1, its minimum
    # (one semantic set; the paper's definition is not 0 here); Deg = 0; Ecc = 0 (the one
    # kept vector is constant); SSC uncertainty 0.
    u = uncertainties(np.ones((m, m)))
    assert u == pytest.approx({"ssc": 0.0, "eigv": 1.0, "deg": 0.0, "ecc": 0.0}, abs=1e-12)


@pytest.mark.parametrize("m", [2, 5, 8])
def test_unrelated_responses_are_the_most_uncertain(m: int) -> None:
    # W = I: D = I, L = 0, every eigenvalue 0: EigV = m; Deg = (m² - m)/m² = 1 - 1/m; every
    # eigenvector kept, an orthonormal m x m basis: Ecc = √(m - 1); SSC uncertainty 1.
    u = uncertainties(np.eye(m))
    assert u == pytest.approx({"ssc": 1.0, "eigv": float(m), "deg": 1.0 - 1.0 / m, "ecc": math.sqrt(m - 1)})
    rng = np.random.default_rng(m)
    for _ in range(20):  # and no other matrix in [0, 1] exceeds them
        a = rng.random((m, m))
        other = uncertainties(a)
        assert all(other[k] <= u[k] + 1e-9 for k in u)
        assert other["eigv"] >= 1.0 - 1e-9 and min(other["deg"], other["ecc"]) >= -1e-12


def test_graph_measures_symmetrise_and_clip_but_ssc_keeps_the_raw_entries() -> None:
    # (S + Sᵀ)/2 of [[1, .6], [.2, 1]] has off-diagonal .4.
    assert uncertainties(np.array([[1.0, 0.6], [0.2, 1.0]])) == pytest.approx(uncertainties(pair(0.4)))
    # A negative F1 (possible with baseline rescaling) is an absent edge for the graph
    # measures, while SSC averages it as it always has; the diagonal given is ignored.
    negative = np.array([[0.3, -0.2], [-0.2, 0.7]])
    assert np.array_equal(affinity(negative), np.eye(2))
    u = uncertainties(negative)
    assert u["ssc"] == pytest.approx(1.2)
    assert (u["eigv"], u["deg"], u["ecc"]) == pytest.approx((2.0, 0.5, 1.0))


def test_measures_do_not_depend_on_the_order_of_the_responses() -> None:
    rng = np.random.default_rng(0)
    a = rng.random((6, 6))
    s = (a + a.T) / 2
    s[:2, :2] = 1.0  # a repeated eigenvalue or two
    order = rng.permutation(6)
    assert uncertainties(s[np.ix_(order, order)]) == pytest.approx(uncertainties(s))


def test_one_response() -> None:
    # The graph measures accept m = 1 (EigV 1, Deg 0, Ecc 0); SSC needs a pair.
    assert (measure("eigv")(np.ones((1, 1))), measure("deg")(np.ones((1, 1))), measure("ecc")(np.ones((1, 1)))) == (
        1.0,
        0.0,
        0.0,
    )
    with pytest.raises(ValueError, match="at least 2 responses"):
        measure("ssc")(np.ones((1, 1)))


def test_deg_is_a_rescaled_ssc_on_symmetric_matrices_in_the_unit_interval() -> None:
    # ΣW = m + 2·Σ_{i<j} S_ij = m + m(m - 1)·SSC, so U_Deg = (m² - ΣW)/m² = (1 - 1/m)(1 - SSC).
    rng = np.random.default_rng(1)
    for m in (2, 3, 10):
        a = rng.random((m, m))
        u = uncertainties((a + a.T) / 2)
        assert u["deg"] == pytest.approx((1 - 1 / m) * u["ssc"])
