"""A report of finished runs, made: the runs selected from MLflow (an experiment, a sweep tag, a
filter string; debug runs only when asked), reruns of a configuration collapsed to the newest,
the tables and figures written to a folder, and that folder logged as a report run.
``mcu-exp report`` (:mod:`mcu_exp.cli.report`) and a sweep's end (:mod:`mcu_exp.report.sweep_report`) call it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcu_exp.names import EPSILON_GRID, KIND_REPORT, KIND_SWEEP, MEASURES_FILE, TAG_DEBUG, THETA_GRID, THRESHOLD_GRID

REPORT_KIND = KIND_REPORT


SWEEP_KIND = KIND_SWEEP  # a multirun's parent run


SUBGROUP_FIGURE = "auc_subgroups.png"  # its caption names the groups too small for an AUC


NOT_COMPARED = (REPORT_KIND, SWEEP_KIND)  # tag mcu.kind of runs that are no job: never a row


FIGURE_CAPTIONS = {
    "f1_threshold.png": "F1 against the threshold on α_test; dots: each run's calibrated τ, labelled with its ε; "
    "dotted: the always-understandable baseline, in its series' colour (grey when series share one).",
    "auc_threshold.png": "AUC of the binary labels against the threshold on α_test; dashed: chance (0.5).",
    "coverage_epsilon.png": "Empirical test coverage against ε; dashed: nominal 1 − ε; identical curves drawn once.",
    "f1_epsilon.png": "F1 against ε, τ recalibrated at each ε; dotted: the always-understandable baseline in its "
    "series' colour; shaded: the humans' half-panel F1 with its 95 % interval over programs.",
    "f1_auc_theta.png": "P2's fixed rule: F1 and AUC against θ on SSC_meta; dots: runs that decided with θ; "
    "dotted: the always-understandable baseline, dashed: chance (0.5).",
}


def outputs_dir() -> Path:
    """``$MCU_EXP_OUTPUTS`` or ``./outputs``, as the app resolves ``paths.outputs``."""
    return Path(os.environ.get("MCU_EXP_OUTPUTS") or "outputs")


def default_tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else the app's SQLite store ``<outputs>/mlflow.db``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{(outputs_dir() / 'mlflow.db').resolve()}"


class ReportError(ValueError):
    """A selection or store that cannot make a report; the message is one line."""


def fail(message: str) -> ReportError:
    """The error to raise for a user mistake (the command prints it in one line)."""
    return ReportError(message)


def check_store(uri: str) -> None:
    """Refuse a SQLite store that does not exist (MLflow would create an empty one)."""
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///") :])
        if not path.is_file():
            raise fail(f"no MLflow store at {path}: run a job first, or pass --tracking-uri / set MLFLOW_TRACKING_URI")


def experiment_ids(client: Any, names: Sequence[str], uri: str) -> dict[str, str]:
    """Experiment id → name for each requested name, or a clear error naming what exists."""
    found: dict[str, str] = {}
    for name in names:
        exp = client.get_experiment_by_name(name)
        if exp is None:
            known = ", ".join(sorted(e.name for e in client.search_experiments())) or "none"
            raise fail(f"no MLflow experiment named {name!r} in {uri} (experiments there: {known})")
        found[exp.experiment_id] = name
    return found


def search_all(client: Any, ids: Sequence[str], filter_string: str, limit: int | None = None) -> list[Any]:
    """Every active run matching ``filter_string``, newest first, reports and sweep parents
    left out."""
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException

    runs: list[Any] = []
    token = None
    while True:
        try:
            page = client.search_runs(
                list(ids),
                filter_string,
                ViewType.ACTIVE_ONLY,
                max_results=1000,
                order_by=["attributes.start_time DESC"],
                page_token=token,
            )
        except MlflowException as exc:
            raise fail(f"bad run selection {filter_string!r}: {exc.message.splitlines()[0]}") from None
        runs += [r for r in page if r.data.tags.get("mcu.kind") not in NOT_COMPARED]
        token = page.token
        if not token or (limit is not None and len(runs) >= limit):
            return runs


def selection_filter(sweep: str | None, status: str, extra: str) -> str:
    """The MLflow filter string for a sweep, a status and the user's own expression."""
    parts = []
    if sweep:
        parts.append(f"tags.`mcu.sweep` = '{sweep}'")
    if status.lower() != "any":
        parts.append(f"attributes.status = '{status.upper()}'")
    if extra.strip():
        parts.append(extra.strip())
    return " and ".join(parts)


def is_debug_run(run: Any) -> bool:
    """Whether a run is a debug or smoke run (tag ``mcu.debug=true``: a ``dataset.limit``)."""
    return str(run.data.tags.get(TAG_DEBUG, "")).lower() == "true"


