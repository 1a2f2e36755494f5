"""The MLflow UI and the HTML report, checked in a real browser (headless Chromium).

An ``mlflow server`` on 127.0.0.1 (free port, SQLite backend in a temp folder) receives a
small stand-in sweep through its HTTP tracking URI; Chromium then renders the experiment on
its headline view (no column chosen by hand, grouped by sweep), the sweep's own view, the
sweep's parent and a job's run page, a job's F1-against-ε and threshold figures in its
artifacts, the run-comparison page and the ``mcu-exp report`` page built from the same server.
Screenshots of each are kept under ``$MCU_EXP_SCREENSHOTS`` (:func:`screenshots`) for a person to look at. Needs the ``chromium``
binary (Debian: ``apt-get install -y chromium``); without it these tests fail, on purpose.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.browser import DevTools, check_screenshot, chromium, chromium_binary
from support.mlflow_server import mlflow_server
from support.mlflow_store import seed_store, share_results
from support.sweeps import sweep_in_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An MLflow tracking server with a SQLite backend and local artifacts, stopped afterwards."""
    chromium_binary()  # fail first, before the slow part, when the browser is missing
    root = seed_store(tmp_path_factory.mktemp("mlflow_server"))  # migrated: the server starts sooner
    with mlflow_server(f"sqlite:///{root / 'mlflow.db'}", root) as url:
        yield url


@dataclass(frozen=True)
class Sweep:
    """A stand-in sweep logged to the server."""

    url: str
    outputs: Path
    experiment_id: str
    runs: dict[str, str]  # run id -> run name (the jobs)
    parent: tuple[str, str]  # the sweep's parent run: id, name
    view: str  # the link to the sweep's own view the end of the sweep printed


@pytest.fixture(scope="module")
def sweep(server: str, tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """Two decision-only stand-in jobs, a sweep, logged through the HTTP tracking URI; the jobs
    draw their own figures (``evaluation.plots=true``; a sweep's jobs leave them out by default)."""
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.ui_view import view_url

    # No local store (the jobs log to the server); the test run's shared result cache.
    outputs = share_results(tmp_path_factory.mktemp("ui_sweep") / "outputs")
    # Swept in this process: these tests read the runs (the command's own sweeps run in tests/app
    # and tests/tracking).
    res = sweep_in_process(outputs, "decision.epsilon=0.05,0.2", "evaluation.plots=true", MLFLOW_TRACKING_URI=server)
    assert f"in {server}" in res.stdout  # the jobs logged to the server, not to a local file
    assert not (outputs / "mlflow.db").exists()
    client = MlflowClient(tracking_uri=server)
    exp = client.get_experiment_by_name("mcu_exp")
    assert f"every run by its headline: {view_url(server, exp.experiment_id)}" in res.stdout
    found = client.search_runs([exp.experiment_id])
    (parent,) = [r for r in found if r.data.tags.get("mcu.kind") == "sweep"]
    runs = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(found) == 3 and len(runs) == 2 and {r.info.status for r in found} == {"FINISHED"}
    view = view_url(server, exp.experiment_id, f"sweep-{parent.info.run_id[:8]}")
    assert f"this sweep's jobs by their headline: {view}" in res.stdout
    return Sweep(
        server,
        outputs,
        exp.experiment_id,
        {r.info.run_id: r.info.run_name for r in runs},
        (parent.info.run_id, parent.info.run_name),
        view,
    )


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Chromium profile for this module's launches, one after another: the MLflow app's
    scripts, cached by the first launch, are not fetched and compiled again by each page
    (about a second a launch); what the pages show comes from the server's API every time."""
    return tmp_path_factory.mktemp("chromium-profile")


def dom_and_screenshot(url: str, tmp_path: Path, name: str, size: tuple[int, int], profile: Path) -> str:
    """The page's DOM (HTML entities decoded) and a checked screenshot ``<name>.png``, kept
    for a person to look at (:func:`keep`); one browser launch takes both."""
    shot = tmp_path / f"{name}.png"
    res = chromium(url, profile, f"--window-size={size[0]},{size[1]}", "--dump-dom", f"--screenshot={shot}")
    assert res.returncode == 0, res.stderr[-2000:]
    check_screenshot(shot, size)
    keep(shot)
    return html.unescape(res.stdout)


def screenshots() -> Path:
    """Where screenshots are kept for a person to look at: ``$MCU_EXP_SCREENSHOTS`` (``.ci/run``
    sets ``outputs/screenshots`` in the clone), else ``mcu_exp_screenshots`` in the temp folder."""
    return Path(os.environ.get("MCU_EXP_SCREENSHOTS") or Path(tempfile.gettempdir()) / "mcu_exp_screenshots")


def keep(shot: Path) -> None:
    """Copy a screenshot to :func:`screenshots`."""
    folder = screenshots()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / shot.name).write_bytes(shot.read_bytes())


