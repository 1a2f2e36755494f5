"""Any server speaking OpenAI's Chat Completions (``vllm serve``, llama.cpp, TGI) at ``base_url``.

The key is optional: ``api_key_env`` names its variable when the server wants one (e.g.
``vllm serve --api-key``); otherwise a placeholder is sent. Request building and parsing
are OpenAI's (:mod:`mcu_exp.llm.providers.openai`), quirks included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcu_exp.llm.providers._errors import BackendError
from mcu_exp.llm.providers._spec import remote_provider
from mcu_exp.llm.providers._urls import check_query
from mcu_exp.llm.providers.openai import OpenAIProvider

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def calls(cfg: ModelConfig) -> OpenAIProvider:
    """OpenAI's calls at ``model.base_url``, which is required (e.g. http://host:8000/v1)."""
    base_url = cfg.base_url
    if not base_url:
        raise BackendError(
            f"model '{cfg.name}': backend openai_compatible needs model.base_url "
            "(e.g. http://127.0.0.1:8000/v1 for `vllm serve`)"
        )
    return OpenAIProvider(cfg, "openai_compatible", str(base_url))


PROVIDER = remote_provider("openai_compatible", calls, sdk=("openai",), base_url="required", check=check_query)
identity = PROVIDER.identity  # backend, model id, quirks and base_url (it says which weights answer)
