"""What every similarity scorer shares: pair scores batched, cached, and assembled into matrices.

A scorer (:class:`PairScorer`) says what identifies it (``_identity``: everything that can
change a score; its sha256 is the spec hash that keys the score cache) and how to compute a
set of missing pairs (``_compute``). This module does the rest the same way for every kind:
list the text pairs a call needs, read those already cached under the spec hash, compute only
the missing ones (each block as the smallest sub-matrix holding them), store them, and
assemble the answer. A job whose pairs are all cached never needs the scorer's model.

Every scorer here is symmetric, ``M(a, b) == M(b, a)``, so (a, b) and (b, a) share one cache
entry (:func:`mcu_exp.scoring.score_cache.pair_key`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from mcu_exp.config import ScorerConfig
from mcu_exp.console import progress_enabled
from mcu_exp.scoring.score_cache import ScoreCache, pair_key, text_key
from mcu_exp.store import reads

BAR_DELAY_S = 1.0  # a progress bar shows once its work has taken this long


def positions(texts: Iterable[str]) -> dict[str, int]:
    """Each distinct text's position in first-seen order."""
    return {t: n for n, t in enumerate(dict.fromkeys(texts))}


@cache
def version(dist: str) -> str | None:
    """The installed version of distribution `dist`, None when it is not installed (read once
    per process: every job of a sweep names the versions in its scorer's spec)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass
class Todo:
    """Pairs to compute: texts of the rows and columns (None: rows against themselves), and
    where each missing key's value lies in that matrix."""

    rows: list[str]
    cols: list[str] | None
    where: dict[bytes, tuple[int, int]]


@dataclass
class Block:
    """A score matrix a caller asked for: which (row, col) entries it needs."""

    rows: list[str]
    cols: list[str]
    needed: list[tuple[int, int]]
    symmetric: bool = False  # rows and cols are the same texts

    def missing_part(self, missing: dict[bytes, tuple[int, int]]) -> Todo:
        """The smallest sub-matrix holding the missing entries."""
        if self.symmetric:
            texts = positions(self.rows[x] for ij in missing.values() for x in ij)
            where = {k: (texts[self.rows[i]], texts[self.rows[j]]) for k, (i, j) in missing.items()}
            return Todo(list(texts), None, where)
        rows = positions(self.rows[i] for i, _ in missing.values())
        cols = positions(self.cols[j] for _, j in missing.values())
        where = {k: (rows[self.rows[i]], cols[self.cols[j]]) for k, (i, j) in missing.items()}
        return Todo(list(rows), list(cols), where)


def open_cache(cache: ScoreCache | str | Path | None) -> ScoreCache:
    """`cache` as a :class:`ScoreCache`: itself, the cache file in a folder, the PostgreSQL
    store a ``postgresql://`` URL names, or in memory (None)."""
    if isinstance(cache, ScoreCache):
        return cache
    return ScoreCache(":memory:") if cache is None else ScoreCache.in_dir(cache)


def score_bar(total: int, progress: bool | None) -> Any:
    """The "score" progress bar (pairs), shown once its work has taken :data:`BAR_DELAY_S`."""
    return tqdm(
        total=total,
        desc="score",
        unit="pair",
        disable=not progress_enabled(progress),
        delay=BAR_DELAY_S,
        dynamic_ncols=True,
    )


