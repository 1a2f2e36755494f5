"""One job: data → human labels → proxy stages → decision → alignment → outputs → MLflow.

The composed Hydra config is turned into typed sections once (:func:`typed_config`); each
component then receives only the sections it uses. This module only orders the stages; what
each computes, writes, records and prints lives beside it (:mod:`mcu_exp.proxies.preview`
plans the stages, :mod:`mcu_exp.job` aligns, records and prints, :mod:`mcu_exp.outputs`
writes the files). The expensive stages (generation, scoring) sit behind on-disk caches and
the decision-free tables behind the result cache; everything else costs milliseconds, so
sweeps over ε or thresholds stay cheap.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from mcu_exp.config.schema import typed_config

if TYPE_CHECKING:
    from mcu_exp.config import Config
    from mcu_exp.proxies.base import Proxy, ProxyContext

log = logging.getLogger("mcu_exp")


def job_dir(outputs: str) -> Path:
    """The Hydra job's output folder (or a fresh one under ``outputs`` outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        path = Path(outputs) / "runs" / time.strftime("%Y-%m-%d/%H-%M-%S")
        path.mkdir(parents=True, exist_ok=True)
        return path


def build_proxies(cfg: Config, ctx: ProxyContext) -> tuple[Proxy, Proxy | None]:
    """The job's proxy and its cross-proxy reference (none when the proxy is the reference
    itself), values checked (one-line errors)."""
    from mcu_exp.proxies.base import build_proxy

    proxy = build_proxy(cfg.proxy, ctx, "proxy")
    reference = build_proxy(cfg.reference, ctx, "reference") if cfg.reference else None
    if reference is not None and type(reference) is type(proxy):
        reference = None
    for problem in proxy.problems():
        raise ValueError(problem)
    if reference is not None:
        for problem in reference.problems():
            raise ValueError(problem.replace("proxy.", "reference.", 1))
    return proxy, reference


