"""A new proxy is one module: its Config dataclass, its stages, its outcome. This file is such
a module; the job selects it with a ``proxy._target_`` override on the real composed config
and runs it end to end, its summaries served from a cache filled beforehand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.data import human_labels, load_dataset
from mcu_exp.pipeline import run_job, typed_config
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.stages import Stage, StageResults, summary_requests
from support.proxies import compose_cfg, make_proxy, prefill

SUMMARIES = "word-count summaries"


@dataclass
class WordCountConfig:
    """How many summaries, and how long a summary must be to count as a long one."""

    name: str = "words"
    k: int = 3
    sample_seed: int = 0
    prompt: str = "summarize_intent"
    min_words: int = 8  # a summary is long when it has more words than this
    min_share: float = 0.5  # High iff at least this share of the summaries is long


class WordCountProxy(Proxy):
    """High iff at least ``min_share`` of the target's ``k`` summaries have more than ``min_words`` words."""

    Config = WordCountConfig

    def problems(self) -> Iterator[str]:
        if self.cfg.k < 1:
            yield f"proxy.k={self.cfg.k}: expected at least 1 summary"

    def stages(self, done: StageResults) -> Iterator[Stage]:
        ctx = self.ctx
        requests = summary_requests(
            ctx.model, ctx.dataset, ctx.program_ids, self.cfg.prompt, self.cfg.k, self.cfg.sample_seed
        )
        yield Stage(SUMMARIES, SUMMARIES, ctx.model.name, ctx.model, requests)

    def outcome(self, done: StageResults) -> ProxyOutcome:
        texts = done.texts(SUMMARIES)
        share = np.array([np.mean([len(t.split()) > self.cfg.min_words for t in ts]) for ts in texts])
        table = pd.DataFrame(
            {"long_share": share, "score": share, "label": (share >= self.cfg.min_share).astype(int)},
            index=pd.Index(self.ctx.program_ids, name="program_id"),
        )
        return ProxyOutcome(
            table=table,
            params={"min_words": self.cfg.min_words},
            metrics={"words.high_share": float(table["label"].mean())},
            records={
                "word_counts": pd.DataFrame(
                    {"program_id": self.ctx.program_ids, "words": [[len(t.split()) for t in ts] for ts in texts]}
                )
            },
        )


LONG = "It returns the sum of its argument and a constant offset."  # 11 words
SHORT = "Adds a constant."
PLAN = [[LONG] * 4, [LONG, SHORT, SHORT, SHORT], [LONG, LONG, SHORT, SHORT]]  # by position mod 3
EXPECTED_SHARE = [1.0, 0.25, 0.5]


def test_a_proxy_defined_in_a_test_module_runs_as_a_job(
    tmp_path: Path, data_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outputs = tmp_path / "outputs"
    cfg = compose_cfg(
        f"proxy._target_={__name__}.WordCountProxy",
        "proxy.name=words",
        "proxy.k=4",
        "+proxy.min_words=10",
        "dataset.limit=9",
        f"dataset.root={data_root / 'scalabrino'}",
        f"paths.outputs={outputs}",
        "tracking=none",
        "quiet=true",
        "evaluation.plots=false",
        "evaluation.bootstrap_resamples=1000",
    )
    typed = typed_config(cfg)
    dataset = load_dataset(typed.dataset)
    ids = list(human_labels(dataset, typed.labels).labels.index)
    assert len(ids) >= 6 and not dataset.questions  # no questions: the P0 reference does not apply
    proxy = make_proxy(cfg, dataset, typed.cache.dir, program_ids=ids)
    assert isinstance(proxy, WordCountProxy) and proxy.cfg == WordCountConfig(name="words", k=4, min_words=10)
    (stage,) = proxy.stages(StageResults())
    prefill(Path(typed.cache.dir), typed.model, stage.requests, lambda pos, i: PLAN[pos % 3][i])

    f1 = run_job(cfg)

    (results,) = (outputs / "runs").glob(f"*/*/{names.RESULTS_DIR}")
    table = pd.read_csv(results / names.PER_PROGRAM_FILE, index_col="program_id")
    expected_share = [EXPECTED_SHARE[pos % 3] for pos in range(len(ids))]
    assert list(table.index) == ids
    assert table["long_share"].tolist() == expected_share and table["score"].tolist() == expected_share
    assert table["label"].tolist() == [int(s >= 0.5) for s in expected_share]
    assert table[names.HUMAN_LABEL].notna().all()
    counts = pd.read_csv(results / names.records_file("word_counts"))
    assert counts["words"].iloc[1] == "[11, 3, 3, 3]"

    alignment = pd.read_csv(results / names.ALIGNMENT_FILE)
    everyone = alignment[alignment["group"] == names.ALL_READERS].set_index("metric")["value"]
    human, label = table[names.HUMAN_LABEL].astype(int), table["label"]
    confusion = {
        "tp": ((human == 1) & (label == 1)).sum(),
        "fp": ((human == 0) & (label == 1)).sum(),
        "fn": ((human == 1) & (label == 0)).sum(),
        "tn": ((human == 0) & (label == 0)).sum(),
    }
    assert {k: int(everyone[k]) for k in confusion} == confusion  # these labels, scored against the humans
    expected_f1 = 2 * confusion["tp"] / (2 * confusion["tp"] + confusion["fp"] + confusion["fn"])
    assert everyone["f1"] == pytest.approx(expected_f1) and f1 == pytest.approx(expected_f1)

    metrics = json.loads((results / names.METRICS_FILE).read_text())
    assert metrics["generation_cache_hits"] == 4 * len(ids)
    assert metrics["generation_cache_misses"] == 0 and metrics["model_loaded"] == 0
    assert metrics["words.high_share"] == pytest.approx(np.mean(table["label"]))
    assert any("proxy.k_cal" in r.getMessage() and "WordCountConfig" in r.getMessage() for r in caplog.records)
