"""Scoring: similarity between texts (`M(a, b)`), batched over many pairs and cached on disk.

``build_scorer(cfg.scorer, cache=cache_dir)`` gives the scorer ``scorer.kind`` names
(BERTScore-F1 by default, ROUGE-L F, or the cosine of mean-pooled embeddings), all with one
interface (:class:`PairScorer`): ``ssc``/``ssc_many`` (P1), ``f1_matrix`` (P2's summaries
against r*) and ``pairwise``/``pairwise_f1`` (expert centrality); ``spec()`` says what produced
the numbers (model, layer, idf, rescaling, versions, inputs truncated).
"""

from mcu_exp.scoring.bertscore import BertScorer
from mcu_exp.scoring.embedding import CosineScorer
from mcu_exp.scoring.encoder import TokenEmbeddings
from mcu_exp.scoring.factory import SCORER_KINDS, SCORERS, build_scorer, scorer_class
from mcu_exp.scoring.lexical import RougeLScorer
from mcu_exp.scoring.pairs import PairScorer
from mcu_exp.scoring.resolve import ResolvedScorer, ScorerUnavailableError, fallback_config
from mcu_exp.scoring.score_cache import ScoreCache, pair_key, text_key

__all__ = [
    "SCORERS",
    "SCORER_KINDS",
    "BertScorer",
    "CosineScorer",
    "PairScorer",
    "ResolvedScorer",
    "RougeLScorer",
    "ScoreCache",
    "ScorerUnavailableError",
    "TokenEmbeddings",
    "build_scorer",
    "fallback_config",
    "scorer_class",
    "pair_key",
    "text_key",
]
