"""Sampling many continuations of some prompts: prefill each once, decode the rows together.

Each prompt goes through the model once; every requested sample then decodes from its
prompt's prefix, as a row of one batch that may hold the rows of several prompts (each row
attends only to its own prompt and tokens, :mod:`mcu_exp.llm.shared_prefix`), the next prompts'
rows joining as rows finish (continuous batching, :meth:`PrefixDecoder.decode_many`). Sample ``i`` draws its
random numbers from its own generator, seeded from ``(seed, i, prompt)``, so its text never
depends on which other samples share its batch (a rerun that generates only the missing
indices reproduces the same texts, up to floating-point differences between batch shapes).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mcu_exp.llm.contract import GenerationRequest, Sample
from mcu_exp.llm.shared_prefix import PrefixGroup, prefix_tensors

# A part larger than the free slots is split over them when at least 1/_SPLIT_AT of the batch is
# free: fewer decode steps, but each slice costs its own attention calls (measured on the default
# run's workload: 157 steps of 52.9 rows on average at 1/16, 182 of 45.6 at 1/4, 151 of 55.0 at 1/64).
_SPLIT_AT = 16


@dataclass(frozen=True)
class Prefix:
    """The prompt after one forward pass: its cache, next-token logits and length."""

    cache: Any
    logits: torch.Tensor  # [vocab]
    length: int


@dataclass(frozen=True)
class Part:
    """Some sample indices of one request, to decode from its prefilled prompt."""

    request: GenerationRequest
    prefix: Prefix
    indices: Sequence[int]


def row_seed(request: GenerationRequest, index: int) -> int:
    """Seed of sample ``index``'s generator: a hash of the request's seed, the index and the
    messages (so two programs' samples with the same seed use different random numbers)."""
    messages = [[m.role, m.content] for m in request.messages]
    blob = json.dumps([request.seed, index, messages], ensure_ascii=False, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big") & (2**63 - 1)


def row_uniforms(request: GenerationRequest, indices: Sequence[int]) -> torch.Tensor:
    """``[len(indices), max_new_tokens]`` uniforms in [0, 1), row ``r`` from sample ``indices[r]``'s generator."""
    rows = []
    for index in indices:
        gen = torch.Generator().manual_seed(row_seed(request, index))
        rows.append(torch.rand(request.max_new_tokens, generator=gen, dtype=torch.float64))
    return torch.stack(rows)


def sample_tokens(logits: torch.Tensor, uniforms: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Temperature + nucleus sampling by inverse CDF: row ``r`` takes the token where its
    uniform ``uniforms[r]`` falls in the renormalised top-p distribution (greedy when
    ``temperature <= 0``). Same distribution as ``torch.multinomial``, but each row's draw
    comes from its own pre-drawn random number."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    order = None
    if top_p < 1.0:
        probs, order = _nucleus_candidates(probs, top_p)
        probs = probs.double()
        keep = (probs.cumsum(dim=-1) - probs) < top_p  # the most likely token is always kept
        probs = probs * keep
        last = keep.sum(dim=-1, keepdim=True) - 1
    else:
        probs = probs.double()
        last = torch.full((probs.shape[0], 1), probs.shape[1] - 1, device=probs.device)
    cdf = probs.cumsum(dim=-1)
    target = (uniforms.to(cdf.device) * cdf[:, -1]).unsqueeze(1)
    pos = torch.searchsorted(cdf, target, right=True).clamp_(max=last)
    picked = pos if order is None else order.gather(1, pos)
    return picked.squeeze(1)


def _nucleus_candidates(probs: torch.Tensor, top_p: float, first: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """The most likely tokens, in order, enough to hold every row's top-p nucleus.

    A full sort of the vocabulary costs ~90 ms a step for 50 rows on a CPU; the nucleus
    usually sits in the first few hundred tokens, so take the top ``k`` and double ``k``
    until each row's top ``k`` holds at least ``top_p`` of its mass.
    """
    vocab = probs.shape[-1]
    k = min(first, vocab)
    while True:
        values, order = probs.topk(k, dim=-1)
        if k == vocab or bool((values.double().sum(dim=-1) >= top_p).all()):
            return values, order
        k = min(2 * k, vocab)


def _cut(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the first stop string, and whether one was found."""
    cuts = [pos for pos in (text.find(s) for s in stop) if pos >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


class PrefixDecoder:
    """Decode rows of samples from one prefilled prompt with a Hugging Face causal LM.

    ``shared_prefix=True`` uses :mod:`mcu_exp.llm.shared_prefix` (the prompt's keys and
    values stored once); ``False`` copies the prompt cache into every row.
    """

    def __init__(
        self, model: Any, tokenizer: Any, eos_ids: set[int], shared_prefix: bool, cache_kwarg: str = "cache"
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids
        self.shared_prefix = shared_prefix
        self.cache_kwarg = cache_kwarg
        self.device = next(model.parameters()).device

    @torch.inference_mode()
    def prefill(self, prompt_ids: Sequence[int]) -> Prefix:
        """Run the prompt through the model once."""
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out["cache"] if "cache" in out else out["past_key_values"]
        return Prefix(cache=cache, logits=out.logits[0, -1], length=ids.shape[1])

    @torch.inference_mode()
    def _step(self, tokens: torch.Tensor, positions: torch.Tensor, cache: Any, prefix: Any) -> torch.Tensor:
        kwargs: dict[str, Any] = {"shared_prefix": prefix} if prefix is not None else {self.cache_kwarg: cache}
        out = self.model(input_ids=tokens, position_ids=positions, use_cache=prefix is None, logits_to_keep=1, **kwargs)
        logits: torch.Tensor = out.logits[:, -1]
        return logits

    def _row_cache(self, prefix: Prefix, rows: int) -> tuple[Any, Any]:

        if self.shared_prefix:
            tensors = prefix_tensors(prefix.cache)
            return None, [PrefixGroup(0, rows, tensors, [None] * len(tensors))]
        cache = copy.deepcopy(prefix.cache)
        cache.batch_repeat_interleave(rows)
        return cache, None

    def shared_prefix_agrees(self, probe: Sequence[int]) -> bool:
        """Whether shared-prefix attention gives this model's own next-token logits (checked
        once at load: models with attention features it lacks, e.g. soft-capping, fail it)."""
        prefix = self.prefill(probe)
        tokens = torch.tensor([[probe[-1]], [probe[0]]], device=self.device)
        wanted = self.shared_prefix
        logits = []
        try:
            for shared in (True, False):
                self.shared_prefix = shared
                cache, tensors = self._row_cache(prefix, 2)
                positions = torch.full_like(tokens, prefix.length)
                logits.append(self._step(tokens, positions, cache, tensors).float())
        except (NotImplementedError, ValueError, KeyError, TypeError, AttributeError):
            return False
        finally:
            self.shared_prefix = wanted
        tolerance = 1e-3 if prefix.logits.dtype == torch.float32 else 3e-2
        error = (logits[0] - logits[1]).abs().max() / logits[1].abs().max().clamp_min(1.0)
        return bool(error < tolerance)

    def _finish(self, tokens: list[int], stop: Sequence[str], limit: int, use_eos: bool) -> tuple[str, str] | None:
        """``(text, finish_reason)`` once a row is done, else None.

        Stop strings are looked for in the text of the last few tokens at every step (a stop
        string completes there the step it appears) and in the whole text when the row ends.
        """
        if use_eos and tokens[-1] in self.eos_ids:
            return _cut(self.tokenizer.decode(tokens[:-1], skip_special_tokens=True), stop)[0], "stop"
        if stop:
            window = max(len(s) for s in stop) + 8
            tail = self.tokenizer.decode(tokens[-window:], skip_special_tokens=True)
            if any(s in tail for s in stop):
                text, cut = _cut(self.tokenizer.decode(tokens, skip_special_tokens=True), stop)
                if cut:
                    return text, "stop"
        if len(tokens) >= limit:
            text, cut = _cut(self.tokenizer.decode(tokens, skip_special_tokens=True), stop)
            return text, "stop" if cut else "length"
        return None

    def decode(
        self, request: GenerationRequest, prefix: Prefix, indices: Sequence[int], use_eos: bool = True
    ) -> Iterator[tuple[int, Sample]]:
        """Yield ``(sample index, sample)`` of one request as each row finishes (:meth:`decode_many`)."""
        for _, index, sample in self.decode_many([Part(request, prefix, indices)], len(indices) or 1, use_eos):
            yield index, sample

    def decode_many(
        self, parts: Iterable[Part], max_rows: int, use_eos: bool = True
    ) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(part number, sample index, sample)`` as each row finishes: continuous batching.

        Parts are admitted in order while their rows fit in ``max_rows``; as rows finish, the next
        parts' rows take their slots (:meth:`_admit`), so the batch stays full until the parts run
        out. Each admitted slice keeps its own step count, positions, random streams and own
        keys/values, and attends only to its own prompt, so a row's text does not depend on when
        it joined or on its neighbours. ``parts`` is consumed lazily, one part ahead of admission
        (a caller may prefill prompts as they are pulled). Without shared-prefix attention (a
        per-row copy of the prompt cache) the parts decode one after another.
        ``use_eos=False`` ignores end-of-sequence tokens (benchmarks force a fixed length)."""
        source = iter(enumerate(parts))
        pending = _next_part(source)
        live: list[_Slice] = []
        cache: Any = None
        while True:
            pending, admitted = self._admit(source, pending, live, max_rows)
            for number, part in admitted:
                if part.request.max_new_tokens <= 0:
                    for index in part.indices:
                        yield number, index, Sample("", "length", part.prefix.length, 0)
                    continue
                live.append(_Slice(number, part, self.shared_prefix))
                if not self.shared_prefix:
                    cache, _ = self._row_cache(part.prefix, len(part.indices))
            if not live:
                if pending is None:
                    return
                continue
            for piece in live:
                yield from self._sample(piece, use_eos, cache)
            live = [piece for piece in live if piece.live]
            if live:
                self._forward(live, cache)

    def _admit(
        self, source: Iterator[tuple[int, Part]], pending: tuple[int, Part] | None, live: list[_Slice], max_rows: int
    ) -> tuple[tuple[int, Part] | None, list[tuple[int, Part]]]:
        """The next parts' rows for the free slots, in order: a part joins whole when it fits; a
        part larger than the free slots is split over them when at least ``1/_SPLIT_AT`` of the
        batch is free (many small slices would cost more per step than they save). Per-row copies of the prompt
        cache admit one whole part at a time. A function of the parts and of which rows have
        finished, never of timing."""
        admitted: list[tuple[int, Part]] = []
        if not self.shared_prefix:
            if pending is not None and not live:
                admitted.append(pending)
                pending = _next_part(source)
            return pending, admitted
        free = max_rows - sum(len(piece.live) for piece in live)
        while pending is not None and free > 0:
            number, part = pending
            size = len(part.indices) if part.request.max_new_tokens > 0 else 0
            if size <= free:
                admitted.append(pending)
                free -= size
                pending = _next_part(source)
            elif free >= max(1, max_rows // _SPLIT_AT):
                admitted.append((number, Part(part.request, part.prefix, part.indices[:free])))
                pending = (number, Part(part.request, part.prefix, part.indices[free:]))
                free = 0
            else:
                break
        return pending, admitted

    def _sample(self, piece: _Slice, use_eos: bool, cache: Any) -> Iterator[tuple[int, int, Sample]]:
        """Sample the next token of each live row of ``piece``; yield the rows that finish and
        drop them from the slice (and from its keys/values)."""
        request = piece.part.request
        tokens = sample_tokens(piece.logits, piece.uniforms[piece.live, piece.step], request.temperature, request.top_p)
        still = []
        for slot, (row, token) in enumerate(zip(piece.live, tokens.tolist())):
            piece.generated[row].append(token)
            done = self._finish(piece.generated[row], piece.stop, request.max_new_tokens, use_eos)
            if done is None:
                still.append(slot)
            else:
                sample = Sample(done[0], done[1], piece.part.prefix.length, len(piece.generated[row]))
                yield piece.number, piece.part.indices[row], sample
        piece.step += 1
        if len(still) < len(piece.live):
            keep = torch.tensor(still, dtype=torch.long, device=self.device)
            tokens = tokens[keep]
            piece.live = [piece.live[slot] for slot in still]
            if cache is not None and still:
                cache.batch_select_indices(keep)
            piece.own = [None if kv is None else (kv[0][keep], kv[1][keep]) for kv in piece.own]
        piece.tokens = tokens

    def _forward(self, live: Sequence[_Slice], cache: Any) -> None:
        """One decode step for the live rows of all slices; each slice gets its rows' next-token logits."""
        tokens = torch.cat([piece.tokens for piece in live]).unsqueeze(1)
        positions = torch.cat(
            [
                torch.full((len(piece.live), 1), piece.part.prefix.length + piece.step - 1, device=self.device)
                for piece in live
            ]
        )
        if self.shared_prefix:
            groups, start = [], 0
            for piece in live:
                stop = start + len(piece.live)
                groups.append(PrefixGroup(start, stop, piece.tensors, piece.own))
                start = stop
            logits = self._step(tokens, positions, None, groups)
        else:
            logits = self._step(tokens, positions, cache, None)
        start = 0
        for piece in live:
            piece.logits = logits[start : start + len(piece.live)]
            start += len(piece.live)


class _Slice:
    """Some rows of one part decoding together: admitted at the same step, so they share the step
    count and positions; each row keeps its own random stream and generated tokens."""

    def __init__(self, number: int, part: Part, shared: bool) -> None:
        self.number = number
        self.part = part
        self.live = list(range(len(part.indices)))  # positions in part.indices still decoding
        self.uniforms = row_uniforms(part.request, part.indices)
        self.stop = [s for s in part.request.stop if s]
        self.generated: list[list[int]] = [[] for _ in part.indices]
        self.step = 0
        self.logits = part.prefix.logits.unsqueeze(0).expand(len(part.indices), -1)
        self.tokens = torch.empty(0, dtype=torch.long)
        self.tensors = prefix_tensors(part.prefix.cache) if shared else []
        self.own: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(self.tensors)


def _next_part(source: Iterator[tuple[int, Part]]) -> tuple[int, Part] | None:
    return next(source, None)
