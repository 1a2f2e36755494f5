"""One job: data → human labels → proxy stages → decision → alignment → outputs → MLflow.

The composed Hydra config is turned into typed sections once (:func:`typed_config`); each
component then receives only the sections it uses. The expensive stages (generation,
scoring) sit behind on-disk caches; everything else costs milliseconds, so sweeps over ε or
thresholds stay cheap.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mcu_exp import names
from mcu_exp.bundle import reads
from mcu_exp.bundle.job import finish_job
from mcu_exp.calibration import get_rule
from mcu_exp.config import Config, EvaluationConfig, ModelConfig
from mcu_exp.config.checks import check_config
from mcu_exp.data import HumanLabels, human_labels, load_dataset, subgroup_labels
from mcu_exp.data.labels import class_size_warning
from mcu_exp.evaluation import (
    PRIMARY,
    AlignmentReport,
    DegenerateMetricWarning,
    evaluate,
    metrics_for_mlflow,
    render_table,
)
from mcu_exp.evaluation.bootstrap import Calibration, Relabel
from mcu_exp.evaluation.ceiling import attach_ceilings, measure_line
from mcu_exp.evaluation.groups_table import class_counts, render_group_table
from mcu_exp.evaluation.report import CI_RECALIBRATE
from mcu_exp.evaluation.verdict import outcomes as verdict_outcomes
from mcu_exp.evaluation.versus_always import f1_minus_always
from mcu_exp.llm.cache import GenerationCache, open_generation_cache, sample_key
from mcu_exp.llm.factory import backend_identity, check_backend
from mcu_exp.outputs import write_outputs
from mcu_exp.proxies.base import OPTIONAL_SECTIONS, Proxy, ProxyContext, ProxyOutcome, build_proxy
from mcu_exp.proxies.preview import preview, render_preview
from mcu_exp.proxies.stages import Generators, Stage, StageResults, run_stages
from mcu_exp.redact import redact_tree
from mcu_exp.tracking import RunLogger, flatten_config, mlflow_run, run_name, run_tags, ui_command
from mcu_exp.tracking.conventions import NOTE_TAG, dataset_input, description, source_tags
from mcu_exp.tracking.headline import headline, metric_table

log = logging.getLogger("mcu_exp")


def typed_config(cfg: DictConfig) -> Config:
    """The composed config as the typed schema's dataclasses (interpolations resolved)."""
    return OmegaConf.to_object(cfg)  # type: ignore[return-value]


def job_dir(outputs: str) -> Path:
    """The Hydra job's output folder (or a fresh one under ``outputs`` outside Hydra)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:
        path = Path(outputs) / "runs" / time.strftime("%Y-%m-%d/%H-%M-%S")
        path.mkdir(parents=True, exist_ok=True)
        return path


def align(table: pd.DataFrame, labels: pd.Series) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Reference label, proxy label and proxy score on the programs both have."""
    common = [pid for pid in table.index if pid in labels.index]
    rows = table.loc[common]
    return labels.loc[common].astype(int), rows[names.LABEL].astype(int), rows[names.SCORE].astype(float)


def relabeller(proxy: Proxy, outcome: ProxyOutcome, ev: EvaluationConfig) -> Relabel | None:
    """For ``evaluation.ci=recalibrate`` and a proxy whose decision rule calibrates on the
    programs: a function giving the labels of bootstrap resamples of ``outcome.table``'s
    programs (by position) after recalibrating on each. None: labels stay fixed."""
    if ev.ci != CI_RECALIBRATE or not proxy.calibrated or outcome.scores is None:
        return None
    decision = proxy.ctx.decision
    rule = get_rule(decision.rule)
    if rule.relabel is None:
        return None
    scores, relabel = outcome.scores, rule.relabel
    return lambda positions: relabel(scores, decision, positions)


