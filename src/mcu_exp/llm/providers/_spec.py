"""What a backend declares about itself, in one place: :class:`Provider`.

A provider module (``mcu_exp.llm.providers.<name>``, or any module of a plugin package) ends
with ``PROVIDER = Provider(...)``: how to create its backend and its batch backend, its cache
identity, and its capabilities (:class:`Capabilities`: batch API, in-process, the pip extra
and SDK modules it needs, the API-key variables it reads, whether it wants ``base_url``).
Its own settings are a dataclass (``Provider.settings``) filled from ``model.settings`` and
checked as proxies' sections are: a wrong type is a one-line error naming the key, an unknown
key a warning naming it. Nothing here imports an SDK.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.errors import BackendError
from mcu_exp.settings import typed

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.contract import Backend
    from mcu_exp.llm.providers._batch import BatchApi
    from mcu_exp.llm.providers._runner import RemoteApi as Calls

log = logging.getLogger("mcu_exp")

BASE_URL_CHOICES = ("unused", "optional", "required")


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do and needs, read without creating it.

    ``batch``: it offers ``model.batch`` (a provider batch API); ``in_process``: the model
    runs in this process (one prefill per prompt, no per-call cost, no URL or key);
    ``extra``: the ``mcu_exp[extra]`` that installs ``sdk`` (the modules it imports; empty:
    the base install has them);
    ``key_envs``: API-key variables tried in order when ``model.api_key_env`` is unset (empty:
    no key unless ``api_key_env`` names one); ``base_url``: unused, optional or required.
    """

    batch: bool = False
    in_process: bool = False
    extra: str = "api"
    sdk: tuple[str, ...] = ()
    key_envs: tuple[str, ...] = ()
    base_url: str = "optional"


@dataclass(frozen=True)
class Provider:
    """One backend: its factories, its identity and its :class:`Capabilities`.

    ``create(cfg, progress=...)`` builds the interactive backend; ``create_batch(cfg,
    progress=..., cache_dir=...)`` the batch one (``capabilities.batch`` follows from it);
    ``identity(cfg)`` the model part of cache keys without a client; ``settings`` the dataclass
    of the provider's own settings (``model.settings``); ``check(cfg)`` an optional extra
    start-up check raising a one-line :class:`BackendError`.
    """

    name: str
    create: Callable[..., Backend]
    identity: Callable[[ModelConfig], Mapping[str, Any]]
    create_batch: Callable[..., Backend] | None = None
    in_process: bool = False
    extra: str = "api"
    sdk: tuple[str, ...] = ()
    key_envs: tuple[str, ...] = ()
    base_url: str = "optional"
    settings: type | None = None
    check: Callable[[ModelConfig], None] | None = None

    def __post_init__(self) -> None:
        if self.base_url not in BASE_URL_CHOICES:
            raise ValueError(f"provider {self.name!r}: base_url={self.base_url!r}; expected one of {BASE_URL_CHOICES}")
        if self.settings is not None and not dataclasses.is_dataclass(self.settings):
            raise ValueError(f"provider {self.name!r}: settings must be a dataclass, got {self.settings!r}")

    @property
    def capabilities(self) -> Capabilities:
        """What this backend declares it can do and needs."""
        return Capabilities(
            batch=self.create_batch is not None,
            in_process=self.in_process,
            extra=self.extra,
            sdk=self.sdk,
            key_envs=self.key_envs,
            base_url="unused" if self.in_process else self.base_url,
        )

    def check_sdk(self) -> None:
        """A one-line ``pip install`` hint when a module of ``sdk`` is not installed (found
        without importing it)."""
        for module in self.sdk:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                target = f"'mcu_exp[{self.extra}]'" if self.extra else "mcu_exp"
                raise BackendError(f"model.backend {self.name!r} needs the package {module!r}: pip install {target}")


def typed_settings(provider: Provider, cfg: ModelConfig) -> Any:
    """``model.settings`` checked against ``provider.settings`` and turned into an instance of it
    (``None`` for a provider without settings). A wrong type is a one-line :class:`BackendError`
    naming the key; keys the dataclass lacks are dropped with a warning naming them."""
    from omegaconf import OmegaConf

    raw = getattr(cfg, "settings", None) or {}
    data = dict(OmegaConf.to_container(raw, resolve=True) if OmegaConf.is_config(raw) else raw)  # type: ignore[arg-type]
    if provider.settings is None:
        if data:
            log.warning(
                "model.settings: ignoring %s: backend %s takes no settings",
                ", ".join(f"model.settings.{k}" for k in data),
                provider.name,
            )
        return None
    owner = f"backend {provider.name}"
    return typed(provider.settings, data, "model.settings", owner, error=BackendError, known_as="settings")


def remote_provider(
    name: str,
    calls: Callable[[ModelConfig], Calls],
    *,
    key_envs: tuple[str, ...] = (),
    batch_api: Callable[[ModelConfig], BatchApi] | None = None,
    sdk: tuple[str, ...] = (),
    extra: str = "api",
    base_url: str = "optional",
    settings: type | None = None,
    check: Callable[[ModelConfig], None] | None = None,
) -> Provider:
    """The declaration of a backend over a remote API, from the parts that differ.

    ``calls(cfg)`` builds the API's call object (:class:`~mcu_exp.llm.providers._runner.Provider`,
    ``open``/``call``/``close``) that a :class:`~mcu_exp.llm.providers._runner.RemoteBackend`
    drives; ``batch_api(cfg)``, when given, a batch API (``model.batch``). The key comes from
    ``model.api_key_env`` or else the first of ``key_envs`` set (none when both are empty);
    the cache identity is backend, model id and quirks, plus ``base_url`` when it is required
    (a self-hosted server: the URL says which weights answer).
    """
    from mcu_exp.llm.providers._common import remote_identity, resolve_api_key

    def identity(cfg: ModelConfig) -> dict[str, Any]:
        return remote_identity(cfg, name, with_base_url=base_url == "required")

    def secret(cfg: ModelConfig) -> Any:
        return resolve_api_key(cfg, key_envs, name) if key_envs or cfg.api_key_env else None

    def create(cfg: ModelConfig, *, progress: bool = True) -> Backend:
        from mcu_exp.llm.providers._runner import RemoteBackend

        return RemoteBackend(cfg, calls(cfg), secret(cfg), identity(cfg), progress=progress)

    def create_batch(cfg: ModelConfig, *, progress: bool = True, cache_dir: str | None = None) -> Backend:
        from mcu_exp.llm.providers._batch import BatchBackend

        assert batch_api is not None
        api = batch_api(cfg)
        return BatchBackend(cfg, api, secret(cfg), identity(cfg), progress=progress, store_dir=cache_dir)

    return Provider(
        name=name,
        create=create,
        identity=identity,
        create_batch=create_batch if batch_api is not None else None,
        extra=extra,
        sdk=sdk,
        key_envs=key_envs,
        base_url=base_url,
        settings=settings,
        check=check,
    )
