"""Attention over one shared prompt prefix plus per-row continuations ("cascade" decoding).

Many samples of one prompt share the prompt's keys and values. Copying them once per row
(``batch_repeat_interleave``) costs ``rows × prompt`` memory and bandwidth at every decode
step. Here each decode step attends to the prefix stored once (batch 1) and to the row's own
generated tokens (a small per-row cache), and merges the two with one softmax. The result is
the same attention, computed without the copies.

Rows of several prompts decode in one batch too: the ``shared_prefix`` keyword is a sequence of
:class:`PrefixGroup`, each a contiguous run of rows with its own prompt and its own cache of the
tokens generated so far, and each row attends only to its own group's prefix and tokens (the
projections and MLPs, most of a step's work, then run on all rows at once). Groups may have
joined the batch at different steps (continuous batching): each keeps its own cache length.

It plugs into transformers' ``AttentionInterface`` under :data:`ATTN_NAME`; without the
``shared_prefix`` keyword it is plain SDPA, so prefill and ordinary calls are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

ATTN_NAME = "mcu_shared_prefix"

# Attention features this kernel does not implement: a model using any of them falls back.
_UNSUPPORTED = ("softcap", "sliding_window", "s_aux", "position_bias")


@dataclass(frozen=True)
class PrefixGroup:
    """Rows ``start:stop`` of a decode batch and the prompt they continue: per layer, the
    prompt's ``(keys, values)``, each ``[Hkv, P, d]``, and the rows' own ``(keys, values)`` so far
    (``[rows, Hkv, S, d]``, None before the first step), which each step extends in place. The
    rows of one group joined the batch together, so their own caches have one length; another
    group's rows may have joined at another step."""

    start: int
    stop: int
    tensors: Sequence[tuple[torch.Tensor, torch.Tensor]]
    own: list[tuple[torch.Tensor, torch.Tensor] | None]


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """One decode step: queries ``[B, Hq, 1, d]``, each row over its group's prefix
    (``kwargs['shared_prefix']``, a sequence of :class:`PrefixGroup` covering the rows in order)
    and its own keys/values: the group's earlier ones and this step's ``key``/``value``
    ``[B, Hkv, 1, d]`` (the model runs without its own cache). Returns ``[B, 1, Hq, d]``."""
    groups: Sequence[PrefixGroup] | None = kwargs.get("shared_prefix")
    if groups is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    used = [name for name in _UNSUPPORTED if kwargs.get(name) is not None]
    if used:
        raise NotImplementedError(f"shared-prefix attention does not support {used}")
    if query.shape[2] != 1:
        raise ValueError(f"shared-prefix attention decodes one token per row, got {query.shape[2]}")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    layer = int(module.layer_idx)  # type: ignore[arg-type]
    parts = []
    for g in groups:
        prefix_key, prefix_value = g.tensors[layer]
        rows = slice(g.start, g.stop)
        own_key, own_value = key[rows], value[rows]
        past = g.own[layer]
        if past is not None:
            own_key, own_value = torch.cat([past[0], own_key], dim=2), torch.cat([past[1], own_value], dim=2)
        g.own[layer] = (own_key, own_value)
        parts.append(_attend(query[rows], own_key, own_value, prefix_key, prefix_value, scale))
    return (parts[0] if len(parts) == 1 else torch.cat(parts)), None


def _attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    prefix_key: torch.Tensor,
    prefix_value: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Rows of one prompt: queries ``[B, Hq, 1, d]`` over that prompt's keys/values ``[Hkv, P, d]``
    and the rows' own ``[B, Hkv, S, d]``, merged in one softmax. Returns ``[B, 1, Hq, d]``."""
    rows, q_heads, _, dim = query.shape
    kv_heads = key.shape[1]
    groups = q_heads // kv_heads
    prefix_len = prefix_key.shape[1]

    q = query.reshape(rows, kv_heads, groups, dim)
    # Prefix scores as one batched matmul per KV head: [Hkv, B*g, d] @ [Hkv, d, P].
    q_by_head = q.transpose(0, 1).reshape(kv_heads, rows * groups, dim)
    prefix_scores = torch.bmm(q_by_head, prefix_key.transpose(1, 2))
    prefix_scores = prefix_scores.view(kv_heads, rows, groups, prefix_len).transpose(0, 1)
    own_scores = torch.matmul(q, key.transpose(2, 3))  # [B, Hkv, g, S]
    scores = torch.cat([prefix_scores, own_scores], dim=-1) * scale
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)

    prefix_probs = probs[..., :prefix_len].transpose(0, 1).reshape(kv_heads, rows * groups, prefix_len)
    out = torch.bmm(prefix_probs, prefix_value).view(kv_heads, rows, groups, dim).transpose(0, 1)
    out = out + torch.matmul(probs[..., prefix_len:], value)
    return out.reshape(rows, 1, q_heads, dim)


def register() -> None:
    """Make :data:`ATTN_NAME` a valid ``attn_implementation`` (idempotent)."""
    AttentionInterface.register(ATTN_NAME, shared_prefix_attention)
    AttentionMaskInterface.register(ATTN_NAME, sdpa_mask)


def prefix_tensors(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per-layer ``(keys, values)`` of a batch-1 prefill cache, batch dimension dropped."""
    return [(layer.keys[0], layer.values[0]) for layer in cache.layers]
