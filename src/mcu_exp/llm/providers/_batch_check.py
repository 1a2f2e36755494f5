"""Checks and prices of ``model.batch`` that need no client (the factory and the preview use them).

Whether a backend has a batch API is its own declaration (``Provider.create_batch``), not a
list kept here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcu_exp.llm.errors import BackendError

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.providers._spec import Provider


def batch_on(cfg: ModelConfig) -> bool:
    """Whether ``cfg`` asks for the provider's batch API."""
    return bool(getattr(cfg, "batch", False))


def price_factor(cfg: ModelConfig) -> float:
    """What share of the interactive price ``cfg``'s requests cost: ``batch_discount`` in batch mode, else 1."""
    return float(cfg.batch_discount) if batch_on(cfg) else 1.0


def check_batch(cfg: ModelConfig, provider: Provider) -> None:
    """Raise a one-line :class:`BackendError` when ``model.batch`` cannot apply to ``cfg``
    (served by ``provider``)."""
    if not batch_on(cfg):
        return
    if not provider.capabilities.batch:
        raise BackendError(
            f"model '{cfg.name}': model.batch=true but backend {provider.name!r} declares no batch API; "
            "set model.batch=false"
        )
    discount = float(cfg.batch_discount)
    if not 0.0 < discount <= 1.0:
        raise BackendError(
            f"model '{cfg.name}': model.batch_discount={discount} must be in (0, 1] "
            "(the batch price as a share of the interactive price)"
        )
    if float(cfg.batch_poll_s) <= 0 or (cfg.batch_max_requests is not None and int(cfg.batch_max_requests) < 1):
        raise BackendError(
            f"model '{cfg.name}': model.batch_poll_s must be > 0 and model.batch_max_requests "
            f">= 1 or null (got {cfg.batch_poll_s}, {cfg.batch_max_requests})"
        )
