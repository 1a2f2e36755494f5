"""Pick the backend named by ``model.backend`` from the provider registry; each is imported
only when used.

Every backend, ``local`` included, is an entry of :data:`mcu_exp.llm.providers.PROVIDERS`: a
:class:`~mcu_exp.llm.providers.Provider` declaring how to create it (and its batch backend),
its cache identity (computed without creating a client, so a warm rerun touches no SDK), its
capabilities (:func:`capabilities`) and its own settings. ``cfg`` is the model's
``ModelConfig`` (a DictConfig with the same fields works too). Secrets (a token in
``quirks``, a password in ``base_url``) are masked in the identity, so they never reach a
cache key or a cache row. :func:`check_backend` finds a configuration problem before anything
is started; :func:`label_problem` a ``model.name``/``model.model_id`` that does not name what runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import Backend
from mcu_exp.llm.errors import BackendError, UnknownBackendError
from mcu_exp.llm.providers import PROVIDERS, Capabilities, Provider, typed_settings
from mcu_exp.llm.providers._batch_check import check_batch
from mcu_exp.redact import redact_tree, redact_url
from mcu_exp.registry import PluginError, UnknownName

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def known_backends() -> tuple[str, ...]:
    """Every registered backend name (built-in and added by plugins), in registration order."""
    return PROVIDERS.names()


KNOWN_BACKENDS = known_backends()  # the built-in ones, at import time; known_backends() for all


def provider(cfg: ModelConfig) -> Provider:
    """The registered :class:`Provider` ``model.backend`` names, or a one-line error."""
    name = str(cfg.backend)
    try:
        found = PROVIDERS[name]
    except UnknownName:
        from mcu_exp.config.suggest import suggest_key

        known = PROVIDERS.names()
        guess = suggest_key(name, list(known))
        hint = f"; did you mean {guess!r}?" if guess else ""
        raise UnknownBackendError(f"model.backend {name!r} is unknown{hint}; known: {', '.join(known)}") from None
    except PluginError as exc:
        raise BackendError(f"model.backend {name!r}: {exc}") from None
    if not isinstance(found, Provider):
        raise BackendError(f"model.backend {name!r}: the registry entry is {type(found).__name__}, not a Provider")
    return found


def capabilities(cfg: ModelConfig) -> Capabilities:
    """What the backend of ``cfg`` declares (batch API, in-process, extra, SDK, keys), without
    creating it: the preview and the checks read this instead of lists of names."""
    return provider(cfg).capabilities


def settings(cfg: ModelConfig) -> Any:
    """``model.settings`` typed by the backend's own settings dataclass (None if it has none)."""
    return typed_settings(provider(cfg), cfg)


def build_backend(cfg: ModelConfig, *, progress: bool = True, cache_dir: str | Path | None = None) -> Backend:
    """The backend serving ``cfg``; ``progress=False`` keeps a remote backend's progress bar off.

    An in-process backend draws no bar of its own (the generator's bar covers it). With
    ``model.batch`` the provider's batch backend, recording its batches in ``cache_dir``
    (``model.batch_dir`` wins; neither: the default cache folder).
    """
    found = provider(cfg)
    check_batch(cfg, found)
    typed_settings(found, cfg)
    found.check_sdk()
    if not found.in_process:
        _check_base_url(cfg, found)
    if found.create_batch is not None and bool(getattr(cfg, "batch", False)):
        return found.create_batch(cfg, progress=progress, cache_dir=None if cache_dir is None else str(cache_dir))
    return found.create(cfg, progress=progress)


def backend_identity(cfg: ModelConfig) -> dict[str, Any]:
    """The model part of cache keys for ``cfg``, without creating the backend or loading a model
    (during a bundle's replay, the identity the bundle recorded for it)."""
    from mcu_exp.store import reads

    return dict(reads.pinned_identity(reads.MODELS, cfg, lambda: _identity(cfg)))


def _identity(cfg: ModelConfig) -> dict[str, Any]:
    return dict(redact_tree(dict(provider(cfg).identity(cfg))))


def _check_base_url(cfg: ModelConfig, found: Provider) -> None:
    """A one-line :class:`BackendError` for a missing (required) or malformed ``base_url``, or
    one whose login (``user:pass@``) competes with an API key or ``Authorization`` header."""
    from urllib.parse import urlsplit

    url = cfg.base_url
    if not url:
        if found.base_url == "required":
            raise BackendError(
                f"model '{cfg.name}': backend {found.name} needs model.base_url "
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
    from mcu_exp.llm.providers._common import quirks
    from mcu_exp.llm.providers._urls import check_login

    check_login(cfg, found.key_envs, quirks(cfg))


def check_backend(cfg: ModelConfig, *, need_key: bool = True) -> None:
    """Raise a one-line :class:`BackendError` if ``cfg`` cannot work, without creating a
    client: the backend is unknown or not part of this installation, ``model.batch`` is set
    for a backend that declares no batch API (or its settings are out of range),
    ``model.settings`` does not fit the backend's settings, ``base_url`` is malformed (or its
    login competes with a key or header), or
    (``need_key``: some sample is not cached) the backend's SDK is missing or the API key's
    variable is unset."""
    found = provider(cfg)
    check_batch(cfg, found)
    typed_settings(found, cfg)
    if found.check is not None:
        found.check(cfg)
    if need_key:
        found.check_sdk()
    if found.in_process:  # in-process models: no URL, no key
        return
    _check_base_url(cfg, found)
    from mcu_exp.llm.providers._common import resolve_api_key

    if need_key and (cfg.api_key_env or found.key_envs):
        resolve_api_key(cfg, (cfg.api_key_env,) if cfg.api_key_env else found.key_envs, found.name)
