"""Within-reader concordance: a brute-force count on a hand-made panel with ties, the two-way
bootstrap weights, exact expectations under a simulated crossed panel, chance for a random
proxy, and the Scalabrino figures."""

from __future__ import annotations

import time
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from mcu_exp.ceiling.concordance import (
    CHANCE,
    Outcomes,
    concordance,
    outcome_matrix,
    pair_means,
    reader_pairs,
    triples,
    weighted_means,
)
from mcu_exp.ceiling.latent import simulate
from mcu_exp.data import Dataset


def hand_made() -> pd.DataFrame:
    """5 readers, 5 programs, outcomes tied within readers and between them, an untested
    evaluation (0 of 0: outcome 0), and a reader of one program only."""
    rows = [
        ("r1", "a", 3, 3),
        ("r1", "b", 1, 3),
        ("r1", "c", 1, 3),
        ("r1", "d", 2, 3),
        ("r2", "a", 2, 3),
        ("r2", "b", 2, 3),
        ("r2", "c", 0, 3),
        ("r2", "e", 3, 3),
        ("r3", "a", 0, 0),
        ("r3", "b", 1, 3),
        ("r3", "d", 3, 3),
        ("r3", "e", 1, 3),
        ("r4", "b", 0, 3),
        ("r4", "c", 2, 3),
        ("r4", "d", 2, 3),
        ("r4", "e", 2, 3),
        ("r5", "a", 1, 3),
    ]
    return pd.DataFrame(rows, columns=["participant_id", "program_id", "correct", "total"])


PROXY = pd.Series({"a": 0.9, "b": 0.2, "c": 0.2, "d": 0.5, "e": 0.1})  # b and c tie


def brute_force(frame: pd.DataFrame, score: pd.Series) -> tuple[float, float, int, int, int]:
    """The proxy's concordance and the reader-pair ceiling by nested loops over readers,
    pairs and other readers: (proxy, ceiling, triples, comparisons, tied pairs)."""
    outcome: dict[str, dict[str, float]] = {}
    for reader, program, correct, total in frame[["participant_id", "program_id", "correct", "total"]].itertuples(
        index=False
    ):
        outcome.setdefault(reader, {})[program] = correct / total if total else 0.0
    hits = triples = comparisons = agree = ties = 0.0
    for reader, seen in outcome.items():
        for p, q in combinations(sorted(seen), 2):
            if seen[p] == seen[q]:
                ties += 1
                continue
            better, worse = (p, q) if seen[p] > seen[q] else (q, p)
            triples += 1
            if score[better] > score[worse]:
                hits += 1
            elif score[better] == score[worse]:
                hits += 0.5
            for other, theirs in outcome.items():
                if other == reader or better not in theirs or worse not in theirs:
                    continue
                comparisons += 1
                if theirs[better] > theirs[worse]:
                    agree += 1
                elif theirs[better] == theirs[worse]:
                    agree += 0.5
    return hits / triples, agree / comparisons, int(triples), int(comparisons), int(ties)


def test_equals_brute_force_with_ties() -> None:
    frame = hand_made()
    proxy, ceiling, n_triples, n_comparisons, ties = brute_force(frame, PROXY)
    found = concordance(frame, PROXY, resamples=200)
    assert found.proxy is not None and found.gap is not None
    assert found.proxy.value == pytest.approx(proxy)
    assert found.ceiling.value == pytest.approx(ceiling)
    assert (found.proxy.count, found.ceiling.count, found.tied_pairs) == (n_triples, n_comparisons, ties)
    assert found.gap.value == pytest.approx(ceiling - proxy)
    assert ties > 0 and 0 < proxy < 1 and 0 < ceiling < 1
    # the ceiling alone is the same figure
    assert concordance(frame, resamples=10).ceiling.value == pytest.approx(ceiling)


def test_abu50_outcome_brute_force() -> None:
    frame = hand_made()
    understood = frame.assign(correct=((2 * frame["correct"] >= frame["total"]) & (frame["total"] > 0)).astype(int))
    proxy, ceiling, n_triples, _, ties = brute_force(understood.assign(total=1), PROXY)
    found = concordance(frame, PROXY, outcome="abu50", resamples=10)
    assert found.proxy is not None
    assert found.proxy.value == pytest.approx(proxy)
    assert found.ceiling.value == pytest.approx(ceiling)
    assert (found.proxy.count, found.tied_pairs) == (n_triples, ties)
    with pytest.raises(ValueError, match="outcome"):
        concordance(frame, PROXY, outcome="perceived")