def alignment(
    table: pd.DataFrame,
    labels: pd.Series,
    ev: EvaluationConfig,
    relabel: Relabel | None = None,
    human: pd.Series | None = None,
    panel: pd.Series | None = None,
) -> AlignmentReport | None:
    """Metrics, CIs, baselines and tests of the proxy's labels against ``labels`` (None: no
    overlap). ``relabel`` works on positions in ``table``: each resample recalibrates τ on a
    draw of *all* the table's programs (stratified by ``panel``, the whole panel's labels;
    ``labels`` when not given) and scores the drawn programs that ``labels`` covers, so a
    subgroup's or a reference's interval belongs to the estimator its point value comes from.
    ``human`` is the humans' continuous per-program value for the rank correlations."""
    y_true, y_pred, score = align(table, labels)
    if len(y_true) == 0:
        return None
    calibration = None
    if relabel is not None:
        strata = (labels if panel is None else panel).reindex(table.index)
        calibration = Calibration(
            strata=strata.fillna(-1).to_numpy(dtype=int), scored=table.index.get_indexer(y_true.index), relabel=relabel
        )
    continuous = None
    if human is not None:
        values = human.reindex(y_true.index).to_numpy(dtype=float)
        continuous = values if np.isfinite(values).all() else None
    with warnings.catch_warnings():  # kept in report.warnings and printed under the table
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        return evaluate(
            y_true.to_numpy(),
            y_pred.to_numpy(),
            score.to_numpy(),
            resamples=ev.bootstrap_resamples,
            confidence=ev.confidence,
            seed=ev.seed,
            human=continuous,
            calibration=calibration,
            permutations=ev.permutations,
        )


def evaluate_groups(
    outcome: ProxyOutcome, groups: dict[str, HumanLabels], ev: EvaluationConfig, relabel: Relabel | None = None
) -> dict[str, AlignmentReport]:
    """The alignment report against each human label set (all readers and each subgroup);
    recalibrating intervals draw τ from all programs, stratified by all readers' labels."""
    panel = groups[names.ALL_READERS].labels if names.ALL_READERS in groups else None
    reports = {}
    for name, labels in groups.items():
        report = alignment(outcome.table, labels.labels, ev, relabel, labels.correctness, panel)
        if report is None:
            log.warning("label set %r shares no program with the proxy's output; skipped", name)
            continue
        reports[name] = report
    return reports


def reference_report(
    proxy: Proxy,
    reference: Proxy | None,
    outcome: ProxyOutcome,
    ev: EvaluationConfig,
    relabel: Relabel | None = None,
    max_failed_share: float = 0.0,
    panel: pd.Series | None = None,
) -> AlignmentReport | None:
    """The proxy's labels scored against the reference proxy's (cross-proxy reliability, P0 by
    default), when the reference applies to these programs; None otherwise. What generating
    the reference cost goes into ``outcome.metrics`` as ``reference.*``; its stages stop the
    job above ``max_failed_share`` failed samples, like the proxy's own."""
    if reference is None or not reference.applies():
        return None
    generators = Generators(reference.ctx.cache_dir, reference.ctx.progress, max_failed_share, reference.ctx.cache_url)
    labels = reference.outcome(run_stages(reference, generators)).table[names.LABEL]
    outcome.metrics.update({f"reference.{k}": v for k, v in {**generators.stats(), **generators.usage()}.items()})
    report = alignment(outcome.table, labels, ev, relabel, panel=panel)
    if report is None:
        log.warning(
            "no program has both %s labels and %s labels; cross-proxy report skipped", reference.name, proxy.name
        )
    return report


def class_warnings(
    reports: dict[str, AlignmentReport], vs_ref: AlignmentReport | None, min_per_class: int
) -> dict[str, str | None]:
    """The class-size warning of every label set evaluated: each reader group's and, as
    ``reference``, the reference proxy's labels (None where both classes are large enough)."""
    found = {name: class_size_warning(*class_counts(rep), min_per_class) for name, rep in reports.items()}
    if vs_ref is not None:
        found["reference"] = class_size_warning(*class_counts(vs_ref), min_per_class)
    return found


