"""Uncertainty measures of one program's responses from their pairwise similarity matrix.

``measure(name)(S) -> uncertainty`` (higher = the responses agree less); the registry, the
built-ins (``ssc``, ``eigv``, ``deg``, ``ecc``) and their maths: docs/measures.md,
:mod:`mcu_exp.measures.registry` and :mod:`mcu_exp.measures.definitions`; one scale for
subsets of different sizes: :mod:`mcu_exp.measures.sizing`.
"""

from mcu_exp.measures import definitions  # noqa: F401  (registers the built-ins, in order)
from mcu_exp.measures.definitions import ECC_EIGENVALUE_THRESHOLD, mean_pairwise, normalized_laplacian
from mcu_exp.measures.registry import (
    COLUMN_PREFIX,
    MEASURES,
    Measure,
    MeasureFn,
    affinity,
    as_similarity,
    measure,
    measure_column,
    measure_names,
    register_measure,
    uncertainties,
    unregister_measure,
)
from mcu_exp.measures.sizing import MAX_SUBSETS, at_size, common_size, sized

__all__ = [
    "COLUMN_PREFIX",
    "ECC_EIGENVALUE_THRESHOLD",
    "MAX_SUBSETS",
    "MEASURES",
    "Measure",
    "MeasureFn",
    "affinity",
    "as_similarity",
    "at_size",
    "common_size",
    "mean_pairwise",
    "measure",
    "measure_column",
    "measure_names",
    "normalized_laplacian",
    "register_measure",
    "sized",
    "uncertainties",
    "unregister_measure",
]
