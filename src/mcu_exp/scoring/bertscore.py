"""`M(a, b)`: BERTScore-F1 as bert-score 0.3.13 defines it, for many pairs at once, cached.

Every score function works the same way: list the text pairs it needs, read those already
in the score cache, embed only the texts the missing pairs involve (each distinct text once,
in length-sorted batches), score the missing pairs in blocks with batched tensor products
(:mod:`mcu_exp.scoring.matching`), store them, and assemble the answer (the shared part lives
in :mod:`mcu_exp.scoring.pairs`). A job whose pairs are all cached never loads the encoder
(`model_loaded` stays False).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mcu_exp.config import ScorerConfig
from mcu_exp.console import progress_enabled
from mcu_exp.scoring.encoder import TokenEmbeddings, shared_encoder
from mcu_exp.scoring.pairs import PairScorer, Todo, open_cache
from mcu_exp.scoring.pairs import version as _version
from mcu_exp.scoring.resolve import ResolvedScorer, resolve_scorer
from mcu_exp.scoring.score_cache import ScoreCache

BAR_DELAY_S = 1.0  # a progress bar shows once its work has taken this long


class BertScorer(PairScorer):
    """BERTScore-F1 between texts, batched and cached (see the module docstring).

    Args:
        cfg: a :class:`mcu_exp.config.ScorerConfig` (or a DictConfig with its fields).
        cache: a :class:`ScoreCache`, a cache folder (file `bertscore.sqlite` inside), or
            None for an in-memory cache that lives as long as this object.
        idf_sents: sentences the idf weights come from (required when `cfg.idf`, ignored
            otherwise; bert-score computes them from the reference sentences).
        memo_mb: token embeddings kept between calls, least recently used dropped first.
        progress: "embed" (texts) and "score" (pairs) progress bars on stderr while missing
            scores are computed, each shown once its work has taken :data:`BAR_DELAY_S`
            (P2 scores program by program: its many quick calls draw none); None: the
            process's setting (off with ``quiet=true``).
    """

    kind = "bertscore"

    def __init__(
        self,
        cfg: ScorerConfig,
        cache: ScoreCache | str | Path | None = None,
        idf_sents: Sequence[str] | None = None,
        memo_mb: float = 512.0,
        progress: bool | None = None,
    ) -> None:
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
        self._idf_sents: list[str] | None = None
        self._idf_hash: str | None = None
        if self.cfg.idf and idf_sents is not None:
            self._idf_sents = list(idf_sents)
            self._idf_hash = hashlib.sha256(json.dumps(sorted(self._idf_sents), ensure_ascii=True).encode()).hexdigest()
        elif self.cfg.idf:
            raise ValueError(
                "scorer.idf is true but no idf sentences were given: pass idf_sents=... to "
                "BertScorer (bert-score computes idf weights from the reference sentences)"
            )
        self._weights: tuple[dict[int, float], float] | None = None
        self._memo: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._memo_bytes = 0
        self._memo_limit = int(memo_mb * (1 << 20))

    @property
    def model_loaded(self) -> bool:
        """Whether this scorer has needed its encoder (False while everything was cached).

        The loaded weights are shared by the scorers of one process that use the same model.
        """
        return self._used_model

    def _identity(self) -> dict[str, Any]:
        r = self.resolved
        return {
            "model": str(self.cfg.model),
            "fingerprint": r.fingerprint,
            "layer": int(self.cfg.num_layers),
            "idf": bool(self.cfg.idf),
            "idf_sents_sha256": self._idf_hash,
            "rescale_with_baseline": bool(self.cfg.rescale_with_baseline),
            "baseline_sha256": r.baseline_sha256,
            "max_length": r.max_length,
            "versions": {d: _version(d) for d in ("bert-score", "transformers", "torch")},
        }

    def spec(self) -> dict[str, Any]:
        """Everything that produced these numbers, for logs and run parameters."""
        r = self.resolved
        identity = self._identity()
        return {
            "name": str(self.cfg.name),
            "model": identity["model"],
            "path": str(r.path),
            "revision": r.revision,
            "fingerprint": r.fingerprint,
            "layer": identity["layer"],
            "idf": identity["idf"],
            "idf_sents_sha256": self._idf_hash,
            "rescale_with_baseline": identity["rescale_with_baseline"],
            "baseline_path": r.baseline_path,
            "baseline_f": r.baseline_f,
            "lang": str(self.cfg.lang),
            "max_length": r.max_length,
            "versions": identity["versions"],
            "n_inputs": len(self._lengths),
            "n_truncated": self.n_truncated,
            "fallback_from": r.fallback_from,
            "spec_hash": self.spec_hash(),
        }

    def embed(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        """Token embeddings of `texts`, each distinct text encoded once (and memoised)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            weights, default = self._token_weights()
            self._used_model = True
            fresh = self._encoder.embed(
                missing,
                weights,
                default,
                int(self.cfg.batch_size),
                progress=progress_enabled(self.progress),
                delay_s=BAR_DELAY_S,
            )
            self._remember_lengths({t: (e.n_tokens, e.truncated) for t, e in zip(missing, fresh)})
            for text, emb in zip(missing, fresh):
                self._remember(text, emb)
        found = [self._memo[t] for t in texts]
        for text in dict.fromkeys(texts):
            self._memo.move_to_end(text)
        self._forget_old()
        return found

    def _token_weights(self) -> tuple[dict[int, float], float]:
        if self._weights is None:
            if self._idf_sents is not None and self.cfg.idf:
                self._weights = self._encoder.idf_weights(self._idf_sents)
            else:
                self._weights = (self._encoder.default_weights(), 1.0)
        return self._weights

    def _remember(self, text: str, emb: TokenEmbeddings) -> None:
        self._memo[text] = emb
        self._memo_bytes += emb.nbytes

    def _forget_old(self) -> None:
        while self._memo and self._memo_bytes > self._memo_limit:
            self._memo_bytes -= self._memo.popitem(last=False)[1].nbytes

    def _compute(self, todo: list[Todo]) -> dict[bytes, float]:
        import torch

        from mcu_exp.scoring.matching import greedy_f1, pad

        texts = list(dict.fromkeys(t for part in todo for t in (*part.rows, *(part.cols or ()))))
        embedded = dict(zip(texts, self.embed(texts)))
        baseline = self.resolved.baseline_f
        computed: dict[bytes, float] = {}
        bar = tqdm(
            total=sum(len(part.where) for part in todo),
            desc="score",
            unit="pair",
            disable=not progress_enabled(self.progress),
            delay=BAR_DELAY_S,
            dynamic_ncols=True,
        )
        for part in todo:
            rows = pad([embedded[t] for t in part.rows])
            cols = None if part.cols is None else pad([embedded[t] for t in part.cols])
            f1 = greedy_f1(rows, cols)
            if baseline is not None:  # bert-score rescales in float32
                b = torch.tensor(baseline, dtype=torch.float32, device=f1.device)
                f1 = (f1 - b) / (1 - b)
            values = f1.cpu().numpy()
            computed.update({k: float(values[i, j]) for k, (i, j) in part.where.items()})
            bar.update(len(part.where))
        bar.close()
        return computed
