"""The batch backend (``model.batch: true``): a stage's missing samples as provider batches.

OpenAI Batch, Anthropic Message Batches and Gemini batch mode bill half the interactive
price for requests answered within a day. :class:`BatchBackend` implements the same
:class:`~mcu_exp.llm.contract.Backend` protocol as the interactive backend, so the generator
and its cache are unchanged: ``stream(jobs)`` splits the missing samples into requests
exactly as the interactive backend would (same body, same per-index seeds), packs them into
batches within the provider's limits (requests and bytes), records every accepted batch in
:class:`~mcu_exp.llm.providers._batch_store.BatchStore` before polling it, polls with
exponential backoff, and yields each batch's samples when it ends. A rerun after a crash polls
the recorded batches that carry the samples it still needs, and submits only the rest.

Items the provider could not answer (an error, an expired or cancelled request, a whole batch
that failed, expired or can no longer be read) come back as failed samples (``error``), so
``generation.max_failed_share`` applies and the next run asks for them again. Budget caps
count requests and cost at the batch price (interactive price × ``model.batch_discount``).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tqdm.auto import tqdm

from mcu_exp.llm.cache import sample_key
from mcu_exp.llm.contract import GenerationRequest, Sample, SampleJob
from mcu_exp.llm.providers._batch_store import STORE_FILE, BatchStore
from mcu_exp.llm.providers._common import Secret, estimate_tokens, scrub
from mcu_exp.llm.providers._errors import (
    AuthenticationFailed,
    BackendError,
    BadRequest,
    BudgetExceeded,
    MalformedResponse,
    RetriesExhausted,
)
from mcu_exp.llm.providers._limits import Budget
from mcu_exp.llm.providers._retry import Failure, RetryPolicy, classify, retry_after, status_of
from mcu_exp.llm.providers._runner import CallResult, Usage
from mcu_exp.redact import redact_text

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

log = logging.getLogger("mcu_exp.llm.providers")
T = TypeVar("T")


@dataclass(frozen=True)
class BatchState:
    """A polled batch: whether it has ended, the provider's status word, why it ended early."""

    ended: bool
    status: str
    note: str = ""  # e.g. "batch expired": the reason given to items without a result
    handle: Any = None  # the provider's batch object, for reading its results


@dataclass(frozen=True)
class ItemOutcome:
    """One result line: the response body (None when the item failed) or why it failed."""

    custom_id: str
    data: Mapping[str, Any] | None
    error: str = ""


class BatchApi(Protocol):
    """The provider-specific part of a batch backend (sync client calls)."""

    name: str  # backend name, as in ``model.backend``
    max_items: int  # most requests one batch may hold
    max_bytes: int  # most bytes of request lines one batch may hold
    max_per_request: int  # most samples one request returns
    transient_types: tuple[type[BaseException], ...]

    def open(self, secret: Secret | None) -> Any:
        """A sync client."""
        ...

    def close(self, client: Any) -> None:
        """Close the client's connections."""
        ...

    def line(self, request: GenerationRequest, count: int, first: int, custom_id: str) -> dict[str, Any]:
        """One batch request asking ``count`` samples from index ``first``: the interactive body."""
        ...

    def submit(self, client: Any, lines: Sequence[dict[str, Any]]) -> str:
        """Create a batch of ``lines``; its id."""
        ...

    def poll(self, client: Any, batch_id: str) -> BatchState:
        """The batch's state now."""
        ...

    def results(self, client: Any, batch_id: str, state: BatchState) -> list[ItemOutcome]:
        """Every result line of an ended batch (items without a line failed)."""
        ...

    def parse(self, data: Mapping[str, Any], request: GenerationRequest, count: int) -> CallResult:
        """The samples of one successful item, parsed as the interactive backend parses them."""
        ...

    def output_tokens(self, request: GenerationRequest) -> int:
        """The per-sample output ceiling a request sets (for the budget)."""
        ...


