"""The end of a sweep over datasets (``-m dataset=scalabrino,stakelab,atoms``): one proxy's
alignment pooled across the human studies.

The finished jobs are grouped and pooled by :mod:`mcu_exp.report.pooled` (every configuration
parameter but the dataset's; a group on two or more datasets gets a pooled row), printed with
each dataset's ρ, AUC (score) and ceiling, drawn as a forest plot, and logged on the sweep's
parent run: metrics ``pooled.<figure>`` (``pooled.<k>.<figure>`` for the k-th group when the
sweep varies more than the dataset) and ``pooled/<k>/pooled.csv`` with ``forest.png``. The
sweep's report (``mcu-exp report``) holds the same groups in its own section.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcu_exp.report.pooled import POOLED_PREFIX, dataset_groups, pool_runs, pooled_text, write_group


def analyse_pooled_sweep(
    client: Any, parent_id: str, children: Sequence[Any], job_metrics: Mapping[str, Mapping[str, float]]
) -> str:
    """The pooled analysis of a finished sweep's datasets, logged on the parent run; the
    printed text (empty when no configuration ran on two or more datasets)."""
    from mcu_exp.tracking.artifacts import RunArtifacts

    groups = dataset_groups([r for r in children if r.info.status == "FINISHED"])
    if not groups:
        return ""
    found = pool_runs(groups, lambda run: job_metrics[run.info.run_id])
    metrics: dict[str, float] = {}
    artifacts = RunArtifacts(client, parent_id, client.get_run(parent_id).info.artifact_uri)
    with tempfile.TemporaryDirectory(prefix="mcu-pooled-") as tmp:
        for k, group in enumerate(found):
            metrics.update(group.metrics(f"{POOLED_PREFIX}{k}." if len(found) > 1 else POOLED_PREFIX))
            write_group(group, Path(tmp) / str(k))
        artifacts.put_folder(Path(tmp), "pooled")
    for key, value in metrics.items():
        if math.isfinite(value):
            client.log_metric(parent_id, key, value)
    return pooled_text(found)