def test_the_experiment_opens_on_the_headline_of_each_job(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    """The link a job prints (the shared headline view): no column chosen by hand, yet the rounded
    headline, ΔF1 vs always-1 and its bounds, AUC's lower bound and the ✓/✗ verdict are columns,
    and each job's headline is on the page, sorted best first, under its sweep's group; the
    sweep's parent run is not (the view filters the runs tagged ``mcu.kind=job``)."""
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.ui_view import view_url

    dom = dom_and_screenshot(view_url(sweep.url, sweep.experiment_id), tmp_path, "experiment", (2400, 900), profile)
    for column in ("mcu.headline", "f1_minus_always", "f1_minus_always_ci_low", "auc_score_ci_low", "mcu.beats_always"):
        assert column in dom, f"column {column} is not on the experiment page"
    client = MlflowClient(tracking_uri=sweep.url)
    for run_id, name in sweep.runs.items():
        run = client.get_run(run_id)
        value = run.data.metrics["f1_minus_always"]
        assert name in dom and ui_number(value) in dom, f"{name}: ΔF1 {value} is not shown"
        assert run.data.tags["mcu.headline"] in dom, f"{name}: its rounded headline is not shown"
    sweep_name = client.get_run(sweep.parent[0]).data.tags["mcu.sweep"]
    assert "Group by: mcu.sweep" in dom and f"Group: {sweep_name}" in dom, "the jobs are not grouped by their sweep"
    assert sweep.parent[1] not in dom, "the sweep's parent run is in the headline view (filter tags.`mcu.kind` = 'job')"


def test_a_sweep_opens_on_its_own_jobs(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    """The link the end of the sweep printed (and its parent's ``mcu.view_url``) opens the runs
    table on that sweep's jobs alone, each with its rounded headline: a job of another sweep in
    the same experiment is not listed, nor is the parent."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sweep.url)
    assert client.get_run(sweep.parent[0]).data.tags["mcu.view_url"] == sweep.view
    # A job of another sweep, logged straight to the store (no second sweep: these tests stay quick).
    other = client.create_run(
        sweep.experiment_id,
        run_name="ε=0.5 · another sweep's job",
        tags={"mcu.kind": "job", "mlflow.parentRunId": "0" * 32, "mcu.headline": "MCC 0.99 [0.98, 1.00]"},
    ).info.run_id
    try:
        client.set_terminated(other)
        dom = dom_and_screenshot(sweep.view, tmp_path, "sweep_view", (2400, 900), profile)
    finally:
        client.delete_run(other)
    assert "mcu.headline" in dom and "mcc_ci_low" in dom
    for run_id, name in sweep.runs.items():
        headline = client.get_run(run_id).data.tags["mcu.headline"]
        assert name in dom and headline in dom, f"{name} or its headline {headline!r} is not in the sweep's view"
        assert re.fullmatch(
            r"MCC -?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\] · AUC \(score\) \d\.\d\d · High \d+/50", headline
        )
    assert "another sweep's job" not in dom and "0.99 [0.98" not in dom, "another sweep's job is in this sweep's view"
    assert sweep.parent[1] not in dom, "the sweep's parent run is in its jobs' view"
    assert f"<strong>{len(sweep.runs)}</strong> matching runs" in dom, "the view does not list exactly the sweep's jobs"


def ui_number(value: float) -> str:
    """A metric as MLflow's runs table shows it: every digit stored (JavaScript's shortest
    round-trip form, which is Python's too)."""
    return repr(value)


def test_the_parent_shows_its_best_jobs_headline(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=sweep.url)
    parent = client.get_run(sweep.parent[0])
    best = parent.data.tags["mcu.best_run"]
    assert best in sweep.runs
    ranked = sorted(sweep.runs, key=lambda r: client.get_run(r).data.metrics["mcc_ci_low"])  # the ranking: MCC
    assert best == ranked[-1]
    assert parent.data.metrics["mcc_ci_low"] == client.get_run(best).data.metrics["mcc_ci_low"]
    assert parent.data.tags["mcu.headline"] == client.get_run(best).data.tags["mcu.headline"]
    dom = dom_and_screenshot(
        f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs/{sweep.parent[0]}",
        tmp_path,
        "parent",
        (1600, 1200),
        profile,
    )
    assert "f1_minus_always_ci_low" in dom and sweep.runs[best] in dom
    assert "mcu.headline" in dom and "mcu.view_url" in dom
    # The description links the sweep's own view, relative: on whatever address the UI has.
    relative = "#/" + sweep.view.split("/#/", 1)[1]
    assert f'href="{relative}">its jobs by their headline</a>' in dom, "the parent does not link its jobs' view"


def test_a_job_page_shows_its_headline_and_verdict(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    run_id = next(iter(sweep.runs))
    dom = dom_and_screenshot(
        f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs/{run_id}", tmp_path, "child", (1600, 1200), profile
    )
    assert "f1_minus_always" in dom and "mcu.beats_always" in dom and "result.n" in dom
    charts = dom_and_screenshot(
        f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs/{run_id}/model-metrics",
        tmp_path,
        "child_charts",
        (1600, 1400),
        profile,
    )
    # The threshold curves are one chart section of their own (their keys, scorer included, are
    # checked in tests/tracking/test_headline.py; the charts' titles render only once the
    # histories load, which a loaded machine can delay past Chromium's virtual time).
    # three series: F1 and AUC against the threshold, coverage against ε (nominal is 1 − ε itself)
    assert re.search(r">sensitivity</div><div[^>]*>\(3\)<", charts), "no 'sensitivity (3)' chart section on the page"


def test_a_job_shows_its_figures_among_its_artifacts(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    """A job's artifact page on its F1-against-ε figure and on its threshold figure: the image
    MLflow puts on the page has loaded, at the figure's own width."""
    from mlflow.tracking import MlflowClient
    from PIL import Image

    run_id = next(iter(sweep.runs))
    folder = Path(MlflowClient(tracking_uri=sweep.url).get_run(run_id).data.tags["mcu.output_dir"]) / "results"
    page = f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs/{run_id}/artifacts"
    size = (1600, 1000)
    with DevTools(profile, size) as browser:
        for figure, name in (
            ("sensitivity_epsilon.png", "job_f1_epsilon"),
            ("sensitivity_threshold.png", "job_threshold"),
        ):
            with Image.open(folder / figure) as image:
                width = image.size[0]
            browser.open(f"{page}/{figure}")
            shown = browser.wait(
                f"[...document.images].filter(i => i.alt === {json.dumps(figure)} && i.complete)"
                ".map(i => i.naturalWidth).find(w => w > 0)"
            )
            assert shown == width, f"{figure}: the page's image is {shown} px wide, the figure {width} px"
            browser.screenshot(tmp_path / f"{name}.png")
            keep(tmp_path / f"{name}.png")


def test_load_run_reads_a_run_through_the_server(sweep: Sweep) -> None:
    import mcu_exp

    run_id, name = next(iter(sweep.runs.items()))
    run = mcu_exp.load_run(run_id, tracking_uri=sweep.url)
    assert run.name == name and len(run.per_program) == 50 and "group.phd.precision_ci_low" in run.metrics


def test_run_comparison_page_renders_the_sweep(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    query = urllib.parse.urlencode(
        {"runs": json.dumps(list(sweep.runs)), "experiments": json.dumps([sweep.experiment_id])}, safe='[]",'
    )
    url = f"{sweep.url}/#/compare-runs?{query}"
    dom = dom_and_screenshot(url, tmp_path, "compare", (1400, 1000), profile)
    assert "Comparing 2 Runs" in dom
    for run_id, name in sweep.runs.items():
        assert run_id in dom and name in dom, f"run {name} ({run_id}) is not on the page"
    shown = set(re.findall(r"metric=%22([\w.]+)%22", dom))
    assert {"f1", "auc_binary"} <= shown, f"metrics on the page: {sorted(shown)}"
    assert "decision.epsilon" in dom  # the swept parameter


def test_experiment_page_shows_the_sweep_as_a_parent_run(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    dom = dom_and_screenshot(
        f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs", tmp_path, "sweep_parent", (1600, 1000), profile
    )
    assert sweep.parent[1] in dom, "the sweep's parent run is not on the experiment page"


def test_parent_run_page_lists_its_jobs(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    parent_id, name = sweep.parent
    dom = dom_and_screenshot(
        f"{sweep.url}/#/experiments/{sweep.experiment_id}/runs/{parent_id}",
        tmp_path,
        "sweep_parent_run",
        (1600, 1000),
        profile,
    )
    assert name in dom and "Child runs" in dom
    for child in sweep.runs.values():
        assert child in dom, f"child run {child} is not on its parent's page"


def test_a_job_charts_its_sensitivity_against_the_threshold(sweep: Sweep, tmp_path: Path, profile: Path) -> None:
    run_id = next(iter(sweep.runs))
    key = "sensitivity/f1_vs_threshold_milli.minilm"
    query = urllib.parse.urlencode(
        {
            "runs": json.dumps([run_id]),
            "metric": json.dumps(key),
            "experiments": json.dumps([sweep.experiment_id]),
            "plot_metric_keys": json.dumps([key]),
            "x_axis": "step",
            "show_point": "true",
        },
        safe='[]",',
    )
    dom = dom_and_screenshot(f"{sweep.url}/#/metric?{query}", tmp_path, "sensitivity_chart", (1400, 900), profile)
    assert key in dom


def test_html_report_renders_every_figure(
    sweep: Sweep, tmp_path: Path, profile: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcu_exp.cli.report import main

    out = tmp_path / "report"
    # `mcu-exp report`'s entry point in this process, reading the server as the command would.
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(sweep.outputs))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", sweep.url)
    main(["--sweep", "latest", "--out", str(out)])
    page = out / "report.html"
    assert f"Report: {page}" in capsys.readouterr().out

    # A copy of the page that records, once loaded, how many images the browser decoded.
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text().replace(
            "</body>",
            "<script>window.addEventListener('load', () => { document.body.dataset.decoded = "
            "[...document.images].filter(i => i.complete && i.naturalWidth > 0).length; });</script></body>",
        )
    )
    dom = dom_and_screenshot(probe.as_uri(), tmp_path, "report", (1200, 2400), profile)
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', dom)
    assert len(images) == 6  # the five sensitivity and subgroup figures, and the humans' ceiling figure
    assert 'data-decoded="6"' in dom, "the browser could not decode every figure"
    assert "ceiling" in dom
    for name in sweep.runs.values():
        assert name.split(" · ")[0] in dom
    assert "Alignment with human labels" in dom
