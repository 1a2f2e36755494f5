"""Any server speaking OpenAI's Chat Completions (``vllm serve``, llama.cpp, TGI) at ``base_url``.

The key is optional: ``api_key_env`` names its variable when the server wants one (e.g.
``vllm serve --api-key``); otherwise a placeholder is sent. Request building and parsing
are OpenAI's (:mod:`mcu_exp.llm.providers.openai`), quirks included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcu_exp.llm.providers._common import remote_identity, resolve_api_key
from mcu_exp.llm.providers._errors import BackendError
from mcu_exp.llm.providers._runner import RemoteBackend
from mcu_exp.llm.providers._spec import Provider
from mcu_exp.llm.providers._urls import check_query
from mcu_exp.llm.providers.openai import OpenAIProvider

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def identity(cfg: ModelConfig) -> dict[str, Any]:
    """The model part of cache keys, without a client: backend, model id, quirks and base_url."""
    return remote_identity(cfg, "openai_compatible", with_base_url=True)


def create_backend(cfg: ModelConfig, *, progress: bool = True) -> RemoteBackend:
    """The ``openai_compatible`` backend; ``model.base_url`` is required (e.g. http://host:8000/v1)."""
    base_url = cfg.base_url
    if not base_url:
        raise BackendError(
            f"model '{cfg.name}': backend openai_compatible needs model.base_url "
            "(e.g. http://127.0.0.1:8000/v1 for `vllm serve`)"
        )
    provider = OpenAIProvider(cfg, "openai_compatible", str(base_url))
    env = cfg.api_key_env
    secret = resolve_api_key(cfg, (env,), "openai_compatible") if env else None
    return RemoteBackend(cfg, provider, secret, identity(cfg), progress=progress)


PROVIDER = Provider(
    name="openai_compatible",
    create=create_backend,
    identity=identity,
    extra="api",
    sdk=("openai",),
    base_url="required",
    check=check_query,
)
