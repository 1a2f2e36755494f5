"""The ``dataset`` and ``labels`` sections' values checked before a job runs: a positive program
limit, and a labelling rule, a group and readers that exist."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.config import DatasetConfig, LabelsConfig
from mcu_exp.data.labels import LATENT_RULES, READERS, RULES, TARGETS
from mcu_exp.data.types import GROUPS


def labels_problems(lab: LabelsConfig) -> Iterator[str]:
    """Every out-of-range value of ``labels``, as ``key=value: what is expected`` messages."""
    if lab.rule not in RULES:
        yield RULES.unknown_message(lab.rule)
    if lab.group != "all" and lab.group not in GROUPS:
        yield f"labels.group={lab.group!r}: expected all or one of {', '.join(GROUPS)}"
    if lab.readers not in READERS:
        yield f"labels.readers={lab.readers!r}: expected one of {', '.join(READERS)}"
    if not 0.0 <= lab.min_fraction <= 1.0:
        yield f"labels.min_fraction={lab.min_fraction}: expected a value in [0, 1]"
    if lab.target not in TARGETS:
        yield f"labels.target={lab.target!r}: expected one of {', '.join(TARGETS)}"
    if lab.latent_rule not in LATENT_RULES:
        yield f"labels.latent_rule={lab.latent_rule!r}: expected one of {', '.join(LATENT_RULES)}"


def dataset_problems(ds: DatasetConfig) -> Iterator[str]:
    """An out-of-range value of ``dataset``."""
    if ds.limit is not None and ds.limit < 1:
        yield f"dataset.limit={ds.limit}: expected a positive number of programs (or null)"
