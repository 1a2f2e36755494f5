"""Cache keys: every output-changing field changes the key; n and dict order do not."""

from __future__ import annotations

import dataclasses
from typing import Any

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


def _other_value(name: str, value: Any) -> Any:
    """A different value for request field ``name`` (fails on a type it cannot change yet)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "!"
    if isinstance(value, tuple) and value and all(isinstance(m, Message) for m in value):
        return (*value[:-1], Message(value[-1].role, value[-1].content + "!"))
    if isinstance(value, tuple):
        return (*value, "x")
    pytest.fail(f"GenerationRequest.{name}: teach _other_value to change a {type(value).__name__}")


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(GenerationRequest)])
def test_every_decoding_parameter_is_in_the_key(name: str):
    """Each request field changes the key, except ``n`` (samples are keyed by index, so raising
    n reuses the ones already made); a field added to the request but left out of the key fails here."""
    changed = dataclasses.replace(BASE, **{name: _other_value(name, getattr(BASE, name))})
    assert changed != BASE
    same = sample_key(IDENTITY, changed, 0) == sample_key(IDENTITY, BASE, 0)
    assert same == (name == "n")
    if name == "n":
        assert "n" not in key_parts(IDENTITY, BASE, 0)["decoding"]


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
