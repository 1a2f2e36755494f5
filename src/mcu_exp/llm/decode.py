"""Sampling many continuations of some prompts: prefill each once, decode the rows together.

Each prompt goes through the model once; every requested sample then decodes from its
prompt's prefix, as a row of one batch that may hold the rows of several prompts (each row
attends only to its own prompt, :mod:`mcu_exp.llm.shared_prefix`). Sample ``i`` draws its
random numbers from its own generator, seeded from ``(seed, i, prompt)``, so its text never
depends on which other samples share its batch (a rerun that generates only the missing
indices reproduces the same texts, up to floating-point differences between batch shapes).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mcu_exp.llm.contract import GenerationRequest, Sample
from mcu_exp.llm.shared_prefix import PrefixGroup, prefix_tensors


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
        kwargs: dict[str, Any] = {self.cache_kwarg: cache}
        if prefix is not None:
            kwargs["shared_prefix"] = prefix
        out = self.model(input_ids=tokens, position_ids=positions, use_cache=True, logits_to_keep=1, **kwargs)
        logits: torch.Tensor = out.logits[:, -1]
        return logits

    def _row_cache(self, prefix: Prefix, rows: int) -> tuple[Any, Any]:
        from transformers import DynamicCache

        if self.shared_prefix:
            return DynamicCache(config=self.model.config), [PrefixGroup(0, rows, prefix_tensors(prefix.cache))]
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
        for _, index, sample in self.decode_many([Part(request, prefix, indices)], use_eos):
            yield index, sample

    def decode_many(self, parts: Sequence[Part], use_eos: bool = True) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(part number, sample index, sample)`` as each row finishes; rows that finish
        leave the batch.

        With shared-prefix attention the rows of all ``parts`` decode as one batch, each row
        attending to its own part's prompt; without it (per-row copies of the prompt cache) the
        parts decode one after another. ``use_eos=False`` ignores end-of-sequence tokens
        (benchmarks force a fixed length)."""
        if not self.shared_prefix and len(parts) > 1:
            for number, part in enumerate(parts):
                for _, index, sample in self.decode_many([part], use_eos):
                    yield number, index, sample
            return
        live = []
        for number, part in enumerate(parts):
            if part.request.max_new_tokens > 0:
                live.append(number)
                continue
            for index in part.indices:
                yield number, index, Sample("", "length", part.prefix.length, 0)
        if live:
            yield from self._decode_rows([parts[n] for n in live], live, use_eos)

    def _decode_rows(
        self, parts: Sequence[Part], numbers: Sequence[int], use_eos: bool
    ) -> Iterator[tuple[int, int, Sample]]:
        """:meth:`decode_many` for parts that all generate: rows in part order, each with its own
        random stream, token limit and stop strings; the tokens of each part's rows are sampled
        by that part's settings."""
        stops = [[s for s in part.request.stop if s] for part in parts]
        uniforms = [row_uniforms(part.request, part.indices) for part in parts]
        rows = [(p, r) for p, part in enumerate(parts) for r in range(len(part.indices))]  # (part, row in part)
        active = list(range(len(rows)))
        generated: list[list[int]] = [[] for _ in rows]
        prefix_len = torch.tensor([parts[p].prefix.length for p, _ in rows], device=self.device)
        if self.shared_prefix:
            from transformers import DynamicCache

            cache: Any = DynamicCache(config=self.model.config)
            tensors = [prefix_tensors(part.prefix.cache) for part in parts]
        else:
            cache, _ = self._row_cache(parts[0].prefix, len(rows))
        logits = torch.cat([part.prefix.logits.unsqueeze(0).expand(len(part.indices), -1) for part in parts])
        for step in range(max(part.request.max_new_tokens for part in parts)):
            runs = _runs([rows[a][0] for a in active])
            tokens = torch.cat(
                [
                    sample_tokens(
                        logits[start:stop],
                        uniforms[p][[rows[a][1] for a in active[start:stop]], step],
                        parts[p].request.temperature,
                        parts[p].request.top_p,
                    )
                    for p, start, stop in runs
                ]
            )
            still = []
            for slot, (row, token) in enumerate(zip(active, tokens.tolist())):
                p, r = rows[row]
                generated[row].append(token)
                done = self._finish(generated[row], stops[p], parts[p].request.max_new_tokens, use_eos)
                if done is None:
                    still.append(slot)
                else:
                    sample = Sample(done[0], done[1], parts[p].prefix.length, len(generated[row]))
                    yield numbers[p], parts[p].indices[r], sample
            if not still:
                return
            if len(still) < len(active):
                keep = torch.tensor(still, device=self.device)
                cache.batch_select_indices(keep)
                tokens = tokens[keep]
                active = [active[slot] for slot in still]
            shared = None
            if self.shared_prefix:
                shared = [
                    PrefixGroup(start, stop, tensors[p]) for p, start, stop in _runs([rows[a][0] for a in active])
                ]
            logits = self._step(tokens.unsqueeze(1), (prefix_len[active] + step).unsqueeze(1), cache, shared)


def _runs(labels: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(label, start, stop)`` of each run of equal consecutive labels."""
    runs: list[tuple[int, int, int]] = []
    for pos, label in enumerate(labels):
        if runs and runs[-1][0] == label:
            runs[-1] = (label, runs[-1][1], pos + 1)
        else:
            runs.append((label, pos, pos + 1))
    return runs
