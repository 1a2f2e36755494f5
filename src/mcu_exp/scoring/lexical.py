"""`M(a, b)`: ROUGE-L F-measure between two texts (Google's `rouge-score` package), cached.

ROUGE-L of texts a and b is built on the length L of the longest common subsequence of their
tokens: P = L / |b|, R = L / |a|, F = 2PR / (P + R) (0 when L = 0). F is symmetric in (a, b):
swapping the texts swaps P and R, and rouge-score computes ``2*p*r/(p+r)`` with commutative
float operations, so M(a, b) == M(b, a) exactly and one cache entry serves both orders.

Tokens are rouge-score's default tokenizer's: lowercase, every run of characters other than
a-z and 0-9 is a separator (so ``get_value`` is two tokens, ``camelCase`` one; text in other
scripts has no tokens), and with ``scorer.use_stemmer`` (default true) words longer than 3
letters are Porter-stemmed (nltk's stemmer, pure code: no data is downloaded; nltk's
sentence splitter, which would need its `punkt` data, is only used by ROUGE-Lsum, not here).
Stemming is on because the proxies compare paraphrases ("returns"/"return", "sorts"/"sorted")
and the ROUGE-1.5.5 convention (`-m`) most summarisation papers report is stemmed.

A text without tokens (empty) scores 0 against anything, itself included, as under BERTScore.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcu_exp.config import ScorerConfig
from mcu_exp.scoring.pairs import PairScorer, Todo, open_cache, score_bar, version
from mcu_exp.scoring.score_cache import ScoreCache

ROUGE_PACKAGE = "rouge-score"
_INSTALL = 'pip install "rouge-score>=0.1.2"'


class _MemoTokenizer:
    """rouge-score's default tokenizer, each distinct text tokenized (and stemmed) once."""

    def __init__(self, use_stemmer: bool) -> None:
        from rouge_score import tokenizers

        self._inner = tokenizers.DefaultTokenizer(use_stemmer)
        self._memo: dict[str, list[str]] = {}

    def tokenize(self, text: str) -> list[str]:
        if text not in self._memo:
            self._memo[text] = self._inner.tokenize(text)
        return self._memo[text]


class RougeLScorer(PairScorer):
    """ROUGE-L F-measure between texts, cached like BERTScore (see the module docstring).

    Args:
        cfg: a :class:`mcu_exp.config.ScorerConfig` with ``kind: rougel`` (its encoder fields
            are ignored; ``use_stemmer`` is read).
        cache: a :class:`ScoreCache`, a cache folder (file `bertscore.sqlite` inside), or
            None for an in-memory cache that lives as long as this object.
        progress: a "score" bar (pairs) on stderr while missing scores are computed, shown once
            its work has taken :data:`mcu_exp.scoring.pairs.BAR_DELAY_S`; None: the
            process's setting.
    """

    kind = "rougel"

    def __init__(
        self, cfg: ScorerConfig, cache: ScoreCache | str | Path | None = None, progress: bool | None = None
    ) -> None:
        if version(ROUGE_PACKAGE) is None:
            raise ImportError(f"scorer.kind=rougel needs the rouge-score package: {_INSTALL}")
        self.cfg = cfg
        self.progress = progress
        self.cache = open_cache(cache)
        self._init_pairs()
        self._scorer: Any = None

    @property
    def rouge(self) -> Any:
        """rouge-score's `RougeScorer` for ROUGE-L (built on first use: this scorer's "model")."""
        if self._scorer is None:
            from rouge_score import rouge_scorer

            tokenizer = _MemoTokenizer(bool(self.cfg.use_stemmer))
            self._scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer)
        return self._scorer

    def score(self, a: str, b: str) -> float:
        """ROUGE-L F of one pair, uncached."""
        return float(self.rouge.score(a, b)["rougeL"].fmeasure)

    def _identity(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "measure": "rougeL.fmeasure",
            "tokenizer": "rouge_score.tokenizers.DefaultTokenizer",
            "use_stemmer": bool(self.cfg.use_stemmer),
            "versions": {d: version(d) for d in (ROUGE_PACKAGE, "nltk")},
        }

    def spec(self) -> dict[str, Any]:
        """Everything that produced these numbers, for logs and run parameters."""
        return {"name": str(self.cfg.name), **self._identity(), "n_truncated": 0, "spec_hash": self.spec_hash()}

    def _compute(self, todo: list[Todo]) -> dict[bytes, float]:
        self._used_model = True
        _ = self.rouge  # imported and built before the bar starts
        computed: dict[bytes, float] = {}
        bar = score_bar(sum(len(part.where) for part in todo), self.progress)
        for part in todo:
            cols: Sequence[str] = part.rows if part.cols is None else part.cols
            for key, (i, j) in part.where.items():
                computed[key] = self.score(part.rows[i], cols[j])
                bar.update(1)
        bar.close()
        return computed
