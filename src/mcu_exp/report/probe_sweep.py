"""The end of a probe sweep (``-m probe=none,rename_identifiers,strip_comments``): each probe's
job paired with the job of ``probe=none`` that shares every other setting, program by program
(:mod:`mcu_exp.compare.probe`), printed and logged on the sweep's parent run: metrics
``probe.<edit>.<statistic>`` (``probe.<k>.<edit>.…`` for the k-th group of other settings when
the sweep varies more than the probe) and ``probe/<edit>/probe_pairs.csv`` with its figure.
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp import names

log = logging.getLogger(__name__)

PROBE_PREFIX = "probe."
OWN_PARAMS = (PROBE_PREFIX, "result.")  # the probe, and what a job found (its n, τ): not settings


def _per_program(client: Any, run: Any, tmp: Path) -> pd.DataFrame | None:
    """A job's ``per_program.csv`` (its output folder when this machine sees it, else its artifacts)."""
    from mcu_exp.tracking.artifacts import RunArtifacts

    local = Path(run.data.tags.get("mcu.output_dir", "")) / names.RESULTS_DIR / names.PER_PROGRAM_FILE
    path: Path | None = local if local.is_file() else None
    if path is None:
        artifacts = RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
        folder = tmp / run.info.run_id
        folder.mkdir(parents=True, exist_ok=True)
        path = artifacts.get(names.PER_PROGRAM_FILE, folder) or artifacts.get(
            f"{names.RESULTS_DIR}/{names.PER_PROGRAM_FILE}", folder
        )
    if path is None:
        return None
    return pd.read_csv(path, dtype={names.PROGRAM_ID: str}).set_index(names.PROGRAM_ID)


def probe_groups(children: Sequence[Any]) -> list[tuple[Any, list[Any]]]:
    """``(control run, [probe runs])`` for each set of jobs that share every param but the
    probe's (and the ``result.*`` params a job logs of what it found), in which one job ran with ``probe=none`` and at least one under an edit."""
    from mcu_exp.compare.probe import NO_PROBE, PROBE_KEY

    groups: dict[tuple[tuple[str, str], ...], list[Any]] = {}
    for run in children:
        params = run.data.params
        key = tuple(sorted((k, v) for k, v in params.items() if not k.startswith(OWN_PARAMS)))
        groups.setdefault(key, []).append(run)
    found = []
    for runs in groups.values():
        controls = [r for r in runs if r.data.params.get(PROBE_KEY, NO_PROBE) == NO_PROBE]
        probes = [r for r in runs if r.data.params.get(PROBE_KEY, NO_PROBE) != NO_PROBE]
        if len(controls) == 1 and probes:
            found.append((controls[0], probes))
    return found


def analyse_probe_sweep(client: Any, parent_id: str, children: Sequence[Any]) -> str:
    """The paired analysis of every probe job of a finished sweep against its ``probe=none``
    job, logged on the parent run; the printed text (empty when the sweep swept no probe)."""
    from mcu_exp.compare.probe import PROBE_KEY, PROXY_KEY, probe_pairs
    from mcu_exp.tracking.artifacts import RunArtifacts

    groups = probe_groups([r for r in children if r.info.status == "FINISHED"])
    if not groups:
        return ""
    texts: list[str] = []
    metrics: dict[str, float] = {}
    artifacts = RunArtifacts(client, parent_id, client.get_run(parent_id).info.artifact_uri)
    with tempfile.TemporaryDirectory(prefix="mcu-probe-") as tmp:
        for k, (control, probes) in enumerate(groups):
            base = _per_program(client, control, Path(tmp))
            params = control.data.params
            resamples = int(params.get("evaluation.bootstrap_resamples", 2000))
            seed = int(params.get("evaluation.seed", 0))
            for run in probes:
                edited = _per_program(client, run, Path(tmp))
                if base is None or edited is None or names.SCORE not in base or names.SCORE not in edited:
                    log.warning("probe sweep: no per-program scores for run %s or its control", run.info.run_id)
                    continue
                edit = str(run.data.params[PROBE_KEY])
                proxy = str(run.data.params.get(PROXY_KEY, "the proxy"))
                found = probe_pairs(edited, base, edit, proxy, "B", resamples, seed)
                group = f"{k}." if len(groups) > 1 else ""
                metrics.update(found.result.metrics(f"{PROBE_PREFIX}{group}{edit}."))
                texts.append(f"[{run.data.tags.get('mlflow.runName', run.info.run_id)}]\n{found.text()}")
                found.write(Path(tmp) / "out" / f"{group}{edit}")
        if (Path(tmp) / "out").is_dir():
            artifacts.put_folder(Path(tmp) / "out", "probe")
    for key, value in metrics.items():
        if math.isfinite(value):  # an undefined statistic is left out, as a job's headline leaves it
            client.log_metric(parent_id, key, value)
    if not texts:
        return ""
    return "Probe sweep: each program its own control (B = the job under the edit, A = its probe=none job)\n" + "".join(
        texts
    )
