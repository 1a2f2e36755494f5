"""oneDNN packed linear layers (:mod:`mcu_exp.llm.packed_linear`): they compute what ``nn.Linear``
computes, a row's result does not depend on the other rows of the call (so a sample's text does
not depend on its batch), and the local backend uses them unless ``model.settings.packed_linear``
is false."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from mcu_exp.config import ModelConfig
from mcu_exp.llm import LocalBackend, SampleJob, request_for
from mcu_exp.llm.packed_linear import PackedLinear, available, pack_linears
from mcu_exp.proxies.prompts import summary_messages

pytestmark = pytest.mark.skipif(not available(), reason="this PyTorch has no oneDNN packed linear kernel")


@pytest.mark.parametrize("bias", [False, True])
def test_packed_layer_computes_the_linear_layer(bias: bool) -> None:
    torch.manual_seed(1)
    linear = torch.nn.Linear(96, 160, bias=bias)
    packed = PackedLinear(linear)
    with torch.inference_mode():
        for shape in ((1, 96), (7, 96), (5, 1, 96), (2, 33, 96)):
            x = torch.randn(*shape)
            want, got = linear(x), packed(x)
            assert got.shape == want.shape
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_rows_result_does_not_depend_on_the_other_rows() -> None:
    """Bitwise: the rows of a 64-row call equal the same rows computed in calls of 1 to 63 rows
    (PyTorch's own sgemm differs below ~16 rows on x86)."""
    torch.manual_seed(2)
    packed = PackedLinear(torch.nn.Linear(576, 1536, bias=False))
    x = torch.randn(64, 576)
    with torch.inference_mode():
        full = packed(x)
        for rows in (1, 3, 5, 17, 20, 33, 53, 63):
            assert torch.equal(packed(x[:rows].contiguous()), full[:rows]), rows
            assert torch.equal(packed(x[-rows:].contiguous()), full[-rows:]), rows


def test_pack_linears_replaces_every_float32_linear_and_keeps_the_logits() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    config = LlamaConfig(
        vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=True,
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    linears = sum(type(m) is torch.nn.Linear for m in model.modules())
    ids = torch.randint(0, 300, (3, 11))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
        assert pack_linears(model) == linears == 2 * 7 + 1
        after = model(input_ids=ids).logits
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-4)
    assert isinstance(model.lm_head, PackedLinear)
    assert model.model.embed_tokens.weight.shape == (300, 64)  # the input embedding stays a tensor


def test_a_bfloat16_model_is_left_alone() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    assert pack_linears(model) == 0
    assert isinstance(model.lm_head, torch.nn.Linear)


def _texts(backend: LocalBackend, cfg: ModelConfig) -> dict[tuple[int, int], str]:
    requests = [
        request_for(cfg, summary_messages(f"int f{j}(int x) {{\n    return x * {j + 2};\n}}", "Java"), n=3, seed=4)
        for j in range(3)
    ]
    jobs = [SampleJob(r, tuple(range(r.n))) for r in requests]
    return {(p, i): s.text for p, i, s in backend.stream(jobs)}


def test_local_backend_packs_by_default_and_the_setting_turns_it_off(tiny_cfg: ModelConfig) -> None:
    packed = LocalBackend(tiny_cfg)
    packed.load()
    plain = LocalBackend(dataclasses.replace(tiny_cfg, settings={"packed_linear": False}))
    plain.load()
    assert packed.packed_layers == sum(isinstance(m, PackedLinear) for m in packed.model.modules()) > 0
    assert plain.packed_layers == 0
    assert not any(isinstance(m, PackedLinear) for m in plain.model.modules())
    # the tiny model's peaked distributions: float noise between the kernels flips no token
    assert _texts(packed, tiny_cfg) == _texts(plain, tiny_cfg)