def build_proxies(cfg: Config, ctx: ProxyContext) -> tuple[Proxy, Proxy | None]:
    """The job's proxy and its cross-proxy reference (none when the proxy is the reference
    itself), values checked (one-line errors)."""
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


def _cached_texts(stage: Stage, cache: GenerationCache | None) -> list[list[str]] | None:
    """Every sample text of the stage from the cache, or None when some sample is missing."""
    if cache is None:
        return None
    identity = backend_identity(stage.model)
    keys = [[sample_key(identity, r, i) for i in range(r.n)] for r in stage.requests]
    found = cache.get_many(k for ks in keys for k in ks)
    if any(k not in found for ks in keys for k in ks):
        return None
    return [[found[k].text for k in ks] for ks in keys]


def stage_models(
    cache_dir: Path, *proxies: Proxy | None, cache_url: str | None = None
) -> list[tuple[ModelConfig, bool]]:
    """Every distinct model the proxies' stages call, and whether it has samples to generate
    (some are not in the cache). Walked as the preview walks them: a later stage is built
    from the cached texts of the earlier ones, or from stand-ins."""
    cache = open_generation_cache(cache_dir, cache_url, existing=True)
    models: dict[int, tuple[ModelConfig, bool]] = {}
    try:
        for proxy in proxies:
            if proxy is None or not proxy.applies():
                continue
            done = StageResults()
            for stage in proxy.stages(done):
                texts = None if done.stale else _cached_texts(stage, cache)
                missing = models.get(id(stage.model), (stage.model, False))[1] or texts is None
                models[id(stage.model)] = (stage.model, missing)
                done.put(stage.key, texts or [["x"] * r.n for r in stage.requests], exact=texts is not None)
    finally:
        if cache is not None:
            cache.close()
    return list(models.values())


def check_models(cache_dir: Path, *proxies: Proxy | None, cache_url: str | None = None) -> None:
    """Raise the first configuration problem of a model the job will call (unknown backend,
    malformed ``base_url``, and for a model with samples to generate an unset API-key
    variable) before any run or request is started."""
    for model, missing in stage_models(cache_dir, *proxies, cache_url=cache_url):
        check_backend(model, need_key=missing)


SHOWN_PREFIXES = (names.MEASURE_PREFIX, names.CODE_PREFIX)  # rows printed; dataset.* only in the CSV
MEASURE_CODE = (
    "mcu_exp.evaluation.measure_table",
    "mcu_exp.evaluation.rejection",
    "mcu_exp.evaluation.bootstrap",
    "mcu_exp.evaluation.registry",
    "mcu_exp.evaluation.definitions",
    "mcu_exp.evaluation.metrics",
    "mcu_exp.evaluation.significance",
    "mcu_exp.data.code_metrics",
)  # the measure table's code


def measures_and_baselines(
    outcome: ProxyOutcome, dataset: Any, labels: HumanLabels, ev: EvaluationConfig, cache_dir: Path | None = None
) -> pd.DataFrame | None:
    """AUC(score), Spearman and PRR, with bootstrap CIs (and PRR's permutation p), of each of the
    proxy's uncertainty measures (P1's ``measure.*`` columns) and of the code-metric baselines
    ``evaluation.baselines`` asks for (``code.*``, in their declared direction; with ``all``
    also the dataset's own ``dataset.*`` metrics, raw), against the human labels; None when
    there is nothing to score. None of it depends on the decision: with ``cache_dir`` the table
    is computed once per input and read back by the sweep's other jobs
    (:func:`mcu_exp.result_cache.cached_result`)."""
    from mcu_exp.data.code_metrics import code_metrics, program_metrics
    from mcu_exp.evaluation.measure_table import measure_columns, measure_table
    from mcu_exp.result_cache import cached_result

    frame = outcome.table[[c for c in outcome.table.columns if str(c).startswith(names.MEASURE_PREFIX)]]
    if ev.baselines != "none":
        metrics = program_metrics(dataset) if ev.baselines == "all" else code_metrics(dataset)
        frame = frame.join(metrics, how="left")
    if not measure_columns(frame):
        return None
    args = (frame, labels.labels, labels.correctness, ev.bootstrap_resamples, ev.confidence, ev.seed, ev.permutations)
    return cached_result(cache_dir, "measure_table", args, lambda: measure_table(*args), code=MEASURE_CODE)


