"""What a provider's batch API offers the batch backend (:mod:`._batch`), and how a batch is tagged.

Every batch carries a tag, chosen and recorded (:class:`~._batch_store.BatchStore`) before
the create call is sent: OpenAI keeps it in the batch's ``metadata``, Gemini in its
``display_name``, and every request's ``custom_id`` starts with it (Anthropic's only place
for it). After a create call whose answer never came (a timeout, a dropped connection, a 5xx
after the provider made the batch), :meth:`BatchApi.find` looks the batch up by its tag
before anything is submitted again.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mcu_exp.llm.contract import GenerationRequest
from mcu_exp.llm.providers._common import Secret
from mcu_exp.llm.providers._runner import CallResult

TAG_FIELD = "mcu_exp_batch"  # the metadata key of the tag on OpenAI batches
LOOKUP_SLACK_S = 900.0  # a lookup reads batches created this long before the intent, for clock skew
LOOKUP_MAX = 1000  # most listed batches a lookup reads


def new_tag() -> str:
    """A fresh batch tag: ``mcu-`` and 20 random hex digits (fits every provider's custom id)."""
    return "mcu-" + secrets.token_hex(10)


def custom_id(tag: str, position: int) -> str:
    """The custom id of a batch's request at ``position``: the batch's tag, then ``-c<position>``."""
    return f"{tag}-c{position}"


def epoch(value: Any) -> float | None:
    """A provider's creation time (epoch seconds, a datetime or an RFC 3339 string) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return value.timestamp() if isinstance(value, datetime) else None


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

    def submit(self, client: Any, lines: Sequence[dict[str, Any]], tag: str) -> str:
        """Create a batch of ``lines`` tagged ``tag`` where the provider keeps tags; its id."""
        ...

    def find(self, client: Any, tag: str, count: int, since: float) -> list[str]:
        """The batches created since ``since`` (epoch seconds, less :data:`LOOKUP_SLACK_S`) that
        may be the one tagged ``tag`` holding ``count`` requests, best match first: the tagged
        one where the provider shows tags, else those of that size (their custom ids tell)."""
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
