"""One job: data → human labels → proxy → alignment metrics → sensitivity → outputs → MLflow.

The expensive stages (generation, scoring) live inside the proxies behind on-disk caches;
everything here costs milliseconds, so sweeps over ε or thresholds stay cheap.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mcu_exp.checks import check_config
from mcu_exp.data import HumanLabels, human_labels, load_dataset, subgroup_labels
from mcu_exp.evaluation import DegenerateMetricWarning, evaluate, metrics_for_mlflow, render_table
from mcu_exp.outputs import write_outputs
from mcu_exp.proxies.base import JobContext, ProxyOutcome, resolve_proxy
from mcu_exp.tracking import flatten_config, mlflow_run, run_name, run_tags, ui_command

log = logging.getLogger("mcu_exp")


def job_dir(cfg: DictConfig) -> Path:
    """The Hydra job's output folder (or a fresh one under outputs/ outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        path = Path(cfg.paths.outputs) / "runs" / time.strftime("%Y-%m-%d/%H-%M-%S")
        path.mkdir(parents=True, exist_ok=True)
        return path


def align(outcome: ProxyOutcome, labels: HumanLabels) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Human label, proxy label and proxy score on the programs both have."""
    common = [pid for pid in outcome.table.index if pid in labels.labels.index]
    table = outcome.table.loc[common]
    return labels.labels.loc[common].astype(int), table["label"].astype(int), table["score"].astype(float)


def evaluate_groups(
    cfg: DictConfig, outcome: ProxyOutcome, groups: dict[str, HumanLabels]
) -> dict[str, Any]:
    """The alignment report against each human label set (all readers and each subgroup)."""
    ev = cfg.evaluation
    reports = {}
    for name, labels in groups.items():
        y_true, y_pred, score = align(outcome, labels)
        if len(y_true) == 0:
            log.warning("label set %r shares no program with the proxy's output; skipped", name)
            continue
        with warnings.catch_warnings():  # kept in report.warnings and printed under the table
            warnings.simplefilter("ignore", DegenerateMetricWarning)
            reports[name] = evaluate(
                y_true.to_numpy(), y_pred.to_numpy(), score.to_numpy(),
                resamples=int(ev.bootstrap_resamples), confidence=float(ev.confidence), seed=int(ev.seed),
            )
    return reports


def cross_proxy_report(cfg: DictConfig, ctx: JobContext, outcome: ProxyOutcome) -> Any | None:
    """P1–P3's labels scored against P0's (the closest analogue of the human test), when the
    dataset has questions; None otherwise."""
    if cfg.proxy.name == "p0" or cfg.proxy.impl is not None or not ctx.dataset.questions:
        return None
    from mcu_exp.proxies.p0_subject import p0_reference_labels

    p0 = p0_reference_labels(ctx)
    if p0 is None:
        return None
    common = [pid for pid in outcome.table.index if pid in p0.index]
    if not common:
        log.warning("no program has both P0 labels and %s labels; cross-proxy report skipped", cfg.proxy.name)
        return None
    ev = cfg.evaluation
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        return evaluate(
            p0.loc[common].astype(int).to_numpy(), outcome.table.loc[common, "label"].astype(int).to_numpy(),
            outcome.table.loc[common, "score"].astype(float).to_numpy(),
            resamples=int(ev.bootstrap_resamples), confidence=float(ev.confidence), seed=int(ev.seed),
        )


def run_job(cfg: DictConfig) -> float:
    """Run the configured job; return the primary metric (F1 against human labels)."""
    started = time.perf_counter()
    check_config(cfg)
    run_dir = job_dir(cfg)
    progress = not cfg.quiet
    dataset = load_dataset(cfg.dataset)
    labels = human_labels(dataset, cfg.labels)
    print(f"Dataset {dataset.name}: {len(dataset.programs)} programs, {len(dataset.evaluations)} evaluations")
    print(labels.describe().capitalize())
    groups: dict[str, HumanLabels] = {"all": labels}
    for name, sub in subgroup_labels(dataset, cfg.labels, list(cfg.evaluation.subgroups)).items():
        groups[name] = sub

    program_ids = list(labels.labels.index)
    if cfg.proxy.impl is None:
        from mcu_exp.proxies.preview import preview, render_preview

        print(render_preview(preview(cfg, dataset, program_ids=program_ids, cache_dir=cfg.cache.dir)))
    if cfg.preview_only:
        print("preview_only=true: stopping before any model is called")
        return float("nan")

    with mlflow_run(cfg, run_name(cfg), run_tags(cfg)) as tracker:
        tracker.log_params(flatten_config(cfg))
        (run_dir / "results").mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, run_dir / "results" / "config.yaml", resolve=True)
        ctx = JobContext(
            cfg=cfg, dataset=dataset, program_ids=program_ids, run_dir=run_dir,
            cache_dir=Path(cfg.cache.dir), progress=progress,
        )
        proxy = resolve_proxy(str(cfg.proxy.name), cfg.proxy.impl)
        outcome = proxy(ctx)
        reports = evaluate_groups(cfg, outcome, groups)
        main = reports["all"]
        vs_p0 = cross_proxy_report(cfg, ctx, outcome)
        artifacts = write_outputs(cfg, run_dir, outcome, groups, reports)

        metrics: dict[str, float] = dict(metrics_for_mlflow(main))
        for name, rep in reports.items():
            if name != "all":
                metrics.update(metrics_for_mlflow(rep, prefix=f"group.{name}."))
        if vs_p0 is not None:
            metrics.update(metrics_for_mlflow(vs_p0, prefix="vs_p0."))
        metrics.update(outcome.metrics)
        balance = labels.balance()
        metrics.update({f"human.{k}": v for k, v in balance.items()})
        metrics["human.dropped_programs"] = len(labels.dropped)
        metrics["job_seconds"] = time.perf_counter() - started
        tracker.log_metrics_and_series(metrics, artifacts.series)
        if outcome.params:
            tracker.log_params({f"result.{k}": str(v) for k, v in outcome.params.items()})
        tracker.set_tags({"mcu.f1": f"{main.metrics['f1']:.4f}"})
        tracker.log_artifacts(artifacts.folder)

        print(render_table(main, title=f"{run_name(cfg)} vs human labels ({cfg.labels.group}, n={main.n})"))
        if vs_p0 is not None:
            print(render_table(vs_p0, title=f"{run_name(cfg)} vs P0 labels (cross-proxy reliability, n={vs_p0.n})"))
        for key in ("tau", "coverage", "nominal_coverage"):
            if key in outcome.metrics:
                print(f"  {key}: {outcome.metrics[key]:.4f}")
        print(f"Outputs: {run_dir}")
        if tracker.active:
            print(f"MLflow run {tracker.run_id} in {tracker.uri}")
            print(f"  open the UI: {ui_command(tracker.uri)}")
        (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True, default=float))
    return float(main.metrics["f1"])