class PairScorer(ABC):
    """A cached, batched, symmetric similarity ``M(a, b)`` between texts.

    The interface P1 and P2 use: :meth:`pairwise` (alias :meth:`pairwise_f1`),
    :meth:`f1_matrix`, :meth:`ssc`, :meth:`ssc_many`, :meth:`spec`, :meth:`spec_hash`,
    :attr:`model_loaded`, :attr:`n_truncated` and :meth:`close`. Method names say "f1" for
    compatibility with the BERTScore scorer; the value is whatever this scorer computes.

    Subclasses set ``self.cfg``, ``self.cache`` and ``self.progress``, call
    :meth:`_init_pairs`, and implement ``_identity``, ``spec`` and ``_compute``.
    """

    kind: str = ""
    cfg: ScorerConfig
    cache: ScoreCache
    progress: bool | None

    def _init_pairs(self) -> None:
        self._spec_hash: str | None = None
        self._used_model = False
        self._lengths: dict[str, tuple[int, bool]] = {}  # text -> (n_tokens, truncated)

    @property
    def model_loaded(self) -> bool:
        """Whether this scorer has needed its model (False while everything was cached)."""
        return self._used_model

    @property
    def n_truncated(self) -> int:
        """Distinct texts scored by this object that were cut at the model's input limit."""
        return sum(truncated for _, truncated in self._lengths.values())

    @abstractmethod
    def _identity(self) -> dict[str, Any]:
        """Everything that can change a score (hashed into the cache keys)."""

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """Everything that produced these numbers, for logs and run parameters."""

    @abstractmethod
    def _compute(self, todo: list[Todo]) -> dict[bytes, float]:
        """Score the pairs of `todo` (no cache involved) and return them by key."""

    def spec_hash(self) -> str:
        """sha256 of the scorer's identity: what a cached score is valid for."""
        if self._spec_hash is None:
            self._spec_hash = reads.pinned_identity(reads.SCORERS, self._config(), self._new_spec_hash)
        return self._spec_hash

    def _config(self) -> Any:
        """What a bundle pins this scorer's identity under: its config, or for a scorer built
        without one (a plugin's) its identity itself."""
        cfg = getattr(self, "cfg", None)
        return cfg if cfg is not None else {"kind": self.kind, "identity": self._identity()}

    def _new_spec_hash(self) -> str:
        """Hash the identity and record what it stands for in the cache."""
        identity = self._identity()
        spec_hash = hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        self.cache.put_spec(spec_hash, identity)
        return spec_hash

    def f1_matrix(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        """The score of every (a, b) pair: an array of shape (len(texts_a), len(texts_b))."""
        needed = [(i, j) for i in range(len(texts_a)) for j in range(len(texts_b))]
        return self._score_blocks([Block(list(texts_a), list(texts_b), needed)])[0]

    def pairwise(self, texts: Sequence[str]) -> np.ndarray:
        """The symmetric k x k matrix of scores between `texts` (diagonal: each text with itself)."""
        k = len(texts)
        needed = [(i, j) for i in range(k) for j in range(i, k)]
        scores: np.ndarray = self._score_blocks([Block(list(texts), list(texts), needed, True)])[0]
        symmetric: np.ndarray = scores + np.triu(scores, 1).T
        return symmetric

    def pairwise_f1(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`pairwise` under the BERTScore scorer's name."""
        return self.pairwise(texts)

    def ssc(self, texts: Sequence[str]) -> float:
        """Semantic self-consistency: mean score over the pairs i < j of `texts`."""
        return self.ssc_many([texts])[0]

    def pairwise_many(self, groups: Sequence[Sequence[str]], self_score: float = 1.0) -> list[np.ndarray]:
        """The symmetric matrix of each group, from its pairs i < j only, all groups' missing
        pairs computed in one pass; the diagonal is `self_score`, not scored (every kind gives
        1 for a text with itself, except a blank text, which scores 0 against anything).

        These are exactly the pairs (and cache entries) :meth:`ssc_many` needs, so a job
        whose SSC pairs are cached needs nothing more."""
        blocks = []
        for texts in groups:
            k = len(texts)
            blocks.append(Block(list(texts), list(texts), [(i, j) for i in range(k) for j in range(i + 1, k)], True))
        out = []
        for upper in self._score_blocks(blocks):
            full = upper + upper.T  # the lower triangle and the diagonal are 0
            np.fill_diagonal(full, self_score)
            out.append(full)
        return out

    def ssc_many(self, groups: Sequence[Sequence[str]]) -> list[float]:
        """SSC of each group; all groups' missing pairs are computed in one pass."""
        for g, texts in enumerate(groups):
            if len(texts) < 2:
                raise ValueError(f"SSC needs at least 2 texts per group; group {g} has {len(texts)}")
        matrices = self.pairwise_many(groups)
        return [float(m[np.triu_indices(len(m), 1)].mean()) for m in matrices]

    def close(self) -> None:
        """Close the score cache."""
        self.cache.close()

    def _score_blocks(self, blocks: list[Block]) -> list[np.ndarray]:
        """Fill each block's needed entries from the cache, computing only missing pairs."""
        spec_hash = self.spec_hash()
        keyed = [[pair_key(spec_hash, b.rows[i], b.cols[j]) for i, j in b.needed] for b in blocks]
        values = self.cache.get_scores([k for keys in keyed for k in keys])
        self._note_lengths({t for b in blocks for t in (*b.rows, *b.cols)})
        todo: list[Todo] = []
        pending: set[bytes] = set()
        for block, keys in zip(blocks, keyed):
            missing = {k: ij for k, ij in zip(keys, block.needed) if k not in values and k not in pending}
            if missing:
                pending.update(missing)
                todo.append(block.missing_part(missing))
        if todo:
            name = getattr(getattr(self, "cfg", None), "name", None) or self.kind
            reads.no_model(f"the {name} score of {sum(len(t.where) for t in todo)} pairs")
            computed = self._compute(todo)
            self.cache.put_scores(computed.items())
            values.update(computed)
        out = []
        for block, keys in zip(blocks, keyed):
            matrix = np.zeros((len(block.rows), len(block.cols)))
            for (i, j), key in zip(block.needed, keys):
                matrix[i, j] = values[key]
            out.append(matrix)
        return out

    def _remember_lengths(self, lengths: dict[str, tuple[int, bool]]) -> None:
        """Record texts' token counts and truncation, here and in the cache."""
        spec_hash = self.spec_hash()
        self.cache.put_lengths((text_key(spec_hash, t), n, cut) for t, (n, cut) in lengths.items())
        self._lengths.update(lengths)

    def _note_lengths(self, texts: set[str]) -> None:
        """Learn from the cache the token counts of texts scored before (for `n_truncated`)."""
        unknown = [t for t in texts if t not in self._lengths]
        if not unknown:
            return
        spec_hash = self.spec_hash()
        keys = {text_key(spec_hash, t): t for t in unknown}
        for key, length in self.cache.get_lengths(list(keys)).items():
            self._lengths[keys[key]] = length
