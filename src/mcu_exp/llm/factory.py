"""Pick the backend named by ``model.backend``; each is imported only when used.

``local`` lives in :mod:`mcu_exp.llm.local`. Every other backend is a module
``mcu_exp.llm.providers.<name>`` exposing ``create_backend(cfg) -> Backend`` and,
optionally, ``identity(cfg) -> dict`` (the model part of cache keys, computed without
creating a client, so a warm rerun touches no SDK).
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from types import ModuleType
from typing import Any

from mcu_exp.llm.contract import Backend
from mcu_exp.llm.errors import BackendError, UnknownBackendError

PROVIDERS = ("openai", "anthropic", "google", "vllm", "openai_compatible")
KNOWN_BACKENDS = ("local", *PROVIDERS)
_EXTRAS = {"vllm": "vllm"}  # optional-dependency group per provider; the rest are in [api]


def _backend_name(cfg: Any) -> str:
    name = str(getattr(cfg, "backend", "") or "")
    if name not in KNOWN_BACKENDS:
        raise UnknownBackendError(f"model.backend {name!r} is unknown; known: {', '.join(KNOWN_BACKENDS)}")
    return name


def _provider_module(name: str) -> ModuleType:
    module_name = f"mcu_exp.llm.providers.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise BackendError(f"model.backend {name!r}: {module_name} is not part of this installation") from None
        extra = _EXTRAS.get(name, "api")
        raise BackendError(
            f"model.backend {name!r} needs the package {exc.name!r}: pip install 'mcu_exp[{extra}]'"
        ) from None


_LOCAL_KEPT = 2  # loaded local models kept per process (most recently used)
_local_backends: OrderedDict[str, Backend] = OrderedDict()


def _local_backend(cfg: Any) -> Backend:
    """One loaded local model per process and configuration: every generator of a job (target,
    experts under other seeds, the P0 reference) and later jobs of a sequential sweep reuse it
    instead of loading the weights again."""
    from mcu_exp.llm.cache import canonical_json
    from mcu_exp.llm.local import LocalBackend, local_identity

    key = canonical_json({
        "identity": local_identity(cfg),
        "device": str(getattr(cfg, "device", "auto")),
        "max_batch_size": getattr(cfg, "max_batch_size", None),
        "num_threads": getattr(cfg, "num_threads", None),
    })
    backend = _local_backends.pop(key, None) or LocalBackend(cfg)
    _local_backends[key] = backend
    while len(_local_backends) > _LOCAL_KEPT:
        _local_backends.popitem(last=False)
    return backend


def build_backend(cfg: Any) -> Backend:
    """The backend serving ``cfg`` (a ModelConfig or a DictConfig with its fields)."""
    name = _backend_name(cfg)
    if name == "local":
        return _local_backend(cfg)
    module = _provider_module(name)
    create = getattr(module, "create_backend", None)
    if create is None:
        raise BackendError(f"model.backend {name!r}: {module.__name__} defines no create_backend(cfg)")
    return create(cfg)


def backend_identity(cfg: Any) -> dict[str, Any]:
    """The model part of cache keys for ``cfg``, without creating the backend or loading a model.

    Providers without an ``identity(cfg)`` function are identified by backend name, model id,
    base URL and quirks (the fields that choose which model answers and how it is called).
    """
    name = _backend_name(cfg)
    if name == "local":
        from mcu_exp.llm.local import local_identity

        return local_identity(cfg)
    module = _provider_module(name)
    identity = getattr(module, "identity", None)
    if identity is not None:
        return dict(identity(cfg))
    result: dict[str, Any] = {"backend": name, "model_id": str(cfg.model_id)}
    if getattr(cfg, "base_url", None):
        result["base_url"] = str(cfg.base_url)
    quirks = getattr(cfg, "quirks", None)
    if quirks:
        from omegaconf import OmegaConf

        result["quirks"] = OmegaConf.to_container(quirks, resolve=True) if OmegaConf.is_config(quirks) else dict(quirks)
    return result
