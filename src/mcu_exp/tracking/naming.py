"""Readable MLflow run names and the tags the UI filters and groups by.

A run's name says first what sets it apart, so the UI's cut-off name column still tells runs
apart: in a sweep the swept values (``ε=0.05 · group=professional``), then every other
setting the job changed that changes its results, in a short form (``rougel``, ``seed7``,
``Qwen2.5-0.5B``), then model and proxy and, for a calibrated proxy, ε (θ, quantile). A name
already taken in the experiment gets `` #2``, `` #3``… (:func:`unique_name`).

A debug or smoke job (any ``dataset.limit``, which ``debug=quick`` sets) is marked three
ways so it never mixes with real results: its name starts with ``[debug] ``, it carries the
tag ``mcu.debug=true``, and :func:`mcu_exp.tracking.mlflow_run` logs it to the experiment
``<tracking.experiment>-debug``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcu_exp.calibration import RULES
from mcu_exp.config import Config
from mcu_exp.names import KIND_JOB, TAG_DEBUG, TAG_KIND
from mcu_exp.redact import redact_text
from mcu_exp.tracking.sweep import job_parent, short_keys, swept

DEBUG_PREFIX = "[debug] "
# Overrides that never change a job's numbers: where it writes, how it logs, how fast it runs.
NO_RESULT_SECTIONS = ("tracking", "cache", "paths", "hydra", "debug", "dataset.limit")
NO_RESULT_KEYS = {
    "quiet",
    "preview_only",
    "verbose",
    "plots",
    "batch_size",
    "max_batch_size",
    "device",
    "num_threads",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "max_retries",
    "backoff_initial_s",
    "backoff_max_s",
    "timeout_s",
    "interrupt_grace_s",
    "batch_poll_s",
    "batch_poll_max_s",
    "batch_dir",
    "api_key_env",
    "max_failed_share",
}
BASE_KEYS = ("model", "proxy", "model.name", "proxy.name")  # the base name shows them unless they vary
ABBREVIATED = {"bootstrap_resamples": "boot", "permutations": "perm", "ceiling_splits": "splits"}  # glued to the value


def is_debug(cfg: Config) -> bool:
    """Whether the job is a debug or smoke run: it keeps only some programs (``dataset.limit``)."""
    return cfg.dataset.limit is not None


def changes_results(key: str) -> bool:
    """Whether an override of ``key`` can change a job's numbers (see :data:`NO_RESULT_KEYS`)."""
    if any(key == s or key.startswith(s + ".") or key.startswith(s + "/") for s in NO_RESULT_SECTIONS):
        return False
    return key.rsplit(".", 1)[-1] not in NO_RESULT_KEYS


def short_form(key: str, value: str, short_key: str) -> str:
    """One override as a name part: a config group choice or a ``name`` by its value
    (``scorer=rougel`` → ``rougel``), a seed glued to its value (``proxy.sample_seed=7`` → ``seed7``), a model id by
    its last path component (``Qwen/Qwen2.5-0.5B`` → ``Qwen2.5-0.5B``), a ``_target_`` by its class
    name, ε and θ by their symbols, resampling counts abbreviated (``boot1000``), anything else
    ``short_key=value``."""
    last = key.rsplit(".", 1)[-1]
    if key == "decision.epsilon":
        return f"ε={value}"
    if key == "decision.theta":
        return f"θ={value}"
    if "." not in key or key == "decision.quantile" or last == "name":
        return value.strip("'\"")
    if last in ("seed", "sample_seed"):
        return f"seed{value}"
    if last.endswith("_seed"):
        return f"{last}{value}"
    if last in ABBREVIATED:
        return f"{ABBREVIATED[last]}{value}"
    if last == "_target_":
        return value.rsplit(".", 1)[-1]
    if last == "model_id":
        return value.strip("'\"").rstrip("/").rsplit("/", 1)[-1]
    return f"{short_key}={value}"


