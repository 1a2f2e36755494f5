"""Readable MLflow run names and the tags the UI filters and groups by.

A debug or smoke job (any ``dataset.limit``, which ``debug=quick`` sets) is marked three
ways so it never mixes with real results: its name starts with ``[debug] ``, it carries the
tag ``mcu.debug=true``, and :func:`mcu_exp.tracking.mlflow_run` logs it to the experiment
``<tracking.experiment>-debug``.
"""

from __future__ import annotations

from pathlib import Path

from mcu_exp.calibration import RULES
from mcu_exp.config import Config
from mcu_exp.names import TAG_DEBUG
from mcu_exp.redact import redact_text
from mcu_exp.tracking.sweep import job_name_suffix

DEBUG_PREFIX = "[debug] "


def is_debug(cfg: Config) -> bool:
    """Whether the job is a debug or smoke run: it keeps only some programs (``dataset.limit``)."""
    return cfg.dataset.limit is not None


def run_name(cfg: Config, calibrated: bool = True) -> str:
    """``model · proxy [· ε=…] [· θ=…] [· quantile] [· key=value …]`` unless
    ``tracking.run_name`` is set: ε and the quantile rule only for a proxy that calibrates a
    threshold (``calibrated``; P0 and P3 use none), and in a sweep every swept override the
    name does not already show (``group=professional``). Prefixed ``[debug] `` for a debug run."""
    prefix = DEBUG_PREFIX if is_debug(cfg) else ""
    if cfg.tracking.run_name:
        return prefix + str(cfg.tracking.run_name)
    parts = [str(cfg.model.name), str(cfg.proxy["name"])]
    rule = RULES.get(cfg.decision.rule)
    if calibrated:
        parts.append(f"ε={cfg.decision.epsilon:g}")
        if rule is not None and rule.uses_theta:
            parts.append(f"θ={cfg.decision.theta:g}")
        if cfg.decision.quantile != "empirical":
            parts.append(str(cfg.decision.quantile))
    parts += job_name_suffix()
    return prefix + " · ".join(parts)


def run_tags(cfg: Config) -> dict[str, str]:
    """Tags for model, proxy, dataset, label rule, whether it is a debug run
    (``mcu.debug``: "true" or "false") and, in a multirun, the sweep it belongs to."""
    tags = {
        TAG_DEBUG: "true" if is_debug(cfg) else "false",
        "mcu.model": str(cfg.model.name),
        "mcu.proxy": str(cfg.proxy["name"]),
        "mcu.dataset": str(cfg.dataset.name),
        "mcu.scorer": str(cfg.scorer.name),
        "mcu.labels.group": str(cfg.labels.group),
        "mcu.decision.rule": str(cfg.decision.rule),
    }
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        tags["mcu.output_dir"] = str(hc.runtime.output_dir)
        if hc.mode == RunMode.MULTIRUN:
            tags["mcu.sweep"] = Path(str(hc.sweep.dir)).name
            tags["mcu.sweep_dir"] = str(Path(str(hc.sweep.dir)).resolve())
            tags["mcu.job_num"] = str(hc.job.num)
            tags["mcu.overrides"] = redact_text(" ".join(hc.overrides.task))[:4000]
    except ValueError:  # not inside a Hydra job (library use)
        pass
    return tags
