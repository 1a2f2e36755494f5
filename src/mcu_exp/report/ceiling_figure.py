"""The ceiling figure of a report: each configuration's AUC (score) and Spearman ρ with its
95 % CI against the humans' own ceiling on the same labels, one panel per metric.

Configurations can stand against different ceilings (another reader group, label rule or
dataset), so each draws its own bands over its x position: for AUC (score) the lower bound
(half panel; shaded: its 95 % CI over programs, line: its estimate) and the upper bound
(reader model, dashed), for ρ the Spearman–Brown ceiling. Configurations without a logged
ceiling get a dot and no band; an undefined ceiling draws nothing and is named in the axis
label, as is an old run's ceiling (logged before the bounds: an interval over reader splits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mcu_exp.evaluation.ceiling_lines import CEILING, UPPER
from mcu_exp.evaluation.registry import CHANCE_AUC, header, metric
from mcu_exp.report.ceiling import OLD, SHARES, ceiling_key, old_run
from mcu_exp.report.columns import (
    value,
    with_ci,
)
from mcu_exp.report.identity import row_label


@dataclass(frozen=True)
class Band:
    """One of the humans' figures drawn per configuration: its key, legend name, colour, line
    style and half width (a narrower band stays visible where it overlaps a wider one)."""

    key: str
    name: str
    colour: str
    style: str = "-"
    half: float = 0.4


BANDS: dict[str, tuple[Band, ...]] = {
    "auc_score": (
        Band(ceiling_key("auc_score"), "lower bound (half panel)", "tab:green"),
        Band(CEILING + UPPER, "upper bound (reader model)", "tab:purple", "--", 0.3),
    ),
    "spearman": (Band(ceiling_key("spearman"), "ρ ceiling (Spearman–Brown)", "tab:green"),),
}
DEFAULT_TITLE = "against the humans' ceiling"
TITLES = {
    "auc_score": "against the humans' lower and upper bounds",
    "spearman": "against the humans' ceiling (full panel)",
}


def _numbers(rows: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """``columns`` of ``rows`` as floats, NaN where absent or not a number (rows × columns)."""
    values: np.ndarray = rows.reindex(columns=list(columns)).apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    return values


def _missing(row: pd.Series, name: str) -> str:
    """What the axis label adds: "ceiling undefined", "no ceiling logged", an old run's, or ""."""
    number = value(row, ceiling_key(name))
    if number is None:
        return "no ceiling logged"
    if np.isnan(number):
        return "ceiling undefined"
    return f"{OLD[1:-1]}: CI over splits" if old_run(row) else ""


def _draw_bands(ax: Axes, rows: pd.DataFrame, x: np.ndarray, name: str) -> None:
    """Each configuration's bands of metric ``name`` (:data:`BANDS`) over its x position."""
    for band in BANDS.get(name, ()):
        figures = _numbers(rows, with_ci(band.key))
        for j, i in enumerate(np.flatnonzero(np.isfinite(figures[:, 0]))):
            low, high = figures[i, 1:] if np.isfinite(figures[i, 1:]).all() else (figures[i, 0], figures[i, 0])
            ax.fill_between(
                [x[i] - band.half, x[i] + band.half],
                low,
                high,
                color=band.colour,
                alpha=0.18,
                lw=0,
                label=None if j else f"humans' {band.name}: 95 % CI over programs",
            )
            ax.hlines(figures[i, 0], x[i] - band.half, x[i] + band.half, color=band.colour, lw=1.5, ls=band.style)


def plot_ceiling(rows: pd.DataFrame, keys: Sequence[str], names: Sequence[str] = SHARES) -> Figure:
    """One panel per metric of ``names``: each configuration (one x position per row of
    ``rows``, labelled by ``keys``) its value with its CI, over its own ceiling bands."""
    labels = [row_label(row, keys).replace(" · ", "\n") for _, row in rows.iterrows()]
    lines = 1 + max((label.count("\n") for label in labels), default=0)  # + the "(no ceiling …)" line
    x = np.arange(len(rows))
    fig, grid = plt.subplots(1, len(names), figsize=(max(5.0, 1.5 + 0.9 * len(rows)) * len(names), 4.6), squeeze=False)
    for ax, name in zip(grid[0], names, strict=True):
        _draw_bands(ax, rows, x, name)
        values = _numbers(rows, with_ci(name))
        finite = np.isfinite(values[:, 0])
        errors = np.vstack([values[:, 0] - values[:, 1], values[:, 2] - values[:, 0]])
        errors = np.clip(np.nan_to_num(errors, nan=0.0), 0, None)
        ax.errorbar(
            x[finite],
            values[finite, 0],
            yerr=errors[:, finite],
            fmt="o",
            color="tab:blue",
            capsize=3,
            label=f"{metric(name).short} of the proxy (95 % CI)",
        )
        chance = CHANCE_AUC if metric(name).kind == "auc" else 0.0
        ax.axhline(chance, color="grey", lw=0.9, ls="--", label=f"chance ({chance:g})")
        ax.set_xticks(
            x,
            [
                f"{label}\n({_missing(row, name)})" if _missing(row, name) else label
                for label, (_, row) in zip(labels, rows.iterrows(), strict=True)
            ],
            fontsize=7,
        )
        ax.set_title(f"{metric(name).short} {TITLES.get(name, DEFAULT_TITLE)}", fontsize=9)
        ax.set_ylabel(header(name))
        ax.set_ylim(-1.02 if chance == 0.0 else -0.02, 1.02)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(
            fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08 - 0.05 * lines), ncol=2, frameon=False
        )  # under the tick labels, however many lines they take
    fig.tight_layout()
    return fig
