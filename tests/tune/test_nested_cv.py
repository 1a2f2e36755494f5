"""Tuning ε or τ with nested cross-validation: optimism on uninformative scores, none to
speak of on informative ones, no leakage from held-out programs, seeds and resumable studies."""

from __future__ import annotations

import dataclasses

import numpy as np
import optuna
import pytest

from mcu_exp.tune.nested_cv import Scores, decide_labels, f1, nested_cv, outer_folds, tune


def random_scores(seed: int, n: int = 50, positives: int = 15) -> Scores:
    """α independent of the labels: nothing to learn."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.r_[np.ones(positives, int), np.zeros(n - positives, int)])
    return Scores([f"p{i}" for i in range(n)], rng.uniform(0.05, 0.4, n), rng.uniform(0.05, 0.4, n), labels)


def informative_scores(seed: int, n: int = 60) -> Scores:
    """Understandable programs have low α (a few labels flipped)."""
    rng = np.random.default_rng(seed)
    alpha_test = rng.uniform(0.05, 0.4, n)
    labels = (alpha_test < 0.25).astype(int)
    flip = rng.choice(n, size=3, replace=False)
    labels[flip] = 1 - labels[flip]
    alpha_cal = alpha_test + rng.normal(0, 0.01, n)
    return Scores([f"p{i}" for i in range(n)], alpha_cal, alpha_test, labels)


def test_on_random_labels_in_sample_tuning_is_optimistic_and_held_out_is_not() -> None:
    results = [nested_cv(random_scores(seed), "threshold", folds=5, trials=20, seed=seed) for seed in range(8)]
    in_sample = np.array([r.in_sample.f1 for r in results])
    held_out = np.array([r.held_out_f1 for r in results])
    always = results[0].baseline_always_f1  # 2p / (1 + p): the best any label-blind rule expects
    assert (in_sample - held_out).mean() >= 0.03
    assert in_sample.mean() > always  # tuning on the labels "finds" structure that is not there
    assert held_out.mean() <= always + 0.01  # which does not carry over to unseen programs
    assert held_out.mean() >= results[0].baseline_random_f1 - 0.05
    assert all(r.optimism == pytest.approx(r.in_sample.f1 - r.held_out_f1) for r in results)


@pytest.mark.parametrize("search", ["epsilon", "threshold"])
def test_on_informative_scores_held_out_f1_stays_close(search: str) -> None:
    result = nested_cv(informative_scores(1), search, folds=5, trials=40, seed=0)
    assert result.in_sample.f1 >= 0.85
    assert result.held_out_f1 >= 0.8
    assert result.optimism <= 0.1
    assert result.held_out_f1 > result.baseline_always_f1 + 0.1
    assert len(result.folds) == 5 and sum(f.n_test for f in result.folds) == result.n
    mean, sd = result.fold_f1
    assert sd >= 0.0 and min(f.test_f1 for f in result.folds) <= mean <= max(f.test_f1 for f in result.folds)


def test_held_out_programs_never_inform_their_own_fold() -> None:
    scores = informative_scores(2)
    base = nested_cv(scores, "epsilon", folds=4, trials=15, seed=3)
    _, test = outer_folds(scores.labels, 4, 3)[0]
    changed_cal = scores.alpha_cal.copy()
    changed_cal[test] = 10.0  # the held-out programs' calibration scores: absurd, and unused
    other = nested_cv(dataclasses.replace(scores, alpha_cal=changed_cal), "epsilon", folds=4, trials=15, seed=3)
    assert other.folds[0] == base.folds[0]
    assert other.in_sample.value != base.in_sample.value  # the all-programs tuning does see them


def test_tuned_value_gives_the_reported_f1_and_seeds_reproduce() -> None:
    scores = random_scores(5)
    tuned = tune(scores, "epsilon", trials=25, seed=7, quantile="conformal")
    labels, tau = decide_labels("epsilon", tuned.value, scores.alpha_cal, scores.alpha_test, "conformal")
    assert tau == tuned.tau and f1(scores.labels, labels) == tuned.f1
    assert tune(scores, "epsilon", trials=25, seed=7, quantile="conformal") == tuned
    first = nested_cv(scores, "threshold", folds=3, trials=10, seed=1)
    again = nested_cv(scores, "threshold", folds=3, trials=10, seed=1)
    assert first.row() == again.row() and first.folds == again.folds


def test_stored_studies_resume_with_more_trials(tmp_path) -> None:
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    scores = random_scores(6)
    nested_cv(scores, "epsilon", folds=2, trials=3, seed=0, storage=storage)
    result = nested_cv(scores, "epsilon", folds=2, trials=5, seed=0, storage=storage)
    studies = optuna.get_all_study_summaries(storage)
    assert len(studies) == 3  # all programs + 2 folds
    assert {s.n_trials for s in studies} == {5}
    assert result.in_sample.trials == 5
    nested_cv(random_scores(7), "epsilon", folds=2, trials=2, seed=0, storage=storage)
    assert len(optuna.get_all_study_summaries(storage)) == 6  # other scores: other studies


def test_a_resumed_study_draws_new_values_not_its_first_ones_again(tmp_path) -> None:
    """Resumed inside its random start-up trials, a study seeded as at the start drew the same
    values again (5 distinct of 10); seeded apart it draws 10 distinct ones."""
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    scores = random_scores(8)
    nested_cv(scores, "epsilon", folds=2, trials=5, seed=0, storage=storage)
    nested_cv(scores, "epsilon", folds=2, trials=10, seed=0, storage=storage)
    for summary in optuna.get_all_study_summaries(storage):
        study = optuna.load_study(study_name=summary.study_name, storage=storage)
        values = [t.params["epsilon"] for t in study.trials]
        assert len(values) == 10 and len(set(values)) == 10


def test_folds_need_enough_programs_of_each_class() -> None:
    scores = random_scores(0, n=20, positives=3)
    expected = "5 stratified folds need at least 5 programs of each class; the smaller class has 3"
    with pytest.raises(ValueError, match=expected):
        nested_cv(scores, folds=5, trials=2)
