"""`M(a, b)`: cosine similarity of two texts' sentence embeddings, cached.

A text's embedding is what sentence-transformers computes for all-MiniLM-L6-v2: the encoder's
token vectors at layer `num_layers` (the last one for MiniLM's `num_layers: 6`), averaged
over the tokens the attention mask keeps ([CLS] and [SEP] included), then L2-normalised;
M(a, b) is the dot product of the two unit vectors, in [-1, 1] (a text with itself: 1).
The encoder is the one the BERTScore scorer of the same config loads
(:func:`mcu_exp.scoring.encoder.shared_encoder`: same folder, tokenizer and input limit, the
weights loaded once per process). One difference from sentence-transformers: texts are cut at
the encoder's limit (512 tokens for MiniLM) rather than at its `max_seq_length` (256), so
summaries between 256 and 512 tokens embed whole.

A blank text scores 0 against anything, itself included, as under BERTScore.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcu_exp.config import ScorerConfig
from mcu_exp.console import progress_enabled
from mcu_exp.scoring import pairs
from mcu_exp.scoring.encoder import shared_encoder
from mcu_exp.scoring.pairs import PairScorer, Todo, open_cache, score_bar, version
from mcu_exp.scoring.resolve import ResolvedScorer, resolve_scorer
from mcu_exp.scoring.score_cache import ScoreCache

POOLING = "mean over attention mask, L2-normalised"


class CosineScorer(PairScorer):
    """Cosine similarity of mean-pooled sentence embeddings, cached (see the module docstring).

    Args:
        cfg: a :class:`mcu_exp.config.ScorerConfig` with ``kind: cosine`` (the encoder's
            fields as for BERTScore; ``idf`` and ``rescale_with_baseline`` must be off).
        cache: a :class:`ScoreCache`, a cache folder (file `bertscore.sqlite` inside), or
            None for an in-memory cache that lives as long as this object.
        progress: "embed" (texts) and "score" (pairs) bars on stderr while missing scores are
            computed, each shown once its work has taken :data:`mcu_exp.scoring.pairs.BAR_DELAY_S`;
            None: the process's setting.
    """

    kind = "cosine"

    def __init__(
        self, cfg: ScorerConfig, cache: ScoreCache | str | Path | None = None, progress: bool | None = None
    ) -> None:
        for flag in ("idf", "rescale_with_baseline"):
            if getattr(cfg, flag):
                raise ValueError(f"scorer.{flag}: BERTScore only; scorer.kind=cosine does not use it (set it to false)")
        self.progress = progress
        self.resolved: ResolvedScorer = resolve_scorer(cfg)
        self.cfg = self.resolved.cfg
        self.cache = open_cache(cache)
        self._init_pairs()
        self._encoder = shared_encoder(
            self.resolved.path,
            int(self.cfg.num_layers),
            self.resolved.max_length,
            str(self.cfg.device),
            str(self.cfg.model),
        )
        self._vectors: dict[str, np.ndarray] = {}  # text -> unit vector (float64); zeros when blank

    def _identity(self) -> dict[str, Any]:
        r = self.resolved
        return {
            "kind": self.kind,
            "model": str(self.cfg.model),
            "fingerprint": r.fingerprint,
            "layer": int(self.cfg.num_layers),
            "pooling": POOLING,
            "max_length": r.max_length,
            "versions": {d: version(d) for d in ("bert-score", "transformers", "torch")},
        }

    def spec(self) -> dict[str, Any]:
        """Everything that produced these numbers, for logs and run parameters."""
        r = self.resolved
        identity = self._identity()
        return {
            "name": str(self.cfg.name),
            **identity,
            "path": str(r.path),
            "revision": r.revision,
            "n_inputs": len(self._lengths),
            "n_truncated": self.n_truncated,
            "fallback_from": r.fallback_from,
            "spec_hash": self.spec_hash(),
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit sentence vectors of `texts`, shape (len(texts), dim); each distinct text encoded once."""
        import torch

        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._used_model = True
            lengths: dict[str, tuple[int, bool]] = {}
            batches = self._encoder.hidden_states(
                missing,
                int(self.cfg.batch_size),
                progress=progress_enabled(self.progress),
                delay_s=pairs.BAR_DELAY_S,
                purpose="mean-pooled cosine",
            )
            for batch, hidden, encoded in batches:
                mask = torch.zeros(hidden.shape[:2], dtype=hidden.dtype, device=hidden.device)
                for row, (ids, _) in enumerate(encoded):
                    mask[row, : len(ids)] = 1
                summed = (hidden * mask.unsqueeze(-1)).sum(dim=1)
                mean = summed / mask.sum(dim=1, keepdim=True).clamp(min=1e-9)
                vectors = mean.cpu().double().numpy()
                for row, (i, (ids, truncated)) in enumerate(zip(batch, encoded)):
                    text = missing[i]
                    norm = float(np.linalg.norm(vectors[row]))
                    blank = not text.strip() or norm == 0.0
                    self._vectors[text] = np.zeros_like(vectors[row]) if blank else vectors[row] / norm
                    lengths[text] = (len(ids), truncated)
            self._remember_lengths(lengths)
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 0))

    def _compute(self, todo: list[Todo]) -> dict[bytes, float]:
        texts = list(dict.fromkeys(t for part in todo for t in (*part.rows, *(part.cols or ()))))
        self.embed(texts)
        computed: dict[bytes, float] = {}
        bar = score_bar(sum(len(part.where) for part in todo), self.progress)
        for part in todo:
            rows = np.stack([self._vectors[t] for t in part.rows])
            cols = rows if part.cols is None else np.stack([self._vectors[t] for t in part.cols])
            sims = np.clip(rows @ cols.T, -1.0, 1.0)
            computed.update({k: float(sims[i, j]) for k, (i, j) in part.where.items()})
            bar.update(len(part.where))
        bar.close()
        return computed