def write_rejection(
    outcome: ProxyOutcome, labels: HumanLabels, results: Path, ev: EvaluationConfig, cache_dir: Path | None = None
) -> dict[str, float] | None:
    """For a proxy with a score on every labelled program: the prediction-rejection curves
    against all readers' labels (``rejection.csv``, ``rejection.png``); return the PRR with its
    stratified bootstrap interval and two-sided permutation p against 0 (``prr``,
    ``prr_ci_low``, ``prr_ci_high``, ``prr_perm_p``), as the measure table computes them (the
    interval and p once per score and labels with ``cache_dir``: the score is decision-free)."""
    from mcu_exp.evaluation.bootstrap import stratified_indices
    from mcu_exp.evaluation.rejection import prediction_rejection, prr_interval_and_p
    from mcu_exp.result_cache import cached_result

    truth, _, score = align(outcome.table, labels.labels)
    if len(truth) < 2 or not np.isfinite(score.to_numpy()).all():
        return None
    y, s = truth.to_numpy(), score.to_numpy()
    found = prediction_rejection(y, s)
    found.curves.to_csv(results / names.REJECTION_FILE, index=False)
    if ev.plots and np.isfinite(found.prr):
        from mcu_exp.report.rejection_plot import plot_rejection

        plot_rejection(found.curves, found.prr, results / "rejection.png")
    low = high = p = float("nan")
    if np.isfinite(found.prr):

        def interval_and_p() -> tuple[float, float, float]:
            indices = stratified_indices(y, ev.bootstrap_resamples, np.random.default_rng(ev.seed))
            return prr_interval_and_p(y, s, indices, ev.confidence, ev.permutations, ev.seed)

        key = (y, s, ev.bootstrap_resamples, ev.confidence, ev.seed, ev.permutations)
        low, high, p = cached_result(cache_dir, "prr_interval", key, interval_and_p, code=MEASURE_CODE)
    return {"prr": float(found.prr), "prr_ci_low": low, "prr_ci_high": high, "prr_perm_p": p}


def render_measures(table: pd.DataFrame) -> str:
    """The measure table as printed: the proxy's measures and the code metrics; how many of
    the dataset's own metrics are in ``measures.csv``."""
    from mcu_exp.evaluation.measure_table import render_measure_table

    shown = table[[str(i).startswith(SHOWN_PREFIXES) for i in table.index]]
    shown.attrs.update(table.attrs)
    text = render_measure_table(shown, title="Uncertainty measures and code-metric baselines vs human labels")
    rest = len(table) - len(shown)
    if rest:
        text += f"  and {rest} of the dataset's own metrics (dataset.*): {names.MEASURES_FILE}\n"
    return text


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
    """The resolved config as YAML, secrets masked (secret-looking keys, URL user-info)."""
    OmegaConf.save(OmegaConf.create(redact_tree(OmegaConf.to_container(raw, resolve=True))), path)


