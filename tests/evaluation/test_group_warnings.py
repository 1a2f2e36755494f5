"""Every label set that is evaluated gets the class-size warning the main labels get, and the
per-group table says its intervals are unadjusted and how many there are."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.config import DatasetConfig, EvaluationConfig, LabelsConfig
from mcu_exp.data import human_labels, load_dataset, subgroup_labels
from mcu_exp.evaluation.groups_table import class_counts, family_caption, render_group_table
from mcu_exp.job.alignment import alignment, class_warnings

EV = EvaluationConfig(bootstrap_resamples=1000, permutations=0)


@pytest.fixture(scope="module")
def tested_groups() -> dict:
    """All readers and each subgroup under ``labels.readers=tested`` on the Scalabrino data."""
    root = Path(os.environ.get("MCU_EXP_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")
    if not (root / "scalabrino" / "evaluations.csv").is_file():
        pytest.skip(f"no local Scalabrino data under {root} (set MCU_EXP_DATA)")
    with warnings.catch_warnings():  # the dataset's repeated pairs, tested in tests/data
        warnings.simplefilter("ignore")
        dataset = load_dataset(DatasetConfig(name="scalabrino", format="scalabrino", root=str(root / "scalabrino")))
    cfg = LabelsConfig(readers="tested")
    groups = {names.ALL_READERS: human_labels(dataset, cfg)}
    groups.update(subgroup_labels(dataset, cfg, EvaluationConfig().subgroups))
    return groups


def _reports(groups: dict) -> dict:
    main = groups[names.ALL_READERS].labels
    rng = np.random.default_rng(0)
    score = rng.random(len(main))
    table = pd.DataFrame({names.LABEL: (score > 0.3).astype(int), names.SCORE: score}, index=main.index)
    return {name: alignment(table, g.labels, EV, human=g.correctness) for name, g in groups.items()}


def test_small_subgroup_classes_are_warned_about(tested_groups: dict) -> None:
    reports = _reports(tested_groups)
    counts = {name: class_counts(rep) for name, rep in reports.items()}
    assert counts["phd"] == (9, 2) and counts["professional"] == (40, 3)  # the figures
    found = class_warnings(reports, None, min_per_class=5)
    assert (
        found["phd"] == "only 2 programs are not understandable (fewer than 5): "
        "F1/AUC and their confidence intervals are uninformative"
    )
    assert found["professional"].startswith("only 3 programs are not understandable")
    assert found["bachelor"] is None and found[names.ALL_READERS] is None
    reference = reports["phd"]  # any report stands for a reference proxy's labels
    assert class_warnings(reports, reference, 5)["reference"] == found["phd"]


def test_group_table_counts_classes_and_states_the_family(tested_groups: dict) -> None:
    reports = _reports(tested_groups)
    found = class_warnings(reports, None, min_per_class=5)
    text = render_group_table(reports, {k: v for k, v in found.items() if k != names.ALL_READERS})
    assert "11 (9 / 2)" in text and "43 (40 / 3)" in text
    assert "unadjusted for multiplicity" in text
    assert f"{len(reports) - 1} groups × 3 metrics = {3 * (len(reports) - 1)} intervals" in text
    assert "warning: phd: only 2 programs" in text and "warning: professional: only 3" in text
    assert "warning: bachelor" not in text


def test_family_caption_bonferroni_level() -> None:
    assert family_caption(4, 2, 0.95) == (
        "95 % CIs, unadjusted for multiplicity: a family of 4 groups × "
        "2 metrics = 8 intervals (Bonferroni would use 99.38 % each)"
    )
