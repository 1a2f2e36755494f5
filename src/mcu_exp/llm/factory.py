"""Pick the backend named by ``model.backend``; each is imported only when used.

``local`` lives in :mod:`mcu_exp.llm.local`. Every other backend is a module
``mcu_exp.llm.providers.<name>`` exposing ``create_backend(cfg, *, progress) -> Backend`` and
``identity(cfg) -> dict`` (the model part of cache keys, computed without creating a
client, so a warm rerun touches no SDK). ``cfg`` is the model's ``ModelConfig`` (a
DictConfig with the same fields works too). Secrets (a token in ``quirks``, a password in
``base_url``) are masked in the identity, so they never reach a cache key or a cache row.
:func:`check_backend` finds a configuration problem before anything is started.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import Backend
from mcu_exp.llm.errors import BackendError, UnknownBackendError
from mcu_exp.llm.providers._batch_check import check_batch
from mcu_exp.redact import redact_tree, redact_url

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def _provider_names() -> tuple[str, ...]:
    """Every public module of :mod:`mcu_exp.llm.providers`: adding a backend is adding one."""
    import pkgutil

    from mcu_exp.llm import providers

    return tuple(sorted(m.name for m in pkgutil.iter_modules(providers.__path__) if not m.name.startswith("_")))


PROVIDERS = _provider_names()
KNOWN_BACKENDS = ("local", *PROVIDERS)
_EXTRAS = {"vllm": "vllm"}  # optional-dependency group per provider; the rest are in [api]


def _backend_name(cfg: ModelConfig) -> str:
    name = str(cfg.backend)
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


def _provider_function(name: str, function: str) -> Any:
    module = _provider_module(name)
    found = getattr(module, function, None)
    if found is None:
        raise BackendError(f"model.backend {name!r}: {module.__name__} defines no {function}(cfg)")
    return found


_LOCAL_KEPT = 2  # loaded local models kept per process (most recently used)
_local_backends: OrderedDict[str, Backend] = OrderedDict()


def _local_backend(cfg: ModelConfig) -> Backend:
    """One loaded local model per process and configuration: every generator of a job (target,
    experts under other seeds, the P0 reference) and later jobs of a sequential sweep reuse it
    instead of loading the weights again."""
    from mcu_exp.llm.cache import canonical_json
    from mcu_exp.llm.local import LocalBackend, local_identity

    key = canonical_json(
        {
            "identity": local_identity(cfg),
            "device": str(cfg.device),
            "max_batch_size": cfg.max_batch_size,
            "num_threads": cfg.num_threads,
        }
    )
    backend = _local_backends.pop(key, None) or LocalBackend(cfg)
    _local_backends[key] = backend
    while len(_local_backends) > _LOCAL_KEPT:
        _local_backends.popitem(last=False)
    return backend


def build_backend(cfg: ModelConfig, *, progress: bool = True, cache_dir: str | Path | None = None) -> Backend:
    """The backend serving ``cfg``; ``progress=False`` keeps a remote backend's progress bar off.

    The local backend draws no bar of its own (the generator's bar covers it). With
    ``model.batch`` the provider's batch backend, recording its batches in ``cache_dir``
    (``model.batch_dir`` wins; neither: the default cache folder).
    """
    name = _backend_name(cfg)
    if name == "local":
        if bool(getattr(cfg, "batch", False)):
            check_batch(cfg)
        return _local_backend(cfg)
    create = _provider_function(name, "create_backend")
    if bool(getattr(cfg, "batch", False)):
        check_batch(cfg)
        return create(cfg, progress=progress, cache_dir=None if cache_dir is None else str(cache_dir))
    return create(cfg, progress=progress)


def backend_identity(cfg: ModelConfig) -> dict[str, Any]:
    """The model part of cache keys for ``cfg``, without creating the backend or loading a model
    (during a bundle's replay, the identity the bundle recorded for it)."""
    from mcu_exp.bundle import reads

    return reads.pinned_identity(reads.MODELS, cfg, lambda: _identity(cfg))


def _identity(cfg: ModelConfig) -> dict[str, Any]:
    name = _backend_name(cfg)
    if name == "local":
        from mcu_exp.llm.local import local_identity

        return redact_tree(local_identity(cfg))
    return redact_tree(dict(_provider_function(name, "identity")(cfg)))


def _check_base_url(cfg: ModelConfig, name: str) -> None:
    from urllib.parse import urlsplit

    url = cfg.base_url
    if not url:
        if name == "openai_compatible":
            raise BackendError(
                f"model '{cfg.name}': backend openai_compatible needs model.base_url "
                "(e.g. http://127.0.0.1:8000/v1 for `vllm serve`)"
            )
        return
    try:
        parts = urlsplit(str(url))
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:  # a port that is not a number
        valid = False
    if not valid:
        raise BackendError(
            f"model '{cfg.name}': model.base_url={redact_url(str(url))!r} is not a URL; "
            "expected http(s)://host[:port][/path]"
        )


def check_backend(cfg: ModelConfig, *, need_key: bool = True) -> None:
    """Raise a one-line :class:`BackendError` if ``cfg`` cannot work, without creating a
    client: the backend is unknown or not part of this installation, ``model.batch`` is set
    for a backend without batches (or its settings are out of range), ``base_url`` is
    malformed, or (``need_key``: some sample is not cached) the API key's variable is unset."""
    name = _backend_name(cfg)
    check_batch(cfg)
    module = None if name == "local" else _provider_module(name)
    if module is None or name == "vllm":  # in-process models: no URL, no key
        return
    _check_base_url(cfg, name)
    from mcu_exp.llm.providers._common import resolve_api_key

    defaults = getattr(module, "DEFAULT_KEY_ENVS", None)
    if need_key and (cfg.api_key_env or defaults):
        resolve_api_key(cfg, (cfg.api_key_env,) if cfg.api_key_env else tuple(defaults), name)
