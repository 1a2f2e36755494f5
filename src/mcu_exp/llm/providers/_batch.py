"""The batch backend (``model.batch: true``): a stage's missing samples as provider batches.

OpenAI Batch, Anthropic Message Batches and Gemini batch mode bill half the interactive
price for requests answered within a day. :class:`BatchBackend` implements the same
:class:`~mcu_exp.llm.contract.Backend` protocol as the interactive backend, so the generator
and its cache are unchanged: ``stream(jobs)`` splits the missing samples into requests
exactly as the interactive backend would (same body, same per-index seeds), packs them into
batches within the provider's limits (requests and bytes), records every batch in
:class:`~mcu_exp.llm.providers._batch_store.BatchStore` under a tag before submitting it, polls
with exponential backoff, and yields each batch's samples when it ends. A rerun after a crash polls
the recorded batches that carry the samples it still needs, and submits only the rest.

A sample is paid for once. A create call that failed without saying whether the provider made
the batch (a timeout, a dropped connection, a 5xx) is followed by a lookup of the batch by its
tag (:mod:`._batch_api`) before the create is sent again; a run that gave up meanwhile leaves
the intent recorded, and the next run looks it up first. A recorded batch may hold samples the
run reading it does not want (a smaller ``k`` or dataset, a peer holding some keys): they go to
the cache too (``stream(jobs, spare=...)``), and the batch is closed only once all are stored.

Items the provider could not answer (an error, an expired or cancelled request, a whole batch
that failed, expired or can no longer be read) come back as failed samples (``error``), so
``generation.max_failed_share`` applies and the next run asks for them again. Budget caps
count requests and cost at the batch price (interactive price × ``model.batch_discount``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tqdm.auto import tqdm

from mcu_exp.llm.cache_keys import request_parts, sample_key
from mcu_exp.llm.contract import GenerationRequest, Sample, SampleJob
from mcu_exp.llm.providers._batch_api import BatchApi, BatchState, ItemOutcome, custom_id, new_tag
from mcu_exp.llm.providers._batch_calls import BatchCalls
from mcu_exp.llm.providers._batch_store import STORE_FILE, BatchStore, RecordedBatch, RecordedItem
from mcu_exp.llm.providers._common import Secret, estimate_tokens
from mcu_exp.llm.providers._errors import BudgetExceeded, MalformedResponse
from mcu_exp.llm.providers._limits import Budget
from mcu_exp.llm.providers._retry import RetryPolicy
from mcu_exp.llm.providers._runner import Usage

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

log = logging.getLogger("mcu_exp.llm.providers")
__all__ = ["BatchApi", "BatchBackend", "BatchState", "ItemOutcome", "SpareSink", "batch_budget"]
# Where samples no job asked for go: (their request's key parts, [(key, index, sample)]).
SpareSink = Callable[[Mapping[str, Any], Sequence[tuple[str, int, Sample]]], None]


@dataclass
class _Item:
    """One request of a batch: its sample keys in index order, what it reserved, and (where
    known) its sample indices, key parts and request, to store samples no job asked for."""

    keys: list[str]
    reserved: float = 0.0
    indices: list[int] | None = None
    parts: Mapping[str, Any] | None = None
    request: GenerationRequest | None = None

    @classmethod
    def recorded(cls, item: RecordedItem) -> _Item:
        return cls(item.keys, 0.0, item.indices, item.parts, item.request())


@dataclass
class _Line:
    """A request still to submit."""

    request: GenerationRequest
    indices: tuple[int, ...]
    keys: list[str]
    reserved: float
    body: dict[str, Any] = field(default_factory=dict)


def default_store_dir() -> Path:
    """Where batches are recorded when neither ``model.batch_dir`` nor a cache folder is given:
    the default ``cache.dir`` (``$MCU_EXP_OUTPUTS/cache``, else ``outputs/cache``)."""
    return Path(os.environ.get("MCU_EXP_OUTPUTS") or "outputs") / "cache"


class BatchBackend:
    """A :class:`~mcu_exp.llm.contract.Backend` over one provider's batch API.

    ``store_dir`` holds ``batches.sqlite`` (``model.batch_dir`` wins over it); polling starts
    at ``model.batch_poll_s`` and doubles up to ``model.batch_poll_max_s``.
    """

    keeps_spares = True  # stream() takes a sink for the samples of recorded batches no job asked for

    def __init__(
        self,
        cfg: ModelConfig,
        api: BatchApi,
        secret: Secret | None,
        identity: dict[str, Any],
        *,
        progress: bool = True,
        store_dir: str | Path | None = None,
    ) -> None:
        self.cfg = cfg
        self.api = api
        self._secret = secret
        self._identity = dict(identity)
        self.progress = progress
        self.policy = RetryPolicy.from_config(cfg)
        self.per_request = max(1, min(int(cfg.n_per_request), api.max_per_request))
        self.max_items = max(1, min(api.max_items, int(cfg.batch_max_requests or api.max_items)))
        self.poll_s = max(0.0, float(cfg.batch_poll_s))
        self.poll_max_s = max(self.poll_s, float(cfg.batch_poll_max_s))
        self.budget = batch_budget(cfg)
        chosen = cfg.batch_dir or store_dir
        self.store_path = (Path(chosen) if chosen else default_store_dir()) / STORE_FILE
        self.totals = Usage()
        self.batches = 0  # batches submitted by this backend
        self.calls = BatchCalls(api, self.model_id, secret, self.policy, self.store_path, self.totals)

    def __repr__(self) -> str:
        return f"BatchBackend(backend={self.api.name!r}, model_id={self.model_id!r})"

    @property
    def model_id(self) -> str:
        return str(self.cfg.model_id)

    def identity(self) -> dict[str, Any]:
        """The model part of cache keys: the interactive backend's (batch samples are the same samples)."""
        return dict(self._identity)

    def usage(self) -> dict[str, int | float]:
        """Requests, retries, samples, tokens, cost (batch price) and batches submitted so far."""
        return {**asdict(self.totals), "batches": self.batches}

    def stream(self, jobs: Sequence[SampleJob], spare: SpareSink | None = None) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)`` for every sample of ``jobs``, batch by batch.

        ``spare`` stores the samples a batch brings that no job asked for; without it, a batch
        holding such samples stays open, for the run that wants them.
        """
        wanted: dict[str, tuple[int, int]] = {}
        for pos, job in enumerate(jobs):
            for index in job.indices:
                wanted.setdefault(sample_key(self._identity, job.request, index), (pos, index))
        if not wanted:
            return
        store = BatchStore(self.store_path, self.api.name, self.model_id)
        client = None
        bar = tqdm(
            total=len(wanted), desc=f"{self.api.name}:{self.model_id} (batch)", unit="sample", disable=not self.progress
        )
        try:
            client = self.api.open(self._secret)
            pending = self._resume(client, store, store.open_batches(wanted))
            covered = {key for items in pending.values() for item in items.values() for key in item.keys}
            lines, capped = self._lines(jobs, wanted, covered)
            self._submit(client, store, lines, pending)
            for pos, index, sample in self._poll(client, store, pending, jobs, wanted, spare):
                bar.update(1)
                bar.set_postfix(batches=len(pending), cost=f"${self.totals.cost_usd:.4f}", refresh=False)
                yield pos, index, sample
            if capped:  # the batches that fitted are cached; the cap's message counts them
                raise BudgetExceeded(
                    f"{self.api.name} model '{self.model_id}': budget cap {self.budget.reason} (batch price); "
                    f"{self.totals.requests} requests submitted in batches, their samples kept; "
                    "raise the cap and rerun to continue"
                )
        finally:
            if client is not None:
                try:
                    self.api.close(client)
                except Exception:  # noqa: BLE001 (closing must not hide the real outcome)
                    log.debug("closing the %s client failed", self.api.name)
            store.close()
            bar.close()
            log.info("%s %s (batch): %s", self.api.name, self.model_id, self.usage())

    def _resume(
        self, client: Any, store: BatchStore, recorded: Mapping[str, RecordedBatch]
    ) -> dict[str, dict[str, _Item]]:
        """The recorded batches to poll: the open ones, and those whose create call went
        unanswered that a lookup by tag finds (the others are closed ``unsent``)."""
        pending: dict[str, dict[str, _Item]] = {}
        for batch_id, batch in recorded.items():
            if batch.state == "submitting":
                found = self.calls.retrying(
                    functools.partial(self._find, client, store, batch_id, len(batch.items), batch.created),
                    f"looking up batch {batch_id}",
                )
                if found is None:
                    log.info("%s: batch %s was never made; its samples are submitted again", self.api.name, batch_id)
                    store.close_batch(batch_id, "unsent")
                    continue
                log.info("%s: batch %s was made as %s", self.api.name, batch_id, found)
                store.accept(batch_id, found)
                batch_id = found
            pending[batch_id] = {cid: _Item.recorded(item) for cid, item in batch.items.items()}
        if pending:
            log.info("%s: resuming %d recorded batches: %s", self.api.name, len(pending), ", ".join(pending))
        return pending

    def _find(self, client: Any, store: BatchStore, tag: str, count: int, since: float) -> str | None:
        """The provider's id of the batch submitted under ``tag``, if it was made (one no record holds)."""
        found = self.api.find(client, tag, count, since)
        known = store.known(found)
        return next((batch_id for batch_id in found if batch_id not in known), None)

    def _lines(
        self, jobs: Sequence[SampleJob], wanted: Mapping[str, tuple[int, int]], covered: set[str]
    ) -> tuple[list[_Line], bool]:
        """The requests to submit (samples not in a recorded batch, split as the interactive
        backend splits them), each admitted by the budget; whether a cap stopped them."""
        lines: list[_Line] = []
        for pos, job in enumerate(jobs):
            todo = []
            for index in job.indices:
                key = sample_key(self._identity, job.request, index)
                if key not in covered and wanted.get(key) == (pos, index):
                    todo.append((index, key))
            for start in range(0, len(todo), self.per_request):
                chunk = todo[start : start + self.per_request]
                out_max = len(chunk) * self.api.output_tokens(job.request)
                reserved = self.budget.reserve(estimate_tokens(job.request), out_max)
                if reserved is None:
                    return lines, True
                lines.append(_Line(job.request, tuple(i for i, _ in chunk), [k for _, k in chunk], reserved))
        return lines, False

    def _submit(self, client: Any, store: BatchStore, lines: list[_Line], pending: dict[str, dict[str, _Item]]) -> None:
        """Pack ``lines`` into batches within the limits, each with a fresh tag; submit and record each."""
        group: list[_Line] = []
        size = 0
        tag = new_tag()
        for line in lines:
            line.body = self.api.line(line.request, len(line.indices), line.indices[0], custom_id(tag, len(group)))
            nbytes = len(json.dumps(line.body, ensure_ascii=False).encode()) + 1
            if group and (len(group) >= self.max_items or size + nbytes > self.api.max_bytes):
                self._submit_one(client, store, tag, group, pending)
                group, size, tag = [], 0, new_tag()
                line.body = self.api.line(line.request, len(line.indices), line.indices[0], custom_id(tag, 0))
            group.append(line)
            size += nbytes
        if group:
            self._submit_one(client, store, tag, group, pending)

    def _submit_one(
        self, client: Any, store: BatchStore, tag: str, group: list[_Line], pending: dict[str, dict[str, _Item]]
    ) -> None:
        """Record the batch under ``tag``, then create it; after a create call that failed
        without an answer, look the batch up by its tag before creating it again."""
        items = {
            custom_id(tag, n): _Item(
                line.keys, line.reserved, list(line.indices), request_parts(self._identity, line.request), line.request
            )
            for n, line in enumerate(group)
        }
        since = store.intend(
            tag, {cid: RecordedItem(item.keys, item.indices, dict(item.parts or {})) for cid, item in items.items()}
        )
        bodies = [line.body for line in group]
        sent = False

        def attempt() -> str:
            nonlocal sent
            if sent:  # the last create call may have made the batch
                found = self._find(client, store, tag, len(group), since)
                if found is not None:
                    log.info("%s: the unanswered create of batch %s made %s", self.api.name, tag, found)
                    return found
            sent = True
            return self.api.submit(client, bodies, tag)

        batch_id = cast(str, self.calls.retrying(attempt, f"submitting a batch of {len(group)} requests"))  # not lost
        store.accept(tag, batch_id)
        pending[batch_id] = items
        self.batches += 1
        self.totals.requests += len(group)
        log.info("%s: submitted batch %s (%d requests)", self.api.name, batch_id, len(group))

    def _poll(
        self,
        client: Any,
        store: BatchStore,
        pending: dict[str, dict[str, _Item]],
        jobs: Sequence[SampleJob],
        wanted: Mapping[str, tuple[int, int]],
        spare: SpareSink | None,
    ) -> Iterator[tuple[int, int, Sample]]:
        """Poll every pending batch with exponential backoff; yield each one's samples when it
        ends, and close it once every sample it brought is stored."""
        delay = self.poll_s
        while pending:
            for batch_id in list(pending):
                state = self.calls.retrying(
                    functools.partial(self.api.poll, client, batch_id), f"polling batch {batch_id}", lost=True
                )
                if state is None:  # the provider no longer knows the batch: its items are asked again
                    yield from self._failed(pending.pop(batch_id), jobs, wanted, "batch not found")
                    store.close_batch(batch_id, "lost")
                    continue
                if not state.ended:
                    continue
                outcomes = self.calls.retrying(
                    functools.partial(self.api.results, client, batch_id, state),
                    f"reading the results of batch {batch_id}",
                    lost=True,
                )
                items = pending.pop(batch_id)
                stored = yield from self._collect(items, outcomes or [], jobs, wanted, state, spare)
                if outcomes is None or stored:
                    store.close_batch(batch_id, "done" if outcomes is not None else "lost")
                else:
                    log.info(
                        "%s: batch %s stays open: it holds samples this run could not store", self.api.name, batch_id
                    )
            if pending:
                time.sleep(delay)
                delay = min(delay * 2, self.poll_max_s)

    def _collect(
        self,
        items: dict[str, _Item],
        outcomes: list[ItemOutcome],
        jobs: Sequence[SampleJob],
        wanted: Mapping[str, tuple[int, int]],
        state: BatchState,
        spare: SpareSink | None,
    ) -> Generator[tuple[int, int, Sample], None, bool]:
        """The wanted samples of an ended batch (items without a result, or with an error, fail);
        the others go to ``spare``. Returns whether every sample it brought was stored."""
        errors: dict[str, int] = {}
        stored = True
        for outcome in outcomes:
            item = items.pop(outcome.custom_id, None)
            if item is None:
                continue
            targets = [wanted.get(key) for key in item.keys]
            asked = next((t for t in targets if t), None)
            request = jobs[asked[0]].request if asked else item.request
            if request is None:  # a record that kept no request: its samples wait for a run that wants them
                stored = False
                continue
            result = None
            if outcome.data is not None:
                try:
                    result = self.api.parse(outcome.data, request, len(item.keys))
                except (MalformedResponse, ValueError, TypeError, AttributeError) as exc:
                    outcome = ItemOutcome(outcome.custom_id, None, f"malformed result: {exc}")
            if result is None or not result.samples:
                reason = self.calls.clean(outcome.error or "no result")
                errors[reason] = errors.get(reason, 0) + (1 if asked else 0)
                yield from self._failed({outcome.custom_id: item}, jobs, wanted, None)
                continue
            self.totals.cost_usd += self.budget.settle(item.reserved, result.prompt_tokens, result.completion_tokens)
            self.totals.prompt_tokens += result.prompt_tokens
            self.totals.completion_tokens += result.completion_tokens
            self.totals.samples += min(len(result.samples), len(item.keys))
            stored = self._keep_spares(item, request, targets, result.samples, spare) and stored
            for target, sample in zip(targets, result.samples):
                if target is not None:
                    yield target[0], target[1], sample
            for target in targets[len(result.samples) :]:
                if target is not None:
                    yield target[0], target[1], Sample("", "error")
        if items:
            reason = state.note or f"batch {state.status} without a result for the request"
            errors[reason] = errors.get(reason, 0) + sum(any(wanted.get(k) for k in i.keys) for i in items.values())
            yield from self._failed(items, jobs, wanted, None)
        for reason, count in errors.items():
            if count:
                log.warning(
                    "%s model '%s': %d batch requests failed (%s); their samples are retried on rerun",
                    self.api.name,
                    self.model_id,
                    count,
                    reason,
                )
        return stored

    def _keep_spares(
        self,
        item: _Item,
        request: GenerationRequest,
        targets: Sequence[tuple[int, int] | None],
        samples: Sequence[Sample],
        spare: SpareSink | None,
    ) -> bool:
        """Hand the samples of ``item`` that no job asked for to ``spare``; whether all were stored."""
        unasked = [n for n, target in enumerate(targets[: len(samples)]) if target is None]
        if not unasked:
            return True
        if spare is None or item.indices is None:
            return False
        parts = item.parts if item.parts is not None else request_parts(self._identity, request)
        spare(parts, [(item.keys[n], item.indices[n], samples[n]) for n in unasked])
        return True

    def _failed(
        self,
        items: Mapping[str, _Item],
        jobs: Sequence[SampleJob],
        wanted: Mapping[str, tuple[int, int]],
        reason: str | None,
    ) -> Iterator[tuple[int, int, Sample]]:
        """A failed sample (``error``) for every wanted key of ``items``."""
        if reason:
            log.warning(
                "%s model '%s': %d batch requests failed (%s); their samples are retried on rerun",
                self.api.name,
                self.model_id,
                len(items),
                reason,
            )
        for item in items.values():
            self.budget.settle(item.reserved, 0, 0)
            for key in item.keys:
                target = wanted.get(key)
                if target is not None:
                    self.totals.samples += 1
                    yield target[0], target[1], Sample("", "error")


def batch_budget(cfg: ModelConfig) -> Budget:
    """The model's budget caps with batch prices (interactive × ``batch_discount``)."""
    budget = Budget.from_config(cfg)
    discount = float(cfg.batch_discount)
    if budget.price_input_per_mtok is not None:
        budget.price_input_per_mtok = float(budget.price_input_per_mtok) * discount
    if budget.price_output_per_mtok is not None:
        budget.price_output_per_mtok = float(budget.price_output_per_mtok) * discount
    return budget