def run_job(raw: DictConfig) -> float:
    """Run the configured job; return the primary metric (F1 against human labels)."""
    started = time.perf_counter()
    reads.start()  # the cache rows this job reads go into its run bundle
    cfg = typed_config(raw)
    check_config(cfg)
    dataset = load_dataset(cfg.dataset)
    labels = human_labels(dataset, cfg.labels)
    print(f"Dataset {dataset.name}: {len(dataset.programs)} programs, {len(dataset.evaluations)} evaluations")
    print(labels.describe().capitalize())
    class_warning = labels.class_warning(cfg.evaluation.min_per_class)
    if class_warning:
        print(f"warning: {class_warning}")
    groups: dict[str, HumanLabels] = {names.ALL_READERS: labels}
    groups.update(subgroup_labels(dataset, cfg.labels, cfg.evaluation.subgroups))

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
    print(render_preview(preview(proxy, reference, cache_dir=ctx.cache_dir, cache_url=ctx.cache_url)))
    if cfg.preview_only:
        print("preview_only=true: stopping before any model is called")
        return float("nan")
    check_models(ctx.cache_dir, proxy, reference, cache_url=ctx.cache_url)

    run_dir = job_dir(cfg.paths.outputs)
    title = run_name(cfg, calibrated=proxy.calibrated)
    tags = run_tags(cfg)
    if class_warning:
        tags[names.TAG_CLASS_WARNING] = class_warning
    tags.update(source_tags())
    with mlflow_run(cfg.tracking, cfg.paths.outputs, title, tags) as tracker:
        tracker.log_params(flatten_config(raw, leave_out=unused_sections(proxy, reference)))
        tracker.log_inputs([dataset_input(dataset)])
        results = run_dir / names.RESULTS_DIR
        results.mkdir(parents=True, exist_ok=True)
        save_config(raw, results / names.CONFIG_FILE)
        generators = Generators(ctx.cache_dir, ctx.progress, cfg.generation.max_failed_share, ctx.cache_url)
        outcome = proxy.outcome(run_stages(proxy, generators))
        outcome.metrics.update(generators.stats())
        outcome.metrics.update(generators.usage())
        relabel = relabeller(proxy, outcome, cfg.evaluation)
        reports = evaluate_groups(outcome, groups, cfg.evaluation, relabel)
        reports = attach_ceilings(reports, dataset, cfg.labels, cfg.evaluation, results)
        main = reports[names.ALL_READERS]
        vs_ref = reference_report(
            proxy, reference, outcome, cfg.evaluation, relabel, cfg.generation.max_failed_share, labels.labels
        )
        small = class_warnings(reports, vs_ref, cfg.evaluation.min_per_class)
        artifacts = write_outputs(cfg.evaluation, cfg.decision, run_dir, outcome, groups, reports)
        measures = measures_and_baselines(outcome, dataset, labels, cfg.evaluation, ctx.cache_dir)
        if measures is not None:
            measures.to_csv(results / names.MEASURES_FILE)
        prr = write_rejection(outcome, labels, results, cfg.evaluation, ctx.cache_dir)

        metrics: dict[str, float] = {}
        for name, rep in reports.items():
            metrics.update(metrics_for_mlflow(rep, prefix=names.group_prefix(name)))
        if vs_ref is not None:
            metrics.update(metrics_for_mlflow(vs_ref, prefix=names.VS_REFERENCE_PREFIX))
        metrics.update(outcome.metrics)
        metrics.update({f"{names.HUMAN_PREFIX}{k}": v for k, v in labels.balance().items()})
        metrics[f"{names.HUMAN_PREFIX}dropped_programs"] = len(labels.dropped)
        metrics[f"{names.HUMAN_PREFIX}duplicate_pairs_identical"] = dataset.duplicates.identical
        metrics[f"{names.HUMAN_PREFIX}duplicate_pairs_conflicting"] = dataset.duplicates.conflicting
        metrics.update(verdict_outcomes(main))
        metrics.update(f1_minus_always(metrics))  # the sweep's headline, ΔF1 vs always-1 [paired CI]
        if prr is not None:
            metrics.update(prr)
        metrics["job_seconds"] = time.perf_counter() - started
        (results / names.METRICS_FILE).write_text(json.dumps(json_safe(metrics), indent=2, sort_keys=True))
        logged = headline(metrics, list(reports), series=len(artifacts.series))
        tracker.log_metrics_and_series(logged, artifacts.series)
        if outcome.params:
            tracker.log_params({f"result.{k}": str(v) for k, v in outcome.params.items()})
        primary = main.metrics[PRIMARY]
        result_tags = {
            "mcu.f1": names.UNDEFINED if np.isnan(primary) else f"{primary:.4f}",
            names.TAG_VERDICT: main.verdict,
        }
        if main.undefined:
            result_tags[names.TAG_UNDEFINED] = ",".join(main.undefined)
        result_tags.update(
            {
                f"{names.TAG_CLASS_WARNING}.{name}": text
                for name, text in small.items()
                if text and name != names.ALL_READERS
            }
        )
        result_tags[NOTE_TAG] = description(title, main.verdict, run_facts(cfg, proxy, dataset.name, main.n))
        tracker.set_tags(result_tags)
        tracker.log_artifacts(artifacts.folder)
        log_tables(tracker, metrics, artifacts.folder)
        bundle_line = finish_job(cfg, tracker, run_dir, dataset, title)

        print(
            render_table(
                main,
                title=f"{title} vs human labels ({cfg.labels.group}, n={main.n})",
                ceiling_splits=cfg.evaluation.ceiling_splits,
            )
        )
        if len(reports) > 1:
            shown = {k: v for k, v in small.items() if k in reports and k != names.ALL_READERS}
            print(render_group_table(reports, shown, title=f"{title} per reader group"))
        if vs_ref is not None:
            print(
                render_table(
                    vs_ref, title=f"{title} vs {reference.name.upper()} labels (cross-proxy reliability, n={vs_ref.n})"
                )
            )
            if small.get("reference"):
                print(f"warning: {reference.name.upper()} labels: {small['reference']}")
        if measures is not None:
            print(render_measures(measures))
            print(measure_line(main.ceiling))
        print_decision(outcome.metrics)
        print(f"Outputs: {run_dir}")
        if tracker.active:
            print(f"MLflow run {tracker.run_id} in {tracker.uri}")
            print(f"  open the UI: {ui_command(tracker.uri)}")
        if bundle_line:
            print(bundle_line)
    return float(main.metrics[PRIMARY])


