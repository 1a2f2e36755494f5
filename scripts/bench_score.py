"""Benchmark the batched, cached BERTScore scorer against bert-score's own BERTScorer.

20 programs x 50 real SmolLM2 summaries (generated once through the project's generator and
cached in --cache-dir), each split 25 calibration / 25 test. Every pair i<j within each subset
is scored by (1) `BertScorer.ssc_many` cold (empty score cache), (2) bert-score's
`BERTScorer.score` on the same pairs (built once; its construction is timed apart), (3) the
encoder-only floor (forward passes over the distinct summaries, tokenized beforehand), and
(4) a fresh `BertScorer` whose score cache the cold run filled. Prints wall and CPU seconds,
the largest score difference, peak RSS, and whether each target is met.

    .venv/bin/python scripts/bench_score.py [--cache-dir outputs/cache] [--programs 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchlib import timed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
TOL = 1e-5
if (REPO.parent / "shared/data/scalabrino/evaluations.csv").is_file():  # as the Makefile does
    os.environ.setdefault("MCU_EXP_DATA", str(REPO.parent / "shared/data"))


def load_config(schema: Any, file: Path) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.merge(OmegaConf.structured(schema), OmegaConf.load(file))


def summaries(programs: int, k: int, seed: int, cache_dir: Path) -> tuple[list[list[str]], bool]:
    """k summaries of each of the first `programs` Scalabrino programs, and whether a model ran."""
    from mcu_exp.config import DatasetConfig, ModelConfig
    from mcu_exp.data import load_dataset
    from mcu_exp.llm import CachedGenerator, request_for
    from mcu_exp.proxies.prompts import summary_messages

    dataset = load_dataset(load_config(DatasetConfig, REPO / "conf/dataset/scalabrino.yaml"))
    model_cfg = load_config(ModelConfig, REPO / "conf/model/smollm2-135m.yaml")
    chosen = dataset.programs[:programs]
    requests = [request_for(model_cfg, summary_messages(p.code, "Java"), n=k, seed=seed) for p in chosen]
    generator = CachedGenerator(model_cfg, cache_dir, progress=True)
    texts = [r.texts for r in generator.generate(requests)]
    generator.close()
    return texts, generator.model_loaded


def split(groups: list[list[str]], k_cal: int, seed: int) -> list[list[str]]:
    """Calibration and test subsets of every group (seeded permutation per group)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    subsets = []
    for texts in groups:
        order = rng.permutation(len(texts))
        subsets.append([texts[i] for i in order[:k_cal]])
        subsets.append([texts[i] for i in order[k_cal:]])
    return subsets


