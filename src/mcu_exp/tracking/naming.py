"""Readable MLflow run names and the tags the UI filters and groups by."""

from __future__ import annotations

from pathlib import Path

from mcu_exp.calibration import RULES
from mcu_exp.config import Config


def run_name(cfg: Config) -> str:
    """``model · proxy · ε=… [· θ=…]`` unless ``tracking.run_name`` is set."""
    if cfg.tracking.run_name:
        return str(cfg.tracking.run_name)
    parts = [str(cfg.model.name), str(cfg.proxy["name"]), f"ε={cfg.decision.epsilon:g}"]
    rule = RULES.get(cfg.decision.rule)
    if rule is not None and rule.uses_theta:
        parts.append(f"θ={cfg.decision.theta:g}")
    if cfg.decision.quantile != "empirical":
        parts.append(str(cfg.decision.quantile))
    return " · ".join(parts)


def run_tags(cfg: Config) -> dict[str, str]:
    """Tags for model, proxy, dataset, label rule and, in a multirun, the sweep it belongs to."""
    tags = {
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
            tags["mcu.overrides"] = " ".join(hc.overrides.task)[:4000]
    except ValueError:  # not inside a Hydra job (library use)
        pass
    return tags
