"""What a ``model.base_url`` does to the requests the real SDKs send to the fake server: a login
in it (``user:pass@``) never silently replaces a configured key or ``Authorization`` header, and
a query string (Azure's ``?api-version=…``) stays after the endpoint the client appends."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcu_exp.llm.contract import GenerationRequest, Message, SampleJob
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.factory import check_backend
from support.fake_api import _received_key

PROVIDERS = ("openai", "anthropic", "google", "openai_compatible")
PASSWORD = "pw-url-SECRET-27182818"
HEADER_TOKEN = "hdr-auth-SECRET-14142135"
QUERY = "api-version=2024-01-01"
VARIABLES = {  # what the refusal names: the key's variable (openai_compatible: model.api_key_env's)
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY or GOOGLE_API_KEY",
    "openai_compatible": "model.api_key_env=FAKE_API_KEY",
}


def one_sample(backend: Any) -> None:
    """Ask ``backend`` for one sample (the fake server answers it)."""
    request = GenerationRequest(messages=(Message("user", "explain this method"),), max_new_tokens=16)
    assert len(list(backend.stream([SampleJob(request, (0,))]))) == 1


def with_login(url: str) -> str:
    return url.replace("http://", f"http://reader:{PASSWORD}@", 1)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_login_in_the_url_beside_an_api_key_is_refused_naming_the_key(remote: Any, provider: str) -> None:
    cfg = remote.cfg(provider)
    cfg.base_url = with_login(cfg.base_url)
    variable = VARIABLES[provider]
    for attempt in (lambda: check_backend(cfg), lambda: remote.backend(cfg)):
        with pytest.raises(BackendError) as caught:
            attempt()
        message = str(caught.value)
        assert "model.base_url carries a login (user:pass@)" in message and "use one" in message
        assert variable in message and "\n" not in message
        assert PASSWORD not in message and remote.key not in message
    assert remote.server.log == []  # refused before any request


def test_a_login_in_the_url_beside_an_authorization_header_is_refused_naming_the_header(remote: Any) -> None:
    headers = {"extra_headers": {"Authorization": f"Bearer {HEADER_TOKEN}"}}
    cfg = remote.cfg("openai_compatible", api_key_env=None, quirks={"params": headers})
    cfg.base_url = with_login(cfg.base_url)
    with pytest.raises(BackendError, match=r"model\.quirks\.params\.extra_headers\.Authorization") as caught:
        remote.backend(cfg)
    assert HEADER_TOKEN not in str(caught.value) and PASSWORD not in str(caught.value)
    assert remote.server.log == []


def test_a_login_alone_reaches_the_server_as_http_basic(remote: Any) -> None:
    cfg = remote.cfg("openai_compatible", api_key_env=None)
    cfg.base_url = with_login(cfg.base_url)
    one_sample(remote.backend(cfg))
    (sent,) = remote.server.log
    assert sent.headers["authorization"] == "Basic " + base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
    assert sent.path == "/v1/chat/completions"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_alone_reaches_the_server(remote: Any, provider: str) -> None:
    one_sample(remote.backend(remote.cfg(provider)))
    (sent,) = remote.server.log
    assert _received_key(sent.headers) == remote.key


ENDPOINTS = {
    "openai": "/openai/v1/chat/completions",
    "openai_compatible": "/openai/v1/chat/completions",
    "anthropic": "/openai/v1/messages",
    "google": "/openai/v1beta/models/fake-model:generateContent",
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_query_in_the_base_url_follows_the_endpoint_under_the_urls_path(remote: Any, provider: str) -> None:
    root = "/openai/v1" if provider.startswith("openai") else "/openai"
    cfg = remote.cfg(provider, base_url=f"{remote.server.url}{root}?{QUERY}&deployment=gpt-4o")
    one_sample(remote.backend(cfg))
    (sent,) = remote.server.log
    assert sent.path == f"{ENDPOINTS[provider]}?{QUERY}&deployment=gpt-4o"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai_compatible"])
def test_a_repeated_query_parameter_is_refused_where_the_client_would_send_it_once(remote: Any, provider: str) -> None:
    cfg = remote.cfg(provider, base_url=f"{remote.server.url}/v1?{QUERY}&tag=a&tag=b")
    with pytest.raises(BackendError, match=r"^model 'fake-\w+': model\.base_url repeats the query parameter 'tag'"):
        check_backend(cfg)
