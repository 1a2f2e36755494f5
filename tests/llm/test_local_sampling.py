"""Nucleus sampling by inverse CDF and the per-sample random streams (no model needed)."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from mcu_exp.llm import GenerationRequest, Message
from mcu_exp.llm.decode import row_seed, row_uniforms, sample_tokens

REQUEST = GenerationRequest(messages=(Message("user", "hi"),), n=4, max_new_tokens=5, seed=3)


def test_sampling_follows_the_renormalised_top_p_distribution():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = probs.log().expand(20000, -1)
    uniforms = torch.rand(20000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    tokens = sample_tokens(logits, uniforms, temperature=1.0, top_p=0.8)
    freq = np.bincount(tokens.numpy(), minlength=4) / 20000
    # 0.5 + 0.3 reaches 0.8, so the nucleus is {0, 1}: renormalised 0.625 / 0.375.
    np.testing.assert_allclose(freq, [0.625, 0.375, 0.0, 0.0], atol=0.015)


def test_full_distribution_and_temperature():
    logits = torch.tensor([0.0, 1.0, 2.0]).expand(30000, -1)
    uniforms = torch.rand(30000, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    freq = np.bincount(sample_tokens(logits, uniforms, 0.5, 1.0).numpy(), minlength=3) / 30000
    expected = torch.softmax(torch.tensor([0.0, 1.0, 2.0]) / 0.5, -1).numpy()
    np.testing.assert_allclose(freq, expected, atol=0.015)
    assert sample_tokens(logits[:2], uniforms[:2], 0.0, 0.9).tolist() == [2, 2]


def test_a_row_token_depends_only_on_its_logits_and_uniform():
    logits = torch.randn(5, 1000, generator=torch.Generator().manual_seed(2)) * 4
    uniforms = torch.rand(5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    together = sample_tokens(logits, uniforms, 0.8, 0.95)
    alone = [int(sample_tokens(logits[i : i + 1], uniforms[i : i + 1], 0.8, 0.95)) for i in range(5)]
    assert together.tolist() == alone


def test_each_sample_has_its_own_reproducible_random_stream():
    both = row_uniforms(REQUEST, [0, 2])
    assert torch.equal(both[1], row_uniforms(REQUEST, [2])[0])
    assert not torch.equal(both[0], both[1])
    assert both.shape == (2, 5)
    assert row_seed(REQUEST, 0) != row_seed(dataclasses.replace(REQUEST, seed=4), 0)
    other_prompt = dataclasses.replace(REQUEST, messages=(Message("user", "bye"),))
    assert row_seed(REQUEST, 0) != row_seed(other_prompt, 0)
