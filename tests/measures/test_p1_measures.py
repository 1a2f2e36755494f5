"""P1 with ``proxy.measure``: the default keeps today's α bit for bit and asks the scorer for
no pair SSC did not; another measure changes α (and so the labels) but not the summaries,
SSC or the ``measure.*`` columns. Runs from a prefilled generation cache (no generator
loads) with a word-overlap :class:`PairScorer` standing in for BERTScore: the matrices, the
score cache and ``ssc_many`` are the machinery every scorer shares, and no encoder loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcu_exp.config.schema import typed_config
from mcu_exp.evaluation import epsilon_sweep, threshold_sweep
from mcu_exp.job.validate import config_problems
from mcu_exp.measures import MEASURES, measure_column, register_measure, unregister_measure
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.p1_consistency import ConsistencyConfig
from mcu_exp.proxies.stages import summary_requests
from mcu_exp.scoring.pairs import PairScorer, Todo, open_cache
from support.proxies import compose_cfg, make_proxy, prefill, run_cached, synthetic_dataset

K, K_CAL = ("proxy.k=6", "proxy.k_cal=3")
PHRASES = [
    "It adds a constant to x.",
    "Returns x plus a fixed number.",
    "Computes the sum of x and a constant.",
    "Prints a greeting to the console.",
    "Sorts the list in place.",
    "Opens a file and reads its lines.",
]


def summary(pos: int, i: int) -> str:
    """Program 0 always says the same; later programs wander over more phrases."""
    return f"Program {pos}: {PHRASES[(i * pos) % (pos + 1)]}"


class WordOverlap(PairScorer):
    """Jaccard similarity of the word sets, cached like any scorer; counts what it computes."""

    kind = "word_overlap"

    def __init__(self, cache: Path) -> None:
        self.cache, self.progress, self.computed = open_cache(cache), False, 0
        self._init_pairs()

    def _identity(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def spec(self) -> dict[str, Any]:
        return {"name": self.kind, "spec_hash": self.spec_hash()}

    def _compute(self, todo: list[Todo]) -> dict[bytes, float]:
        self._used_model = True
        out = {}
        for part in todo:
            cols = part.rows if part.cols is None else part.cols
            for key, (i, j) in part.where.items():
                a, b = set(part.rows[i].split()), set(cols[j].split())
                out[key] = len(a & b) / len(a | b)
        self.computed += len(out)
        return out


def p1(tmp: Path, *overrides: str) -> Proxy:
    dataset = synthetic_dataset(n_programs=5, n_questions=0)
    proxy = make_proxy(compose_cfg(K, K_CAL, "reference=null", *overrides), dataset, tmp)
    targets = summary_requests(
        proxy.ctx.model, dataset, dataset.program_ids, proxy.cfg.prompt, proxy.cfg.k, proxy.cfg.sample_seed
    )
    prefill(tmp, proxy.ctx.model, targets, summary)
    proxy.scorers = []  # type: ignore[attr-defined]

    def scorer(summaries: dict[str, list[str]]) -> WordOverlap:
        proxy.scorers.append(WordOverlap(tmp))  # type: ignore[attr-defined]
        return proxy.scorers[-1]  # type: ignore[attr-defined]

    proxy.scorer = scorer  # type: ignore[method-assign]
    return proxy


def outcome(proxy: Proxy) -> ProxyOutcome:
    done, stats = run_cached(proxy)
    assert stats["generation_cache_misses"] == 0
    return proxy.outcome(done)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Today's α (the unchanged SSC code path, cold score cache), then P1 cold in another
    folder, P1 on the first folder's cache (warm with SSC's pairs only) and with eigv there."""
    old_dir, new_dir = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    old = p1(old_dir)
    done, _ = run_cached(old)
    summaries, splits = old.summaries(done), old.splits(done)
    scorer = old.scorer(summaries)
    ssc_cal, ssc_test = old.pairwise_ssc(scorer, summaries, splits)  # today's path: scorer.ssc_many
    new = p1(new_dir)
    return {
        "today": (ssc_cal, ssc_test, 1.0 - ssc_cal, 1.0 - ssc_test),
        "today_pairs": scorer.computed,
        "cold": outcome(new),
        "cold_pairs": new.scorers[0].computed,  # type: ignore[attr-defined]
        "warm": outcome(p1(old_dir)),
        "eigv": outcome(p1(old_dir, "proxy.measure=eigv")),
    }


