"""`M(a, b)`: BERTScore-F1 as bert-score 0.3.13 defines it, for many pairs at once, cached.

Every score function works the same way: list the text pairs it needs, read those already
in the score cache, embed only the texts the missing pairs involve (each distinct text once,
in length-sorted batches), score the missing pairs in blocks with batched tensor products
(:mod:`mcu_exp.scoring.matching`), store them, and assemble the answer. A job whose pairs
are all cached never loads the encoder (`model_loaded` stays False).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from mcu_exp.config import ScorerConfig
from mcu_exp.console import progress_enabled
from mcu_exp.scoring.encoder import TokenEmbeddings, shared_encoder
from mcu_exp.scoring.resolve import ResolvedScorer, resolve_scorer
from mcu_exp.scoring.score_cache import ScoreCache, pair_key, text_key


BAR_DELAY_S = 1.0  # a progress bar shows once its work has taken this long


def _positions(texts: Iterable[str]) -> dict[str, int]:
    """Each distinct text's position in first-seen order."""
    return {t: n for n, t in enumerate(dict.fromkeys(texts))}


@dataclass
class _Todo:
    """Pairs to compute: texts of the rows and columns (None: rows against themselves), and
    where each missing key's value lies in that matrix."""

    rows: list[str]
    cols: list[str] | None
    where: dict[bytes, tuple[int, int]]