def test_proxy_on_some_programs_restricts_the_ceiling() -> None:
    frame = hand_made()
    part = PROXY.drop("e")
    proxy, ceiling, *_ = brute_force(frame[frame["program_id"] != "e"], part)
    found = concordance(frame, part.rename(index=str), resamples=10)
    assert found.programs == 4
    assert found.proxy is not None and found.proxy.value == pytest.approx(proxy)
    assert found.ceiling.value == pytest.approx(ceiling)


def test_outcome_matrix() -> None:
    found = outcome_matrix(hand_made())
    assert found.readers == ["r1", "r2", "r3", "r4", "r5"] and found.programs == list("abcde")
    assert found.values[2, 0] == 0.0  # untested: 0
    assert np.isnan(found.values[4, 1])
    assert np.isnan(found.values).sum() == 25 - len(hand_made())


def test_two_way_weights_by_loops() -> None:
    """Each resample's figure is the mean over comparisons weighted by the product of the
    draw counts of its readers and programs."""
    rng = np.random.default_rng(0)
    w = rng.integers(0, 3, size=(7, 4)).astype(float)
    v = rng.integers(0, 3, size=(7, 6)).astype(float)
    reader, high, low = rng.integers(0, 4, 30), rng.integers(0, 6, 30), rng.integers(0, 6, 30)
    values = rng.random(30)
    found = weighted_means([(w, reader), (v, high), (v, low)], values, 7)
    for b in range(7):
        weight = [w[b, reader[t]] * v[b, high[t]] * v[b, low[t]] for t in range(30)]
        expected = sum(x * y for x, y in zip(weight, values)) / sum(weight) if sum(weight) else np.nan
        np.testing.assert_allclose(found[b], expected)


@pytest.mark.parametrize("cells", [40, 2_000_000])
def test_the_reader_pair_ceiling_factored_by_triple_gives_the_quadruples_mean_bit_for_bit(cells: int) -> None:
    """pair_means (one matrix product per block of triples) equals weighted_means over every
    quadruple, to the bit, in blocks small enough to split triples and resamples or in one."""
    rng = np.random.default_rng(3)
    values = rng.choice([0.0, 1 / 3, 2 / 3, 1.0], size=(9, 12))
    values[rng.random((9, 12)) < 0.3] = np.nan
    outcomes = Outcomes(readers=[f"r{i}" for i in range(9)], programs=[f"p{j}" for j in range(12)], values=values)
    found = triples(outcomes)
    pairs = reader_pairs(outcomes, found)
    w = rng.multinomial(9, np.full(9, 1 / 9), size=50).astype(float)
    v = rng.multinomial(12, np.full(12, 1 / 12), size=50).astype(float)
    quadruple_weights = [
        (w, found.reader[pairs.triple]),
        (w, pairs.other),
        (v, found.high[pairs.triple]),
        (v, found.low[pairs.triple]),
    ]
    want = weighted_means(quadruple_weights, pairs.agree, 50)
    got = pair_means(w, v, found, pairs, 9, cells=cells)
    assert pairs.agree.size > 100 and np.isfinite(want).all()
    assert got.tobytes() == want.tobytes()


