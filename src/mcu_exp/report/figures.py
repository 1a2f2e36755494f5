"""Comparison figures across runs (matplotlib, headless), returned as PNG bytes.

Inputs are plain frames: threshold curves (``run_id, threshold, f1, auc_binary``), ε curves
(``run_id, epsilon, nominal, coverage``) and the tables of :mod:`mcu_exp.report.tables`.
Curves that differ only in ε, θ or the quantile rule are the same curve (the threshold grid
does not depend on them), so each figure draws one line per remaining configuration and
marks each run's operating point on it (labelled with its ε). F1 axes carry the
always-understandable baseline (``baseline_always_f1`` of the runs drawn, in its series'
colour when it is that series' own), AUC axes the chance line at 0.5; subgroup bars have one
colour per reader group, n in its legend entry; legends sit outside the plotting area.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mcu_exp.evaluation.alignment_report import baseline_key, format_value
from mcu_exp.evaluation.baselines import ALWAYS
from mcu_exp.evaluation.registry import HEADLINE, PRIMARY, header, metric
from mcu_exp.report import ceiling
from mcu_exp.report.identity import as_text, key_text, row_label

DECISION_KEYS = ("epsilon", "theta", "quantile")
DPI = 100


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")  # legends outside the axes kept
    plt.close(fig)
    return buffer.getvalue()


def curve_keys(keys: Sequence[str], keep: Sequence[str] = ()) -> list[str]:
    """The identity keys that change a sensitivity curve: all but ε, θ and the quantile rule
    (except those named in ``keep``)."""
    return [k for k in keys if k not in DECISION_KEYS or k in keep]


def curve_label(row: pd.Series, keys: Sequence[str], skip: Sequence[str] = ("proxy",)) -> str:
    """A legend entry: the configuration's identity values joined by " · "."""
    return row_label(row, keys, skip)


