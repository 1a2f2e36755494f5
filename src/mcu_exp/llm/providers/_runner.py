"""The remote backend: an asyncio loop in a background thread, feeding samples to ``stream()``.

A provider supplies one async ``call`` (payload in, samples out); this module adds what
every provider needs around it: n samples per request where the API allows, a concurrency
limit, rate limits, retries with backoff, budget caps, a progress bar with retry counts, and
error messages free of the API key. The samples of a response are queued together the
moment it arrives, so the cache stores them (in one transaction) while its worker goes on.
A stop (budget cap, retries used up) lets the requests in flight finish and is reported
after them, so its message counts every sample they brought. So does a Ctrl-C or SIGTERM
(:func:`mcu_exp.interrupts.deferred`): nothing more is sent, the answers in flight are awaited
for ``interrupt_grace_s`` and handed on for the cache, then the stream raises KeyboardInterrupt;
a second signal ends it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tqdm.auto import tqdm

from mcu_exp import interrupts
from mcu_exp.llm.contract import GenerationRequest, Sample, SampleJob
from mcu_exp.llm.providers._common import Secret, estimate_tokens, scrub
from mcu_exp.llm.providers._errors import (
    AuthenticationFailed,
    BackendError,
    BadRequest,
    BudgetExceeded,
    MalformedResponse,
    RetriesExhausted,
)
from mcu_exp.llm.providers._limits import Budget, RateLimiter
from mcu_exp.llm.providers._retry import Failure, RetryPolicy, classify, retry_after, status_of
from mcu_exp.redact import redact_text

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

log = logging.getLogger("mcu_exp.llm.providers")


@dataclass
class CallResult:
    """What one API call returned: samples in candidate order, and its token usage."""

    samples: list[Sample]
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RemoteApi(Protocol):
    """The provider-specific part of a remote backend."""

    name: str  # backend name, as in ``model.backend``
    max_per_request: int  # most samples the API returns for one request
    transient_types: tuple[type[BaseException], ...]  # SDK connection/timeout errors

    def open(self, secret: Secret | None) -> Any:
        """Create the async client (called inside the backend's event loop)."""
        ...

    async def close(self, client: Any) -> None:
        """Close the client's connections."""
        ...

    async def call(self, client: Any, request: GenerationRequest, count: int, first: int) -> CallResult:
        """Request ``count`` samples (indices ``first``…) of ``request`` in one API call."""
        ...

    def max_output_tokens(self, request: GenerationRequest) -> int:
        """The per-sample output-token ceiling the call sets (for budget and rate checks)."""
        ...


@dataclass
class Usage:
    """Running totals of one backend, for the progress bar, logs and tracking."""

    requests: int = 0
    retries: int = 0
    samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class RemoteBackend:
    """A :class:`~mcu_exp.llm.contract.Backend` over one provider's async API.

    Concurrency, timeouts, retries, rate limits and budget caps all come from ``cfg``;
    ``progress=False`` draws no progress bar.
    """

    def __init__(
        self,
        cfg: ModelConfig,
        provider: RemoteApi,
        secret: Secret | None,
        identity: dict[str, Any],
        *,
        progress: bool = True,
    ) -> None:
        self.cfg = cfg
        self.provider = provider
        self._secret = secret
        self._identity = dict(identity)
        self.policy = RetryPolicy.from_config(cfg)
        self.per_request = max(1, min(int(cfg.n_per_request), provider.max_per_request))
        self.max_concurrency = max(1, int(cfg.max_concurrency))
        self.timeout_s = float(cfg.timeout_s)
        self.interrupt_grace_s = max(0.0, float(cfg.interrupt_grace_s))
        self.budget = Budget.from_config(cfg)
        self.limiter = RateLimiter(cfg.requests_per_minute, cfg.tokens_per_minute)
        self.progress = progress
        self.totals = Usage()
        self.kept = 0  # samples handed on for the cache (all but those that failed, finish "error")

    def __repr__(self) -> str:
        return f"RemoteBackend(backend={self.provider.name!r}, model_id={self.model_id!r})"

    @property
    def model_id(self) -> str:
        return str(self.cfg.model_id)

    def identity(self) -> dict[str, Any]:
        """The model part of cache keys (the provider module's ``identity(cfg)``)."""
        return dict(self._identity)

    def usage(self) -> dict[str, int | float]:
        """Requests, retries, samples, tokens and cost so far (for logs and MLflow metrics)."""
        return asdict(self.totals)

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)`` as each response arrives."""
        for batch in self.stream_batches(jobs):
            yield from batch

    def stream_batches(self, jobs: Sequence[SampleJob]) -> Iterator[list[tuple[int, int, Sample]]]:
        """Like :meth:`stream`, but the samples of a response come as one list (with those of
        any other responses already waiting), so the cache stores them in one transaction."""
        chunks = [
            (pos, tuple(job.indices[i : i + self.per_request]))
            for pos, job in enumerate(jobs)
            for i in range(0, len(job.indices), self.per_request)
        ]
        if not chunks:
            return
        run = _Run(self, jobs, chunks)
        thread = threading.Thread(target=run.main, name=f"mcu-exp-{self.provider.name}", daemon=True)
        bar = tqdm(
            total=sum(len(c[1]) for c in chunks),
            desc=f"{self.provider.name}:{self.model_id}",
            unit="sample",
            disable=not self.progress,
        )
        thread.start()
        try:
            with interrupts.deferred():
                yield from self._consume(run, thread, bar)
        finally:
            run.cancel()
            thread.join(timeout=10.0)
            bar.close()
            log.info("%s %s: %s", self.provider.name, self.model_id, self.usage())

    def _consume(self, run: _Run, thread: threading.Thread, bar: Any) -> Iterator[list[tuple[int, int, Sample]]]:
        """The batches of ``run`` as they arrive. After a signal (:func:`interrupts.requested`)
        no request is sent any more; those in flight are awaited for ``interrupt_grace_s``, their
        samples yielded like any others, then KeyboardInterrupt is raised (and the rest cancelled)."""
        held: list[tuple[str, Any]] = []  # met while gathering a batch: handled after it
        grace_ends: float | None = None  # set by a signal
        while True:
            wait = 0.2
            if grace_ends is None and interrupts.requested():
                run.stopping = True  # the workers send nothing more; those waiting give up
                grace_ends = time.monotonic() + self.interrupt_grace_s
            if grace_ends is not None:
                wait = min(wait, grace_ends - time.monotonic())
                if wait <= 0 and not held and run.out.empty():
                    raise KeyboardInterrupt  # the grace is over: what is still in flight is cancelled
            try:
                kind, payload = held.pop() if held else run.out.get(timeout=max(wait, 0.001))
            except queue.Empty:
                if not thread.is_alive() and run.out.empty():
                    if grace_ends is not None:
                        raise KeyboardInterrupt from None
                    raise BackendError(f"{self.provider.name}: backend thread ended unexpectedly") from None
                continue
            if kind == "samples":
                batch = list(payload)
                while not held:
                    try:
                        item = run.out.get_nowait()
                    except queue.Empty:
                        break
                    if item[0] == "samples":
                        batch += item[1]
                    else:
                        held.append(item)
                bar.update(len(batch))
                bar.set_postfix(retries=self.totals.retries, cost=f"${self.totals.cost_usd:.4f}", refresh=False)
                yield batch
            elif kind == "retry":
                bar.set_postfix(retries=self.totals.retries, cost=f"${self.totals.cost_usd:.4f}")
            elif kind == "error":
                if grace_ends is not None:  # the signal stops the job, not this failure
                    raise KeyboardInterrupt from None
                raise payload
            elif kind == "done":
                if grace_ends is not None:
                    raise KeyboardInterrupt
                return

    # Messages for errors that stop the stage; the provider text is scrubbed of the key.
    def detail(self, exc: BaseException) -> str:
        text = redact_text(scrub(f"{type(exc).__name__}: {exc}", [self._secret]))
        return text if len(text) <= 400 else text[:400] + "..."

    def cause(self, exc: BaseException) -> BaseException | None:
        """The exception to chain, for its traceback: never an SDK error carrying the HTTP
        exchange (its request holds the key in a header), nor one whose text holds the key."""
        text = f"{exc}"
        clean = scrub(text, [self._secret]) == text
        return (
            exc if clean and getattr(exc, "response", None) is None and getattr(exc, "request", None) is None else None
        )

    def fatal(self, kind: Failure, exc: BaseException) -> BackendError:
        where = f"{self.provider.name} model '{self.model_id}'"
        status = status_of(exc)
        if kind is Failure.AUTH:
            var = self._secret.env_var if self._secret else "(no key configured)"
            return AuthenticationFailed(
                f"{where}: the provider rejected the API key (HTTP {status}); "
                f"check the key in environment variable {var}. {self.detail(exc)}"
            )
        if kind is Failure.BAD_REQUEST:
            hint = "check model_id and quirks (drop_params, max_tokens_param, params)"
            if self.per_request > 1:
                hint += "; if the model rejects several samples per request, set n_per_request=1"
            return BadRequest(f"{where}: the provider rejected the request (HTTP {status}); {hint}. {self.detail(exc)}")
        return BackendError(f"{where}: unexpected failure: {self.detail(exc)}")


class _Run:
    """One ``stream()`` call: the worker pool inside the background thread's event loop."""

    def __init__(self, backend: RemoteBackend, jobs: Sequence[SampleJob], chunks: list[tuple[int, tuple[int, ...]]]):
        self.b = backend
        self.jobs = jobs
        self.chunks = chunks
        self.out: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stopping = False
        self.failure: Callable[[], BackendError] | None = None  # built once the requests in flight settle
        self.rng = random.Random()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._cancelled = False

    def main(self) -> None:
        """Thread body: run the loop, report the outcome on the queue."""
        try:
            asyncio.run(self._main())
        except asyncio.CancelledError:
            pass
        except BackendError as exc:
            self.out.put(("error", exc))
        except BaseException as exc:  # noqa: BLE001 (reported to the consumer, never swallowed)
            error = self.b.fatal(Failure.FATAL, exc)
            error.__cause__ = self.b.cause(exc)
            self.out.put(("error", error))
        finally:
            self.out.put(("done", None))

    def cancel(self) -> None:
        """Stop the loop from the consumer's thread (generator closed, error or interrupt)."""
        with self._lock:
            self._cancelled = True
            if self._loop is not None and self._task is not None and not self._loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self._loop.call_soon_threadsafe(self._task.cancel)

    async def _main(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        client = self.b.provider.open(self.b._secret)
        try:
            work: asyncio.Queue[tuple[int, tuple[int, ...]]] = asyncio.Queue()
            for chunk in self.chunks:
                work.put_nowait(chunk)
            workers = [
                asyncio.ensure_future(self._worker(client, work))
                for _ in range(min(self.b.max_concurrency, len(self.chunks)))
            ]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
        finally:
            try:
                await self.b.provider.close(client)
            except Exception:  # noqa: BLE001 (closing must not hide the real outcome)
                log.debug("closing the %s client failed", self.b.provider.name)
        if self.failure is not None:
            raise self.failure()

    def _stop(self, failure: Callable[[], BackendError]) -> None:
        """Start no new request; ``failure`` makes the error once those in flight have settled."""
        self.stopping = True
        if self.failure is None:
            self.failure = failure

    def _budget_stop(self, reason: str | None) -> BackendError:
        """The cap's one-line error, with the spend and the kept samples as they finally are."""
        b = self.b
        return BudgetExceeded(
            f"{b.provider.name} model '{b.model_id}': budget cap {reason}; spent {_usd(b.budget.cost_usd)} "
            f"in {b.budget.requests} requests; {b.kept} samples completed and kept; "
            "raise the cap and rerun to continue"
        )

    async def _worker(self, client: Any, work: asyncio.Queue[tuple[int, tuple[int, ...]]]) -> None:
        while not self.stopping and not work.empty():
            pos, indices = work.get_nowait()
            await self._chunk(client, pos, list(indices))

    async def _chunk(self, client: Any, pos: int, remaining: list[int]) -> None:
        b, request = self.b, self.jobs[pos].request
        failures = 0
        while remaining and not self.stopping:
            prompt_est = estimate_tokens(request)
            out_max = len(remaining) * b.provider.max_output_tokens(request)
            reserved = await b.budget.admit(prompt_est, out_max)
            if reserved is None:
                reason = b.budget.reason
                self._stop(functools.partial(self._budget_stop, reason))
                return
            if not self.stopping:
                await b.limiter.acquire(prompt_est + out_max)
            if self.stopping:  # stopped while this request waited: it is not sent
                b.budget.release(reserved)
                return
            b.totals.requests += 1
            try:
                result = await asyncio.wait_for(
                    b.provider.call(client, request, len(remaining), remaining[0]),
                    timeout=2 * b.timeout_s + 1.0,
                )
                if not result.samples:
                    raise MalformedResponse("the response held no completion")
            except asyncio.CancelledError:
                b.budget.settle(reserved, 0, 0)
                raise
            except Exception as exc:  # noqa: BLE001 (classified below; unknown kinds stop the stage)
                b.budget.settle(reserved, 0, 0)
                kind = classify(exc, b.provider.transient_types)
                if kind in (Failure.AUTH, Failure.BAD_REQUEST, Failure.FATAL):
                    raise b.fatal(kind, exc) from b.cause(exc)
                failures += 1
                if failures > b.policy.max_retries:
                    what = "malformed responses" if kind is Failure.MALFORMED else kind.value
                    head = (
                        f"{b.provider.name} model '{b.model_id}': a request failed {failures} times "
                        f"({what}; last: {b.detail(exc)}); gave up after max_retries={b.policy.max_retries}. "
                    )

                    def exhausted(head: str = head) -> RetriesExhausted:  # b.kept read when it stops
                        return RetriesExhausted(f"{head}{b.kept} samples completed and kept; rerun to resume")

                    self._stop(exhausted)
                    return
                delay = b.policy.delay(failures, retry_after(exc), self.rng)
                b.totals.retries += 1
                self.out.put(("retry", None))
                log.info("%s: retry %d in %.2fs after %s", b.provider.name, failures, delay, b.detail(exc))
                await asyncio.sleep(delay)
                continue
            cost = b.budget.settle(reserved, result.prompt_tokens, result.completion_tokens)
            b.limiter.settle(prompt_est + out_max, result.prompt_tokens + result.completion_tokens)
            b.totals.prompt_tokens += result.prompt_tokens
            b.totals.completion_tokens += result.completion_tokens
            b.totals.cost_usd += cost
            done = [(pos, index, sample) for index, sample in zip(remaining, result.samples)]
            b.totals.samples += len(done)
            b.kept += sum(sample.finish_reason != "error" for _, _, sample in done)
            self.out.put(("samples", done))
            remaining = remaining[len(done) :]


def _usd(amount: float) -> str:
    """Dollars with four decimals, six below a cent (a small spend never reads "$0.0000")."""
    return f"${amount:.4f}" if amount == 0 or amount >= 0.01 else f"${amount:.6f}"
