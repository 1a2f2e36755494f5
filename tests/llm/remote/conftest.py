"""Fixtures of the remote-backend tests: the fake OpenAI/Anthropic/Gemini API of
:mod:`support.fake_api` started per test, the planted key in every provider's variable, and
helpers bound to the running server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.fake_api import PLANTED_KEY, Action, FakeServer, completion_text, error_body, make_backend, model_cfg


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(planted_keys: str) -> Iterator[Any]:
    """A fresh fake batch API (``batch_server.BatchServer``, batches end at the first poll) for
    the batch tests, with the planted key in every provider's variable; stopped afterwards."""
    from batch_server import BatchServer

    fake = BatchServer(polls_to_end=1)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def planted_keys(monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the planted key in every provider's default environment variable."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "FAKE_API_KEY"):
        monkeypatch.setenv(name, PLANTED_KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_API_VERSION", raising=False)
    return PLANTED_KEY


@pytest.fixture
def remote(fake_server: FakeServer, planted_keys: str) -> Any:
    """Helpers bound to the running fake server: ``remote.cfg(provider, ...)``, ``remote.backend(cfg)``."""

    class Remote:
        server = fake_server
        key = planted_keys
        action = Action
        error = staticmethod(error_body)
        text = staticmethod(completion_text)

        @staticmethod
        def cfg(provider: str, **fields: Any) -> Any:
            return model_cfg(provider, fake_server, **fields)

        backend = staticmethod(make_backend)

    return Remote()
