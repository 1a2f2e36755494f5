"""What sets two compared runs apart: the parameters whose values differ.

An MLflow run's params are the flattened config the job ran with; a run folder's are its
``config.yaml`` flattened the same way (:func:`mcu_exp.tracking.flatten_config`). Keys that
never change results (where the job wrote, how it logged, caches) are left out, as in run
names (:func:`mcu_exp.tracking.naming.changes_results`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

MISSING = "—"  # a key one run has and the other lacks


def folder_params(config: Path | None) -> dict[str, str]:
    """A run folder's ``config.yaml`` as flat params; empty when there is none or it is unreadable."""
    import yaml

    from mcu_exp.tracking import flatten_config
    from mcu_exp.yaml_limits import safe_load

    if config is None or not config.is_file():
        return {}
    try:
        loaded = safe_load(config.read_text(), str(config))
    except (OSError, yaml.YAMLError):
        return {}
    return flatten_config(loaded) if isinstance(loaded, dict) else {}


def differing(a: Mapping[str, str], b: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(key, value in A, value in B)`` of every result-changing param whose values differ,
    sorted by key (:data:`MISSING` where a run lacks the key)."""
    from mcu_exp.tracking.naming import changes_results

    keys = sorted(k for k in set(a) | set(b) if changes_results(k) and not k.startswith("result."))
    return [(k, a.get(k, MISSING), b.get(k, MISSING)) for k in keys if a.get(k) != b.get(k)]


def lines(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """The lines the comparison prints about its runs' settings: each differing param as
    ``key: A value → B value``, or that they share their configuration, or that one is unknown."""
    if not a or not b:
        missing = " and ".join(side for side, params in (("A", a), ("B", b)) if not params)
        return [f"Parameters: unknown for {missing} (no MLflow params or config.yaml), so not compared."]
    found = differing(a, b)
    if not found:
        return ["Parameters: A and B share every setting that changes results."]
    return [f"Parameters that differ ({len(found)}), A → B:", *(f"  {k}: {va} → {vb}" for k, va, vb in found)]