def encoder_floor(model: Any, tokenizer: Any, texts: list[str], batch_size: int) -> None:
    """Forward passes alone over `texts` in length-sorted batches (tokenizing is ~1 % of it)."""
    import torch
    from bert_score.utils import sent_encode

    ids = sorted(
        (sent_encode(tokenizer, t) if t.strip() else [tokenizer.cls_token_id, tokenizer.sep_token_id] for t in texts),
        key=len,
    )
    with torch.inference_mode():
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            width = max(len(x) for x in chunk)
            tensor = torch.full((len(chunk), width), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros_like(tensor)
            for row, x in enumerate(chunk):
                tensor[row, : len(x)] = torch.tensor(x)
                mask[row, : len(x)] = 1
            model(tensor, attention_mask=mask)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default="outputs/cache", help="generation cache folder")
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--k-cal", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scorer", default=str(REPO / "conf/scorer/minilm.yaml"))
    parser.add_argument("--repeat", type=int, default=2, help="timings keep the best of N runs")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (1 gives steadier figures on a shared machine)"
    )
    args = parser.parse_args()

    groups, generated = summaries(args.programs, args.k, args.seed, Path(args.cache_dir))
    if generated:  # measure scoring in a process that never held the generator's model
        print("summaries generated and cached; restarting for clean measurements", flush=True)
        os.execv(sys.executable, [sys.executable, *sys.argv])

    import numpy as np
    import torch
    from bert_score import BERTScorer

    from mcu_exp.config import ScorerConfig
    from mcu_exp.scoring import BertScorer, pair_key

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = load_config(ScorerConfig, Path(args.scorer))
    subsets = split(groups, args.k_cal, args.seed)
    distinct = list(dict.fromkeys(t for g in subsets for t in g))
    pairs = [(g[i], g[j]) for g in subsets for i in range(len(g)) for j in range(i + 1, len(g))]
    print(
        f"{len(groups)} programs, {len(subsets)} subsets, {len(distinct)} distinct summaries, "
        f"{len(pairs)} pairs; torch threads {torch.get_num_threads()}"
    )
    times: dict[str, tuple[float, float]] = {}

    with timed(times, "ours: build + load encoder"):
        BertScorer(cfg).embed(["warm up"])  # loads the encoder this process's scorers share
    with timed(times, "BERTScorer: build"):
        reference = BERTScorer(
            model_type=str(BertScorer(cfg).resolved.path),
            num_layers=int(cfg.num_layers),
            batch_size=int(cfg.batch_size),
            device="cpu",
        )
    if any(not t.strip() for t in distinct):  # bert-score 0.3.13 crashes on "" (transformers 5)
        tok = reference._tokenizer
        tok.build_inputs_with_special_tokens = lambda ids: [tok.cls_token_id, *ids, tok.sep_token_id]
        print("empty summaries present: gave bert-score's tokenizer the method it needs for them")
    scratch = tempfile.TemporaryDirectory(prefix="bench_score_")
    for run in range(max(1, args.repeat)):
        score_dir = Path(scratch.name) / f"run{run}"
        cold = BertScorer(cfg, cache=score_dir)
        with timed(times, "ours: cold ssc_many"):
            ssc_cold = cold.ssc_many(subsets)
        with timed(times, "BERTScorer: score"):
            _, _, theirs = reference.score([a for a, _ in pairs], [b for _, b in pairs], batch_size=int(cfg.batch_size))
        with timed(times, "encoder-only floor"):
            encoder_floor(reference._model, reference._tokenizer, distinct, int(cfg.batch_size))
        with timed(times, "ours: warm, fresh scorer + ssc_many"):
            warm = BertScorer(cfg, cache=score_dir)
            ssc_warm = warm.ssc_many(subsets)
        warm_loaded = warm.model_loaded

    # the pair scores ssc_many computed, as its cache holds them
    keys = [pair_key(warm.spec_hash(), a, b) for a, b in pairs]
    stored = warm.cache.get_scores(keys)
    ours = np.array([stored[k] for k in keys])
    sizes = [len(g) * (len(g) - 1) // 2 for g in subsets]
    means = [float(m.mean()) for m in np.split(ours, np.cumsum(sizes)[:-1])]
    assert np.allclose(means, ssc_cold, atol=1e-12), "SSC is not the mean of its pairs"
    diff = np.abs(ours - theirs.numpy())
    over = np.flatnonzero(diff > TOL)
    alone_diff = 0.0
    if over.size:  # bert-score matches tokens against padding in a batch; rescore those alone
        _, _, alone = reference.score([pairs[i][0] for i in over], [pairs[i][1] for i in over], batch_size=1)
        alone_diff = float(np.abs(ours[over] - alone.numpy()).max())
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)
    spec = cold.spec()
    warm.close()
    scratch.cleanup()

    for name, (wall, cpu) in times.items():
        print(f"{name:38s} wall {wall:8.3f} s   cpu {cpu:8.3f} s")
    print(
        f"n_truncated {spec['n_truncated']} of {spec['n_inputs']} inputs; "
        f"warm loaded encoder: {warm_loaded}; SSC cold == warm: {ssc_cold == ssc_warm}"
    )
    print(
        f"max |ours - BERTScorer| {diff.max():.2e} over {len(pairs)} pairs; {over.size} pairs "
        f"over {TOL:g}, which bert-score scoring each pair alone matches within {alone_diff:.2e}"
    )
    print(f"peak RSS {rss_gb:.2f} GB")
    checks = _targets(times, diff.max(), alone_diff, rss_gb, warm_loaded)
    for label, ok in checks:
        print(f"  [{'PASS' if ok else 'FAIL'}] {label}")
    return 0 if all(ok for _, ok in checks) else 1


def _targets(
    times: dict[str, tuple[float, float]], max_diff: float, alone_diff: float, rss_gb: float, warm_loaded: bool
) -> list[tuple[str, bool]]:
    cold, ref = times["ours: cold ssc_many"], times["BERTScorer: score"]
    floor, warm = times["encoder-only floor"], times["ours: warm, fresh scorer + ssc_many"]
    checks = [
        (f"max |diff| <= {TOL:g} (batched BERTScorer): {max_diff:.2e}", max_diff <= TOL),
        (f"max |diff| <= {TOL:g} (BERTScorer on the differing pairs alone): {alone_diff:.2e}", alone_diff <= TOL),
        ("warm run loaded no encoder", not warm_loaded),
        (f"peak RSS <= 1.5 GB: {rss_gb:.2f}", rss_gb <= 1.5),
    ]
    for kind, i in (("wall", 0), ("cpu", 1)):
        checks += [
            (f"cold <= 0.8 x BERTScorer ({kind}): {cold[i] / ref[i]:.2f}x", cold[i] <= 0.8 * ref[i]),
            (f"cold <= 1.25 x encoder floor ({kind}): {cold[i] / floor[i]:.2f}x", cold[i] <= 1.25 * floor[i]),
            (
                f"warm >= 20x faster than BERTScorer ({kind}): {ref[i] / max(warm[i], 1e-9):.0f}x",
                warm[i] * 20 <= ref[i],
            ),
        ]
    return checks


if __name__ == "__main__":
    sys.exit(main())