def in_sweep() -> bool:
    """Whether this job is one of a Hydra multirun's (False outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return bool(HydraConfig.get().mode == RunMode.MULTIRUN)
    except (ImportError, ValueError):
        return False


def run_job(raw: DictConfig) -> float:
    """Run the configured job; return the primary metric (F1 against human labels)."""
    # Imported here, not at the top: importing this module (the app, a launcher's worker, every
    # test collecting it) then loads neither pandas nor MLflow until a job runs.
    from mcu_exp import console, interrupts, names
    from mcu_exp.bundle.job import finish_job
    from mcu_exp.data import HumanLabels, load_dataset
    from mcu_exp.evaluation import PRIMARY
    from mcu_exp.evaluation.versus_always import headline_text
    from mcu_exp.job.alignment import class_warnings, evaluate_groups, reference_report, relabeller
    from mcu_exp.job.measures import attach_ceilings, measures_and_baselines, write_rejection
    from mcu_exp.job.pairs import probe_dataset, score_series, twins_analysis, write_probe
    from mcu_exp.job.record import JobResults, job_metrics, record_results, run_facts, save_config, unused_sections
    from mcu_exp.job.screen import cache_line, print_inputs, print_results, print_where
    from mcu_exp.job.targets import job_labels
    from mcu_exp.job.validate import check_config
    from mcu_exp.outputs import write_outputs
    from mcu_exp.proxies.base import ProxyContext
    from mcu_exp.proxies.preview import plan_stages, render_preview
    from mcu_exp.proxies.stages import Generators, run_stages
    from mcu_exp.store import reads
    from mcu_exp.tracking import flatten_config, mlflow_run, run_name, run_tags
    from mcu_exp.tracking.conventions import dataset_input, description, plugin_tags, source_tags

    started = time.perf_counter()
    reads.start()  # the cache rows this job reads go into its run bundle
    cfg = typed_config(raw)
    check_config(cfg)
    if cfg.evaluation.plots is None:  # unset: a single run draws its figures, a sweep's job leaves them out
        cfg.evaluation.plots = not in_sweep()
    dataset, probed = probe_dataset(load_dataset(cfg.dataset), cfg.probe)
    labels, subgroups = job_labels(dataset, cfg.labels, cfg.evaluation.subgroups)
    class_warning = labels.class_warning(cfg.evaluation.min_per_class)
    print_inputs(dataset, labels, class_warning)
    groups: dict[str, HumanLabels] = {names.ALL_READERS: labels, **subgroups}

    ctx = ProxyContext(
        dataset=dataset,
        program_ids=list(labels.labels.index),
        model=cfg.model,
        scorer=cfg.scorer,
        experts=cfg.experts,
        decision=cfg.decision,
        cache_dir=Path(cfg.cache.dir),
        progress=not cfg.quiet,
        cache_url=cfg.cache.url or None,
    )
    proxy, reference = build_proxies(cfg, ctx)
    plan = plan_stages(proxy, reference, cache_dir=ctx.cache_dir, cache_url=ctx.cache_url)
    print(render_preview(plan.estimates))
    if cfg.preview_only:
        print("preview_only=true: stopping before any model is called")
        return float("nan")
    plan.check_models()

    run_dir = job_dir(cfg.paths.outputs)
    title = run_name(cfg, calibrated=proxy.calibrated)
    tags = run_tags(cfg)
    if class_warning:
        tags[names.TAG_CLASS_WARNING] = class_warning
    tags.update(source_tags())
    tags.update(plugin_tags())
    with mlflow_run(cfg.tracking, cfg.paths.outputs, title, tags) as tracker:
        tracker.log_params(flatten_config(raw, leave_out=unused_sections(proxy, reference)))
        tracker.log_inputs([dataset_input(dataset)])
        results = run_dir / names.RESULTS_DIR
        results.mkdir(parents=True, exist_ok=True)
        save_config(raw, results / names.CONFIG_FILE)
        probe_metrics = write_probe(probed, results)
        generators = Generators(ctx.cache_dir, ctx.progress, cfg.generation.max_failed_share, ctx.cache_url)
        try:
            generated = run_stages(proxy, generators)
            if (hit_line := cache_line(generators.stats())) is not None:
                print(hit_line)  # when generation ends, before scoring
            outcome = proxy.outcome(generated)
            interrupts.check()
            outcome.metrics.update(generators.stats())
            outcome.metrics.update(generators.usage())
            relabel = relabeller(proxy, outcome, cfg.evaluation)
            reports = evaluate_groups(outcome, groups, cfg.evaluation, relabel, ctx.cache_dir)
            score = score_series(outcome.table)
            latent = {name: hl.model for name, hl in groups.items()} if labels.model else None
            reports = attach_ceilings(
                reports, dataset, cfg.labels, cfg.evaluation, results, ctx.cache_dir, score, latent
            )
            vs_ref = reference_report(
                proxy,
                reference,
                outcome,
                cfg.evaluation,
                relabel,
                cfg.generation.max_failed_share,
                labels.labels,
                ctx.cache_dir,
            )
            small = class_warnings(reports, vs_ref, cfg.evaluation.min_per_class)
            artifacts = write_outputs(cfg.evaluation, run_dir, outcome, groups, reports, ctx.cache_dir)
            measures = measures_and_baselines(outcome, dataset, labels, cfg.evaluation, ctx.cache_dir)
            if measures is not None:
                measures.to_csv(results / names.MEASURES_FILE)
            prr = write_rejection(outcome, labels, results, cfg.evaluation, ctx.cache_dir)

            done = JobResults(title, outcome, reports, vs_ref, small, artifacts, measures)
            done.metrics = job_metrics(done, labels, dataset, prr)
            twins, twins_text = twins_analysis(dataset, score, proxy.name, cfg.labels, cfg.evaluation, results)
            done.metrics.update({**probe_metrics, **twins})
            done.metrics["job_seconds"] = time.perf_counter() - started
            facts = run_facts(cfg, proxy, dataset.name, done.main.n)
            record_results(tracker, done, description(title, done.main.verdict, facts), bool(cfg.evaluation.plots))
            bundle_line = finish_job(cfg, tracker, run_dir, dataset, title)
            print_results(done, cfg, reference)
            if twins_text:
                print(twins_text, end="")
            print_where(run_dir, tracker, bundle_line)
            console.job_line(f"{title}: {headline_text(done.metrics)}")
        except KeyboardInterrupt:  # Ctrl-C: the run ends KILLED with what this job saved
            saved = generators.saved()
            tracker.log_metrics_and_series({"interrupted.samples_saved": saved, **generators.stats()}, {})
            raise console.JobInterrupted(saved, tracker.run_id, str(ctx.cache_dir)) from None
    return float(done.main.metrics[PRIMARY])
