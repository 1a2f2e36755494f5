"""Greedy-matching BERTScore-F1 for whole blocks of text pairs at once.

For rows A and columns B (token embeddings padded to a common length), one matrix product
gives every token-token cosine of every pair; a max over B's tokens gives each A token's
best match (precision), a max over A's tokens each B token's (recall), and the weighted sums
give P and R for all pairs together. Work is split in chunks of `chunk_elements`
similarities, small enough to stay in cache; on a CPU the chunks run on one thread, since
at these sizes thread start-up and barriers cost more than they give (on a shared 2-core
machine, 2 threads made the matching 10-20x slower than 1).

Padding never wins a max (it is filled with -2, below any cosine). bert-score instead
zeroes padding, so its max includes a 0 when the pair was padded in its batch; the two differ
only for a token whose every cosine with the other text is negative, which contextual
encoders practically never produce.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from mcu_exp.scoring.encoder import TokenEmbeddings

_PAD_SIMILARITY = -2.0
DEFAULT_CHUNK_ELEMENTS = 1 << 18  # similarities per chunk: 1 MiB of float32 stays in cache


@dataclass
class Padded:
    """Texts stacked with padding: vectors (n, L, d), weights (n, L), mask (n, L), empty (n,)."""

    vectors: torch.Tensor
    weights: torch.Tensor
    mask: torch.Tensor
    empty: torch.Tensor

    @property
    def size(self) -> int:
        return self.vectors.shape[0]

    @property
    def length(self) -> int:
        return self.vectors.shape[1]


@contextmanager
def _one_thread_on_cpu(device: torch.device) -> Iterator[None]:
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def pad(embeddings: Sequence[TokenEmbeddings]) -> Padded:
    """Stack texts into padded tensors (padding vectors are 0 and weight 0)."""
    device = embeddings[0].vectors.device
    with _one_thread_on_cpu(device):
        vectors = torch.nn.utils.rnn.pad_sequence([e.vectors for e in embeddings], batch_first=True)
        weights = torch.nn.utils.rnn.pad_sequence([e.weights for e in embeddings], batch_first=True)
        lengths = torch.tensor([e.n_tokens for e in embeddings], device=device)
        mask = torch.arange(vectors.shape[1], device=device)[None, :] < lengths[:, None]
        return Padded(vectors, weights, mask, weights.sum(dim=1) == 0)


def greedy_f1(rows: Padded, cols: Padded | None = None, chunk_elements: int = DEFAULT_CHUNK_ELEMENTS) -> torch.Tensor:
    """BERTScore-F1 of every (row text, column text) pair: a (rows, cols) float32 tensor.

    Without `cols`, the texts are scored against each other and only the upper block
    triangle is computed (F1 is symmetric); the result is the symmetric matrix.
    """
    symmetric = cols is None
    cols = rows if cols is None else cols
    la, lb = rows.length, cols.length
    col_step = max(1, min(cols.size, chunk_elements // max(1, la * lb)))
    row_step = max(1, min(rows.size, chunk_elements // max(1, la * col_step * lb)))
    precision = torch.zeros((rows.size, cols.size), device=rows.vectors.device)
    recall = torch.zeros_like(precision)
    with _one_thread_on_cpu(rows.vectors.device):
        for r0 in range(0, rows.size, row_step):
            r1 = min(rows.size, r0 + row_step)
            for c0 in range(r0 if symmetric else 0, cols.size, col_step):
                c1 = min(cols.size, c0 + col_step)
                p, r = _chunk(rows, cols, r0, r1, c0, c1)
                precision[r0:r1, c0:c1] = p
                recall[r0:r1, c0:c1] = r
        f1 = 2 * precision * recall / (precision + recall)
        f1 = f1.masked_fill(rows.empty[:, None] | cols.empty[None, :] | torch.isnan(f1), 0.0)
        if symmetric:
            f1 = torch.triu(f1) + torch.triu(f1, 1).T
    return f1


def _chunk(rows: Padded, cols: Padded, r0: int, r1: int, c0: int, c1: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Precision and recall of rows[r0:r1] against cols[c0:c1]."""
    na, nb, la, lb = r1 - r0, c1 - c0, rows.length, cols.length
    flat_rows = rows.vectors[r0:r1].reshape(na * la, -1)
    flat_cols = cols.vectors[c0:c1].reshape(nb * lb, -1)
    sim = (flat_rows @ flat_cols.T).view(na, la, nb, lb)
    sim.masked_fill_(~cols.mask[c0:c1].view(1, 1, nb, lb), _PAD_SIMILARITY)
    precision = torch.einsum("al,alb->ab", rows.weights[r0:r1], sim.amax(dim=3))
    sim.masked_fill_(~rows.mask[r0:r1].view(na, la, 1, 1), _PAD_SIMILARITY)
    recall = torch.einsum("bm,abm->ab", cols.weights[c0:c1], sim.amax(dim=1))
    return precision, recall
