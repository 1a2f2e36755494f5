"""Generation through the cache (tiny random Llama): warm reruns load nothing, n grows cheaply."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, LocalBackend, Message, Sample, SampleJob
from support.local_llm import K, requests

NO_FAILURES = {"filtered": 0, "empty": 0, "from_peers": 0}


def test_cold_run_generates_then_warm_rerun_is_served_from_the_cache(
    tmp_path: Path, tiny: LocalBackend, tiny_cfg: ModelConfig
):
    wanted = requests(0, 2)
    cold = CachedGenerator(tiny_cfg, tmp_path, progress=False, backend=tiny)
    first = cold.generate(wanted)
    assert cold.stats == {"hits": 0, "misses": 8, "generated": 8, "errors": 0, **NO_FAILURES}
    assert [len(r.texts) for r in first] == [K, K]

    warm = CachedGenerator(tiny_cfg, tmp_path, progress=False)
    again = warm.generate(wanted)
    assert warm.stats == {"hits": 8, "misses": 0, "generated": 0, "errors": 0, **NO_FAILURES}
    assert not warm.backend_created and not warm.model_loaded
    assert [r.texts for r in again] == [r.texts for r in first]
    assert [r.samples for r in again] == [r.samples for r in first]


def test_raising_n_reuses_the_earlier_samples(tmp_path: Path, tiny: LocalBackend, tiny_cfg: ModelConfig):
    [small] = requests(5, 6)
    gen = CachedGenerator(tiny_cfg, tmp_path / "grown", progress=False, backend=tiny)
    before = gen.generate([dataclasses.replace(small, n=2)])[0].texts
    gen.stats.update(hits=0, misses=0, generated=0)
    after = gen.generate([dataclasses.replace(small, n=4), dataclasses.replace(small, n=3)])
    assert gen.stats["hits"] == 2 + 2 and gen.stats["generated"] == 2
    assert after[0].texts[:2] == before and after[1].texts == after[0].texts[:3]
    # The samples made later, alone, are the ones a single run of n=4 makes.
    at_once = CachedGenerator(tiny_cfg, tmp_path / "at-once", progress=False, backend=tiny)
    assert at_once.generate([dataclasses.replace(small, n=4)])[0].texts == after[0].texts


class _FlakyModel:
    """A model endpoint that fails sample 1 the first time it is asked (an external fault)."""

    def __init__(self) -> None:
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return {"backend": "flaky-endpoint", "model_id": "m"}

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        self.calls += 1
        for pos, job in enumerate(jobs):
            for i in job.indices:
                failed = i == 1 and self.calls == 1
                yield pos, i, Sample("" if failed else f"text {i}", "error" if failed else "stop", 3, 2)


def test_errors_are_returned_but_never_cached(tmp_path: Path):
    model = _FlakyModel()
    request = GenerationRequest((Message("user", "hi"),), n=3)
    first = CachedGenerator(None, tmp_path, progress=False, backend=model)
    assert [s.finish_reason for s in first.generate([request])[0].samples] == ["stop", "error", "stop"]
    assert first.stats["errors"] == 1
    second = CachedGenerator(None, tmp_path, progress=False, backend=model)
    assert second.generate([request])[0].texts == ["text 0", "text 1", "text 2"]
    assert second.stats["hits"] == 2 and second.stats["generated"] == 1


def test_usage_of_a_backend_without_billing_counts_the_samples_it_made(tmp_path: Path):
    model = _FlakyModel()
    request = GenerationRequest((Message("user", "hi"),), n=3)
    first = CachedGenerator(None, tmp_path, progress=False, backend=model)
    assert first.usage() == {}
    first.generate([request])
    assert first.usage() == {"usage.samples": 3.0, "usage.prompt_tokens": 9.0, "usage.completion_tokens": 6.0}
    second = CachedGenerator(None, tmp_path, progress=False, backend=model)
    second.generate([request])  # two samples from the cache, the failed one made again
    assert second.usage() == {"usage.samples": 1.0, "usage.prompt_tokens": 3.0, "usage.completion_tokens": 2.0}
