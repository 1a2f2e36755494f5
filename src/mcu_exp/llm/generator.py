"""Generation through the cache: look every sample up, make only the missing ones.

A warm rerun, or a sweep over thresholds that reuses earlier generations, finds every sample
in the cache and never creates a backend (so never loads a model or opens a client); the
lookup runs in chunks of requests, so a stage of a million cached samples stays fast and
small. New samples are written to the cache as the backend finishes them, the samples of one
response (or of all the responses that arrived together) in one transaction, so a crash or a
kill loses only the samples in flight, and the rerun generates exactly those.

:meth:`CachedGenerator.usage` reports what this generator spent (tokens, requests, retries,
cost); samples served from the cache cost nothing and are not counted.

Before generating, the generator leases the missing keys in the cache (renewed while it
works, released when it ends): a second process on the same file waits for those samples
instead of paying for them again, and takes over the leases of a process that died. Failed
samples (errors, filtered, empty) are returned marked (:attr:`Sample.failure`) and recorded
as failures, so the next run retries them. A backend that says ``keeps_spares`` (the batch
backend) also hands over samples it received that no request here asked for (a recorded
batch made for a larger run): they are stored too, so nothing paid for is thrown away.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from mcu_exp import console, interrupts
from mcu_exp.llm.cache import CACHE_FILE as CACHE_FILE  # where it used to live
from mcu_exp.llm.cache import GenerationCache, open_generation_cache
from mcu_exp.llm.cache_keys import request_parts, sample_keys
from mcu_exp.llm.claims import ClaimOwner
from mcu_exp.llm.contract import Backend, GenerationRequest, GenerationResult, Message, Sample, SampleJob
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.stored_text import valid_text

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

log = logging.getLogger(__name__)

USAGE_PREFIX = "usage."
_STAT = {"error": "errors", "filtered": "filtered", "empty": "empty"}  # failure kind -> stats key
_LOOKUP = 20_000  # samples looked up per chunk of requests


def sum_usage(usages: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Several :meth:`CachedGenerator.usage` dicts added key by key (e.g. a job's target and experts)."""
    total: dict[str, float] = {}
    for usage in usages:
        for key, value in usage.items():
            total[key] = total.get(key, 0.0) + float(value)
    return total


def request_for(model_cfg: ModelConfig, messages: Sequence[Message], n: int, seed: int) -> GenerationRequest:
    """A request with the model config's decoding defaults (temperature, top_p,
    max_new_tokens, stop). ``model.system_prompt``, when set, replaces the messages' system turn."""
    turns = tuple(messages)
    system = model_cfg.system_prompt
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


def _valid(sample: Sample) -> Sample:
    """``sample`` as the pipeline reads it: a lone surrogate (kept as sent in the cache) becomes
    U+FFFD, since no tokenizer, file or prompt takes one."""
    text = valid_text(sample.text)
    return sample if text == sample.text else replace(sample, text=text)


