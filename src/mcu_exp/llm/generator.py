"""Generation through the cache: look every sample up, make only the missing ones.

A warm rerun, or a sweep over thresholds that reuses earlier generations, finds every sample
in the cache and never creates a backend (so never loads a model or opens a client). New
samples are written to the cache one by one as the backend finishes them, so a crash or a
kill loses only the samples in flight, and the rerun generates exactly those.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mcu_exp.llm.cache import GenerationCache, key_parts, sample_key
from mcu_exp.llm.contract import Backend, GenerationRequest, GenerationResult, Message, Sample, SampleJob
from mcu_exp.llm.errors import BackendError

log = logging.getLogger(__name__)

CACHE_FILE = "generations.sqlite"


def request_for(model_cfg: Any, messages: Sequence[Message], n: int, seed: int) -> GenerationRequest:
    """A request with the model config's decoding defaults (temperature, top_p,
    max_new_tokens, stop). ``model.system_prompt``, when set, replaces the messages' system turn."""
    turns = tuple(messages)
    system = getattr(model_cfg, "system_prompt", None)
    if system is not None:
        turns = (Message("system", str(system)), *(m for m in turns if m.role != "system"))
    return GenerationRequest(
        messages=turns,
        n=int(n),
        temperature=float(model_cfg.temperature),
        top_p=float(model_cfg.top_p),
        max_new_tokens=int(model_cfg.max_new_tokens),
        stop=tuple(str(s) for s in (model_cfg.stop or ())),
        seed=int(seed),
    )


class CachedGenerator:
    """Generate through a :class:`GenerationCache` stored in ``cache_dir``.

    ``backend`` overrides the one built from ``model_cfg`` (its ``identity()`` then keys the
    cache); otherwise the backend is created only when some sample is missing.
    """

    def __init__(self, model_cfg: Any, cache_dir: str | Path, progress: bool = True,
                 backend: Backend | None = None) -> None:
        self.model_cfg = model_cfg
        self.cache = GenerationCache(Path(cache_dir) / CACHE_FILE)
        self.progress = progress
        self._given_backend = backend
        self.backend: Backend | None = None
        self.stats = {"hits": 0, "misses": 0, "generated": 0, "errors": 0}

    @property
    def backend_created(self) -> bool:
        """Whether this generator needed (and so built or used) a backend."""
        return self.backend is not None

    @property
    def model_loaded(self) -> bool:
        """Whether a model was loaded (or a client opened) for this generator."""
        return self.backend is not None and bool(getattr(self.backend, "model_loaded", True))

    def identity(self) -> dict[str, Any]:
        """The model part of this generator's cache keys."""
        if self._given_backend is not None:
            return self._given_backend.identity()
        from mcu_exp.llm.factory import backend_identity

        return backend_identity(self.model_cfg)

    def _get_backend(self) -> Backend:
        if self.backend is None:
            if self._given_backend is not None:
                self.backend = self._given_backend
            else:
                from mcu_exp.llm.factory import build_backend

                self.backend = build_backend(self.model_cfg)
        return self.backend

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """The ``n`` samples of every request, in order; cached ones are reused."""
        identity = self.identity()
        keys = [[sample_key(identity, r, i) for i in range(r.n)] for r in requests]
        found = self.cache.get_many(k for ks in keys for k in ks)
        slots: list[list[Sample | None]] = [[found.get(k) for k in ks] for ks in keys]
        waiting: dict[str, list[tuple[int, int]]] = {}  # key -> every (request, index) that wants it
        jobs: list[SampleJob] = []
        for pos, (request, request_keys) in enumerate(zip(requests, keys)):
            missing = []
            for index, key in enumerate(request_keys):
                if key in found:
                    continue
                if key not in waiting:
                    missing.append(index)
                waiting.setdefault(key, []).append((pos, index))
            if missing:
                jobs.append(SampleJob(request, tuple(missing)))
        total = sum(r.n for r in requests)
        hits = total - sum(len(w) for w in waiting.values())
        self.stats["hits"] += hits
        self.stats["misses"] += total - hits
        if jobs:
            self._run(identity, jobs, slots, waiting, total, hits)
        log.info("generate: %d samples, %d from cache, %d generated, %d errors",
                 total, hits, self.stats["generated"], self.stats["errors"])
        return [GenerationResult(r, [s for s in ss if s is not None]) for r, ss in zip(requests, slots)]

    def _run(self, identity: dict[str, Any], jobs: list[SampleJob], slots: list[list[Sample | None]],
             waiting: dict[str, list[tuple[int, int]]], total: int, hits: int) -> None:
        backend = self._get_backend()
        bar = tqdm(total=total, initial=hits, desc="generate", unit="sample", disable=not self.progress,
                   dynamic_ncols=True)
        try:
            for job_pos, index, sample in backend.stream(jobs):
                request = jobs[job_pos].request
                parts = key_parts(identity, request, index)
                key = sample_key(identity, request, index)
                if sample.finish_reason == "error":
                    self.stats["errors"] += 1
                else:
                    self.cache.put(key, sample, parts)
                    self.stats["generated"] += 1
                log.debug("sample %s: %s", key[:12], parts)
                wanted = waiting.get(key, ())
                for pos, idx in wanted:
                    slots[pos][idx] = sample
                bar.update(len(wanted))
        finally:
            bar.close()
        absent = sum(s is None for ss in slots for s in ss)
        if absent:
            raise BackendError(f"backend {identity.get('backend')!r} returned {absent} fewer samples than requested")

    def close(self) -> None:
        """Close the cache connection."""
        self.cache.close()
