"""The humans' split-half noise ceiling: synthetic panels against a Monte Carlo of fresh
panels, the identical- and independent-rater limits, programs that cannot be split, the
label settings it respects, and Krippendorff's α on the Scalabrino data."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from mcu_exp.app import config_dir
from mcu_exp.ceiling.split_half import MIN_PROGRAMS, split_half
from mcu_exp.cli.reliability import main as reliability_main
from mcu_exp.data import Dataset, Program
from mcu_exp.data.types import evaluations_frame
from support.datasets import write_csv

QUESTIONS = 3


def panel(
    truth: np.ndarray,
    raters: int | Sequence[int],
    rng: np.random.Generator,
    groups: Sequence[str | None] | None = None,
    untested: float = 0.0,
) -> Dataset:
    """A dataset whose program i is read by ``raters`` (or ``raters[i]``) participants, each
    answering QUESTIONS questions right with probability ``truth[i]`` (binomial raters); a
    share ``untested`` of the evaluations was asked no question."""
    counts = [raters] * truth.size if isinstance(raters, int) else list(raters)
    pids, people, correct, total, group = [], [], [], [], []
    for i, (p, n) in enumerate(zip(truth, counts)):
        for j in range(n):
            asked = 0 if rng.random() < untested else QUESTIONS
            pids.append(f"p{i}")
            people.append(f"r{j}")
            correct.append(int(rng.binomial(asked, p)))
            total.append(asked)
            group.append(None if groups is None else groups[j % len(groups)])
    programs = [Program(id=f"p{i}", language="java", code="") for i in range(truth.size)]
    return Dataset(
        name="synthetic",
        programs=programs,
        questions=[],
        source="test",
        evaluations=evaluations_frame(pids, people, correct, total, group=group),
    )


def mean_correct(truth: np.ndarray, raters: int, rng: np.random.Generator, draws: int) -> np.ndarray:
    """(draws, programs) mean share correct of fresh panels of ``raters`` readers."""
    return rng.binomial(QUESTIONS * raters, truth, size=(draws, truth.size)) / (QUESTIONS * raters)


def mean_abu50(truth: np.ndarray, raters: int, rng: np.random.Generator, draws: int) -> np.ndarray:
    """(draws, programs) mean ABU50 (≥ 2 of 3 right) of fresh panels of ``raters`` readers."""
    understood = rng.binomial(QUESTIONS, truth, size=(draws, raters, truth.size)) * 2 >= QUESTIONS
    return understood.mean(axis=1)


def test_full_panel_reliability_and_ceiling_agree_with_a_monte_carlo_of_fresh_panels() -> None:
    rng = np.random.default_rng(7)
    truth = rng.beta(2.0, 2.0, size=200)
    raters, draws = 8, 400
    # The targets: a fresh panel of 8 against another (test-retest reliability of the full-panel
    # mean), the true understandability against a full panel (the best predictor's ρ), and one
    # fresh half panel's mean ABU50 against another's label (the half-panel AUC).
    first, second = mean_correct(truth, raters, rng, draws), mean_correct(truth, raters, rng, draws)
    retest = np.mean([spearmanr(a, b).statistic for a, b in zip(first, second)])
    best = np.mean([spearmanr(truth, a).statistic for a in first])
    half_a, half_b = mean_abu50(truth, 4, rng, draws), mean_abu50(truth, 4, rng, draws)
    half_auc = np.mean([roc_auc_score(b >= 0.5, a) for a, b in zip(half_a, half_b)])
    # The estimator on independent observed panels: its spread is the sampling error.
    found = [split_half(panel(truth, raters, rng), splits=100, seed=s).figures for s in range(12)]
    for key, target in (("reliability", retest), ("spearman", best), ("auc_score", half_auc)):
        values = np.array([f[key] for f in found])
        error = values.std(ddof=1)
        assert abs(values[0] - target) < 3 * error + 0.01, (key, values[0], target, error)
        assert abs(values.mean() - target) < 3 * error / math.sqrt(len(values)) + 0.02, (key, values.mean(), target)


def test_identical_raters_reach_a_ceiling_of_one() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for i in range(30):  # every reader of a program answers the same questions right
        right = int(rng.integers(0, QUESTIONS + 1))
        rows += [(f"p{i}", f"r{j}", right) for j in range(6)]
    pids, people, correct = zip(*rows)
    data = Dataset(
        name="same",
        programs=[Program(id=f"p{i}", language="java", code="") for i in range(30)],
        questions=[],
        source="test",
        evaluations=evaluations_frame(pids, people, correct, [QUESTIONS] * len(rows)),
    )
    f = split_half(data, splits=50).figures
    for key in ("auc_score", "f1", "split_half_rho", "reliability", "spearman", "krippendorff_alpha"):
        assert f[key] == pytest.approx(1.0), key
    assert f["auc_score_ci_low"] == pytest.approx(1.0) and f["spearman_ci_low"] == pytest.approx(1.0)


def test_raters_independent_of_the_program_give_chance_and_no_reliability() -> None:
    data = panel(np.full(1500, 0.5), 8, np.random.default_rng(3))
    f = split_half(data, splits=50).figures  # tolerances: about 3 standard errors over 1,500 programs
    assert f["auc_score"] == pytest.approx(0.5, abs=0.05)
    assert f["split_half_rho"] == pytest.approx(0.0, abs=0.08)
    assert f["reliability"] == pytest.approx(0.0, abs=0.15)
    assert f["spearman"] < 0.4  # √ of a reliability near 0 (0 when it is negative)
    assert f["krippendorff_alpha"] == pytest.approx(0.0, abs=0.02)


def test_programs_with_one_evaluation_are_left_out_and_counted() -> None:
    rng = np.random.default_rng(5)
    truth = rng.uniform(0.1, 0.9, size=14)
    data = panel(truth, [4] * 12 + [1, 1], rng)
    f = split_half(data, splits=50).figures
    assert (f["programs"], f["programs_left_out"]) == (12, 2)
    without = Dataset(
        name="twelve",
        programs=data.programs[:12],
        questions=[],
        source="test",
        evaluations=data.evaluations[~data.evaluations["program_id"].isin(["p12", "p13"])],
    )
    assert split_half(without, splits=50).figures == pytest.approx(f | {"programs_left_out": 0}, nan_ok=True)

    few = panel(truth[:MIN_PROGRAMS], [4] * (MIN_PROGRAMS - 1) + [1], rng)
    g = split_half(few, splits=50).figures
    assert (g["programs"], g["programs_left_out"]) == (MIN_PROGRAMS - 1, 1)
    assert all(math.isnan(g[k]) for k in ("auc_score", "f1", "reliability", "spearman", "spearman_ci_low"))


def test_krippendorff_alpha_is_the_packages_number_on_the_scalabrino_data(
    scalabrino: Dataset, scalabrino_pairs: list[dict[str, Any]]
) -> None:
    people = sorted({p["participant_id"] for p in scalabrino_pairs})
    programs = sorted({p["file_name"] for p in scalabrino_pairs})
    matrix = np.full((len(people), len(programs)), np.nan)
    for p in scalabrino_pairs:  # ABU50 in plain Python: asked, and at least half right
        matrix[people.index(p["participant_id"]), programs.index(p["file_name"])] = float(
            0 < p["total"] <= 2 * p["correct"]
        )
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    found = split_half(scalabrino, splits=20).figures
    assert found["krippendorff_alpha"] == pytest.approx(expected, abs=1e-12)
    assert 0.0 < expected < 0.3  # Scalabrino's readers agree weakly
    assert (found["programs"], found["programs_left_out"]) == (50, 0)


def test_the_ceiling_respects_labels_group_and_readers(scalabrino: Dataset) -> None:
    evaluations = scalabrino.evaluations
    professional = Dataset(
        name="pro",
        programs=scalabrino.programs,
        questions=[],
        source="test",
        evaluations=evaluations[evaluations["group"] == "professional"],
    )
    grouped = split_half(scalabrino, group="professional", splits=100).figures
    assert grouped == pytest.approx(split_half(professional, splits=100).figures, nan_ok=True)
    assert grouped["programs"] == 34 and grouped != split_half(scalabrino, splits=100).figures

    data = panel(np.random.default_rng(9).uniform(0.1, 0.9, 40), 6, np.random.default_rng(9), untested=0.3)
    asked = data.evaluations["total"] > 0
    only_tested = Dataset(
        name="tested", programs=data.programs, questions=[], source="test", evaluations=data.evaluations[asked]
    )
    tested = split_half(data, readers="tested", splits=100).figures
    assert tested == pytest.approx(split_half(only_tested, splits=100).figures, nan_ok=True)
    assert tested["auc_score"] != split_half(data, splits=100).figures["auc_score"]
    with pytest.raises(ValueError, match="labels.readers"):
        split_half(data, readers="some")


def adana_like(root: Path, programs: int, raters: Sequence[int]) -> Path:
    """A generic-format folder of ``programs`` programs with 1–3 readers each (``raters``
    cycled), the readers' answers drawn from a program-level understandability."""
    rng = np.random.default_rng(11)
    root.mkdir(parents=True)
    write_csv(
        root / "programs.csv",
        [
            ["program_id", "language", "code"],
            *[[f"m{i}", "java", f"int m{i}() {{ return {i}; }}"] for i in range(programs)],
        ],
    )
    rows = [["program_id", "participant_id", "correct", "total", "perceived", "group"]]
    for i in range(programs):
        p = rng.uniform(0.1, 0.9)
        for j in range(raters[i % len(raters)]):
            rows.append([f"m{i}", f"r{(i + j) % 7}", int(rng.binomial(4, p)), 4, "", "professional"])
    write_csv(root / "evaluations.csv", rows)
    return root


