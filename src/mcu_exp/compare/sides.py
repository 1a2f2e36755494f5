"""The two sides of ``mcu-exp compare``: what one run brings to the comparison (:class:`Source`), and
the one-line error for a run that cannot be compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class CompareError(ValueError):
    """A run that cannot be compared; the message is one line."""


@dataclass(frozen=True)
class Source:
    """One side of the comparison: a short name, where it came from, its per-program table
    and, for a calibrated run, what recalibrating it needs (else ``missing`` says what lacks);
    its human ceiling and its figures against it (:mod:`mcu_exp.compare.ceiling`) and its label settings."""

    name: str
    where: str
    frame: Any  # pandas.DataFrame, index program_id
    calibration: Any = None  # mcu_exp.evaluation.paired_recalibration.RunCalibration | None
    missing: str = ""
    ceiling: dict[str, float] = field(default_factory=dict)  # its figures under mcu_exp.compare.ceiling.PREFIXES
    labels: dict[str, str] = field(default_factory=dict)  # labels.rule, min_fraction, group, readers
    params: dict[str, str] = field(default_factory=dict)  # the flat config it ran with (mcu_exp.compare.params)
