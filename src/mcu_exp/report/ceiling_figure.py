"""The ceiling figure of a report: each configuration's AUC (score) and Spearman ρ with its
95 % CI against the humans' own ceiling on the same labels, one panel per metric.

Configurations can stand against different ceilings (another reader group, label rule or
dataset), so each draws its own band: a shaded box over its x position spanning the
ceiling's interval over splits, a line at the ceiling's mean. Configurations without a
logged ceiling get a dot and no band; an undefined ceiling draws nothing and is named in
the axis label.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mcu_exp.evaluation.registry import CHANCE_AUC, header, metric
from mcu_exp.report.ceiling import EXTRAPOLATED, SHARES, ceiling_key
from mcu_exp.report.columns import (
    value,
    with_ci,
)
from mcu_exp.report.identity import row_label


def _numbers(rows: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """``columns`` of ``rows`` as floats, NaN where absent or not a number (rows × columns)."""
    values: np.ndarray = rows.reindex(columns=list(columns)).apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    return values


def _missing(row: pd.Series, name: str) -> str:
    """Why a configuration has no band: "ceiling undefined", "no ceiling logged", or ""."""
    number = value(row, ceiling_key(name))
    if number is None:
        return "no ceiling logged"
    return "ceiling undefined" if np.isnan(number) else ""


def plot_ceiling(rows: pd.DataFrame, keys: Sequence[str], names: Sequence[str] = SHARES) -> Figure:
    """One panel per metric of ``names``: each configuration (one x position per row of
    ``rows``, labelled by ``keys``) its value with its CI, over its own ceiling band."""
    labels = [row_label(row, keys).replace(" · ", "\n") for _, row in rows.iterrows()]
    lines = 1 + max((label.count("\n") for label in labels), default=0)  # + the "(no ceiling …)" line
    x = np.arange(len(rows))
    fig, grid = plt.subplots(1, len(names), figsize=(max(5.0, 1.5 + 0.9 * len(rows)) * len(names), 4.6), squeeze=False)
    for ax, name in zip(grid[0], names, strict=True):
        values = _numbers(rows, with_ci(name))
        bands = _numbers(rows, with_ci(ceiling_key(name)))
        shown = np.isfinite(bands[:, 0])
        for j, i in enumerate(np.flatnonzero(shown)):
            low, high = bands[i, 1:] if np.isfinite(bands[i, 1:]).all() else (bands[i, 0], bands[i, 0])
            ax.fill_between(
                [x[i] - 0.4, x[i] + 0.4],
                low,
                high,
                color="tab:green",
                alpha=0.2,
                lw=0,
                label=None if j else "human ceiling: interval over splits",
            )
            ax.hlines(
                bands[i, 0],
                x[i] - 0.4,
                x[i] + 0.4,
                color="tab:green",
                lw=1.5,
                label=None if j else "human ceiling: mean over splits",
            )
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
        kind = "extrapolated to the full panel" if name in EXTRAPOLATED else "half-panel"
        ax.set_title(f"{metric(name).short} against the human ceiling ({kind})", fontsize=9)
        ax.set_ylabel(header(name))
        ax.set_ylim(-1.02 if chance == 0.0 else -0.02, 1.02)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(
            fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08 - 0.05 * lines), ncol=2, frameon=False
        )  # under the tick labels, however many lines they take
    fig.tight_layout()
    return fig
