"""The measure registry: names, look-up errors, input checks, and one function per measure."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mcu_exp.measures import (
    MEASURES,
    measure,
    measure_column,
    measure_names,
    register_measure,
    uncertainties,
    unregister_measure,
)


@pytest.fixture
def spread() -> Iterator[str]:
    """A measure registered for one test: 1 − the smallest off-diagonal similarity."""

    @register_measure("spread")
    def _spread(similarity: np.ndarray) -> float:
        off = similarity[~np.eye(len(similarity), dtype=bool)]
        return 1.0 - off.min()

    yield "spread"
    unregister_measure("spread")


def test_builtins_in_order() -> None:
    assert measure_names()[:4] == ["ssc", "eigv", "deg", "ecc"]
    assert measure("eigv") is MEASURES["eigv"]
    assert measure_column("eigv") == "measure.eigv"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"^unknown measure 'bogus' \(proxy.measure\) \(known: ssc, eigv, deg, ecc\)$"):
        measure("bogus")
    with pytest.raises(ValueError, match=r"unknown measure 'egv' \(proxy.measure\): did you mean 'eigv'\?"):
        measure("egv")


def test_a_new_measure_is_one_function(spread: str) -> None:
    s = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.5], [0.2, 0.5, 1.0]])
    assert measure(spread)(s) == pytest.approx(0.8)
    assert isinstance(measure(spread)(s), float)
    assert uncertainties(s)[spread] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="already registered"):
        register_measure(spread)


@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.ones(3), np.zeros((0, 0)), np.array([[1.0, np.nan], [0, 1]])])
def test_every_measure_checks_its_input(bad: np.ndarray) -> None:
    for name in MEASURES:
        with pytest.raises(ValueError, match="similarity matrix"):
            measure(name)(bad)
