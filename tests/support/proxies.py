"""Helpers for the proxy tests: composing the real configs, building proxies from them, a
synthetic dataset, and the generation cache filled as if a model had written it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mcu_exp.config.schema import typed_config
from mcu_exp.data import Dataset, Program, Question
from mcu_exp.data.types import evaluations_frame
from mcu_exp.llm import GenerationRequest, Sample
from mcu_exp.llm.cache import GenerationCache, key_parts, sample_key
from mcu_exp.llm.factory import backend_identity
from mcu_exp.llm.generator import CACHE_FILE
from mcu_exp.proxies.base import Proxy, ProxyContext, build_proxy
from mcu_exp.proxies.stages import Generators, Stage, StageResults, run_stages

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"


def compose_cfg(*overrides: str) -> DictConfig:
    """The job config the app would build from ``overrides`` (nothing loaded, nothing run)."""
    from support.compose import compose

    return compose(*overrides, folder=CONF)


def context(
    cfg: DictConfig, dataset: Dataset, cache_dir: Path | str, program_ids: Sequence[str] | None = None
) -> ProxyContext:
    """The :class:`ProxyContext` a job of ``cfg`` on ``dataset`` gives its proxies."""
    typed = typed_config(cfg)
    return ProxyContext(
        dataset=dataset,
        program_ids=list(dataset.program_ids if program_ids is None else program_ids),
        model=typed.model,
        scorer=typed.scorer,
        experts=typed.experts,
        decision=typed.decision,
        cache_dir=Path(cache_dir),
        progress=False,
    )


def make_proxy(
    cfg: DictConfig,
    dataset: Dataset,
    cache_dir: Path | str,
    program_ids: Sequence[str] | None = None,
    key: str = "proxy",
) -> Proxy:
    """The proxy (``key="proxy"``) or cross-proxy reference (``key="reference"``) of a
    composed config, on ``dataset``, with the typed sections as a job builds them."""
    section = getattr(typed_config(cfg), key)
    return build_proxy(section, context(cfg, dataset, cache_dir, program_ids), key)


def synthetic_dataset(n_programs: int = 50, n_questions: int = 3, n_options: int = 4) -> Dataset:
    """``n_programs`` small Java methods, each with ``n_questions`` questions of ``n_options`` options."""
    programs = [
        Program(id=f"p{i}", language="java", code=f"int f{i}(int x) {{\n    return x + {i};\n}}")
        for i in range(n_programs)
    ]
    questions = [
        Question(
            p.id,
            f"q{j}",
            f"What does f{i} add to x? ({j})",
            tuple(f"{i + o}" for o in range(n_options)),
            correct=j % n_options,
        )
        for i, p in enumerate(programs)
        for j in range(n_questions)
    ]
    return Dataset(
        name="synthetic",
        programs=programs,
        evaluations=evaluations_frame([], [], [], []),
        questions=questions,
        source="test",
    )


def prefill(
    cache_dir: Path, model_cfg: Any, requests: Sequence[GenerationRequest], text: Callable[[int, int], str]
) -> None:
    """Store ``text(request position, sample index)`` as every sample of ``requests`` in the
    generation cache, as if a model had written them (the cache is the model boundary)."""
    cache = GenerationCache(Path(cache_dir) / CACHE_FILE)
    identity = backend_identity(model_cfg)
    for pos, request in enumerate(requests):
        for i in range(request.n):
            cache.put(
                sample_key(identity, request, i), Sample(text(pos, i), "stop", 100, 3), key_parts(identity, request, i)
            )
    cache.close()


def walk_stages(proxy: Proxy, texts: Callable[[Stage], list[list[str]]]) -> Iterator[Stage]:
    """Every stage of ``proxy``, each given ``texts(stage)`` as its output before the next is
    asked for (what a driver does, without a cache or a model)."""
    done = StageResults()
    for stage in proxy.stages(done):
        yield stage
        done.put(stage.key, texts(stage))


def run_cached(proxy: Proxy) -> tuple[StageResults, dict[str, float]]:
    """Every stage of ``proxy`` through the generation cache in ``proxy.ctx.cache_dir``, as a
    job runs them, and the generators' cache statistics."""
    generators = Generators(proxy.ctx.cache_dir, progress=False)
    done = run_stages(proxy, generators)
    return done, generators.stats()