def test_default_measure_keeps_todays_alpha_bit_for_bit(runs: dict[str, Any]) -> None:
    ssc_cal, ssc_test, alpha_cal, alpha_test = runs["today"]
    for run in ("cold", "warm"):
        table = runs[run].table
        assert np.array_equal(table["ssc_cal"].to_numpy(), ssc_cal)
        assert np.array_equal(table["ssc_test"].to_numpy(), ssc_test)
        assert np.array_equal(table["alpha_cal"].to_numpy(), alpha_cal)
        assert np.array_equal(table["alpha_test"].to_numpy(), alpha_test)
        assert np.array_equal(table["score"].to_numpy(), -alpha_test)
        assert np.array_equal(runs[run].scores.alpha_cal, alpha_cal)
    assert len(set(alpha_test.round(6))) > 2  # the programs differ


def test_the_matrices_need_no_pair_ssc_did_not(runs: dict[str, Any]) -> None:
    assert runs["cold"].metrics["scorer_loaded"] == 1.0
    assert runs["cold_pairs"] == runs["today_pairs"] > 0  # cold, the same pairs as ssc_many
    # The score cache holds only the pairs ssc_many scored: every measure came from them.
    assert runs["warm"].metrics["scorer_loaded"] == 0.0
    assert runs["eigv"].metrics["scorer_loaded"] == 0.0


def test_every_run_has_a_score_column_per_measure(runs: dict[str, Any]) -> None:
    table = runs["cold"].table
    columns = [measure_column(name) for name in MEASURES]
    assert [c for c in table.columns if c.startswith("measure.")] == columns
    assert np.array_equal(table["measure.ssc"].to_numpy(), table["score"].to_numpy())
    assert (table["measure.eigv"] <= -1.0 + 1e-9).all()  # U_EigV ≥ 1
    pd.testing.assert_frame_equal(runs["eigv"].table[columns], table[columns])


@pytest.mark.filterwarnings("ignore::mcu_exp.evaluation.DegenerateMetricWarning")
def test_eigv_changes_alpha_not_the_summaries(runs: dict[str, Any]) -> None:
    ssc, eigv = runs["warm"], runs["eigv"]
    pd.testing.assert_frame_equal(eigv.records["summaries"], ssc.records["summaries"])
    pd.testing.assert_frame_equal(eigv.table[["ssc_cal", "ssc_test"]], ssc.table[["ssc_cal", "ssc_test"]])
    table = eigv.table
    assert not np.allclose(table["alpha_test"], ssc.table["alpha_test"])
    assert np.array_equal(table["alpha_test"].to_numpy(), -table["measure.eigv"].to_numpy())
    assert np.array_equal(table["score"].to_numpy(), -table["alpha_test"].to_numpy())
    # Calibrated as before, on a scale beyond [0, 1]: τ from α_cal, High iff α_test ≤ τ.
    tau = eigv.params["tau"]
    assert tau > 1.0
    assert table["label"].tolist() == (table["alpha_test"] <= tau).astype(int).tolist()
    # The sensitivity grids span the observed α_test, whatever its scale.
    truth = np.array([1, 0, 1, 0, 1])
    grid = threshold_sweep(truth, table["alpha_test"].to_numpy(), n_points=5)
    assert grid["threshold"].min() == table["alpha_test"].min() > 1.0
    assert grid["threshold"].max() == table["alpha_test"].max()
    eps = epsilon_sweep(table["alpha_cal"].to_numpy(), table["alpha_test"].to_numpy(), [0.1, 0.5], y_true=truth)
    assert (eps["tau"] > 1.0).all()


def test_a_registered_measure_reaches_p1(tmp_path: Path) -> None:
    @register_measure("first_pair")
    def first_pair(similarity: np.ndarray) -> float:
        return 1.0 - similarity[0, 1]

    try:
        result = outcome(p1(tmp_path, "proxy.measure=first_pair"))
        assert "measure.first_pair" in result.table.columns
        assert np.array_equal(result.table["alpha_test"].to_numpy(), -result.table["measure.first_pair"].to_numpy())
    finally:
        unregister_measure("first_pair")


def test_measure_config(tmp_path: Path) -> None:
    proxy = make_proxy(compose_cfg(), synthetic_dataset(2, 0), tmp_path)
    assert type(proxy.cfg) is ConsistencyConfig and proxy.cfg.measure == "ssc"
    assert list(proxy.problems()) == []
    bad = make_proxy(compose_cfg("proxy.measure=bogus"), synthetic_dataset(2, 0), tmp_path)
    assert list(bad.problems()) == ["unknown measure 'bogus' (proxy.measure) (known: ssc, eigv, deg, ecc)"]
    assert list(config_problems(typed_config(compose_cfg("proxy.measure=eigv")))) == []