def test_reliability_command_prints_a_custom_datasets_ceiling_per_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = adana_like(tmp_path / "adana", 30, [1, 2, 3])
    reliability_main([f"dataset.root={root}", "dataset=custom", "evaluation.ceiling_splits=200"], config_dir())
    printed = capsys.readouterr().out
    lines = {line.split("│")[1].strip(): line for line in printed.splitlines() if line.startswith("│")}
    assert set(lines) == {"all", "professional"}  # only the groups the dataset has
    assert "20 (10)" in lines["all"] and "undefined" not in lines["all"]  # 10 one-reader programs left out
    assert "Dataset custom: 30 programs" in printed and "undefined below 10 programs" in " ".join(printed.split())

    few = adana_like(tmp_path / "few", 27, [1, 1, 2])  # 9 programs with two readers: no ceiling
    reliability_main([f"dataset.root={few}", "dataset=custom"], config_dir())
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("│ all"))
    assert "9 (18)" in row and row.count("undefined") == 7  # every bound; α is a number


def test_reliability_command_gives_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        reliability_main(["evaluation.ceiling_splits=0"], config_dir())
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "evaluation.ceiling_splits=0: expected at least 2" in err
    with pytest.raises(SystemExit):
        reliability_main(["dataset=custom", f"dataset.root={tmp_path / 'missing'}"], config_dir())
    assert capsys.readouterr().err.startswith("mcu-exp reliability: error: ")


