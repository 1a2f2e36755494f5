"""Shared by the local-backend tests and their worker script: the model configs (the shipped
SmolLM2, and a tiny randomly initialised Llama for the decoding mechanics), the requests, and
helpers to watch a cache file from outside."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.llm.local import locate_weights
from mcu_exp.proxies.prompts import summary_messages

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
K = 4
MAX_NEW_TOKENS = 10
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


def smollm_config() -> ModelConfig:
    """The shipped SmolLM2 config with short generations, on one torch thread."""
    raw = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "model" / "smollm2-135m.yaml"))
    return dataclasses.replace(ModelConfig(**raw), max_new_tokens=MAX_NEW_TOKENS, num_threads=1)


def tiny_config(folder: Path) -> ModelConfig:
    """The tiny Llama saved in ``folder``: a plain local model folder, SmolLM2's decoding settings,
    on the CPU with one torch thread."""
    return dataclasses.replace(smollm_config(), name="tiny-llama", model_id=str(folder), package=None,
                               gguf_file=None, device="cpu")


def build_tiny_llama(folder: Path) -> Path:
    """Save a randomly initialised 2-layer Llama (hidden size 64) with SmolLM2's tokenizer and
    chat template into ``folder``; the same weights every time (fixed seed)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    weights = locate_weights(smollm_config())
    tokenizer = AutoTokenizer.from_pretrained(weights.folder, gguf_file=weights.gguf_file, local_files_only=True)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
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


def requests(first: int, last: int) -> list[GenerationRequest]:
    """Requests ``first..last-1``: one small Java method each, ``K`` samples, the shipped decoding settings."""
    cfg = smollm_config()
    return [request_for(cfg, summary_messages(f"int add{j}(int x) {{\n    return x + {j};\n}}", "Java"), n=K, seed=7)
            for j in range(first, last)]


def row_count(db: Path) -> int:
    """Rows in the samples table, 0 while the file or table does not exist yet."""
    if not db.is_file():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def worker_env() -> dict[str, str]:
    """Environment of a worker subprocess: offline, one thread, this checkout's sources first."""
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