@dataclass
class _Item:
    """One request of a batch: its sample keys in index order, and what it reserved."""

    keys: list[str]
    reserved: float = 0.0


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

    def __init__(self, cfg: ModelConfig, api: BatchApi, secret: Secret | None, identity: dict[str, Any], *,
                 progress: bool = True, store_dir: str | Path | None = None) -> None:
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
        self.rng = random.Random()

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

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)`` for every sample of ``jobs``, batch by batch."""
        wanted: dict[str, tuple[int, int]] = {}
        for pos, job in enumerate(jobs):
            for index in job.indices:
                wanted.setdefault(sample_key(self._identity, job.request, index), (pos, index))
        if not wanted:
            return
        store = BatchStore(self.store_path, self.api.name, self.model_id)
        client = None
        bar = tqdm(total=len(wanted), desc=f"{self.api.name}:{self.model_id} (batch)", unit="sample",
                   disable=not self.progress)
        try:
            pending = {bid: {cid: _Item(keys) for cid, keys in items.items()}
                       for bid, items in store.open_batches(wanted).items()}
            if pending:
                log.info("%s: resuming %d recorded batches: %s", self.api.name, len(pending), ", ".join(pending))
            covered = {key for items in pending.values() for item in items.values() for key in item.keys}
            lines, capped = self._lines(jobs, wanted, covered)
            client = self.api.open(self._secret)
            self._submit(client, store, lines, pending)
            for pos, index, sample in self._poll(client, store, pending, jobs, wanted):
                bar.update(1)
                bar.set_postfix(batches=len(pending), cost=f"${self.totals.cost_usd:.4f}", refresh=False)
                yield pos, index, sample
            if capped:  # the batches that fitted are cached; the cap's message counts them
                raise BudgetExceeded(
                    f"{self.api.name} model '{self.model_id}': budget cap {self.budget.reason} (batch price); "
                    f"{self.totals.requests} requests submitted in batches, their samples kept; "
                    "raise the cap and rerun to continue")
        finally:
            if client is not None:
                try:
                    self.api.close(client)
                except Exception:  # noqa: BLE001 (closing must not hide the real outcome)
                    log.debug("closing the %s client failed", self.api.name)
            store.close()
            bar.close()
            log.info("%s %s (batch): %s", self.api.name, self.model_id, self.usage())

    def _lines(self, jobs: Sequence[SampleJob], wanted: Mapping[str, tuple[int, int]],
               covered: set[str]) -> tuple[list[_Line], bool]:
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
                chunk = todo[start:start + self.per_request]
                out_max = len(chunk) * self.api.output_tokens(job.request)
                reserved = self.budget.reserve(estimate_tokens(job.request), out_max)
                if reserved is None:
                    return lines, True
                lines.append(_Line(job.request, tuple(i for i, _ in chunk), [k for _, k in chunk], reserved))
        return lines, False

    def _submit(self, client: Any, store: BatchStore, lines: list[_Line],
                pending: dict[str, dict[str, _Item]]) -> None:
        """Pack ``lines`` into batches within the limits, submit and record each."""
        group: list[_Line] = []
        size = 0
        for line in lines:
            line.body = self.api.line(line.request, len(line.indices), line.indices[0], f"c{len(group)}")
            nbytes = len(json.dumps(line.body, ensure_ascii=False).encode()) + 1
            if group and (len(group) >= self.max_items or size + nbytes > self.api.max_bytes):
                self._submit_one(client, store, group, pending)
                group, size = [], 0
                line.body = self.api.line(line.request, len(line.indices), line.indices[0], "c0")
            group.append(line)
            size += nbytes
        if group:
            self._submit_one(client, store, group, pending)

    def _submit_one(self, client: Any, store: BatchStore, group: list[_Line],
                    pending: dict[str, dict[str, _Item]]) -> None:
        batch_id = self._retrying(lambda: self.api.submit(client, [line.body for line in group]),
                                  f"submitting a batch of {len(group)} requests")
        items = {f"c{n}": _Item(line.keys, line.reserved) for n, line in enumerate(group)}
        store.record(batch_id, {cid: item.keys for cid, item in items.items()})
        pending[batch_id] = items
        self.batches += 1
        self.totals.requests += len(group)
        log.info("%s: submitted batch %s (%d requests)", self.api.name, batch_id, len(group))

    def _poll(self, client: Any, store: BatchStore, pending: dict[str, dict[str, _Item]],
              jobs: Sequence[SampleJob], wanted: Mapping[str, tuple[int, int]]) -> Iterator[tuple[int, int, Sample]]:
        """Poll every pending batch with exponential backoff; yield each one's samples when it ends."""
        delay = self.poll_s
        while pending:
            for batch_id in list(pending):
                state = self._retrying(lambda: self.api.poll(client, batch_id), f"polling batch {batch_id}",
                                       lost=True)
                if state is None:  # the provider no longer knows the batch: its items are asked again
                    yield from self._failed(pending.pop(batch_id), jobs, wanted, "batch not found")
                    store.close_batch(batch_id, "lost")
                    continue
                if not state.ended:
                    continue
                outcomes = self._retrying(lambda: self.api.results(client, batch_id, state),
                                          f"reading the results of batch {batch_id}", lost=True)
                items = pending.pop(batch_id)
                yield from self._collect(items, outcomes or [], jobs, wanted, state)
                store.close_batch(batch_id, "done" if outcomes is not None else "lost")
            if pending:
                time.sleep(delay)
                delay = min(delay * 2, self.poll_max_s)

    def _collect(self, items: dict[str, _Item], outcomes: list[ItemOutcome], jobs: Sequence[SampleJob],
                 wanted: Mapping[str, tuple[int, int]], state: BatchState) -> Iterator[tuple[int, int, Sample]]:
        """The samples of an ended batch; items without a result (or with an error) fail."""
        errors: dict[str, int] = {}
        for outcome in outcomes:
            item = items.pop(outcome.custom_id, None)
            targets = [wanted.get(key) for key in item.keys] if item is not None else []
            if item is None or not any(targets):
                continue
            request = jobs[next(t for t in targets if t)[0]].request
            result = None
            if outcome.data is not None:
                try:
                    result = self.api.parse(outcome.data, request, len(item.keys))
                except (MalformedResponse, ValueError, TypeError, AttributeError) as exc:
                    outcome = ItemOutcome(outcome.custom_id, None, f"malformed result: {exc}")
            if result is None or not result.samples:
                reason = self._clean(outcome.error or "no result")
                errors[reason] = errors.get(reason, 0) + 1
                yield from self._failed({outcome.custom_id: item}, jobs, wanted, None)
                continue
            self.totals.cost_usd += self.budget.settle(item.reserved, result.prompt_tokens, result.completion_tokens)
            self.totals.prompt_tokens += result.prompt_tokens
            self.totals.completion_tokens += result.completion_tokens
            for target, sample in zip(targets, result.samples):
                self.totals.samples += 1
                if target is not None:
                    yield target[0], target[1], sample
            for target in targets[len(result.samples):]:
                if target is not None:
                    yield target[0], target[1], Sample("", "error")
        if items:
            reason = state.note or f"batch {state.status} without a result for the request"
            errors[reason] = errors.get(reason, 0) + len(items)
            yield from self._failed(items, jobs, wanted, None)
        for reason, count in errors.items():
            log.warning("%s model '%s': %d batch requests failed (%s); their samples are retried on rerun",
                        self.api.name, self.model_id, count, reason)

    def _failed(self, items: Mapping[str, _Item], jobs: Sequence[SampleJob], wanted: Mapping[str, tuple[int, int]],
                reason: str | None) -> Iterator[tuple[int, int, Sample]]:
        """A failed sample (``error``) for every wanted key of ``items``."""
        if reason:
            log.warning("%s model '%s': %d batch requests failed (%s); their samples are retried on rerun",
                        self.api.name, self.model_id, len(items), reason)
        for item in items.values():
            self.budget.settle(item.reserved, 0, 0)
            for key in item.keys:
                target = wanted.get(key)
                if target is not None:
                    self.totals.samples += 1
                    yield target[0], target[1], Sample("", "error")

    def _retrying(self, call: Callable[[], T], what: str, lost: bool = False) -> T | None:
        """``call()``, retried with backoff while it fails transiently. With ``lost``, a
        rejected request (HTTP 400/404: the batch or its results are gone) gives None."""
        failures = 0
        while True:
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 (classified below; unknown kinds stop the stage)
                kind = classify(exc, self.api.transient_types)
                if kind is Failure.BAD_REQUEST and lost:
                    log.warning("%s: %s: %s", self.api.name, what, self._clean(self._detail(exc)))
                    return None
                if kind in (Failure.AUTH, Failure.BAD_REQUEST, Failure.FATAL):
                    raise self._fatal(kind, exc, what) from None
                failures += 1
                if failures > self.policy.max_retries:
                    raise RetriesExhausted(
                        f"{self.api.name} model '{self.model_id}': {what} failed {failures} times "
                        f"({kind.value}; last: {self._detail(exc)}); gave up after max_retries="
                        f"{self.policy.max_retries}. Submitted batches are recorded in {self.store_path}; "
                        "rerun to resume them") from None
                self.totals.retries += 1
                delay = self.policy.delay(failures, retry_after(exc), self.rng)
                log.info("%s: retry %d of %s in %.2fs after %s", self.api.name, failures, what, delay,
                         self._detail(exc))
                time.sleep(delay)

    def _clean(self, text: str) -> str:
        text = redact_text(scrub(text, [self._secret]))
        return text if len(text) <= 300 else text[:300] + "..."

    def _detail(self, exc: BaseException) -> str:
        return self._clean(f"{type(exc).__name__}: {exc}")

    def _fatal(self, kind: Failure, exc: BaseException, what: str) -> BackendError:
        where = f"{self.api.name} model '{self.model_id}' (batch)"
        status = status_of(exc)
        if kind is Failure.AUTH:
            var = self._secret.env_var if self._secret else "(no key configured)"
            return AuthenticationFailed(f"{where}: the provider rejected the API key (HTTP {status}) while "
                                        f"{what}; check the key in environment variable {var}. {self._detail(exc)}")
        if kind is Failure.BAD_REQUEST:
            return BadRequest(f"{where}: the provider rejected {what} (HTTP {status}); check model_id, quirks "
                              f"and that the model offers batches. {self._detail(exc)}")
        return BackendError(f"{where}: unexpected failure while {what}: {self._detail(exc)}")


def batch_budget(cfg: ModelConfig) -> Budget:
    """The model's budget caps with batch prices (interactive × ``batch_discount``)."""
    budget = Budget.from_config(cfg)
    discount = float(cfg.batch_discount)
    if budget.price_input_per_mtok is not None:
        budget.price_input_per_mtok = float(budget.price_input_per_mtok) * discount
    if budget.price_output_per_mtok is not None:
        budget.price_output_per_mtok = float(budget.price_output_per_mtok) * discount
    return budget
