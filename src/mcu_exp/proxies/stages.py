"""Generation stages: what a proxy asks of which model, run through the cache or previewed.

A proxy yields :class:`Stage` objects one at a time (see :meth:`Proxy.stages`); whoever
drives it stores each stage's texts in a :class:`StageResults` before asking for the next,
so a later stage (P3's judgments) can build its prompts from an earlier one (the target's
summaries). :func:`run_stages` generates through the cache; the request preview
(:mod:`mcu_exp.proxies.preview`) walks the same stages with cached or stand-in texts.

A stage whose share of failed samples (errors, filtered, empty) exceeds
``generation.max_failed_share`` stops the job before anything is scored
(:class:`~mcu_exp.llm.errors.GenerationFailed`); below it, failed samples are left out of
the stage's texts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcu_exp.config import ModelConfig
from mcu_exp.data import Dataset
from mcu_exp.llm import CachedGenerator, GenerationRequest, GenerationResult, request_for, sum_usage
from mcu_exp.llm.cache_keys import canonical_json
from mcu_exp.llm.contract import FAILURE_KINDS
from mcu_exp.llm.errors import GenerationFailed
from mcu_exp.llm.factory import backend_identity
from mcu_exp.proxies.prompts import summary_messages
from mcu_exp.rng_streams import TARGET_SUMMARIES as TARGET_STREAM
from mcu_exp.rng_streams import program_seed

if TYPE_CHECKING:
    from mcu_exp.proxies.base import Proxy

log = logging.getLogger(__name__)

TARGET_SUMMARIES = "target summaries"


@dataclass(frozen=True)
class Stage:
    """One batch of requests to one model.

    ``key`` is unique within a job (it addresses the stage's texts in :class:`StageResults`);
    ``title`` and ``model_label`` are what the preview shows.
    """

    key: str
    title: str
    model_label: str
    model: ModelConfig
    requests: list[GenerationRequest]


@dataclass
class StageResults:
    """The texts of every stage run so far: ``texts(key)[i][j]`` = sample j of request i.

    ``exact`` is False for a stage whose texts are stand-ins (the preview, before they are
    generated); :attr:`stale` tells whether any such texts have been read: every stage built
    after that may hold stand-ins in its prompts.
    """

    _texts: dict[str, list[list[str]]] = field(default_factory=dict)
    _kept: dict[str, list[list[int]]] = field(default_factory=dict)
    _exact: dict[str, bool] = field(default_factory=dict)
    _read_inexact: bool = False

    def put(self, key: str, texts: list[list[str]], exact: bool = True, kept: list[list[int]] | None = None) -> None:
        """Store the texts of stage ``key``; ``kept[i]`` are the sample indices of request i
        that the texts hold (failed samples are left out; None: every sample)."""
        self._texts[key] = texts
        self._exact[key] = exact
        self._kept[key] = kept if kept is not None else [list(range(len(t))) for t in texts]

    def kept(self, key: str) -> list[list[int]]:
        """For each request of stage ``key``, the sample indices its texts come from."""
        self.texts(key)
        return self._kept[key]

    def texts(self, key: str) -> list[list[str]]:
        """The texts of stage ``key``, one list per request."""
        if key not in self._texts:
            raise KeyError(f"stage {key!r} has not run yet (stages so far: {', '.join(self._texts) or 'none'})")
        self._read_inexact = self._read_inexact or not self._exact[key]
        return self._texts[key]

    @property
    def stale(self) -> bool:
        """Whether stand-in texts have been read so far."""
        return self._read_inexact


class Generators:
    """One :class:`CachedGenerator` per distinct model (by backend identity), shared by the
    stages of a job: an expert that is the target model, or several experts that are one
    model under different temperatures, load the weights once.

    ``max_failed_share`` is ``generation.max_failed_share``: the largest share of a stage's
    samples that may fail (errors, filtered, empty) before the job stops; ``cache_url`` the
    shared PostgreSQL cache (``cache.url``), if any.
    """

    def __init__(
        self, cache_dir: Path, progress: bool, max_failed_share: float = 0.0, cache_url: str | None = None
    ) -> None:
        self.cache_dir = cache_dir
        self.cache_url = cache_url
        self.progress = progress
        self.max_failed_share = float(max_failed_share)
        self._by_identity: dict[str, CachedGenerator] = {}

    def get(self, model: ModelConfig) -> CachedGenerator:
        """The generator for ``model``, created on first use."""
        key = canonical_json(backend_identity(model))
        if key not in self._by_identity:
            self._by_identity[key] = CachedGenerator(
                model, self.cache_dir, progress=self.progress, cache_url=self.cache_url
            )
        return self._by_identity[key]

    def stats(self) -> dict[str, float]:
        """Cache hits and misses over all generators, and whether any needed a model."""
        gens = list(self._by_identity.values())
        return {
            "generation_cache_hits": float(sum(g.stats.get("hits", 0) for g in gens)),
            "generation_cache_misses": float(sum(g.stats.get("misses", 0) for g in gens)),
            "model_loaded": float(any(g.backend_created for g in gens)),
        }

    def saved(self) -> int:
        """The samples this job generated and stored in the cache so far (hits not counted)."""
        return sum(g.stats.get("generated", 0) for g in self._by_identity.values())

    def usage(self) -> dict[str, float]:
        """What this job's generations spent (``usage.requests``, ``usage.prompt_tokens``,
        ``usage.cost_usd``…), summed over models; cached samples cost nothing."""
        return sum_usage(g.usage() for g in self._by_identity.values())


def run_stages(proxy: Proxy, generators: Generators) -> StageResults:
    """Generate every stage of ``proxy`` through the cache, in order.

    Raises :class:`GenerationFailed` for a stage with too many failed samples (see
    :func:`check_failures`); the failed samples are retried by the next run.
    """
    done = StageResults()
    for stage in proxy.stages(done):
        results = generators.get(stage.model).generate(stage.requests)
        check_failures(stage, results, generators.max_failed_share)
        done.put(
            stage.key,
            [r.texts for r in results],
            kept=[[j for j, sample in enumerate(r.samples) if sample.failure is None] for r in results],
        )
    return done


def check_failures(stage: Stage, results: Sequence[GenerationResult], max_failed_share: float) -> None:
    """Stop the job when more than ``max_failed_share`` of the stage's samples failed."""
    counts = dict.fromkeys(FAILURE_KINDS, 0)
    for result in results:
        for kind, count in result.failures().items():
            counts[kind] += count
    failed, total = sum(counts.values()), sum(len(r.samples) for r in results)
    if not failed:
        return
    what = (
        f"stage '{stage.key}' ({stage.model.name}): {failed} of {total} samples failed "
        f"({counts['error']} errors, {counts['filtered']} filtered, {counts['empty']} empty)"
    )
    if failed > max_failed_share * total:
        raise GenerationFailed(
            f"{what}, above generation.max_failed_share={max_failed_share:g}; nothing was scored; "
            "rerun to retry them, or raise generation.max_failed_share"
        )
    log.warning(
        "%s, within generation.max_failed_share=%g: they are left out of the texts and retried by the next run",
        what,
        max_failed_share,
    )


def summary_requests(
    model: ModelConfig,
    dataset: Dataset,
    program_ids: Sequence[str],
    prompt: str,
    n: int,
    seed: int,
    stream: str = TARGET_STREAM,
) -> list[GenerationRequest]:
    """One request per program for ``n`` intent summaries (the target's and the experts').

    Each program's request seed is drawn from its own ``stream`` under ``seed`` (see
    :mod:`mcu_exp.rng_streams`), so no two programs' samples share one random stream.
    """
    requests = []
    for pid in program_ids:
        program = dataset.program(pid)
        messages = summary_messages(program.code, program.language, prompt)
        requests.append(request_for(model, messages, n=n, seed=program_seed(seed, pid, stream)))
    return requests
