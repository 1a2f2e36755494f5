"""What a job records: its metrics (``metrics.json`` and the MLflow headline), tags, params,
artifacts and tables, and the resolved config beside them.

:class:`JobResults` carries everything a finished job computed from the pipeline to the
recorder here and to what it prints (:mod:`mcu_exp.job.screen`)."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mcu_exp import names
from mcu_exp.config import Config
from mcu_exp.data import Dataset, HumanLabels
from mcu_exp.evaluation import PRIMARY, AlignmentReport, metrics_for_mlflow
from mcu_exp.evaluation.verdict import outcomes as verdict_outcomes
from mcu_exp.evaluation.versus_always import f1_minus_always
from mcu_exp.outputs import Artifacts
from mcu_exp.proxies.base import OPTIONAL_SECTIONS, Proxy, ProxyOutcome
from mcu_exp.recent import Recent
from mcu_exp.redact import redact_tree
from mcu_exp.tracking import RunLogger
from mcu_exp.tracking.artifacts import JsonTable
from mcu_exp.tracking.conventions import NOTE_TAG
from mcu_exp.tracking.headline import metric_table


@dataclass
class JobResults:
    """A job's results: the proxy's outcome, the alignment reports per reader group (and
    against the reference proxy), the class-size warnings, the files written, the measure
    table and the metrics."""

    title: str
    outcome: ProxyOutcome
    reports: dict[str, AlignmentReport]
    vs_ref: AlignmentReport | None
    small: dict[str, str | None]
    artifacts: Artifacts
    measures: pd.DataFrame | None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def main(self) -> AlignmentReport:
        """The report against all readers' labels."""
        return self.reports[names.ALL_READERS]


def job_metrics(
    done: JobResults, labels: HumanLabels, dataset: Dataset, prr: dict[str, float] | None
) -> dict[str, float]:
    """Every metric of the job, as ``metrics.json`` holds them: each reader group's report
    (``group.<g>.`` prefixed), the reference's (``vs_reference.``), the proxy's own, the human
    labels' balance, the verdict's outcomes, ΔF1 against always-1, the share of programs
    labelled High (``labelled_high``) and the PRR."""
    metrics: dict[str, float] = {}
    for name, rep in done.reports.items():
        metrics.update(metrics_for_mlflow(rep, prefix=names.group_prefix(name)))
    if done.vs_ref is not None:
        metrics.update(metrics_for_mlflow(done.vs_ref, prefix=names.VS_REFERENCE_PREFIX))
    metrics.update(done.outcome.metrics)
    metrics.update({f"{names.HUMAN_PREFIX}{k}": v for k, v in labels.balance().items()})
    metrics[f"{names.HUMAN_PREFIX}dropped_programs"] = len(labels.dropped)
    metrics[f"{names.HUMAN_PREFIX}duplicate_pairs_identical"] = dataset.duplicates.identical
    metrics[f"{names.HUMAN_PREFIX}duplicate_pairs_conflicting"] = dataset.duplicates.conflicting
    metrics.update(verdict_outcomes(done.main))
    metrics.update(f1_minus_always(metrics))  # ΔF1 vs always-1 [paired CI], beside the MCC ranking
    main = done.main.metrics
    if main.get("n"):  # the share of programs the proxy labelled High, beside every F1
        metrics["labelled_high"] = float((main["tp"] + main["fp"]) / main["n"])
    if prr is not None:
        metrics.update(prr)
    return metrics


def json_safe(metrics: dict[str, Any]) -> dict[str, float | None]:
    """Metrics for strict JSON: an undefined (NaN) or infinite value becomes null."""
    out: dict[str, float | None] = {}
    for key, value in metrics.items():
        number = float(value)
        out[key] = number if np.isfinite(number) else None
    return out


def result_tags(done: JobResults, note: str) -> dict[str, str]:
    """The tags a finished job adds: its F1 and verdict, undefined metrics, the subgroups'
    class-size warnings and the run's description (``note``)."""
    main = done.main
    primary = main.metrics[PRIMARY]
    tags = {
        "mcu.f1": names.UNDEFINED if np.isnan(primary) else f"{primary:.4f}",
        names.TAG_VERDICT: main.verdict,
    }
    if main.undefined:
        tags[names.TAG_UNDEFINED] = ",".join(main.undefined)
    tags.update(
        {
            f"{names.TAG_CLASS_WARNING}.{name}": text
            for name, text in done.small.items()
            if text and name != names.ALL_READERS
        }
    )
    tags[NOTE_TAG] = note
    return tags