def config_parts(overrides: Sequence[str], varying: Sequence[str] = ()) -> tuple[list[str], set[str]]:
    """The name parts of a job's overrides that change its results: the ``varying`` (swept)
    keys first, in sweep order, then the others in command-line order (model and proxy only
    when swept: the base name shows them); with the set of keys they cover (so the base name
    does not repeat ε)."""
    values: dict[str, str] = {}
    for override in overrides:
        key, sep, value = override.partition("=")
        key = key.lstrip("+~")
        if sep and changes_results(key):
            values[key] = value
    ordered = [k for k in varying if k in values] + [k for k in values if k not in varying]
    kept = [k for k in ordered if k in varying or k not in BASE_KEYS]
    short = short_keys(kept)
    return [redact_text(short_form(k, values[k], short[k])) for k in kept], set(kept)


def _hydra_overrides() -> tuple[list[str], list[str]]:
    """This Hydra job's overrides and the keys its sweep varies (both empty outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return [], []
    overrides = [str(o) for o in hc.overrides.task]
    varying: list[str] = []
    if hc.mode == RunMode.MULTIRUN:
        parent = job_parent()
        if parent:
            varying = [str(k) for k in parent.get("varying", [])]
        else:
            from omegaconf import OmegaConf

            try:
                recorded = list(OmegaConf.load(Path(str(hc.sweep.dir)) / "multirun.yaml").hydra.overrides.task)
            except (OSError, AttributeError, ValueError):
                recorded = []
            varying = [k for k, _ in swept(recorded)]
    return overrides, varying


def run_name(
    cfg: Config, calibrated: bool = True, overrides: Sequence[str] | None = None, varying: Sequence[str] = ()
) -> str:
    """``[swept values ·] [other result-changing overrides ·] model · proxy [· ε=…] [· θ=…]
    [· quantile]`` unless ``tracking.run_name`` is set: ε and the quantile rule only for a
    proxy that calibrates a threshold (``calibrated``; P0 and P3 use none). ``overrides`` and
    ``varying`` default to the running Hydra job's (:func:`config_parts`). Prefixed
    ``[debug] `` for a debug run."""
    prefix = DEBUG_PREFIX if is_debug(cfg) else ""
    if cfg.tracking.run_name:
        return prefix + str(cfg.tracking.run_name)
    if overrides is None:
        overrides, varying = _hydra_overrides()
    front, covered = config_parts(overrides, varying)
    parts = [
        part
        for section, part in (("model", str(cfg.model.name)), ("proxy", str(cfg.proxy["name"])))
        if not {section, f"{section}.name"} & covered
    ]
    rule = RULES.get(cfg.decision.rule)
    if calibrated:
        if "decision.epsilon" not in covered:
            parts.append(f"ε={cfg.decision.epsilon:g}")
        if rule is not None and rule.uses_theta and "decision.theta" not in covered:
            parts.append(f"θ={cfg.decision.theta:g}")
        if cfg.decision.quantile != "empirical" and "decision.quantile" not in covered:
            parts.append(str(cfg.decision.quantile))
    return prefix + " · ".join([*front, *parts])


def unique_name(client: Any, experiment_id: str, name: str) -> str:
    """``name``, or ``name #k`` with the smallest k ≥ 2 no run of the experiment (deleted ones
    aside) is called yet: two runs of one experiment never share a name."""
    pattern = name.replace("\\", "\\\\").replace("'", "\\'")
    taken = {
        str(r.info.run_name)
        for r in client.search_runs(
            [experiment_id], filter_string=f"attributes.run_name LIKE '{pattern}%'", max_results=50000
        )
    }
    if name not in taken:
        return name
    k = 2
    while f"{name} #{k}" in taken:
        k += 1
    return f"{name} #{k}"


def run_tags(cfg: Config) -> dict[str, str]:
    """Tags for what the run is (``mcu.kind``: ``job``), model, proxy, dataset, label rule, whether it
    is a debug run (``mcu.debug``: "true" or "false") and, in a multirun, the sweep it belongs to."""
    tags = {
        TAG_KIND: KIND_JOB,
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