class CachedGenerator:
    """Generate through a :class:`GenerationCache`: the SQLite file in ``cache_dir``, or the
    PostgreSQL store at ``cache_url`` when given (``cache_dir`` then holds only batch records).

    ``backend`` overrides the one built from ``model_cfg`` (its ``identity()`` then keys the
    cache; ``model_cfg`` may then be None); otherwise the backend is created only when some
    sample is missing. ``progress=False`` draws no progress bar, the backend's included.
    ``claim_ttl_s`` is how long a lease outlives a holder that stopped renewing it (a process
    on another host that died); ``poll_s`` how often a waiting process looks for a peer's samples.
    """

    def __init__(
        self,
        model_cfg: ModelConfig | None,
        cache_dir: str | Path,
        progress: bool = True,
        backend: Backend | None = None,
        claim_ttl_s: float = 60.0,
        poll_s: float = 0.25,
        cache_url: str | None = None,
    ) -> None:
        self.model_cfg = model_cfg
        self.cache_dir = Path(cache_dir)  # also where a batch backend records its batches
        self.cache: GenerationCache = open_generation_cache(self.cache_dir, cache_url)  # type: ignore[assignment]
        self.progress = progress
        self._given_backend = backend
        self.backend: Backend | None = None
        self.stats = {"hits": 0, "misses": 0, "generated": 0, "errors": 0, "filtered": 0, "empty": 0, "from_peers": 0}
        self._usage: dict[str, float] = {}
        self.owner = ClaimOwner()
        self.claim_ttl_s = float(claim_ttl_s)
        self.poll_s = float(poll_s)

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

        return backend_identity(self._config())

    def usage(self) -> dict[str, float]:
        """What this generator's backend calls spent, as MLflow-ready metrics.

        Keys are ``usage.<name>``: for a remote backend ``requests``, ``retries``, ``samples``,
        ``prompt_tokens``, ``completion_tokens`` and ``cost_usd`` (its billing); for a backend
        without ``usage()`` (local) the ``samples`` and token counts of the samples it made.
        Cached samples are not counted; empty when nothing was generated.
        """
        return {USAGE_PREFIX + key: value for key, value in self._usage.items()}

    def _config(self) -> ModelConfig:
        if self.model_cfg is None:
            raise BackendError("CachedGenerator needs a model config or a backend")
        return self.model_cfg

    def _get_backend(self) -> Backend:
        if self.backend is None:
            if self._given_backend is not None:
                self.backend = self._given_backend
            else:
                from mcu_exp.llm.factory import build_backend
                from mcu_exp.store import reads

                reads.no_model(f"a sample of model {getattr(self.model_cfg, 'name', '?')}")
                self.backend = build_backend(self._config(), progress=self.progress, cache_dir=self.cache_dir)
        return self.backend

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """The ``n`` samples of every request, in order; cached ones are reused.

        Failed samples are included, marked by :attr:`Sample.failure`
        (:attr:`GenerationResult.texts` leaves them out).
        """
        since = time.time()
        identity = self.identity()
        slots: list[list[Sample | None]] = [[None] * r.n for r in requests]
        waiting = self._lookup(identity, requests, slots)  # missing key -> every (request, index) that wants it
        pending = set(waiting)
        total = sum(r.n for r in requests)
        hits = total - sum(len(waiting[k]) for k in pending)
        self.stats["hits"] += hits
        self.stats["misses"] += total - hits
        last_note = 0.0
        while pending:
            mine = self.cache.claim(pending, self.owner, self.claim_ttl_s, since)
            if mine:
                try:
                    with self.cache.keep_claims(self.owner, self.claim_ttl_s):
                        self._run(identity, self._jobs(requests, waiting, mine), slots, waiting, total, hits)
                finally:
                    self.cache.release(self.owner)
                pending -= mine
            peers = {**self.cache.get_many(pending), **self.cache.failures_since(pending, since)}
            pending -= self._fill(peers, slots, waiting)
            self.stats["from_peers"] += len(peers)
            if pending and not mine:
                if time.monotonic() - last_note > 30.0:
                    log.info(
                        "waiting for %d samples that other processes are generating (%s)",
                        len(pending),
                        ", ".join(self.cache.holders(pending)) or "leases just released",
                    )
                    last_note = time.monotonic()
                time.sleep(self.poll_s)
        console.to_log_files(  # the job's log file only: the progress bar already said it on the terminal
            log,
            f"generate: {total} samples, {hits} from cache, {self.stats['generated']} generated, "
            f"{self.stats['errors']} errors, {self.stats['filtered']} filtered, {self.stats['empty']} empty",
        )
        return [GenerationResult(r, [_valid(s) for s in ss if s is not None]) for r, ss in zip(requests, slots)]

    def _lookup(
        self, identity: dict[str, Any], requests: Sequence[GenerationRequest], slots: list[list[Sample | None]]
    ) -> dict[str, list[tuple[int, int]]]:
        """Fill ``slots`` from the cache, a chunk of requests at a time; every missing key
        with each (request, index) that wants it."""
        waiting: dict[str, list[tuple[int, int]]] = {}
        start = 0
        while start < len(requests):
            stop, size = start, 0
            while stop < len(requests) and (size == 0 or size + requests[stop].n <= _LOOKUP):
                size += requests[stop].n
                stop += 1
            keys = [(pos, sample_keys(identity, requests[pos], range(requests[pos].n))) for pos in range(start, stop)]
            found = self.cache.get_many(key for _, ks in keys for key in ks)
            for pos, request_keys in keys:
                row = slots[pos]
                for index, key in enumerate(request_keys):
                    sample = found.get(key)
                    if sample is None:
                        waiting.setdefault(key, []).append((pos, index))
                    else:
                        row[index] = sample
            start = stop
        return waiting

    @staticmethod
    def _fill(
        found: Mapping[str, Sample], slots: list[list[Sample | None]], waiting: Mapping[str, list[tuple[int, int]]]
    ) -> set[str]:
        """Put each found sample in every slot that wants it; the keys filled."""
        for key, sample in found.items():
            for pos, index in waiting[key]:
                slots[pos][index] = sample
        return set(found)

    @staticmethod
    def _jobs(
        requests: Sequence[GenerationRequest], waiting: Mapping[str, list[tuple[int, int]]], keys: set[str]
    ) -> list[SampleJob]:
        """One job per request for ``keys`` (each key asked once, at its first slot)."""
        indices: dict[int, list[int]] = {}
        for key in keys:
            pos, index = waiting[key][0]
            indices.setdefault(pos, []).append(index)
        return [SampleJob(requests[pos], tuple(sorted(ix))) for pos, ix in sorted(indices.items())]

    def _run(
        self,
        identity: dict[str, Any],
        jobs: list[SampleJob],
        slots: list[list[Sample | None]],
        waiting: dict[str, list[tuple[int, int]]],
        total: int,
        hits: int,
    ) -> None:
        backend = self._get_backend()
        load = getattr(backend, "load", None)
        if callable(load):  # a local model loads as its own step, before the bar starts its clock
            load()
        billing = getattr(backend, "usage", None)
        before = dict(billing()) if billing is not None else {}
        made = {"samples": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0}
        bar = tqdm(
            total=total, initial=hits, desc="generate", unit="sample", disable=not self.progress, dynamic_ncols=True
        )
        asked = sum(len(job.indices) for job in jobs)
        received = 0
        keys: dict[int, dict[int, str]] = {}  # job -> sample index -> key
        shared: dict[int, dict[str, Any]] = {}  # job -> its request's key parts
        batches = getattr(backend, "stream_batches", None)
        if callable(batches):
            stream = batches(jobs)
        elif getattr(backend, "keeps_spares", False):
            stream = backend.stream(jobs, spare=self._store_spares)  # type: ignore[call-arg]
        else:
            stream = backend.stream(jobs)
        try:
            for batch in stream if callable(batches) else ([item] for item in stream):
                responses: dict[int, list[tuple[str, int, Sample]]] = {}
                for job_pos, index, sample in batch:
                    made["samples"] += 1
                    made["prompt_tokens"] += sample.prompt_tokens
                    made["completion_tokens"] += sample.completion_tokens
                    if job_pos not in keys:
                        job = jobs[job_pos]
                        keys[job_pos] = dict(zip(job.indices, sample_keys(identity, job.request, job.indices)))
                        shared[job_pos] = request_parts(identity, job.request)
                    responses.setdefault(job_pos, []).append((keys[job_pos][index], index, sample))
                self.cache.put_responses((shared[pos], rows) for pos, rows in responses.items())
                filled = 0
                for job_pos, rows in responses.items():
                    for key, index, sample in rows:
                        self.stats[_STAT.get(sample.failure or "", "generated")] += 1
                        log.debug("sample %s: index %d of request %d", key[:12], index, job_pos)
                        wanted = waiting.get(key, ())
                        for pos, idx in wanted:
                            slots[pos][idx] = sample
                        filled += len(wanted)
                received += len(batch)
                bar.update(filled)
                interrupts.check()  # a Ctrl-C that a library swallowed stops here, this batch saved
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # a generator's cleanup (worker threads, usage totals) runs now
            bar.close()
            if billing is not None:
                after = billing()
                made = {
                    k: float(v) - float(before.get(k, 0))
                    for k, v in after.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)
                }
            for name, value in made.items():
                self._usage[name] = self._usage.get(name, 0.0) + value
        if received < asked:
            raise BackendError(
                f"backend {identity.get('backend')!r} returned {asked - received} fewer samples than requested"
            )

    def _store_spares(self, parts: Mapping[str, Any], rows: Sequence[tuple[str, int, Sample]]) -> None:
        """Store samples of one request that the backend received though no request here asked for them."""
        written = self.cache.put_responses([(parts, rows)])
        log.info("stored %d samples no request of this run asked for (a recorded batch held them)", written)

    def close(self) -> None:
        """Close the cache connection."""
        self.cache.close()