def test_splits_are_seeded_and_balanced() -> None:
    data = panel(np.random.default_rng(2).uniform(0.1, 0.9, 20), [2, 3, 5, 4] * 5, np.random.default_rng(2))
    assert split_half(data, seed=4, splits=30).figures == split_half(data, seed=4, splits=30).figures
    assert split_half(data, seed=4, splits=30).figures != split_half(data, seed=5, splits=30).figures
    from mcu_exp.ceiling.split_half import _split_halves

    programs = np.repeat(np.arange(3), [2, 3, 5])
    in_a = _split_halves(programs, 2000, np.random.default_rng(0))
    sizes = np.stack([in_a[:, programs == p].sum(axis=1) for p in range(3)], axis=1)
    assert (sizes[:, 0] == 1).all() and set(sizes[:, 1]) == {1, 2} and set(sizes[:, 2]) == {2, 3}
    assert abs((sizes[:, 1] == 2).mean() - 0.5) < 0.05  # the odd one out goes to either half
    assert abs(in_a[:, programs == 2].mean(axis=0) - 0.5).max() < 0.05  # each evaluation in A half the time


def test_the_rule_sees_each_half_alone() -> None:
    """Half A's statistics are the rule's output on half A's evaluations alone."""
    data = panel(np.random.default_rng(4).uniform(0.1, 0.9, 12), 5, np.random.default_rng(4))
    from mcu_exp.ceiling.split_half import _half_statistics, _split_halves
    from mcu_exp.data.labels import RULES, share_correct

    ev = data.evaluations.assign(_c=data.evaluations["program_id"].str[1:].astype(int)).sort_values("_c", kind="stable")
    programs = ev.pop("_c").to_numpy()
    in_a = _split_halves(programs, 3, np.random.default_rng(1))
    score, correctness = _half_statistics(ev, programs, in_a, "mean_abu50")
    for split in range(3):
        for half, mask in ((0, in_a[split]), (1, ~in_a[split])):
            part = ev[mask]
            expected = RULES["mean_abu50"](part).reindex([f"p{i}" for i in range(12)]).to_numpy()
            assert score[split, half] == pytest.approx(expected)
            mean = share_correct(part).groupby(part["program_id"]).mean().reindex([f"p{i}" for i in range(12)])
            assert correctness[split, half] == pytest.approx(mean.to_numpy())
