"""What counts as a secret, and how it is masked in text: headers, query strings, overrides,
Hydra's config dump and dict reprs; error messages and ordinary names keep their text."""

from __future__ import annotations

import pytest

from mcu_exp.redact import is_secret_key, redact_text, redact_tree, redact_url, secret_values


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "Proxy-Authorization",
        "Cookie",
        "Set-Cookie",
        "X-Api-Key",
        "key",
        "api_key",
        "apiKey",
        "access_token",
        "x-auth-token",
        "auth",
        "password",
        "client_secret",
        "sig",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_key(name) and is_secret_key(f"model.quirks.params.extra_headers.{name}")


@pytest.mark.parametrize(
    "name",
    [
        "api_key_env",
        "max_tokens",
        "max_new_tokens",
        "tokenizer",
        "author",
        "keys",
        "cache_key",
        "prompt_cache_key",
        "sort_key",
        "Idempotency-Key",
        "extra_headers",
        "OpenAI-Organization",
        "base_url",
    ],
)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not is_secret_key(name)


def test_query_keys_are_masked_in_urls_and_remembered() -> None:
    url = "https://gen.example/v1beta?alt=sse&key=qk-SECRET-123456&api-version=2"
    assert redact_url(url) == "https://gen.example/v1beta?alt=sse&key=***&api-version=2"
    assert "qk-SECRET-123456" in secret_values({"model": {"base_url": url}})


def test_header_values_and_their_tokens_are_remembered() -> None:
    found = secret_values({"extra_headers": {"Authorization": "Bearer tok-SECRET-1", "Cookie": "a=ck-SECRET-2; b=x"}})
    assert {"Bearer tok-SECRET-1", "tok-SECRET-1", "ck-SECRET-2"} <= found and "Bearer" not in found
    assert redact_tree({"extra_headers": {"Authorization": "Bearer t", "Accept": "json"}}) == {
        "extra_headers": {"Authorization": "***", "Accept": "json"}
    }


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (
            "+model.quirks.params.extra_headers.Authorization='Bearer abc def'",
            "+model.quirks.params.extra_headers.Authorization='***'",
        ),
        ('model.base_url="http://h/v1?key=abc" x.Cookie="s=1"', 'model.base_url="http://h/v1?key=***" x.Cookie="***"'),
        (
            "model:\n  quirks:\n    extra_headers:\n      Authorization: Bearer abc\n      Accept: json",
            "model:\n  quirks:\n    extra_headers:\n      Authorization: ***\n      Accept: json",
        ),
        (
            "options: {'headers': {'X-Api-Key': 'abc', 'Accept': 'json'}}",
            "options: {'headers': {'X-Api-Key': '***', 'Accept': 'json'}}",
        ),
        ("AuthenticationFailed: openai: 401 Incorrect API key", "AuthenticationFailed: openai: 401 Incorrect API key"),
        ("max_tokens=5 tokens: 12", "max_tokens=5 tokens: 12"),
    ],
)
def test_text_masks_secret_values_only(text: str, masked: str) -> None:
    assert redact_text(text) == masked