def expected_figures(frame: pd.DataFrame, u: np.ndarray, a: np.ndarray, intercept: float) -> tuple[float, float]:
    """The expected concordance of the true understandability and of another reader (ratio
    of expectations over the design's triples), from the binomial laws of the outcomes."""
    k = np.arange(4)
    reads: dict[int, dict[int, np.ndarray]] = {}
    for program, reader in frame[["program_id", "participant_id"]].itertuples(index=False):
        i, j = int(program[1:]), int(reader[1:])
        reads.setdefault(j, {})[i] = binom.pmf(k, 3, 1.0 / (1.0 + np.exp(-(intercept + u[i] + a[j]))))

    def order(p1: np.ndarray, p2: np.ndarray) -> tuple[float, float]:
        joint = np.outer(p1, p2)
        return float(np.tril(joint, -1).sum()), float(np.triu(joint, 1).sum())  # P(first >), P(first <)

    truth_num = truth_den = pair_num = pair_den = 0.0
    for reader, seen in reads.items():
        for p, q in combinations(sorted(seen), 2):
            if u[p] < u[q]:
                p, q = q, p
            above, below = order(seen[p], seen[q])
            truth_num += above
            truth_den += above + below
            for other, theirs in reads.items():
                if other != reader and p in theirs and q in theirs:
                    above2, below2 = order(theirs[p], theirs[q])
                    tie2 = 1.0 - above2 - below2
                    pair_num += above * (above2 + 0.5 * tie2) + below * (below2 + 0.5 * tie2)
                    pair_den += above + below
    return truth_num / truth_den, pair_num / pair_den


@pytest.mark.parametrize("seed", [1, 2])
def test_simulated_panel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    u, a = rng.normal(0.0, 1.0, 60), rng.normal(0.0, 1.0, 40)
    frame = simulate(u, a, 9, 3, 0.3, rng)
    truth = pd.Series(u, index=[f"p{i}" for i in range(60)])
    expected_truth, expected_pair = expected_figures(frame, u, a, 0.3)
    start = time.perf_counter()
    found = concordance(frame, truth, resamples=300, seed=seed)
    assert time.perf_counter() - start < 2.0
    assert found.proxy is not None and found.gap is not None
    # over seeds the figures stray from their expectations by up to ~0.04 (a fixed design of 60
    # programs); the intervals must cover them
    assert found.proxy.value == pytest.approx(expected_truth, abs=0.06)
    assert found.ceiling.value == pytest.approx(expected_pair, abs=0.06)
    assert found.proxy.ci[0] < expected_truth < found.proxy.ci[1]
    assert found.ceiling.ci[0] < expected_pair < found.ceiling.ci[1]
    # the truth orders pairs better than another noisy reader does
    assert expected_truth > expected_pair + 0.05
    assert found.gap.ci[1] < 0
    # one random score strays from chance by ~0.05 (its luck on 60 programs), 20 of them average
    # to it; its interval covers chance
    randoms = [
        concordance(frame, pd.Series(rng.normal(size=60), index=truth.index), resamples=1).proxy for _ in range(20)
    ]
    assert np.mean([r.value for r in randoms if r is not None]) == pytest.approx(CHANCE, abs=0.03)
    one = concordance(frame, pd.Series(rng.normal(size=60), index=truth.index), resamples=300, seed=seed).proxy
    assert one is not None and one.ci[0] < CHANCE < one.ci[1]


def test_scalabrino(scalabrino: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    length = pd.Series({p.id: -float(len(p.code)) for p in scalabrino.programs})
    start = time.perf_counter()
    found = concordance(scalabrino.evaluations, length, resamples=1000)
    elapsed = time.perf_counter() - start
    abu = concordance(scalabrino.evaluations, length, outcome="abu50", resamples=1000)
    with capsys.disabled():
        for name, report in (("correct", found), ("abu50", abu)):
            assert report.proxy is not None and report.gap is not None
            print(
                f"\nScalabrino concordance ({name}): reader-pair ceiling {report.ceiling.value:.3f} "
                f"[{report.ceiling.ci[0]:.3f}, {report.ceiling.ci[1]:.3f}] over {report.ceiling.count} comparisons; "
                f"-length {report.proxy.value:.3f} [{report.proxy.ci[0]:.3f}, {report.proxy.ci[1]:.3f}] "
                f"over {report.proxy.count} triples ({report.tied_pairs} tied pairs); gap {report.gap.value:.3f} "
                f"[{report.gap.ci[0]:.3f}, {report.gap.ci[1]:.3f}]; {elapsed:.2f} s"
            )
    assert found.programs == 50 and found.readers == scalabrino.evaluations["participant_id"].nunique()
    assert found.ceiling.ci[0] < found.ceiling.value < found.ceiling.ci[1]
    assert abu.tied_pairs > found.tied_pairs  # the coarser outcome ties more pairs
    assert elapsed < 2.0
