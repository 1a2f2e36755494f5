"""Cache keys: every output-changing field changes the key; n and dict order do not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mcu_exp.llm import GenerationRequest, Message
from mcu_exp.llm.cache import canonical_json, key_parts, sample_key

IDENTITY = {
    "backend": "local",
    "model_id": "m",
    "weights": [{"file": "w.gguf", "size": 3, "sha256_ends": "ab"}],
    "dtype": "float32",
}
BASE = GenerationRequest(
    messages=(Message("system", "s"), Message("user", "u")),
    n=3,
    temperature=0.8,
    top_p=0.95,
    max_new_tokens=48,
    stop=("\n\n",),
    seed=1,
)


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"top_p": 0.9},
        {"max_new_tokens": 47},
        {"stop": ("\n",)},
        {"stop": ()},
        {"seed": 2},
        {"messages": (Message("system", "s"), Message("user", "u!"))},
        {"messages": (Message("user", "s"), Message("user", "u"))},
    ],
)
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


def _model(backend: str, **fields: Any) -> Any:
    from mcu_exp.config import ModelConfig

    return ModelConfig(**{"name": f"m-{backend}", "backend": backend, "model_id": "some-model", **fields})


def _key(cfg: Any) -> str:
    from mcu_exp.llm.factory import backend_identity

    return sample_key(backend_identity(cfg), BASE, 0)


def _with_secret(value: str) -> list[Any]:
    """Configs that each carry ``value`` as a secret: in a header, a query parameter, a token."""
    headers = {"Authorization": f"Bearer {value}", "Cookie": f"session={value}", "X-Api-Key": value}
    return [
        _model("openai", quirks={"params": {"extra_headers": headers, "reasoning_effort": "low"}}),
        _model("openai_compatible", base_url=f"http://gpu-host:8000/v1?api-version=2&key={value}"),
        _model("anthropic", quirks={"params": {"extra_headers": {"authorization": value}}}),
        _model("google", quirks={"params": {"access_token": value}}),
    ]


def test_a_secret_in_a_header_or_query_string_is_neither_in_the_key_nor_changes_it():
    from mcu_exp.llm.factory import backend_identity

    first, second = "hdr-SECRET-one-1234", "hdr-SECRET-two-5678"
    for one, two in zip(_with_secret(first), _with_secret(second), strict=True):
        assert first not in canonical_json(backend_identity(one)), one.backend
        assert _key(one) == _key(two), one.backend


def test_keys_of_requests_without_secrets_are_those_of_earlier_versions():
    """Redacting more names must not move a key that holds no secret (the cache would be
    generated, and paid for, again): these were computed before secret headers were masked."""
    cfgs = [
        _model(
            "openai",
            model_id="gpt-4o",
            quirks={
                "max_tokens_param": "max_completion_tokens",
                "drop_params": ["temperature"],
                "extra_body": {"top_k": 5},
                "params": {
                    "reasoning_effort": "low",
                    "prompt_cache_key": "summaries",
                    "extra_headers": {"OpenAI-Organization": "org-1"},
                },
            },
        ),
        _model(
            "openai_compatible",
            model_id="qwen",
            base_url="http://gpu-host:8000/v1?api-version=2024-06-01",
            api_key_env="X_KEY",
        ),
        _model(
            "anthropic", model_id="claude", quirks={"params": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}
        ),
    ]
    assert [_key(c) for c in cfgs] == [
        "574a41fe9ac5be4be1862401367c22c3fbf494437b76612def43dfe2bc2ccf91",
        "35fb1068743bda6a4964ef960eb7af424abae850ec9efcc0fb484c6974363e66",
        "65e4183f6bf8098cf10a9b2201ca2b0b7385d71816f8eb2e63d896cc1adf9b4e",
    ]
