"""The crossed reader × program model: recovery of simulated effects, identity with a direct
statsmodels fit built independently (formula interface, plain-Python Bernoulli rows), the
untested-evaluation choices, the reliability and alignment figures, and the Scalabrino fit."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

from mcu_exp.ceiling.latent import (
    LatentFit,
    fit_latent,
    latent_alignment,
    latent_labels,
    reliability,
    simulate,
    start_sd,
)
from mcu_exp.data import Dataset

PROGRAMS, POOL, READERS_PER_PROGRAM, QUESTIONS = 60, 40, 9, 3


@pytest.fixture(scope="module")
def truth() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(37)
    return rng.normal(0.0, 1.5, PROGRAMS), rng.normal(0.0, 1.0, POOL)


@pytest.fixture(scope="module")
def simulated(truth: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    u, a = truth
    return simulate(u, a, READERS_PER_PROGRAM, QUESTIONS, 0.3, np.random.default_rng(5))


@pytest.fixture(scope="module")
def fitted(simulated: pd.DataFrame) -> LatentFit:
    return fit_latent(simulated)


def by_index(ids: pd.Index, values: np.ndarray) -> np.ndarray:
    """The generated effect of each id ``p<i>`` / ``r<j>``."""
    return np.array([values[int(name[1:])] for name in ids])


def test_recovers_program_and_reader_effects(fitted: LatentFit, truth: tuple[np.ndarray, np.ndarray]) -> None:
    u, a = truth
    assert fitted.converged
    assert len(fitted.programs) == PROGRAMS
    rho_programs = spearmanr(fitted.understandability, by_index(fitted.programs.index, u)).statistic
    rho_readers = spearmanr(fitted.readers["ability"], by_index(fitted.readers.index, a)).statistic
    assert rho_programs >= 0.9
    assert rho_readers >= 0.75
    # the variance components are of the generated size (1.5 and 1.0), not collapsed to 0
    assert 1.0 < fitted.program_sd < 2.2
    assert 0.6 < fitted.reader_sd < 1.6
    assert (fitted.programs["evaluations"] == READERS_PER_PROGRAM).all()
    assert (fitted.programs["questions"] == READERS_PER_PROGRAM * QUESTIONS).all()


def test_reader_effects_matter(
    simulated: pd.DataFrame, fitted: LatentFit, truth: tuple[np.ndarray, np.ndarray]
) -> None:
    """Net of reader ability, the model ranks programs at least as well as their raw share
    of right answers (which charges a program for its weak readers)."""
    u, _ = truth
    fit = fitted
    raw = (simulated.groupby("program_id")["correct"].sum() / simulated.groupby("program_id")["total"].sum()).reindex(
        fit.programs.index
    )
    generated = by_index(fit.programs.index, u)
    assert spearmanr(fit.understandability, generated).statistic >= spearmanr(raw, generated).statistic - 0.01


def direct_fit(evaluations: pd.DataFrame, seed: int = 0) -> Any:
    """statsmodels' own fit of the same data: Bernoulli rows written out in plain Python, the
    design built by the formula interface."""
    rows: dict[str, list[object]] = {"y": [], "program": [], "reader": []}
    for program, reader, correct, total in evaluations[["program_id", "participant_id", "correct", "total"]].itertuples(
        index=False
    ):
        for k in range(int(total)):
            rows["y"].append(1.0 if k < int(correct) else 0.0)
            rows["program"].append(str(program))
            rows["reader"].append(str(reader))
    data = pd.DataFrame(rows)
    model = BinomialBayesMixedGLM.from_formula("y ~ 1", {"program": "0 + C(program)", "reader": "0 + C(reader)"}, data)
    return model.fit_vb(sd=start_sd(model.k_fep + model.k_vcp + model.k_vc, seed))


def test_equals_the_library_fit(simulated: pd.DataFrame, fitted: LatentFit) -> None:
    direct = direct_fit(simulated)
    names = list(direct.model.vc_names)
    means = dict(zip(names, direct.vc_mean))
    sds = dict(zip(names, direct.vc_sd))
    programs = [f"C(program)[{p}]" for p in fitted.programs.index]
    readers = [f"C(reader)[{r}]" for r in fitted.readers.index]
    np.testing.assert_allclose(
        fitted.programs["understandability"], [means[k] for k in programs], rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(fitted.programs["sd"], [sds[k] for k in programs], rtol=1e-9)
    np.testing.assert_allclose(fitted.readers["ability"], [means[k] for k in readers], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fitted.intercept, direct.fe_mean[0], rtol=1e-9)
    np.testing.assert_allclose(np.log(fitted.program_sd), direct.vcp_mean[0], rtol=1e-9)


def test_seeded_start() -> None:
    """The same seed gives the same fit; another seed starts elsewhere and ends (nearly) there."""
    frame = small_panel()
    first = fit_latent(frame)
    assert fit_latent(frame).understandability.equals(first.understandability)
    np.testing.assert_allclose(fit_latent(frame, seed=1).understandability, first.understandability, atol=1e-3)


def small_panel() -> pd.DataFrame:
    """8 programs, 6 readers each from a pool of 10, some asked no question (total 0)."""
    rng = np.random.default_rng(11)
    frame = simulate(rng.normal(0, 1, 8), rng.normal(0, 1, 10), 6, 3, 0.0, rng)
    untested = rng.random(len(frame)) < 0.25
    frame.loc[untested, ["correct", "total"]] = 0
    return frame


def test_untested_drop_and_wrong() -> None:
    frame = small_panel()
    asked = frame["total"] > 0
    assert 0 < (~asked).sum() < len(frame)
    dropped = fit_latent(frame, untested="drop")
    without = fit_latent(frame[asked].reset_index(drop=True))
    pd.testing.assert_frame_equal(dropped.programs, without.programs)
    assert dropped.dropped == (~asked).sum()
    assert dropped.questions == 3 * asked.sum()
    wrong = fit_latent(frame, untested="wrong")
    zero = frame.assign(total=3)  # asked nothing -> 0 right out of the program's usual 3
    pd.testing.assert_frame_equal(wrong.programs, fit_latent(zero).programs)
    assert wrong.questions == 3 * len(frame)
    with pytest.raises(ValueError, match="untested"):
        fit_latent(frame, untested="skip")


def test_too_few_programs() -> None:
    frame = small_panel()
    with pytest.raises(ValueError, match="at least 3 programs"):
        fit_latent(frame[frame["program_id"].isin(["p0", "p1"])])


def test_reliability_formula() -> None:
    means = np.array([-1.0, 0.0, 1.0, 2.0])
    sds = np.array([0.5, 0.5, 1.0, 1.0])
    signal = np.var(means)
    assert reliability(means, sds) == pytest.approx(signal / (signal + np.mean(sds**2)))
    assert math.isnan(reliability(np.array([1.0]), np.array([0.1])))
    assert reliability(means, np.zeros(4)) == 1.0


def test_no_program_effect_gives_low_reliability(truth: tuple[np.ndarray, np.ndarray]) -> None:
    _, a = truth
    flat = simulate(np.zeros(30), a, READERS_PER_PROGRAM, QUESTIONS, 0.3, np.random.default_rng(8))
    assert fit_latent(flat).reliability < 0.3


def test_latent_labels_rules() -> None:
    values = pd.Series([-2.0, -0.5, 0.1, 0.3, 0.2, 3.0], index=list("abcdef"))
    assert latent_labels(values, "median").tolist() == [0, 0, 0, 1, 1, 1]
    assert latent_labels(values, "sign").tolist() == [0, 0, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="rule"):
        latent_labels(values, "mean")


def test_alignment_against_scipy_and_sklearn(fitted: LatentFit) -> None:
    rng = np.random.default_rng(3)
    latent = fitted.understandability
    noisy = latent + rng.normal(0, 0.5, latent.size)
    proxy = noisy.iloc[::-1]  # order of the index does not matter
    found = latent_alignment(proxy, fitted, resamples=400)
    assert found.spearman == pytest.approx(spearmanr(noisy, latent).statistic)
    labels = (latent > latent.median()).astype(int)
    assert found.auc == pytest.approx(roc_auc_score(labels, noisy))
    assert found.programs == PROGRAMS and found.positives == PROGRAMS // 2
    assert found.spearman_ci[0] < found.spearman < found.spearman_ci[1] < 1.0
    assert found.auc_ci[0] < found.auc <= found.auc_ci[1]
    perfect = latent_alignment(latent, fitted, resamples=50)
    assert perfect.spearman == pytest.approx(1.0) and perfect.auc == 1.0
    reversed_ = latent_alignment(-latent, fitted, resamples=50)
    assert reversed_.spearman == pytest.approx(-1.0) and reversed_.auc == 0.0
    # a proxy defined on some programs only is scored on those
    part = latent_alignment(noisy.iloc[:20], fitted, resamples=50)
    assert part.programs == 20
    assert set(part.figures()) >= {"latent.spearman", "latent.auc_ci_low", "latent.programs"}


def test_scalabrino_fit(scalabrino: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    fits = {untested: fit_latent(scalabrino.evaluations, untested=untested) for untested in ("drop", "wrong")}
    elapsed = time.perf_counter() - start
    length = pd.Series({p.id: -float(len(p.code)) for p in scalabrino.programs})
    with capsys.disabled():
        for untested, fit in fits.items():
            align = latent_alignment(length, fit)
            print(
                f"\nScalabrino latent (untested={untested}): reliability {fit.reliability:.3f}, "
                f"program SD {fit.program_sd:.3f}, reader SD {fit.reader_sd:.3f}, fit {fit.seconds:.2f} s, "
                f"{fit.questions} questions, {fit.dropped} evaluations dropped, {fit.rounded} rounded; "
                f"-length: rho {align.spearman:.3f} [{align.spearman_ci[0]:.3f}, {align.spearman_ci[1]:.3f}], "
                f"AUC {align.auc:.3f} [{align.auc_ci[0]:.3f}, {align.auc_ci[1]:.3f}]"
            )
    for fit in fits.values():
        assert fit.converged
        assert len(fit.programs) == 50
        assert sorted(fit.programs.index) == sorted(scalabrino.program_ids)
        assert 0.0 < fit.reliability < 1.0
        assert fit.seconds < 5.0
    assert len(fits["drop"].readers) < len(fits["wrong"].readers) == scalabrino.evaluations["participant_id"].nunique()
    assert elapsed < 10.0
