"""Twins: a custom dataset's ``pair``/``variant`` columns and the atoms study's pairs load the same
way, bad pairings fail in one line, and the human per-pair effect (and its reader bootstrap)
equals a brute-force computation."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from mcu_exp.config import DatasetConfig
from mcu_exp.data import DatasetError, load_custom, load_dataset
from mcu_exp.data.code_metrics import DATASET_METRICS_KEY
from mcu_exp.data.pairs import Twins, human_pair_effects, twin_pairs
from support.paired_study import CORRECT, write_paired_study


def test_custom_pairs_are_marked_like_atoms(tmp_path: Path) -> None:
    dataset = load_custom(write_paired_study(tmp_path / "study"))
    assert twin_pairs(dataset) == [Twins(n, f"{n}-r", "renamed") for n in ("sum", "max", "count")]
    meta = dataset.program("max-r").meta
    assert (meta["pair"], meta["pair_role"], meta["variant"]) == ("max", "treatment", "renamed")
    assert DATASET_METRICS_KEY not in meta  # pair ids are no metric, even when numeric


def _rewrite(folder: Path, change: dict[str, tuple[str, str]], drop_variant: bool = False) -> None:
    path = folder / "programs.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row["program_id"] in change:
            row["pair"], row["variant"] = change[row["program_id"]]
    columns = [c for c in rows[0] if not (drop_variant and c == "variant")]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize(
    ("change", "drop_variant", "needle"),
    [
        ({}, True, "column pair needs a variant column"),
        ({"sum-r": ("max", "renamed")}, False, "program 'sum' pairs with 'sum-r' but 'sum-r' pairs with 'max'"),
        ({"sum-r": ("nothing", "renamed")}, False, "pairs with 'nothing', which is not a program_id"),
        ({"sum-r": ("sum", "original")}, False, "expected one twin of the control variant 'original'"),
        ({"sum": ("sum-r", "")}, False, "program 'sum' has a pair but no variant"),
    ],
)
def test_bad_pairings_fail_in_one_line(tmp_path: Path, change: dict, drop_variant: bool, needle: str) -> None:
    folder = write_paired_study(tmp_path / "study")
    _rewrite(folder, change, drop_variant)
    with pytest.raises(DatasetError) as caught:
        load_custom(folder)
    message = str(caught.value)
    assert needle in message and "programs.csv" in message and "\n" not in message


def test_human_effect_and_its_reader_bootstrap_equal_brute_force(tmp_path: Path) -> None:
    dataset = load_custom(write_paired_study(tmp_path / "study"))
    effects = human_pair_effects(dataset, twin_pairs(dataset), resamples=300, seed=4)
    readers = sorted(CORRECT)
    for name in ("sum", "max", "count"):
        row = effects.loc[f"{name}|{name}-r"]
        control = np.mean([CORRECT[p][name] / 3 for p in readers])
        treated = np.mean([CORRECT[p][f"{name}-r"] / 3 for p in readers])
        assert row["delta_human"] == pytest.approx(treated - control)
        weights = np.random.default_rng(4).multinomial(4, np.full(4, 0.25), size=300)
        draws = []
        for w in weights:  # each participant's evaluations repeated as often as they were drawn
            drawn = [p for p, k in zip(readers, w, strict=True) for _ in range(k)]
            draws.append(
                np.mean([CORRECT[p][f"{name}-r"] / 3 for p in drawn]) - np.mean([CORRECT[p][name] / 3 for p in drawn])
            )
        low, high = np.quantile(draws, [0.025, 0.975])
        assert (row["delta_human_low"], row["delta_human_high"]) == pytest.approx((low, high))
        assert row["n_control"] == row["n_treatment"] == 4


def test_atoms_pairs_show_the_published_effect() -> None:
    root = Path(os.environ["MCU_EXP_DATA"]) / "atoms"
    if not (root / "programs.csv").is_file():
        pytest.skip(f"{root} is missing: the atoms dataset is not installed")
    dataset = load_dataset(DatasetConfig(name="atoms", format="atoms", download=False))
    pairs = twin_pairs(dataset)
    assert len(pairs) == 63
    assert all(dataset.program(p.control).meta["type"] == "Non-confusing" for p in pairs)
    effects = human_pair_effects(dataset, pairs, resamples=200)
    assert effects["delta_human"].mean() == pytest.approx(-0.23, abs=0.005)  # the 0.23 in 51 of 63 pairs
    assert int((effects["delta_human"] < 0).sum()) == 51
    assert (effects["delta_human_low"] <= effects["delta_human"]).all()