def legend_keys(rows: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The keys a legend names: the model, the proxy and those with two or more values among
    ``rows``' runs that have them (a scorer's settings, present in P1's runs and absent from
    p0_output's, tell nothing the proxy does not)."""
    return [k for k in keys if k in ("model", "proxy") or rows[k].dropna().astype(str).nunique() > 1]


def representatives(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One run per curve (the newest), indexed by run id, with a ``label`` column."""
    ident = as_text(rows[list(keys)])
    reps = rows[~ident.duplicated(keep="first").to_numpy()].copy()
    named = legend_keys(rows, keys)
    reps["label"] = [curve_label(r, named) for _, r in reps.iterrows()]
    return reps


def _joined(rows: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """Each row's values of ``keys`` as one exact string (to find a curve's runs)."""
    return as_text(rows[list(keys)]).agg("\x1f".join, axis=1)


def _panels(reps: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(reps["proxy"].astype(str)))


def threshold_panels(reps: pd.DataFrame) -> pd.Series:
    """Each curve's panel: its proxy, and its scorer when the runs used more than one. A
    threshold is on one scorer's α, so two scorers' thresholds never share an x axis."""
    panel = reps["proxy"].astype(str)
    if "scorer" in reps.columns and reps["scorer"].dropna().astype(str).nunique() > 1:
        panel = panel + " · " + reps["scorer"].fillna("").astype(str)
    return panel


def _axes(n: int, width: float = 6.0, height: float = 4.2) -> tuple[Figure, list[Axes]]:
    """``n`` panels side by side, laid out by matplotlib's constrained layout, which makes room for
    legends outside the axes (tight_layout gives up, with a warning, when a legend is long)."""
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False, layout="constrained")
    return fig, list(axes[0])


def reference_lines(ax: Axes, rows: pd.DataFrame, name: str) -> None:
    """What ``name`` must beat, as horizontal lines: chance (0.5) for an AUC; otherwise the
    always-understandable baseline of ``name`` (``baseline_always_f1`` for F1), one dotted
    line per distinct value among ``rows`` (runs on other labels can differ)."""
    if metric(name).kind == "auc":
        ax.axhline(0.5, color="grey", lw=0.9, ls="--", label="chance (0.5)")
        return
    column = baseline_key(ALWAYS, name)
    if column not in rows.columns:
        return
    values = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)
    for value in sorted({round(float(v), 9) for v in values if np.isfinite(v)}):
        ax.axhline(
            value, color="grey", lw=1.0, ls=":", label=f"{header(name)} always-1 baseline ({format_value(name, value)})"
        )


def series_baselines(ax: Axes, series: Sequence[tuple[pd.DataFrame, str]], name: str) -> None:
    """The always-understandable baseline of ``name`` for each drawn series (its runs, its line
    colour), dotted: in the series' colour when the value is its own, in grey when several series
    share it (one label set); an AUC gets the chance line (:func:`reference_lines`)."""
    if metric(name).kind == "auc" or not series:
        reference_lines(ax, pd.concat([rows for rows, _ in series]) if series else pd.DataFrame(), name)
        return
    column = baseline_key(ALWAYS, name)
    owners: dict[float, list[str]] = {}
    for rows, colour in series:
        if column not in rows.columns:
            continue
        values = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)
        for value in {round(float(v), 9) for v in values if np.isfinite(v)}:
            owners.setdefault(value, []).append(colour)
    for value in sorted(owners):
        colours = list(dict.fromkeys(owners[value]))
        ax.axhline(
            value,
            color=colours[0] if len(colours) == 1 else "grey",
            lw=1.0,
            ls=":",
            label=f"{header(name)} always-1 baseline ({format_value(name, value)})",
        )


def epsilon_labels(ax: Axes, points: pd.DataFrame, name: str, colour: str) -> None:
    """Each operating point's ε, readable: 8 pt on a white box, offsets alternating above and
    below the dot so that neighbouring labels do not overlap."""
    for i, (_, point) in enumerate(points.sort_values("tau").iterrows()):
        ax.annotate(
            f"ε={key_text('epsilon', point['epsilon'])}",
            (point["tau"], point[name]),
            textcoords="offset points",
            xytext=(4, 6 if i % 2 == 0 else -13),
            fontsize=8,
            color=colour,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
        )


LEGEND_WIDTH = 44  # characters a legend entry's line holds


def legend_outside(ax: Axes, where: str = "below", columns: int = 2) -> None:
    """The axes' legend outside its plotting area: under it (``below``) or to its right; a long
    entry (a run's full name) wraps at :data:`LEGEND_WIDTH` characters, so the legend fits beside
    the axes whatever the names."""
    handles, labels = ax.get_legend_handles_labels()
    labels = [textwrap.fill(label, LEGEND_WIDTH) for label in labels]
    if where == "right":
        ax.legend(
            handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False
        )
    else:
        ax.legend(
            handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=columns, frameon=False
        )


def plot_threshold_metric(
    curves: pd.DataFrame, rows: pd.DataFrame, keys: Sequence[str], metric: str, ylabel: str
) -> Figure:
    """``metric`` against the threshold on α_test, one line per model (and other curve key),
    one panel per proxy (and per scorer, when the runs used several: each its own α axis); dots mark each run's calibrated τ and its value there, labelled with
    the run's ε; the baseline (F1) or chance (AUC) line under them (:func:`reference_lines`)."""
    ckeys = curve_keys(keys)
    reps = representatives(rows, ckeys)
    panel_of = threshold_panels(reps)
    proxies = list(dict.fromkeys(panel_of))
    fig, axes = _axes(len(proxies))
    ident, rep_ident = _joined(rows, ckeys), _joined(reps, ckeys)
    for ax, proxy in zip(axes, proxies, strict=True):
        drawn: list[tuple[pd.DataFrame, str]] = []
        for run_id, rep in reps[panel_of == proxy].iterrows():
            curve = curves[curves["run_id"] == run_id].sort_values("threshold")
            if curve.empty:
                continue
            (line,) = ax.plot(curve["threshold"], curve[metric], "-", lw=1.4, label=rep["label"])
            same = rows[ident == rep_ident[run_id]]
            drawn.append((same, to_hex(line.get_color())))
            points = operating_points(same, metric)
            if len(points):
                ax.plot(points["tau"], points[metric], "o", color=line.get_color(), ms=4)
                epsilon_labels(ax, points, metric, to_hex(line.get_color()))
        if drawn:
            series_baselines(ax, drawn, metric)
        ax.set_title(f"{proxy}: {ylabel} against the threshold")
        scorer = proxy.split(" · ", 1)[1] if " · " in proxy else ""
        ax.set_xlabel(f"threshold on α_test{f' of {scorer}' if scorer else ''} (High iff α_test ≤ threshold)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        if drawn:
            legend_outside(ax)
        else:
            ax.text(0.5, 0.5, "no threshold curves logged", ha="center", transform=ax.transAxes)
    return fig


def operating_points(rows: pd.DataFrame, name: str) -> pd.DataFrame:
    """Each run's calibrated τ, its value of ``name`` there and its ε (runs without a finite
    τ or value left out)."""
    if not {"tau", name} <= set(rows.columns):
        return pd.DataFrame(columns=["tau", name, "epsilon"])
    points = rows.reindex(columns=["tau", name, "epsilon"]).apply(pd.to_numeric, errors="coerce")
    finite = np.isfinite(points["tau"].to_numpy(dtype=float)) & np.isfinite(points[name].to_numpy(dtype=float))
    return points[finite]


SMALL_GROUP = 10  # programs: below this a group's AUC is named in the caption as barely informative


def plot_subgroup_auc(table: pd.DataFrame, keys: Sequence[str]) -> Figure:
    """Binary AUC per human reader subgroup with 95 % CI bars: configurations along the x axis,
    one bar per reader group in that group's colour throughout (its legend entry gives n, the
    programs it labelled); no bar where the AUC is undefined. The dashed line is chance (0.5);
    the legend sits right of the bars."""
    groups = list(dict.fromkeys(table["group"])) if not table.empty else []
    configs = (
        table.apply(lambda r: curve_label(r, legend_keys(table, keys), skip=()), axis=1)
        if not table.empty
        else pd.Series(dtype=str)
    )
    labels = list(dict.fromkeys(configs))
    fig, (ax,) = _axes(1, width=max(6.0, 1.2 + 0.35 * max(1, len(groups)) * max(1, len(labels))), height=4.5)
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(labels))
    for i, group in enumerate(groups):
        sub = table[table["group"] == group].assign(config=configs).set_index("config").reindex(labels)
        value = sub["auc_binary"].to_numpy(dtype=float)
        low = np.clip(value - sub["auc_binary_ci_low"].to_numpy(dtype=float), 0, None)
        high = np.clip(sub["auc_binary_ci_high"].to_numpy(dtype=float) - value, 0, None)
        ax.bar(
            x - 0.4 + width * (i + 0.5),
            value,
            width,
            yerr=np.vstack([low, high]),
            capsize=2,
            color=f"C{i}",
            label=f"{group} (n={group_size(table, group)})",
        )
    if labels:
        ax.axhline(0.5, color="grey", lw=0.8, ls="--", label="chance (0.5)")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("AUC of the binary labels")
    ax.set_ylim(0, 1.05)
    ax.set_title("AUC per human reader subgroup (95 % bootstrap CI)")
    ax.grid(alpha=0.3, axis="y")
    if labels:
        legend_outside(ax, "right")
    else:
        ax.text(0.5, 0.5, "no subgroup metrics logged", ha="center", transform=ax.transAxes)
    return fig


def group_size(table: pd.DataFrame, group: str) -> str:
    """The programs a reader group labelled ("12"; "1–3" when configurations differ; "?")."""
    n = pd.to_numeric(table.loc[table["group"] == group, "n"], errors="coerce").dropna().astype(int)
    if n.empty:
        return "?"
    return str(n.iloc[0]) if n.min() == n.max() else f"{n.min()}–{n.max()}"


def subgroup_caption(table: pd.DataFrame) -> str:
    """The subgroup figure's caption: what the bars are, and each small group explained (a group
    with one program has no AUC: it needs an understandable and a not-understandable program)."""
    text = (
        "AUC of the binary labels per human reader subgroup, one colour per group (n: programs the group "
        "labelled), 95 % bootstrap CIs; dashed: chance (0.5)."
    )
    if table.empty:
        return text
    small = []
    for group in dict.fromkeys(table["group"]):
        rows = table[table["group"] == group]
        n = pd.to_numeric(rows["n"], errors="coerce").max()
        undefined = pd.to_numeric(rows["auc_binary"], errors="coerce").isna().all()
        if undefined:
            small.append(
                f"{group} (n = {group_size(table, group)}): no bar, its AUC is undefined (an AUC needs programs of "
                "both classes)"
            )
        elif np.isfinite(n) and n < SMALL_GROUP:
            small.append(f"{group} (n = {group_size(table, group)}): too few programs for a tight interval")
    return text + (" " + "; ".join(small) + "." if small else "")


def plot_coverage_epsilon(curves: pd.DataFrame, rows: pd.DataFrame, keys: Sequence[str]) -> Figure:
    """Empirical test coverage against ε, one line per configuration (the quantile rule
    kept apart), with the nominal 1 − ε line. Coverage depends only on the proxy's scores,
    not on the human labels, so configurations with the same curve (e.g. the same model
    against two reader groups) share one line, and its legend entry names them all."""
    ckeys = curve_keys(keys, keep=("quantile",))
    reps = representatives(rows, ckeys)
    fig, (ax,) = _axes(1, width=6.5, height=4.5)
    grid = np.sort(curves["epsilon"].dropna().unique()) if not curves.empty else np.array([])
    drawn: dict[bytes, tuple[Line2D, list[str]]] = {}
    for run_id, rep in reps.iterrows():
        curve = curves[curves["run_id"] == run_id].sort_values("epsilon")
        if curve.empty:
            continue
        label = curve_label(rep, legend_keys(reps, ckeys), skip=())
        values = np.round(curve[["epsilon", "coverage"]].to_numpy(dtype=float), 9).tobytes()
        if values in drawn:
            drawn[values][1].append(label)
            continue
        (line,) = ax.plot(curve["epsilon"], curve["coverage"], "o-", ms=3, lw=1.2)
        drawn[values] = (line, [label])
    for line, names in drawn.values():
        line.set_label("; ".join(names))
    if grid.size:
        ax.plot(grid, 1 - grid, color="grey", lw=0.9, ls="--", label="nominal 1 − ε")
        legend_outside(ax, columns=1)
    else:
        ax.text(0.5, 0.5, "no coverage curves logged", ha="center", transform=ax.transAxes)
    ax.set_xlabel("ε")
    ax.set_ylabel("fraction of programs with α_test ≤ τ")
    ax.set_ylim(0, 1.02)
    ax.set_title("Empirical coverage against ε")
    ax.grid(alpha=0.3)
    return fig


def plot_f1_epsilon(curves: pd.DataFrame, rows: pd.DataFrame, keys: Sequence[str]) -> Figure:
    """F1 against ε across the runs: one line per configuration (ε apart, each run's ε grid
    recalibrates τ on its own scores), one panel per proxy and scorer; dotted: the always-1
    baseline in its series' colour; shaded: the humans' half-panel F1 with its interval over
    programs, where the runs logged it. What a sweep over ε is run for: how much F1 moves with it."""
    ckeys = curve_keys(keys)
    reps = representatives(rows, ckeys)
    panel_of = threshold_panels(reps)
    with_curve = reps.index.isin(curves["run_id"]) if "f1" in curves else np.zeros(len(reps), dtype=bool)
    # Panels of the proxies whose runs have an ε curve (a fixed-threshold proxy, p0_output, has none).
    panels = list(dict.fromkeys(panel_of[with_curve])) or list(dict.fromkeys(panel_of))[:1] or ["—"]
    fig, axes = _axes(len(panels), width=6.5, height=4.5)
    ident, rep_ident = _joined(rows, ckeys), _joined(reps, ckeys)
    for ax, panel in zip(axes, panels, strict=True):
        drawn: list[tuple[pd.DataFrame, str]] = []
        for run_id, rep in reps[panel_of == panel].iterrows():
            curve = curves[curves["run_id"] == run_id].sort_values("epsilon") if "f1" in curves else curves.iloc[:0]
            if curve.empty:
                continue
            (line,) = ax.plot(curve["epsilon"], curve["f1"], "o-", ms=3, lw=1.3, label=rep["label"])
            drawn.append((rows[ident == rep_ident[run_id]], to_hex(line.get_color())))
        if drawn:
            series_baselines(ax, drawn, PRIMARY)
            bands = {
                tuple(round(float(row[c]), 9) for c in ("ceiling.f1", "ceiling.f1_ci_low", "ceiling.f1_ci_high"))
                for group, _ in drawn
                for _, row in group.iterrows()
                if all(
                    c in group.columns and pd.notna(row.get(c))
                    for c in ("ceiling.f1", "ceiling.f1_ci_low", "ceiling.f1_ci_high")
                )
            }
            for point, low, high in sorted(bands):
                ax.axhspan(low, high, color="C2", alpha=0.1, label=f"humans' half-panel F1 {point:.1%} (95 % CI)")
            legend_outside(ax)
        else:
            ax.text(0.5, 0.5, "no F1 against ε logged", ha="center", transform=ax.transAxes)
        ax.set_title(f"{panel}: F1 against ε")
        ax.set_xlabel("ε (target miscoverage)")
        ax.set_ylabel("F1")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    return fig


def plot_theta(curves: pd.DataFrame, rows: pd.DataFrame, keys: Sequence[str]) -> Figure:
    """P2's fixed rule: the headline metrics (F1 and binary AUC) against θ on SSC_meta, one
    line per model (and other curve key); dots mark runs that decided with θ alone (rule
    ``theta``), at their θ; the baseline (F1) and chance (AUC) lines as in
    :func:`plot_threshold_metric`."""
    ckeys = curve_keys(keys)
    reps = representatives(rows[rows.index.isin(curves["run_id"])], ckeys)
    fig, axes = _axes(len(HEADLINE))
    uses_theta = rows[rows["rule"] == "theta"] if "rule" in rows.columns else rows.iloc[:0]
    ident, rep_ident = _joined(uses_theta, ckeys), _joined(reps, ckeys)
    for ax, name in zip(axes, HEADLINE, strict=True):
        label = header(name)
        for run_id, rep in reps.iterrows():
            curve = curves[curves["run_id"] == run_id].sort_values("theta")
            (line,) = ax.plot(
                curve["theta"], curve[name], "-", lw=1.4, label=curve_label(rep, legend_keys(reps, ckeys), skip=())
            )
            same = uses_theta[ident == rep_ident[run_id]]
            if name in same.columns and len(same):
                ax.plot(same["theta"], same[name], "o", color=line.get_color(), ms=4)
        reference_lines(ax, rows[_joined(rows, ckeys).isin(rep_ident)], name)
        ax.set_title(f"{label} against θ (High iff SSC_meta ≥ θ)")
        ax.set_xlabel("θ")
        ax.set_ylabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        legend_outside(ax)
    return fig


def report_figures(
    rows: pd.DataFrame,
    keys: Sequence[str],
    threshold_curves: pd.DataFrame,
    epsilon_curves: pd.DataFrame,
    subgroup: pd.DataFrame,
    theta_curves: pd.DataFrame | None = None,
) -> dict[str, bytes]:
    """Every figure of a report, by file name, as PNG bytes (the θ figure only when some run
    logged θ curves, the ceiling figure only when some run logged a human ceiling)."""
    figures: dict[str, Figure] = {
        "f1_threshold.png": plot_threshold_metric(threshold_curves, rows, keys, PRIMARY, header(PRIMARY)),
        "auc_threshold.png": plot_threshold_metric(threshold_curves, rows, keys, "auc_binary", header("auc_binary")),
        "auc_subgroups.png": plot_subgroup_auc(subgroup, keys),
        "coverage_epsilon.png": plot_coverage_epsilon(epsilon_curves, rows, keys),
    }
    if "f1" in epsilon_curves.columns and epsilon_curves["f1"].notna().any():
        figures["f1_epsilon.png"] = plot_f1_epsilon(epsilon_curves, rows, keys)
    if theta_curves is not None and not theta_curves.empty:
        figures["f1_auc_theta.png"] = plot_theta(theta_curves, rows, keys)
    if ceiling.figure_rows(rows):
        from mcu_exp.report.ceiling_figure import plot_ceiling  # it imports this module

        figures[ceiling.FIGURE] = plot_ceiling(rows, keys)
    return {name: png_bytes(fig) for name, fig in figures.items()}
