"""What the report's figures and tables show a reader: baseline and chance lines, τ dots
labelled with ε, one coverage line per distinct curve, legends outside the plotting area,
baselines beside F1 and CIs on their own line in the HTML table, run counts and n per group.
Asserted on matplotlib's artists and the HTML, not on pixels."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from mcu_exp.report import figures, tables
from mcu_exp.report.html import ReportDocument, Section, cell_html, render_html

GRID = np.linspace(0.1, 0.5, 5)


def record(
    run_id: str,
    model: str,
    eps: float,
    start: int,
    group: str = "all",
    baseline: float = 0.684,
    tau: float = 0.3,
    f1: float = 0.7,
) -> dict:
    params = {
        "decision.epsilon": str(eps),
        "decision.rule": "conformal",
        "decision.quantile": "empirical",
        "labels.group": group,
    }
    tags = {"mcu.model": model, "mcu.proxy": "p1", "mcu.dataset": "scalabrino"}
    metrics = {
        "f1": f1,
        "f1_ci_low": f1 - 0.1,
        "f1_ci_high": f1 + 0.1,
        "auc_binary": 0.55,
        "auc_binary_ci_low": 0.45,
        "auc_binary_ci_high": 0.65,
        "baseline_always_f1": baseline,
        "baseline_random_f1": 0.518,
        "tau": tau,
        "n": 50.0,
        "group.professional.f1": 0.6,
        "group.professional.auc_binary": 0.6,
        "group.professional.n": 30.0,
    }
    return tables.run_record(run_id, f"{model} · ε={eps}", "1", "FINISHED", start, tags, params, metrics)


def threshold_curves(*run_ids: str) -> pd.DataFrame:
    return pd.concat(
        [pd.DataFrame({"run_id": r, "threshold": GRID, "f1": GRID + 0.3, "auc_binary": 0.6}) for r in run_ids],
        ignore_index=True,
    )


def horizontal_lines(ax: Axes) -> dict[float, str]:
    """The axhline artists of ``ax``: height → legend label."""
    found = {}
    for line in ax.lines:
        x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
        if len(y) == 2 and y[0] == y[1] and list(x) == [0.0, 1.0]:
            found[round(float(y[0]), 6)] = line.get_label()
    return found


def drawn_extents(fig: Figure, ax: Axes) -> tuple[Bbox, Bbox]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)


@pytest.fixture
def rows() -> tuple[pd.DataFrame, list[str]]:
    frame = tables.runs_frame(
        [
            record("a", "qwen3-14b", 0.1, 1, tau=0.2),
            record("b", "qwen3-14b", 0.2, 2, tau=0.4),
            record("c", "gpt-4o", 0.1, 3),
        ]
    )
    keys = tables.varying_keys(frame)
    return tables.latest_per_config(frame, keys), keys


def test_f1_plot_has_the_baseline_line_and_auc_plot_the_chance_line(rows: tuple[pd.DataFrame, list[str]]) -> None:
    table, keys = rows
    curves = threshold_curves("a", "c")
    (ax,) = figures.plot_threshold_metric(curves, table, keys, "f1", "F1").axes
    assert horizontal_lines(ax) == {0.684: "F1 always-1 baseline (68.4%)"}
    (auc,) = figures.plot_threshold_metric(curves, table, keys, "auc_binary", "AUC").axes
    assert horizontal_lines(auc) == {0.5: "chance (0.5)"}
    (bare,) = figures.plot_threshold_metric(curves.iloc[:0], table, keys, "f1", "F1").axes
    assert horizontal_lines(bare) == {}  # no curve, no baseline to compare it with


def test_runs_on_other_labels_get_their_own_baseline_line() -> None:
    frame = tables.runs_frame(
        [record("a", "m", 0.1, 1, group="all"), record("b", "m", 0.1, 2, group="professional", baseline=0.75)]
    )
    keys = tables.varying_keys(frame)
    table = tables.latest_per_config(frame, keys)
    (ax,) = figures.plot_threshold_metric(threshold_curves("a", "b"), table, keys, "f1", "F1").axes
    assert set(horizontal_lines(ax)) == {0.684, 0.75}


def test_tau_dots_are_labelled_with_their_epsilon(rows: tuple[pd.DataFrame, list[str]]) -> None:
    table, keys = rows
    (ax,) = figures.plot_threshold_metric(threshold_curves("a", "c"), table, keys, "f1", "F1").axes
    points = sorted((round(t.xy[0], 6), round(t.xy[1], 6), t.get_text()) for t in ax.texts)
    # qwen3's one curve carries both its runs' τ (a at ε=0.1, b at ε=0.2), gpt-4o's its one run
    assert points == [(0.2, 0.7, "ε=0.1"), (0.3, 0.7, "ε=0.1"), (0.4, 0.7, "ε=0.2")]


def test_theta_plot_has_baseline_and_chance_lines() -> None:
    frame = tables.runs_frame([record("a", "m", 0.1, 1)])
    frame["rule"] = "theta"
    keys = tables.varying_keys(frame)
    theta = pd.DataFrame({"run_id": "a", "theta": GRID, "f1": 1 - GRID, "auc_binary": 0.6})
    f1_ax, auc_ax = figures.plot_theta(theta, tables.latest_per_config(frame, keys), keys).axes
    assert list(horizontal_lines(f1_ax)) == [0.684] and list(horizontal_lines(auc_ax)) == [0.5]


def test_identical_coverage_curves_share_one_line() -> None:
    frame = tables.runs_frame(
        [
            record("a", "qwen3-14b", 0.1, 1, group="all"),
            record("b", "qwen3-14b", 0.1, 2, group="professional"),
            record("c", "gpt-4o", 0.1, 3),
        ]
    )
    keys = tables.varying_keys(frame)
    table = tables.latest_per_config(frame, keys)
    same = pd.DataFrame({"epsilon": GRID, "nominal": 1 - GRID, "coverage": 1 - GRID / 2})
    curves = pd.concat(
        [same.assign(run_id="a"), same.assign(run_id="b"), same.assign(run_id="c", coverage=1 - GRID / 3)],
        ignore_index=True,
    )
    fig = figures.plot_coverage_epsilon(curves, table, keys)
    (ax,) = fig.axes
    labels = [line.get_label() for line in ax.lines]
    assert len(ax.lines) == 3  # qwen3 once (two reader groups, one curve), gpt-4o, nominal
    assert "nominal 1 − ε" in labels
    assert any("group=all; " in label and "group=professional" in label for label in labels)
    legend, axes = drawn_extents(fig, ax)
    assert legend.y1 <= axes.y0  # under the plot, not over the curves


def test_legends_sit_outside_the_bars_and_curves(rows: tuple[pd.DataFrame, list[str]]) -> None:
    table, keys = rows
    frame = tables.runs_frame([record("a", "qwen3-14b", 0.1, 1), record("c", "gpt-4o", 0.1, 3)])
    sub = tables.subgroup_table(frame, tables.varying_keys(frame))
    fig = figures.plot_subgroup_auc(sub, tables.varying_keys(frame))
    (ax,) = fig.axes
    legend, axes = drawn_extents(fig, ax)
    assert legend.x0 >= axes.x1  # right of the bars
    assert "chance (0.5)" in [t.get_text() for t in ax.get_legend().get_texts()]
    fig = figures.plot_threshold_metric(threshold_curves("a", "c"), table, keys, "f1", "F1")
    legend, axes = drawn_extents(fig, fig.axes[0])
    assert legend.y1 <= axes.y0
    png = figures.png_bytes(figures.plot_subgroup_auc(sub, tables.varying_keys(frame)))
    assert png.startswith(b"\x89PNG")


def test_baselines_sit_beside_f1_and_tables_count_runs_and_programs() -> None:
    frame = tables.runs_frame(
        [record("a", "qwen3-14b", 0.1, 1), record("b", "qwen3-14b", 0.1, 2), record("c", "gpt-4o", 0.1, 3)]
    )
    keys = tables.varying_keys(frame)
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    columns = list(shown.columns)
    assert columns[columns.index("F1") + 1 : columns.index("F1") + 3] == ["F1 always-1", "F1 random"]
    assert columns[columns.index("runs") + 1] == "n" and columns.index("n") < columns.index("F1")
    assert shown["runs"].tolist() == ["2", "1"]
    groups = tables.display_subgroups(tables.subgroup_table(frame, keys), keys)
    assert list(groups.columns) == [
        "model",
        "proxy",
        "runs",
        "n all",
        "F1 all",
        "AUC all",
        "n professional",
        "F1 professional",
        "AUC professional",
    ]
    assert groups["runs"].tolist() == ["2", "1"] and groups["n professional"].tolist() == ["30", "30"]


def test_html_cells_put_the_ci_on_its_own_line() -> None:
    assert cell_html("67.7% [58.1%, 77.4%]") == '67.7%<span class="ci">[58.1%, 77.4%]</span>'
    assert cell_html("<b> [x]") == '&lt;b&gt;<span class="ci">[x]</span>'
    assert cell_html("undefined") == "undefined" and cell_html(None) == "—"
    doc = ReportDocument("t", {}, [Section("S", pd.DataFrame({"model": ["m"], "F1": ["70.0% [60.0%, 80.0%]"]}))], [])
    page = render_html(doc)
    assert re.search(r"<td>70\.0%<span class=\"ci\">\[60\.0%, 80\.0%\]</span></td>", page)
    assert ".ci { display: block;" in page


@pytest.mark.slow  # headless Chromium (a few seconds)
def test_a_wide_table_shows_its_baselines_without_scrolling(tmp_path: Path) -> None:
    from support.browser import chromium

    models = ["qwen3-14b", "gpt-4o", "deepseek-coder-v2-lite", "codellama-13b", "llama-3.1-8b"]
    metrics = {
        "accuracy": 0.6,
        "precision": 0.61,
        "recall": 0.62,
        "auc_score": 0.6,
        "spearman": 0.3,
        "kendall": 0.2,
        "auc_score_perm_p": 0.01,
    }
    ci = {f"{m}_ci_{b}": v for m, v in metrics.items() for b in ("low", "high") if m != "auc_score_perm_p"}
    frame = tables.runs_frame([{**record(str(i), m, 0.1, i), **metrics, **ci} for i, m in enumerate(models)])
    keys = tables.varying_keys(frame)
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    page = tmp_path / "page.html"
    probe = (
        "<script>window.addEventListener('load', () => { const cells = [...document.querySelectorAll('th')];"
        " const random = cells.find(c => c.textContent === 'F1 random');"
        " document.body.dataset.right = Math.ceil(random.getBoundingClientRect().right);"
        " document.body.dataset.width = document.documentElement.clientWidth; });</script></body>"
    )
    page.write_text(render_html(ReportDocument("wide", {}, [Section("S", shown)], [])).replace("</body>", probe))
    res = chromium(page.as_uri(), tmp_path / "profile", "--window-size=1280,900", "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    right = int(re.search(r'data-right="(\d+)"', res.stdout).group(1))
    width = int(re.search(r'data-width="(\d+)"', res.stdout).group(1))
    assert right <= width, f"'F1 random' ends at {right}px in a {width}px window"


def test_each_series_baseline_takes_its_colour_and_shared_ones_are_grey() -> None:
    from matplotlib.colors import to_hex

    frame = tables.runs_frame(
        [
            record("a", "m", 0.1, 1, group="all"),
            record("b", "m", 0.1, 2, group="professional", baseline=0.8),
            record("c", "n", 0.1, 3, group="all"),
        ]
    )
    keys = tables.varying_keys(frame)
    table = tables.latest_per_config(frame, keys)
    (ax,) = figures.plot_threshold_metric(threshold_curves("a", "b", "c"), table, keys, "f1", "F1").axes
    colours = {line.get_label(): to_hex(line.get_color()) for line in ax.lines if line.get_linestyle() == "-"}
    dotted = {
        round(line.get_ydata()[0], 6): to_hex(line.get_color()) for line in ax.lines if line.get_linestyle() == ":"
    }
    professional = next(c for label, c in colours.items() if "professional" in label)
    assert dotted == {0.8: professional, 0.684: to_hex("grey")}  # its own baseline; a and c share theirs


def test_epsilon_labels_are_readable_and_do_not_sit_on_each_other(rows: tuple[pd.DataFrame, list[str]]) -> None:
    table, keys = rows
    (ax,) = figures.plot_threshold_metric(threshold_curves("a", "c"), table, keys, "f1", "F1").axes
    assert all(t.get_fontsize() >= 8 and t.get_bbox_patch() is not None for t in ax.texts)
    qwen = sorted((t for t in ax.texts if t.xy[0] in (0.2, 0.4)), key=lambda t: t.xy[0])
    assert qwen[0].xyann[1] > 0 > qwen[1].xyann[1]  # neighbours alternate above and below their dots


def test_subgroup_bars_have_one_colour_per_group_with_n_and_small_groups_explained() -> None:
    from matplotlib.colors import to_hex

    rows = [
        {"model": m, "proxy": "p1", "group": g, "n": n, "auc_binary": auc, "auc_binary_ci_low": lo}
        | {"auc_binary_ci_high": hi}
        for m in ("qwen3-14b", "gpt-4o")
        for g, n, auc, lo, hi in (
            ("all", 50, 0.6, 0.5, 0.7),
            ("professional", 30, 0.55, 0.4, 0.7),
            ("phd", 1, float("nan"), float("nan"), float("nan")),
        )
    ]
    table = pd.DataFrame(rows)
    (ax,) = figures.plot_subgroup_auc(table, ["model", "proxy"]).axes
    from matplotlib.container import BarContainer

    bars = {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}
    assert list(bars) == ["all (n=50)", "professional (n=30)", "phd (n=1)"]
    for container in bars.values():  # one colour per group, across configurations
        assert len({to_hex(p.get_facecolor()) for p in container.patches}) == 1
    assert len({to_hex(c.patches[0].get_facecolor()) for c in bars.values()}) == 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["qwen3-14b · p1", "gpt-4o · p1"]
    caption = figures.subgroup_caption(table)
    assert "phd (n = 1): no bar, its AUC is undefined (an AUC needs programs of both classes)" in caption
    assert "professional (n = 30)" not in caption


def test_two_scorers_thresholds_never_share_an_axis() -> None:
    def scored(run_id: str, scorer: str, start: int) -> dict:
        found = record(run_id, "smollm2-135m", 0.1, start)
        found["scorer"] = scorer
        found["params.scorer.name"] = scorer
        return found

    frame = tables.runs_frame([scored("m", "minilm", 1), scored("r", "rougel", 2)])
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    fig = figures.plot_threshold_metric(threshold_curves("m", "r"), rows, keys, "f1", "F1")
    labels = sorted(ax.get_xlabel() for ax in fig.axes)
    assert len(fig.axes) == 2 and "of minilm" in labels[0] and "of rougel" in labels[1]
    assert all(len([ln for ln in ax.lines if len(ln.get_xdata()) > 2]) == 1 for ax in fig.axes)


def test_f1_against_epsilon_across_runs_has_baselines_and_the_humans_band() -> None:
    first, second = record("a", "qwen3-14b", 0.1, 1), record("b", "gpt-4o", 0.1, 2)
    for found in (first, second):
        found.update({"ceiling.f1": 0.66, "ceiling.f1_ci_low": 0.6, "ceiling.f1_ci_high": 0.73})
    frame = tables.runs_frame([first, second])
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    eps = np.array([0.05, 0.1, 0.2])
    curves = pd.concat(
        [
            pd.DataFrame({"run_id": r, "epsilon": eps, "coverage": 1 - eps, "f1": f})
            for r, f in (("a", 0.6), ("b", 0.7))
        ],
        ignore_index=True,
    )
    fig = figures.plot_f1_epsilon(curves, rows, keys)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "humans' half-panel F1 66.0% (95 % CI)" in labels
    assert any("always-1 baseline (68.4%)" in label for label in labels)
    lines = [ln for ln in ax.lines if len(ln.get_xdata()) == 3]
    assert sorted(float(ln.get_ydata()[0]) for ln in lines) == [0.6, 0.7]
    assert "f1_epsilon.png" in figures.report_figures(rows, keys, threshold_curves("a"), curves, pd.DataFrame())


def test_a_fixed_threshold_proxy_gets_no_empty_panel_and_its_absent_settings_name_no_curve() -> None:
    """A sweep of P1 on two datasets and p0_output (no ε, no scorer): F1 against ε has P1's panel
    alone, and its legend names each curve by its dataset, not by the scorer settings that only
    p0_output's run lacks."""
    runs = []
    for run_id, dataset, proxy, start in (
        ("a", "scalabrino", "p1", 1),
        ("b", "atoms", "p1", 2),
        ("c", "atoms", "p0_output", 3),
    ):
        found = record(run_id, "smollm2-135m", 0.1, start)
        found["proxy"], found["dataset"] = proxy, dataset
        found["params.dataset.name"] = dataset
        if proxy == "p1":
            found["params.scorer.layer"] = "6"
        runs.append(found)
    frame = tables.runs_frame(runs)
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    eps = np.array([0.05, 0.1, 0.2])
    curves = pd.concat(
        [pd.DataFrame({"run_id": r, "epsilon": eps, "coverage": 1 - eps, "f1": 0.6}) for r in ("a", "b")],
        ignore_index=True,
    )
    fig = figures.plot_f1_epsilon(curves, rows, keys)
    (ax,) = fig.axes
    assert ax.get_title() == "p1: F1 against ε"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "smollm2-135m · scalabrino" in labels and "smollm2-135m · atoms" in labels
    assert not any("layer" in label for label in labels)
