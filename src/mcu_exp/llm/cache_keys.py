"""What a cached sample's key is made of, and the key itself: the sha256 of the canonical
JSON of the backend identity, the decoding parameters, the messages and the sample index
(``n`` and what does not change the text are left out). The same keys on every store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from mcu_exp.llm.contract import GenerationRequest


def key_parts(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> dict[str, Any]:
    """What a sample's key is made of."""
    return {
        "backend": dict(identity),
        "decoding": request.decoding(),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "index": int(index),
    }


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sample_key(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> str:
    """sha256 of the canonical JSON of :func:`key_parts`."""
    return hashlib.sha256(canonical_json(key_parts(identity, request, index)).encode()).hexdigest()


_INDEX = '"index":'


def sample_keys(identity: Mapping[str, Any], request: GenerationRequest, indices: Iterable[int]) -> list[str]:
    """:func:`sample_key` of each of ``indices``, encoding the request's JSON once.

    The canonical JSON of the parts is ``{"backend":…,"decoding":…,"index":I,"messages":…}``
    (sorted keys), so only the digits of ``I`` differ between samples; the messages' strings
    are escaped, so the last ``"index":0,"messages":`` is the top-level one.
    """
    text = canonical_json(key_parts(identity, request, 0))
    cut = text.rfind(_INDEX + '0,"messages":')
    if cut < 0:  # a layout this shortcut does not know: the plain way
        return [sample_key(identity, request, index) for index in indices]
    cut += len(_INDEX)
    head = hashlib.sha256(text[:cut].encode())
    tail = text[cut + 1 :].encode()
    keys = []
    for index in indices:
        digest = head.copy()
        digest.update(b"%d" % int(index) + tail)
        keys.append(digest.hexdigest())
    return keys


def request_parts(identity: Mapping[str, Any], request: GenerationRequest) -> dict[str, Any]:
    """What every sample key of ``request`` shares: :func:`key_parts` without the index."""
    parts = key_parts(identity, request, 0)
    del parts["index"]
    return parts
