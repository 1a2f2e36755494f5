"""The backend contract every proxy uses: a batch of requests in, n sampled texts per request out.

Backends differ only in how they turn a :class:`GenerationRequest` into model calls. Each
sample of a request is addressed by its index, so the cache can ask a backend for exactly
the samples it is missing (a rerun after a crash generates only those).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to sample ``n`` continuations from.

    Every field here changes what the model writes, so every field is part of the cache key.
    Sample ``i`` of a request is reproducible from ``(seed, i)`` alone.
    """

    messages: tuple[Message, ...]
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()
    seed: int = 0

    def decoding(self) -> dict[str, Any]:
        """The decoding parameters that change the output (for cache keys and logs)."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "stop": list(self.stop),
            "seed": self.seed,
        }


# Finish reasons that mean the provider withheld the text (a content filter, a refusal).
FILTERED_REASONS = frozenset({"filtered", "content_filter", "refusal", "safety", "recitation"})
FAILURE_KINDS = ("error", "filtered", "empty")


@dataclass(frozen=True)
class Sample:
    """One generated text with its token usage and why it ended."""

    text: str
    finish_reason: str  # stop | length | error | filtered
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def failure(self) -> str | None:
        """Why this sample holds no usable text (``error``, ``filtered``, ``empty``); None if it does."""
        if self.finish_reason == "error":
            return "error"
        if self.finish_reason in FILTERED_REASONS:
            return "filtered"
        if not self.text.strip():
            return "empty"
        return None


@dataclass
class GenerationResult:
    """The ``n`` samples of one request, in sample-index order."""

    request: GenerationRequest
    samples: list[Sample] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        """The usable texts: failed samples (errors, filtered, empty) are left out."""
        return [s.text for s in self.samples if s.failure is None]

    def failures(self) -> dict[str, int]:
        """How many samples failed, by kind (every kind of :data:`FAILURE_KINDS`, zeros included)."""
        counts = dict.fromkeys(FAILURE_KINDS, 0)
        for sample in self.samples:
            if sample.failure is not None:
                counts[sample.failure] += 1
        return counts


@dataclass(frozen=True)
class SampleJob:
    """Some sample indices of one request that a backend must produce."""

    request: GenerationRequest
    indices: tuple[int, ...]


class Backend(Protocol):
    """What a model backend provides.

    A backend may also offer ``usage() -> dict[str, int | float]``, running totals of what
    its calls spent (remote backends: requests, retries, samples, tokens, cost); the
    generator reports the part spent on its own samples.
    """

    def identity(self) -> dict[str, Any]:
        """Backend name, model id and weights identity: the model part of every cache key."""
        ...

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)`` as each sample finishes."""
        ...
