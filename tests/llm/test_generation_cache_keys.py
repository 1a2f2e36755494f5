"""Cache keys: every output-changing field changes the key; n and dict order do not."""

from __future__ import annotations

import dataclasses

import pytest

from mcu_exp.llm import GenerationRequest, Message
from mcu_exp.llm.cache import key_parts, sample_key

IDENTITY = {"backend": "local", "model_id": "m", "weights": [{"file": "w.gguf", "size": 3, "sha256_ends": "ab"}],
            "dtype": "float32"}
BASE = GenerationRequest(messages=(Message("system", "s"), Message("user", "u")), n=3, temperature=0.8,
                         top_p=0.95, max_new_tokens=48, stop=("\n\n",), seed=1)


@pytest.mark.parametrize("change", [
    {"temperature": 0.7}, {"top_p": 0.9}, {"max_new_tokens": 47}, {"stop": ("\n",)}, {"stop": ()},
    {"seed": 2}, {"messages": (Message("system", "s"), Message("user", "u!"))},
    {"messages": (Message("user", "s"), Message("user", "u"))},
])
def test_any_output_changing_field_changes_the_key(change):
    assert sample_key(IDENTITY, dataclasses.replace(BASE, **change), 0) != sample_key(IDENTITY, BASE, 0)


def test_every_decoding_parameter_is_in_the_key():
    parts = key_parts(IDENTITY, BASE, 0)
    assert set(parts["decoding"]) >= {"temperature", "top_p", "max_new_tokens", "stop", "seed"}
    assert "n" not in parts["decoding"]


def test_n_does_not_change_the_key_so_raising_n_reuses_samples():
    assert sample_key(IDENTITY, dataclasses.replace(BASE, n=50), 2) == sample_key(IDENTITY, BASE, 2)


def test_index_and_identity_change_the_key():
    assert sample_key(IDENTITY, BASE, 0) != sample_key(IDENTITY, BASE, 1)
    other = {**IDENTITY, "weights": [{"file": "w.gguf", "size": 3, "sha256_ends": "cd"}]}
    assert sample_key(other, BASE, 0) != sample_key(IDENTITY, BASE, 0)
    assert sample_key({**IDENTITY, "dtype": "bfloat16"}, BASE, 0) != sample_key(IDENTITY, BASE, 0)


def test_key_ignores_dict_order_of_the_identity():
    reordered = dict(reversed(list(IDENTITY.items())))
    assert sample_key(reordered, BASE, 0) == sample_key(IDENTITY, BASE, 0)
    assert len(sample_key(IDENTITY, BASE, 0)) == 64
