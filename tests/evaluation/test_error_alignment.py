"""Error alignment against a brute-force computation, scipy's Jensen–Shannon, and its
shuffled-programs null: a model that copies the humans' errors gets a low p, a model whose
errors say nothing about the program a high one."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from mcu_exp.evaluation.error_alignment import derangements, error_alignment, js_divergence, top_match

MODEL = {
    "a": Counter({"4": 3, "5": 1}),
    "b": Counter({"x": 2, "y": 2}),  # a tie at the top
    "c": Counter({"1": 1}),
    "d": Counter(),  # the model is always right here: not compared
    "e": Counter({"7": 2}),  # the humans are always right here: not compared
}
HUMANS = {
    "a": Counter({"4": 10, "6": 2}),
    "b": Counter({"y": 5, "z": 1}),
    "c": Counter({"2": 3, "1": 3}),
    "d": Counter({"3": 4}),
    "e": Counter(),
}


def brute_top(model: Counter[str], human: Counter[str]) -> float:
    """Every way of breaking both ties, equally likely: the share in which the two tops agree."""
    tops = [[a for a, n in c.items() if n == max(c.values())] for c in (model, human)]
    return float(np.mean([a == b for a, b in itertools.product(*tops)]))


def brute_js(model: Counter[str], human: Counter[str]) -> float:
    """H(mixture) − mean of H(each), in bits, written out."""
    support = sorted(set(model) | set(human))
    p = np.array([model[a] for a in support], float) / sum(model.values())
    q = np.array([human[a] for a in support], float) / sum(human.values())

    def h(x: np.ndarray) -> float:
        x = x[x > 0]
        return float(-(x * np.log2(x)).sum())

    return h((p + q) / 2) - (h(p) + h(q)) / 2


def test_per_program_figures_and_means_equal_a_brute_force_computation() -> None:
    found = error_alignment(MODEL, HUMANS, resamples=500, permutations=500, seed=1)
    table = found.table.set_index("program_id")
    assert list(table.index) == ["a", "b", "c"]  # both err, in the model's order
    for pid in table.index:
        assert table.loc[pid, "top_match"] == pytest.approx(brute_top(MODEL[pid], HUMANS[pid]))
        assert table.loc[pid, "js_divergence"] == pytest.approx(brute_js(MODEL[pid], HUMANS[pid]))
    assert list(table["top_match"]) == pytest.approx([1.0, 0.5, 0.5])
    assert table.loc["b", "model_top"] == "x | y" and table.loc["c", "human_top"] == "1 | 2"
    assert table.loc["a", "model_wrong_answers"] == '{"4": 3, "5": 1}' and table.loc["a", "human_wrong"] == 12
    m = found.metrics
    assert (m["errors.programs"], m["errors.model_err"], m["errors.human_err"]) == (3, 4, 4)
    assert m["errors.top_match"] == pytest.approx(2 / 3)
    assert m["errors.js"] == pytest.approx(np.mean([brute_js(MODEL[p], HUMANS[p]) for p in "abc"]))
    for name in ("top_match", "js"):
        assert m[f"errors.{name}_ci_low"] <= m[f"errors.{name}"] <= m[f"errors.{name}_ci_high"]


def test_the_null_pairs_each_program_with_another_one() -> None:
    found = error_alignment(MODEL, HUMANS, resamples=100, permutations=4000, seed=2)
    ids = "abc"
    # three programs have exactly two derangements, (b, c, a) and (c, a, b), equally likely
    exact = np.mean([np.mean([brute_top(MODEL[x], HUMANS[y]) for x, y in zip(ids, shift)]) for shift in ("bca", "cab")])
    assert found.metrics["errors.top_match_null"] == pytest.approx(exact, abs=0.02)
    rows = derangements(5, 300, np.random.default_rng(0))
    assert not np.any(rows == np.arange(5)) and all(sorted(r) == list(range(5)) for r in rows.tolist())


def test_js_divergence_is_scipys_distance_squared() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        model = Counter({str(a): int(n) for a, n in enumerate(rng.integers(0, 5, size=6)) if n})
        human = Counter({str(a): int(n) for a, n in enumerate(rng.integers(0, 5, size=6)) if n})
        if not model or not human:
            continue
        support = sorted(set(model) | set(human))
        p, q = [model[a] for a in support], [human[a] for a in support]
        assert js_divergence(model, human) == pytest.approx(jensenshannon(p, q, base=2) ** 2)
        assert js_divergence(model, human) == pytest.approx(brute_js(model, human))
    assert js_divergence({"1": 2}, {"1": 5}) == 0.0 and js_divergence({"1": 1}, {"2": 1}) == pytest.approx(1.0)
    assert np.isnan(top_match({}, {"1": 1})) and np.isnan(js_divergence({"1": 1}, {}))


def program_errors(n: int, seed: int) -> dict[str, Counter[str]]:
    """``n`` programs, each with its own wrong answers (a few per program, a clear favourite)."""
    rng = np.random.default_rng(seed)
    return {
        f"p{i}": Counter({f"p{i}-w{j}": int(c) for j, c in enumerate(rng.integers(1, 9, size=3) * [3, 1, 1])})
        for i in range(n)
    }


def test_a_model_that_copies_the_humans_errors_has_a_low_p() -> None:
    humans = program_errors(20, seed=4)
    model = {pid: Counter({a: max(1, n // 2) for a, n in c.items()}) for pid, c in humans.items()}
    m = error_alignment(model, humans, resamples=500, permutations=999, seed=5).metrics
    assert m["errors.programs"] == 20
    assert m["errors.top_match"] > 0.8 and m["errors.top_match_null"] == 0.0 and m["errors.top_match_p"] == 1 / 1000
    assert m["errors.js"] < 0.1 < m["errors.js_null"] and m["errors.js_p"] == 1 / 1000


def test_a_model_whose_errors_ignore_the_program_has_a_high_p() -> None:
    humans = program_errors(20, seed=6)
    always_zero = {pid: Counter({"0": 3}) for pid in humans}  # the same wrong answer everywhere
    m = error_alignment(always_zero, humans, resamples=200, permutations=500, seed=7).metrics
    assert m["errors.top_match_p"] == 1.0 and m["errors.js_p"] == 1.0  # every pairing is as good
    assert m["errors.js_null"] == pytest.approx(m["errors.js"])
    shared = [f"p{i}-w{j}" for i in range(20) for j in range(3)]  # any program's wrong answers
    rng = np.random.default_rng(8)
    ps = []
    for seed in range(100):  # models drawing wrong answers from the pool, blind to the program
        unrelated = {pid: Counter(rng.choice(shared, size=5).tolist()) for pid in humans}
        m = error_alignment(unrelated, humans, resamples=10, permutations=199, seed=seed).metrics
        ps.append((m["errors.top_match_p"], m["errors.js_p"]))
    top_p, js_p = np.array(ps).T
    assert np.median(top_p) > 0.3 and np.median(js_p) > 0.3
    assert np.mean(top_p <= 0.05) <= 0.1 and np.mean(js_p <= 0.05) <= 0.1  # about the nominal 5 %


def test_too_few_programs_leave_the_null_undefined() -> None:
    one = error_alignment({"a": Counter({"1": 1})}, {"a": Counter({"1": 2})}, resamples=10, permutations=10)
    assert one.metrics["errors.top_match"] == 1.0 and np.isnan(one.metrics["errors.top_match_p"])
    assert np.isnan(one.metrics["errors.top_match_ci_low"]) and np.isnan(one.metrics["errors.js_ci_high"])
    top = one.lines()[1]  # one program resampled is itself: no interval, no null, said in words
    assert (
        top
        == "  same most frequent wrong answer: 1.000 (no interval from one program); shuffled programs undefined, p = undefined"
    )
    none = error_alignment({"a": Counter()}, {"a": Counter({"1": 2})}, resamples=10, permutations=10)
    assert none.metrics["errors.programs"] == 0 and np.isnan(none.metrics["errors.js"]) and len(none.table) == 0
    assert none.lines()[0].startswith("Error alignment: 0 programs") and len(none.lines()) == 1
    with pytest.raises(ValueError, match=r"^resamples=0, permutations=10: expected at least 1 each$"):
        error_alignment({}, {}, resamples=0, permutations=10)


def test_with_few_programs_the_p_is_exact_over_every_pairing() -> None:
    """Two programs whose wrong answers match: of the two pairings one is as aligned as the
    observed one (itself), so p = 1/2 (derangements alone gave 1/2001). Three programs: the
    p is the share of the 3! pairings at least as aligned, counted here by brute force."""
    two = program_errors(2, seed=9)
    m = error_alignment(two, two, resamples=50, permutations=2000, seed=1).metrics
    assert m["errors.top_match_p"] == 0.5 and m["errors.js_p"] == 0.5
    model = {"a": MODEL["a"], "b": MODEL["b"], "c": MODEL["c"]}
    m = error_alignment(model, HUMANS, resamples=50, permutations=2000, seed=1).metrics
    ids = list(model)
    for name, figure, better in (("top_match", brute_top, np.greater_equal), ("js", brute_js, np.less_equal)):
        observed = np.mean([figure(model[p], HUMANS[p]) for p in ids])
        means = [
            np.mean([figure(model[x], HUMANS[y]) for x, y in zip(ids, perm)]) for perm in itertools.permutations(ids)
        ]
        assert m[f"errors.{name}_p"] == pytest.approx(np.mean(better(np.round(means, 12), round(observed, 12))))


def test_unrelated_errors_on_few_programs_are_significant_no_more_often_than_the_level() -> None:
    """Models blind to the program on 4 and 8 programs (exact, then sampled pairings): p ≤ 0.05
    at most about 5 % of the time (derangements alone: 30 % on 3 programs)."""
    for k in (4, 8):
        humans = program_errors(k, seed=10 + k)
        shared = [a for c in humans.values() for a in c]
        rng = np.random.default_rng(k)
        ps = []
        for seed in range(200):
            unrelated = {pid: Counter(rng.choice(shared, size=4).tolist()) for pid in humans}
            ps.append(
                error_alignment(unrelated, humans, resamples=10, permutations=199, seed=seed).metrics["errors.js_p"]
            )
        assert np.mean(np.array(ps) <= 0.05) <= 0.08
