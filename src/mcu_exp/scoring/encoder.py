"""Token embeddings exactly as bert-score computes them, for each distinct text once.

bert-score 0.3.13 tokenizes with `bert_score.utils.sent_encode` (which strips the text and
truncates at the tokenizer's `model_max_length`), runs the encoder cut to `num_layers`
layers (`bert_score.utils.get_model`), L2-normalises every token vector, and weights tokens
by idf (all 1 without idf) with [CLS]/[SEP] weighted 0. We reuse those functions and fix two
of its failures under transformers 5 here:

- an empty text crashes it (`build_inputs_with_special_tokens` is gone). bert-score intends
  an empty candidate or reference to score 0 against anything (`greedy_cos_idf` zeroes P and
  R, then F's NaN), so an empty text gets all-zero weights, which the matcher scores 0;
- a tokenizer without a sensible `model_max_length` makes truncation raise OverflowError;
  the limit comes from :func:`mcu_exp.scoring.resolve.max_length` instead.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


@dataclass
class TokenEmbeddings:
    """One text as the greedy matcher sees it."""

    vectors: torch.Tensor  # (n_tokens, dim) float32, L2-normalised, special tokens included
    weights: torch.Tensor  # (n_tokens,) sums to 1; all 0 for an empty text
    n_tokens: int  # after truncation, special tokens included
    truncated: bool  # the text was cut at the encoder's limit

    @property
    def nbytes(self) -> int:
        return self.vectors.element_size() * self.vectors.nelement()


_SHARED: dict[tuple[str, int, int, str], Encoder] = {}


def shared_encoder(
    path: Path, num_layers: int, max_length: int, device: str = "auto", name: str | None = None
) -> Encoder:
    """The process's one encoder for this model, layer, limit and device (loaded lazily).

    Scorers that differ only in idf, rescaling or cache (P1's and P2's, a test session's)
    share the loaded weights instead of loading them again. ``name`` (shown when it loads;
    default: the folder's name) is not part of the key.
    """
    key = (str(path), int(num_layers), int(max_length), str(device))
    if key not in _SHARED:
        _SHARED[key] = Encoder(path, num_layers, max_length, device, name)
    return _SHARED[key]


class Encoder:
    """Lazily loaded tokenizer and encoder (cut to `num_layers`) of one model folder."""

    def __init__(
        self, path: Path, num_layers: int, max_length: int, device: str = "auto", name: str | None = None
    ) -> None:
        self.path = path
        self.name = name or Path(path).name
        self.num_layers = num_layers
        self.max_length = max_length
        self._device = device
        self._tokenizer: Any = None
        self._model: Any = None

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def tokenizer(self) -> Any:
        """The tokenizer bert-score would use, with a sensible `model_max_length`."""
        if self._tokenizer is None:
            from bert_score.utils import get_tokenizer

            tokenizer = get_tokenizer(str(self.path), use_fast=False)
            tokenizer.model_max_length = self.max_length
            self._tokenizer = tokenizer
        return self._tokenizer

    @property
    def device(self) -> str:
        import torch

        if self._device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    @property
    def model(self) -> Any:
        """The encoder cut to `num_layers`, loaded on first use as its own step (one line on stderr)."""
        return self.load("BERTScore")

    def load(self, purpose: str) -> Any:
        """The encoder, loaded on first use; `purpose` names the scorer kind in the load line."""
        if self._model is None:
            from bert_score.utils import get_model

            from mcu_exp import console

            device = self.device
            console.quiet_libraries()
            with (
                console.step(
                    f"Loading scorer {self.name} ({purpose}, layer {self.num_layers}, {device.upper()})", logger=log
                ),
                console.quiet_output("transformers"),
            ):
                self._model = get_model(str(self.path), self.num_layers).to(device)
        return self._model

    def token_ids(self, text: str) -> tuple[list[int], bool]:
        """bert-score's token ids of `text` (specials included) and whether it was truncated."""
        from bert_score.utils import sent_encode

        tokenizer = self.tokenizer
        if not text.strip():
            return self._special_ids(), False
        ids = sent_encode(tokenizer, text)
        truncated = False
        if len(ids) >= self.max_length:
            from transformers import GPT2Tokenizer, RobertaTokenizer

            extra = {"add_prefix_space": True} if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)) else {}
            content = tokenizer.encode(text.strip(), add_special_tokens=False, **extra)
            truncated = len(content) + tokenizer.num_special_tokens_to_add() > self.max_length
        return ids, truncated

    def _special_ids(self) -> list[int]:
        tokenizer = self.tokenizer
        ids = [tokenizer.cls_token_id, tokenizer.sep_token_id]
        return [i for i in ids if i is not None] or [tokenizer.pad_token_id or 0]

    def default_weights(self) -> dict[int, float]:
        """bert-score's weights without idf: 1 for every token but [CLS] and [SEP]."""
        tokenizer = self.tokenizer
        return {i: 0.0 for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None}

    def idf_weights(self, sentences: Iterable[str]) -> tuple[dict[int, float], float]:
        """bert-score's idf: log((N+1)/(df+1)) per token id, log(N+1) for unseen ids."""
        counts: Counter[int] = Counter()
        n = 0
        for sentence in sentences:
            counts.update(set(self.token_ids(sentence)[0]))
            n += 1
        return {i: math.log((n + 1) / (c + 1)) for i, c in counts.items()}, math.log(n + 1)

    def hidden_states(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        progress: bool = False,
        delay_s: float = 0.0,
        purpose: str = "BERTScore",
    ) -> Iterator[tuple[list[int], torch.Tensor, list[tuple[list[int], bool]]]]:
        """Run the encoder over `texts` in length-sorted batches.

        Yields, per batch: the texts' positions in `texts`, the float32 hidden states at
        `num_layers` (batch, width, dim; rows padded past each text's tokens) and each text's
        ``(token ids, truncated)``. `progress`: an "embed" bar (texts), started once the encoder
        is loaded and shown only once the work has taken `delay_s` seconds."""
        import torch
        from tqdm.auto import tqdm

        batch_size = max(1, int(batch_size))
        model = self.load(purpose)
        encoded = [self.token_ids(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i][0]))
        pad_id = self.tokenizer.pad_token_id or 0
        bar = tqdm(total=len(texts), desc="embed", unit="text", disable=not progress, delay=delay_s, dynamic_ncols=True)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = max(len(encoded[i][0]) for i in batch)
            ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, : len(encoded[i][0])] = torch.tensor(encoded[i][0])
                mask[row, : len(encoded[i][0])] = 1
            with torch.inference_mode():
                hidden = model(ids.to(self.device), attention_mask=mask.to(self.device))[0]
            yield batch, hidden.float(), [encoded[i] for i in batch]
            bar.update(len(batch))
        bar.close()

    def embed(
        self,
        texts: Sequence[str],
        weights: Mapping[int, float],
        default_weight: float = 1.0,
        batch_size: int = 64,
        progress: bool = False,
        delay_s: float = 0.0,
    ) -> list[TokenEmbeddings]:
        """Embed `texts` (distinct) in length-sorted batches; returns them in input order.

        `progress`: an "embed" bar (texts), started once the encoder is loaded and shown only
        once the work has taken `delay_s` seconds."""
        import torch

        out: list[TokenEmbeddings | None] = [None] * len(texts)
        for batch, hidden, encoded in self.hidden_states(texts, batch_size, progress, delay_s):
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
            for row, (i, (token_ids, truncated)) in enumerate(zip(batch, encoded)):
                w = torch.tensor([weights.get(t, default_weight) for t in token_ids], dtype=torch.float32)
                total = float(w.sum())
                w = w / total if total > 0 and texts[i].strip() else torch.zeros_like(w)
                out[i] = TokenEmbeddings(
                    hidden[row, : len(token_ids)].clone(), w.to(self.device), len(token_ids), truncated
                )
        return [e for e in out if e is not None]
