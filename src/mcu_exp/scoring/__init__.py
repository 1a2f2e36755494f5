"""Scoring: BERTScore-F1 between texts (`M(a, b)`), batched over many pairs and cached on disk.

``BertScorer(cfg.scorer, cache=cache_dir)`` gives ``ssc``/``ssc_many`` (P1), ``f1_matrix``
(P2's summaries against r*) and ``pairwise_f1`` (expert centrality); ``spec()`` says what produced
the numbers (model, layer, idf, rescaling, versions, inputs truncated).
"""

from mcu_exp.scoring.bertscore import BertScorer
from mcu_exp.scoring.encoder import TokenEmbeddings
from mcu_exp.scoring.resolve import ResolvedScorer, ScorerUnavailableError, fallback_config
from mcu_exp.scoring.score_cache import ScoreCache, pair_key, text_key

__all__ = [
    "BertScorer",
    "ResolvedScorer",
    "ScoreCache",
    "ScorerUnavailableError",
    "TokenEmbeddings",
    "fallback_config",
    "pair_key",
    "text_key",
]