def record_results(tracker: RunLogger, done: JobResults, note: str, plots: bool = False) -> None:
    """Write ``metrics.json``, draw the job's own figures from its files when ``plots``
    (:func:`mcu_exp.report.job_figures.draw_job_figures`, the code ``mcu-exp figures`` runs
    later for a sweep's jobs) and log the job's results to its run: the headline metrics and
    the sensitivity series, the proxy's result params, the tags, the result files and the
    long tables."""
    folder = done.artifacts.folder
    (folder / names.METRICS_FILE).write_text(json.dumps(json_safe(done.metrics), indent=2, sort_keys=True))
    if plots:
        from mcu_exp.report.job_figures import draw_job_figures

        draw_job_figures(folder)
    with tracker.batched():  # metrics, series, params and tags (the table list too) in one or two store writes
        tracker.log_headline(done.metrics, list(done.reports), done.artifacts.series)
        if done.outcome.params:
            tracker.log_params({f"result.{k}": str(v) for k, v in done.outcome.params.items()})
        tracker.set_tags(result_tags(done, note))
        tracker.log_artifacts(folder)
        log_tables(tracker, done.metrics, folder)


def log_tables(tracker: RunLogger, metrics: dict[str, Any], results: Path) -> None:
    """The run's long tables as MLflow tables, which the UI's artifact view shows and filters:
    every metric (group, metric, value), the per-program table, the proxy's records
    (summaries, judgments, answers…) and the sensitivity grids (each row its threshold, ε or θ
    with every metric, which MLflow's series can only chart by integer step), listed in one
    update of the run."""
    tables: list[tuple[Any, str]] = [(metric_table(metrics), f"{names.TABLES_DIR}/metrics.json")]
    for csv in sorted(results.glob("*.csv")):  # sensitivity grids too: their real x values, not a series' steps
        tables.append((csv_table(csv), f"{names.TABLES_DIR}/{csv.stem}.json"))
    tracker.log_tables(tables)


# CSV bytes (by SHA-256) -> their table and its MLflow text, for the jobs of a sweep in this
# process (a job's own tables, per_program.csv…, are the least recently used and leave first)
MAX_TABLES = 16
_TABLES: Recent[JsonTable] = Recent(MAX_TABLES)


def csv_table(path: Path) -> JsonTable:
    """A result CSV as an MLflow table (empty cells missing, "NA" and the like kept as text),
    read and converted once per content in this process: a decision-only sweep's jobs write
    the same proxy records (``summaries.csv``, hundreds of kB) and measure tables, which are
    neither parsed nor converted again. Another content (an edited file) is read afresh."""
    data = path.read_bytes()
    return _TABLES.get(
        hashlib.sha256(data).digest(),
        lambda: JsonTable(pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""])),
    )


def unused_sections(proxy: Proxy, reference: Proxy | None) -> tuple[str, ...]:
    """Config sections neither the proxy nor its reference reads, left out of the MLflow
    params; ``reference`` too when there is none or it applies to no program (P0 without
    questions)."""
    active = reference if reference is not None and reference.applies() else None
    used = proxy.sections | (active.sections if active is not None else frozenset())
    unused = tuple(s for s in OPTIONAL_SECTIONS if s not in used)
    return unused if active is not None else (*unused, "reference")


def run_facts(cfg: Config, proxy: Proxy, dataset: str, n: int) -> dict[str, Any]:
    """The settings a reader of the run description needs, in words."""
    facts: dict[str, Any] = {
        "model": cfg.model.name,
        "proxy": proxy.name,
        "dataset": f"{dataset} (n={n})",
        "labels": f"{cfg.labels.rule} ≥ {cfg.labels.min_fraction:g}, group {cfg.labels.group}, "
        f"readers {cfg.labels.readers}",
    }
    if proxy.calibrated:
        facts["decision"] = f"{cfg.decision.rule}, ε={cfg.decision.epsilon:g}, quantile {cfg.decision.quantile}"
    if "scorer" in proxy.sections:
        facts["scorer"] = cfg.scorer.name
    if "experts" in proxy.sections:
        facts["experts"] = cfg.experts.name
    facts["CIs"] = (
        f"{cfg.evaluation.bootstrap_resamples} bootstrap resamples ({cfg.evaluation.ci}), seed {cfg.evaluation.seed}"
    )
    return facts


def save_config(raw: DictConfig, path: Path) -> None:
    """The resolved config as YAML, secrets masked (secret-looking keys, URL user-info): the
    text ``OmegaConf.save`` writes, dumped from the masked container without building a new
    config from it (a third of the cost, paid by every job of a sweep), the parts a sweep's
    jobs share emitted once (:func:`~mcu_exp.job.config_yaml.config_yaml`)."""
    from mcu_exp.job.config_yaml import config_yaml

    masked = redact_tree(OmegaConf.to_container(raw, resolve=True, enum_to_str=True))
    path.write_text(config_yaml(masked), encoding="utf-8")