@dataclass
class _Block:
    """A score matrix a caller asked for: which (row, col) entries it needs."""

    rows: list[str]
    cols: list[str]
    needed: list[tuple[int, int]]
    symmetric: bool = False  # rows and cols are the same texts

    def missing_part(self, missing: dict[bytes, tuple[int, int]]) -> _Todo:
        """The smallest sub-matrix holding the missing entries."""
        if self.symmetric:
            texts = _positions(self.rows[x] for ij in missing.values() for x in ij)
            where = {k: (texts[self.rows[i]], texts[self.rows[j]]) for k, (i, j) in missing.items()}
            return _Todo(list(texts), None, where)
        rows = _positions(self.rows[i] for i, _ in missing.values())
        cols = _positions(self.cols[j] for _, j in missing.values())
        where = {k: (rows[self.rows[i]], cols[self.cols[j]]) for k, (i, j) in missing.items()}
        return _Todo(list(rows), list(cols), where)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class BertScorer:
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

    def __init__(self, cfg: ScorerConfig, cache: ScoreCache | str | Path | None = None,
                 idf_sents: Sequence[str] | None = None, memo_mb: float = 512.0,
                 progress: bool | None = None) -> None:
        self.progress = progress
        self.resolved: ResolvedScorer = resolve_scorer(cfg)
        self.cfg = self.resolved.cfg
        if isinstance(cache, ScoreCache):
            self.cache = cache
        else:
            self.cache = ScoreCache(":memory:") if cache is None else ScoreCache.in_dir(cache)
        self._encoder = shared_encoder(self.resolved.path, int(self.cfg.num_layers),
                                       self.resolved.max_length, str(self.cfg.device), str(self.cfg.model))
        self._used_encoder = False
        self._idf_sents: list[str] | None = None
        self._idf_hash: str | None = None
        if self.cfg.idf and idf_sents is not None:
            self._idf_sents = list(idf_sents)
            self._idf_hash = hashlib.sha256(
                json.dumps(sorted(self._idf_sents), ensure_ascii=True).encode()).hexdigest()
        elif self.cfg.idf:
            raise ValueError(
                "scorer.idf is true but no idf sentences were given: pass idf_sents=... to "
                "BertScorer (bert-score computes idf weights from the reference sentences)"
            )
        self._weights: tuple[dict[int, float], float] | None = None
        self._memo: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._memo_bytes = 0
        self._memo_limit = int(memo_mb * (1 << 20))
        self._lengths: dict[str, tuple[int, bool]] = {}
        self._spec_hash: str | None = None

    @property
    def model_loaded(self) -> bool:
        """Whether this scorer has needed its encoder (False while everything was cached).

        The loaded weights are shared by the scorers of one process that use the same model.
        """
        return self._used_encoder

    @property
    def n_truncated(self) -> int:
        """Distinct texts scored by this object that were cut at the encoder's limit."""
        return sum(truncated for _, truncated in self._lengths.values())

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

    def spec_hash(self) -> str:
        """sha256 of the scorer's identity: what a cached score is valid for."""
        if self._spec_hash is None:
            identity = self._identity()
            self._spec_hash = hashlib.sha256(
                json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
            self.cache.put_spec(self._spec_hash, identity)
        return self._spec_hash

    def embed(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        """Token embeddings of `texts`, each distinct text encoded once (and memoised)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            weights, default = self._token_weights()
            self._used_encoder = True
            fresh = self._encoder.embed(missing, weights, default, int(self.cfg.batch_size),
                                        progress=progress_enabled(self.progress), delay_s=BAR_DELAY_S)
            spec_hash = self.spec_hash()
            self.cache.put_lengths(
                (text_key(spec_hash, t), e.n_tokens, e.truncated) for t, e in zip(missing, fresh))
            for text, emb in zip(missing, fresh):
                self._lengths[text] = (emb.n_tokens, emb.truncated)
                self._remember(text, emb)
        found = [self._memo[t] for t in texts]
        for text in dict.fromkeys(texts):
            self._memo.move_to_end(text)
        self._forget_old()
        return found

    def f1_matrix(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        """F1 of every (a, b) pair: an array of shape (len(texts_a), len(texts_b))."""
        needed = [(i, j) for i in range(len(texts_a)) for j in range(len(texts_b))]
        return self._score_blocks([_Block(list(texts_a), list(texts_b), needed)])[0]

    def pairwise_f1(self, texts: Sequence[str]) -> np.ndarray:
        """The symmetric k x k matrix of F1 between `texts` (diagonal: each text with itself)."""
        k = len(texts)
        needed = [(i, j) for i in range(k) for j in range(i, k)]
        scores = self._score_blocks([_Block(list(texts), list(texts), needed, True)])[0]
        return scores + np.triu(scores, 1).T

    def ssc(self, texts: Sequence[str]) -> float:
        """Semantic self-consistency: mean F1 over the pairs i < j of `texts`."""
        return self.ssc_many([texts])[0]

    def ssc_many(self, groups: Sequence[Sequence[str]]) -> list[float]:
        """SSC of each group; all groups' missing texts are embedded in one pass."""
        blocks: list[_Block] = []
        for g, texts in enumerate(groups):
            if len(texts) < 2:
                raise ValueError(
                    f"SSC needs at least 2 texts per group; group {g} has {len(texts)}")
            k = len(texts)
            pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
            blocks.append(_Block(list(texts), list(texts), pairs, True))
        matrices = self._score_blocks(blocks)
        return [float(m[np.triu_indices(len(m), 1)].mean()) for m in matrices]

    def close(self) -> None:
        """Close the score cache."""
        self.cache.close()

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

    def _score_blocks(self, blocks: list[_Block]) -> list[np.ndarray]:
        """Fill each block's needed entries from the cache, computing only missing pairs."""
        spec_hash = self.spec_hash()
        keyed = [[pair_key(spec_hash, b.rows[i], b.cols[j]) for i, j in b.needed] for b in blocks]
        values = self.cache.get_scores([k for keys in keyed for k in keys])
        self._note_lengths({t for b in blocks for t in (*b.rows, *b.cols)})
        todo: list[_Todo] = []
        pending: set[bytes] = set()
        for block, keys in zip(blocks, keyed):
            missing = {k: ij for k, ij in zip(keys, block.needed)
                       if k not in values and k not in pending}
            if missing:
                pending.update(missing)
                todo.append(block.missing_part(missing))
        if todo:
            values.update(self._compute(todo))
        out = []
        for block, keys in zip(blocks, keyed):
            matrix = np.zeros((len(block.rows), len(block.cols)))
            for (i, j), key in zip(block.needed, keys):
                matrix[i, j] = values[key]
            out.append(matrix)
        return out

    def _compute(self, todo: list[_Todo]) -> dict[bytes, float]:
        import torch

        from mcu_exp.scoring.matching import greedy_f1, pad

        texts = list(dict.fromkeys(t for part in todo for t in (*part.rows, *(part.cols or ()))))
        embedded = dict(zip(texts, self.embed(texts)))
        baseline = self.resolved.baseline_f
        computed: dict[bytes, float] = {}
        bar = tqdm(total=sum(len(part.where) for part in todo), desc="score", unit="pair",
                   disable=not progress_enabled(self.progress), delay=BAR_DELAY_S, dynamic_ncols=True)
        for part in todo:
            rows = pad([embedded[t] for t in part.rows])
            cols = None if part.cols is None else pad([embedded[t] for t in part.cols])
            f1 = greedy_f1(rows, cols)
            if baseline is not None:  # bert-score rescales in float32
                b = torch.tensor(baseline, dtype=torch.float32, device=f1.device)
                f1 = (f1 - b) / (1 - b)
            f1 = f1.cpu().numpy()
            computed.update({k: float(f1[i, j]) for k, (i, j) in part.where.items()})
            bar.update(len(part.where))
        bar.close()
        self.cache.put_scores(computed.items())
        return computed

    def _note_lengths(self, texts: set[str]) -> None:
        """Learn from the cache the token counts of texts scored before (for `n_truncated`)."""
        unknown = [t for t in texts if t not in self._lengths]
        if not unknown:
            return
        spec_hash = self.spec_hash()
        keys = {text_key(spec_hash, t): t for t in unknown}
        for key, length in self.cache.get_lengths(list(keys)).items():
            self._lengths[keys[key]] = length
