"""Helpers for the proxy tests: composing the real configs, a synthetic dataset."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from mcu_exp.app import config_dir
from mcu_exp.data import Dataset, Program, Question
from mcu_exp.data.types import evaluations_frame
from mcu_exp.llm import GenerationRequest, Sample
from mcu_exp.llm.cache import GenerationCache, key_parts, sample_key
from mcu_exp.llm.factory import backend_identity
from mcu_exp.llm.generator import CACHE_FILE


def compose_cfg(*overrides: str) -> DictConfig:
    """The job config the app would build from ``overrides`` (nothing loaded, nothing run)."""
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def synthetic_dataset(n_programs: int = 50, n_questions: int = 3, n_options: int = 4) -> Dataset:
    """``n_programs`` small Java methods, each with ``n_questions`` questions of ``n_options`` options."""
    programs = [Program(id=f"p{i}", language="java", code=f"int f{i}(int x) {{\n    return x + {i};\n}}")
                for i in range(n_programs)]
    questions = [Question(p.id, f"q{j}", f"What does f{i} add to x? ({j})",
                          tuple(f"{i + o}" for o in range(n_options)), correct=j % n_options)
                 for i, p in enumerate(programs) for j in range(n_questions)]
    return Dataset(name="synthetic", programs=programs, evaluations=evaluations_frame([], [], [], []),
                   questions=questions, source="test")


def prefill(cache_dir: Path, model_cfg: Any, requests: Sequence[GenerationRequest],
            text: Callable[[int, int], str]) -> None:
    """Store ``text(request position, sample index)`` as every sample of ``requests`` in the
    generation cache, as if a model had written them (the cache is the model boundary)."""
    cache = GenerationCache(Path(cache_dir) / CACHE_FILE)
    identity = backend_identity(model_cfg)
    for pos, request in enumerate(requests):
        for i in range(request.n):
            cache.put(sample_key(identity, request, i), Sample(text(pos, i), "stop", 100, 3),
                      key_parts(identity, request, i))
    cache.close()
