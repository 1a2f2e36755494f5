"""A tiny randomly initialised Llama with SmolLM2's tokenizer, built in the tests, for every
test where the mechanics matter and the text does not (decoding, caching, sweeps, reports):
it loads in a fraction of a second and generates hundreds of tokens a second on one core.
SmolLM2 stays for the few tests where real text matters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm.weights import locate_weights

SMOLLM = Path(__file__).resolve().parents[2] / "conf" / "model" / "smollm2-135m.yaml"
TINY_SEED = 0
# Weight spreads of the tiny model, larger than the default init (0.02) so that it behaves like
# a trained model where the tests look. Output projection: logits with a standard deviation of
# ~8, so peaked next-token distributions (top-p 0.95 keeps a few tokens) that float noise
# between batch shapes or attention paths does not flip; with the default init they are
# near-uniform over 49k tokens (at a spread of ~4 still one token in ~3000 flipped between
# shared-prefix and per-row decoding). Query and key projections: attention scores spread over
# a few units, so attention is far from uniform and a wrong score (a 5 % scale error, a prefix
# token dropped) changes the text.
TINY_HEAD_STD = 1.0
TINY_QK_STD = 0.2


def smollm_tokenizer(folder: Path, gguf_file: str | None) -> Any:
    """SmolLM2's tokenizer, read out of its GGUF by transformers' GGUF tokenizer builder (the one
    :mod:`mcu_exp.llm.gguf_convert` uses: under a second, the same files when saved); where this
    transformers lacks it, ``AutoTokenizer``, whose element-by-element GGUF reader takes ~10 s."""
    try:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file, local_files_only=True)
    return TokenizersBackend.from_pretrained(folder, gguf_file=gguf_file, local_files_only=True)


def build(folder: Path) -> Path:
    """Save a randomly initialised 2-layer Llama (hidden size 64) with SmolLM2's tokenizer and
    chat template into ``folder``; the same weights every time (fixed seed)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    weights = locate_weights(ModelConfig(**OmegaConf.to_container(OmegaConf.load(SMOLLM))))
    tokenizer = smollm_tokenizer(weights.folder, weights.gguf_file)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        model = LlamaForCausalLM(config)
        with torch.no_grad():
            model.lm_head.weight.normal_(0.0, TINY_HEAD_STD)
            for layer in model.model.layers:
                layer.self_attn.q_proj.weight.normal_(0.0, TINY_QK_STD)
                layer.self_attn.k_proj.weight.normal_(0.0, TINY_QK_STD)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def model_overrides(folder: Path, keys: tuple[str, ...] = ("model",)) -> list[str]:
    """Hydra overrides that point the model sections ``keys`` (e.g. ``model``,
    ``experts.members.smollm2-a.model``) at the tiny Llama in ``folder``, one torch thread."""
    fields = {"model_id": str(folder), "package": "null", "gguf_file": "null", "device": "cpu", "num_threads": "1"}
    return [f"{key}.{field}={value}" for key in keys for field, value in fields.items()]


LOCAL_EXPERTS = tuple(f"experts.members.smollm2-{x}.model" for x in "abc")