def log_tables(tracker: RunLogger, metrics: dict[str, Any], results: Path) -> None:
    """The run's long tables as MLflow tables, which the UI's artifact view shows and filters:
    every metric (group, metric, value), the per-program table and the proxy's records
    (summaries, judgments, answers…), listed in one update of the run."""
    tables = [(metric_table(metrics), f"{names.TABLES_DIR}/metrics.json")]
    for csv in sorted(results.glob("*.csv")):
        if csv.name.startswith("sensitivity_"):
            continue  # charted as series and figures
        tables.append((pd.read_csv(csv, keep_default_na=False, na_values=[""]), f"{names.TABLES_DIR}/{csv.stem}.json"))
    tracker.log_tables(tables)


def json_safe(metrics: dict[str, Any]) -> dict[str, float | None]:
    """Metrics for strict JSON: an undefined (NaN) or infinite value becomes null."""
    out: dict[str, float | None] = {}
    for key, value in metrics.items():
        number = float(value)
        out[key] = number if np.isfinite(number) else None
    return out


def print_decision(metrics: dict[str, Any]) -> None:
    """The calibrated threshold and the test coverage, each with the phrase that says what it
    is, when the proxy calibrated one."""
    if "tau" not in metrics:
        return
    kept = metrics.get("calibration_fraction", float("nan"))
    print(
        f"  τ = {metrics['tau']:.4f}: the calibrated threshold on the nonconformity score α; a program is "
        f"High when its α_test ≤ τ ({kept:.1%} of the calibration scores lie at or below it)"
    )
    if "coverage" in metrics:
        low, high = metrics.get("coverage_ci_low", float("nan")), metrics.get("coverage_ci_high", float("nan"))
        print(
            f"  coverage = {metrics['coverage']:.4f} [{low:.4f}, {high:.4f}]: the share of test scores at or "
            f"below τ (95 % Clopper–Pearson interval); calibration aims at 1 − ε = "
            f"{metrics.get('nominal_coverage', float('nan')):.4f}"
        )