def latest_sweep(client: Any, ids: Sequence[str], status: str, include_debug: bool = False) -> str:
    """The ``mcu.sweep`` tag of the newest run that has one (debug runs only if included)."""
    for run in search_all(client, ids, selection_filter(None, status, ""), limit=1000):
        if run.data.tags.get("mcu.sweep") and (include_debug or not is_debug_run(run)):
            return str(run.data.tags["mcu.sweep"])
    raise fail("no run with a mcu.sweep tag: --sweep latest needs a multirun (mcu-exp -m …)")


def run_records(runs: Sequence[Any], files: Any) -> Any:
    """The selected MLflow runs as :func:`mcu_exp.report.tables.runs_frame`, each with every
    metric it saved (:meth:`mcu_exp.report.sources.RunFiles.metrics`)."""
    from mcu_exp.report.tables import run_record, runs_frame

    return runs_frame(
        run_record(
            r.info.run_id,
            r.info.run_name or "",
            r.info.experiment_id,
            r.info.status,
            r.info.start_time,
            r.data.tags,
            r.data.params,
            files.metrics(r),
        )
        for r in runs
    )


def make_report(
    uri: str,
    experiments: Sequence[str] = ("mcu_exp",),
    sweep: str | None = None,
    filter_string: str = "",
    status: str = "FINISHED",
    out: Path | None = None,
    title: str | None = None,
    log: bool = True,
    include_debug: bool = False,
    echo: bool = False,
) -> Path:
    """Write the report of the selected runs to ``out``; return the folder. Debug runs (tag
    ``mcu.debug=true``) are skipped, and counted, unless ``include_debug``; ``echo`` prints the
    report's opening (the ranked configurations and the answer) on the terminal."""
    import tempfile

    from mlflow.tracking import MlflowClient

    from mcu_exp.report import ceiling, comparisons, display, measures, tables
    from mcu_exp.report.figures import curve_keys, report_figures, subgroup_caption
    from mcu_exp.report.html import Figure, ReportDocument, Section, render_html, render_markdown
    from mcu_exp.report.lead import VERDICT_CAPTION, lead, print_lead
    from mcu_exp.report.pooled import pooled_text
    from mcu_exp.report.pooled_report import pooled_groups, pooled_part
    from mcu_exp.report.sources import RunFiles

    check_store(uri)
    client = MlflowClient(tracking_uri=uri)
    ids = experiment_ids(client, experiments, uri)
    if sweep == "latest":
        sweep = latest_sweep(client, list(ids), status, include_debug)
    selection = selection_filter(sweep, status, filter_string)
    found = search_all(client, list(ids), selection)
    runs = [r for r in found if include_debug or not is_debug_run(r)]
    skipped = len(found) - len(runs)
    skip_text = f"{skipped} debug run{'' if skipped == 1 else 's'} (tag {TAG_DEBUG}=true; --debug compares them)"
    if not runs:
        raise fail(
            f"no runs match [{selection or 'everything'}] in experiment(s) "
            f"{', '.join(ids.values())} of {uri}" + (f"; skipped {skip_text}" if skipped else "")
        )
    if skipped:
        print(f"Skipped {skip_text}")
    with tempfile.TemporaryDirectory(prefix="mcu-report-") as tmp:  # downloads of remote stores only
        files = RunFiles(client, runs, Path(tmp))
        frame = run_records(runs, files)
        keys = tables.varying_keys(frame)
        hidden = tables.name_settings(frame)
        rows = tables.latest_per_config(frame, keys)
        summary = tables.summary_table(frame, keys, hidden)
        subgroup = tables.subgroup_table(frame, keys)
        thr_ids = rows.drop_duplicates(subset=curve_keys(keys)).index.tolist()
        eps_ids = rows.drop_duplicates(subset=curve_keys(keys, keep=("quantile",))).index.tolist()
        thr = files.curves(thr_ids, THRESHOLD_GRID)
        eps = files.curves(eps_ids, EPSILON_GRID)
        theta = files.curves(thr_ids, THETA_GRID)  # runs whose proxy has a similarity (P2)
        scored = measures.measures_part(
            rows, keys, measures.read_measures(files, rows.index.tolist()), display.scope(rows), gone=files.gone
        )
        paired = comparisons.comparison_part(
            rows,
            keys,
            comparisons.read_per_program(files, rows.index.tolist()),
            calibrations=comparisons.read_calibrations(files, rows),
        )
        bundles = files.bundles(rows.index.tolist())
        pools = pooled_groups(runs, files.metrics)  # runs on two or more datasets, one configuration
    out = out or outputs_dir() / "reports" / time.strftime("%Y-%m-%d_%H-%M-%S")
    pooled = pooled_part(pools, out)
    pngs = report_figures(rows, keys, thr, eps, subgroup, theta)
    extra = [
        Section(title, part.table, part.caption, part.notes)
        for title, part in ((measures.TITLE, scored), (comparisons.TITLE, paired))
        if part is not None
    ]
    if pooled is not None:
        extra.append(pooled.section)

    sweeps = sorted({s for s in frame["sweep"] if s})
    label = sweep or (sweeps[0] if len(sweeps) == 1 else "+".join(ids.values()))
    opening = lead(summary, keys)
    main_table = display.display_table(summary, keys)
    if echo:
        print_lead(opening)
        print(f"\n{pooled_text(pools)}" if pools else "", end="")
    doc = ReportDocument(
        lead=opening,
        title=title or f"mcu_exp report · {label}",
        facts={
            "tracking URI": uri,
            "experiments": ", ".join(ids.values()),
            "selection": selection or "every run",
            "runs": f"{len(frame)} ({len(rows)} configurations)",
            "skipped": skip_text if skipped else "—",
            "sweeps": ", ".join(sweeps) or "—",
            "made": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        sections=[
            Section(
                "Alignment with human labels",
                main_table,
                f"{display.scope(rows)}. Value [95 % stratified bootstrap CI] against these human labels; "
                "n: programs. F1 always-1: label every program understandable; F1 random: prevalence-matched "
                f"random labeller (expected value). {VERDICT_CAPTION}" + ceiling.caption(summary),
                [*display.row_notes(summary, keys), *filter(None, [display.name_settings_note(hidden)])],
                display.main_panels(main_table, keys),
            ),
            Section(
                "Per human reader group",
                display.display_subgroups(subgroup, keys),
                f"label: {display.label_rule(rows)}. F1 and AUC of the binary labels against each reader "
                "group's labels, τ calibrated on all programs; each column names the group. "
                f"{display.subgroup_family(subgroup)}. "
                f"Programs per group: {display.group_sizes(subgroup) or '—'}." + ceiling.group_caption(subgroup),
                display.subgroup_notes(subgroup, keys),
            ),
            *extra,
        ],
        figures=[
            Figure(
                name,
                png,
                {
                    **FIGURE_CAPTIONS,
                    ceiling.FIGURE: ceiling.FIGURE_CAPTION,
                    SUBGROUP_FIGURE: subgroup_caption(subgroup),
                }[name],
            )
            for name, png in pngs.items()
        ]
        + (pooled.figures if pooled is not None else []),
        notes=[
            "AUC (labels) is the ROC AUC of the High/Low labels (what the paper reports); AUC (score) the "
            "threshold-free ROC AUC of −α_test.",
            "A configuration is every parameter that can change a result (docs/reports.md lists those that "
            "cannot); one run several times shows its newest run, and 'runs' counts them.",
            "'undefined' marks a metric (or CI bound) that has no value on the run's data, e.g. an AUC when the "
            "human labels hold one class (NaN in the CSVs); '—' a metric the run did not log.",
            *(
                [
                    "Run bundles (the samples and scores each table came from; check one anywhere with mcu-exp bundle "
                    "replay FILE): "
                    + "; ".join(f"{rows.loc[i, 'run_name'] or i}: {where}" for i, where in bundles.items())
                ]
                if bundles
                else []
            ),
        ],
    )
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for fig in doc.figures:
        (out / "figures" / fig.name).write_bytes(fig.png)
    (out / "report.html").write_text(render_html(doc), encoding="utf-8")
    (out / "report.md").write_text(render_markdown(doc), encoding="utf-8")
    tables.csv_table(summary).to_csv(out / "summary.csv", index=False)
    tables.csv_table(subgroup).to_csv(out / "subgroups.csv", index=False)
    runs_csv = frame[["run_name", "status", "sweep", *tables.identity_columns(frame)]].copy()
    runs_csv["bundle"] = [bundles.get(i, "") for i in runs_csv.index]
    runs_csv.to_csv(out / "runs.csv")
    if scored is not None:
        scored.csv.to_csv(out / MEASURES_FILE, index=False)
    if paired is not None:
        paired.csv.to_csv(out / comparisons.COMPARISONS_FILE, index=False)
    if log:
        log_report(client, str(rows["experiment_id"].iloc[0]), label, selection, len(frame), out)
    return out


def log_report(client: Any, experiment_id: str, label: str, selection: str, n_runs: int, folder: Path) -> str:
    """Log the report folder as a FINISHED run ``report · <label>`` tagged ``mcu.kind=report``."""
    from mcu_exp.tracking.artifacts import RunArtifacts

    run = client.create_run(
        experiment_id,
        run_name=f"report · {label}",
        tags={
            "mcu.kind": REPORT_KIND,
            "mcu.report.sweep": label,
            "mcu.report.selection": selection[:4000],
            "mcu.report.runs": str(n_runs),
        },
    )
    try:
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)
    except BaseException:
        client.set_terminated(run.info.run_id, status="FAILED")
        raise
    client.set_terminated(run.info.run_id, status="FINISHED")
    return str(run.info.run_id)
