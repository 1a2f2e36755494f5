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

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.contract import Backend

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
    from omegaconf.errors import OmegaConfBaseException

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
    known = [f.name for f in dataclasses.fields(provider.settings)]
    foreign = [k for k in data if k not in known]
    if foreign:
        log.warning(
            "model.settings: ignoring %s: not settings of backend %s (its keys: %s)",
            ", ".join(f"model.settings.{k}" for k in foreign),
            provider.name,
            ", ".join(known),
        )
    try:
        merged = OmegaConf.merge(OmegaConf.structured(provider.settings), {k: data[k] for k in data if k in known})
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        detail = str(exc).splitlines()[0]
        where = f"model.settings.{exc.full_key}" if getattr(exc, "full_key", None) else "model.settings"
        raise BackendError(f"{where}: {detail} (settings of backend {provider.name}: {', '.join(known)})") from None
