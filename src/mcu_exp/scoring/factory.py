"""The scorer a config names: ``scorer.kind`` picks the class, every kind has one interface.

=========  =====================================  ===================================
kind       M(a, b)                                class
=========  =====================================  ===================================
bertscore  BERTScore-F1 at layer `num_layers`     :class:`~mcu_exp.scoring.BertScorer`
rougel     ROUGE-L F-measure (rouge-score)        :class:`~mcu_exp.scoring.RougeLScorer`
cosine     cosine of mean-pooled token vectors    :class:`~mcu_exp.scoring.CosineScorer`
=========  =====================================  ===================================

:data:`SCORERS` is the registry ``scorer.kind`` names an entry of: a plugin adds a kind with
``SCORERS.add_lazy("mine", "my_pkg.scorer:MyScorer")`` (a :class:`PairScorer` subclass).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mcu_exp.config import ScorerConfig
from mcu_exp.registry import Registry
from mcu_exp.scoring.pairs import PairScorer
from mcu_exp.scoring.score_cache import ScoreCache

SCORERS: Registry[type[PairScorer]] = Registry("scorer kind", key="scorer.kind")
SCORERS.add_lazy("bertscore", "mcu_exp.scoring.bertscore:BertScorer")
SCORERS.add_lazy("rougel", "mcu_exp.scoring.lexical:RougeLScorer")
SCORERS.add_lazy("cosine", "mcu_exp.scoring.embedding:CosineScorer")
SCORER_KINDS = SCORERS.names()  # the built-in kinds


def scorer_class(cfg: ScorerConfig) -> type[PairScorer]:
    """The class that scores with `cfg` (by ``scorer.kind``); imports it, loads nothing."""
    return SCORERS[str(getattr(cfg, "kind", "bertscore"))]


def build_scorer(
    cfg: ScorerConfig,
    cache: ScoreCache | str | Path | None = None,
    idf_sents: Sequence[str] | None = None,
    progress: bool | None = None,
) -> PairScorer:
    """The scorer of `cfg` (see the module docstring), its pair scores cached in `cache`.

    Args:
        cfg: the typed scorer section.
        cache: a :class:`ScoreCache`, a cache folder, or None (in memory).
        idf_sents: the sentences BERTScore's idf weights come from (when ``scorer.idf``);
            ignored by the other kinds.
        progress: progress bars while missing scores are computed; None: the process's setting.
    """
    cls = scorer_class(cfg)
    if cls.kind == "bertscore":
        return cls(cfg, cache=cache, idf_sents=idf_sents, progress=progress)  # type: ignore[call-arg]
    return cls(cfg, cache=cache, progress=progress)  # type: ignore[call-arg]
