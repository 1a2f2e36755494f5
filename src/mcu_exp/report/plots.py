"""Sensitivity figures (matplotlib, headless): metrics against the threshold and against ε,
coverage against ε."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


def plot_threshold_curves(frame: pd.DataFrame, path: Path, **kwargs: Any) -> Path:
    """:func:`threshold_figure` saved to ``path`` (PNG, 100 dpi)."""
    return _save(threshold_figure(frame, **kwargs), path)


def plot_epsilon_curves(frame: pd.DataFrame, path: Path, **kwargs: Any) -> Path:
    """:func:`epsilon_figure` saved to ``path`` (PNG, 100 dpi)."""
    return _save(epsilon_figure(frame, **kwargs), path)


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def threshold_figure(
    frame: pd.DataFrame,
    tau: float | None = None,
    x: str = "threshold",
    xlabel: str = "threshold on α_test (High iff α_test ≤ threshold)",
    title: str = "",
    always_f1: float | None = None,
) -> Figure:
    """F1, precision, recall and binary AUC against the threshold (all readers), and F1 and
    AUC per human subgroup. ``x`` names the threshold column (``theta`` for P2's θ); ``tau``
    marks the threshold the run used; ``always_f1`` draws the always-understandable baseline's
    F1; ``title`` (the run, its scorer and ε) heads the figure."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.8))
    overall = frame[frame["group"] == "all"]
    for col, style in (("f1", "-"), ("precision", "--"), ("recall", ":"), ("auc_binary", "-.")):
        left.plot(overall[x], overall[col], style, label=col)
    if always_f1 is not None and np.isfinite(always_f1):
        left.axhline(always_f1, color="black", lw=0.9, ls=(0, (1, 2)), label=f"F1 of always-1 ({always_f1:.1%})")
    right_lines = 0
    for i, (group, sub) in enumerate(frame[frame["group"] != "all"].groupby("group", sort=False)):
        n, colour = int(sub["n"].iloc[0]), f"C{i}"
        right.plot(sub[x], sub["f1"], "-", color=colour, label=f"F1 {group} (n={n})")
        right.plot(sub[x], sub["auc_binary"], "--", color=colour, label=f"AUC {group}")
        right_lines += 1
    for ax, head in ((left, "All readers"), (right, "Per reader subgroup")):
        if tau is not None:
            name = "calibrated τ" if x == "threshold" else f"{x} used"
            ax.axvline(float(tau), color="grey", lw=0.8, ls="--", label=f"{name} = {float(tau):.3f}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("metric value (F1, precision, recall: share; AUC of the labels)")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(head)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
        if ax is left or right_lines:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.26, top=0.88 if title else 0.94, wspace=0.2)
    return fig


def epsilon_figure(
    frame: pd.DataFrame,
    title: str = "",
    baselines: dict[str, float] | None = None,
    ceiling_f1: tuple[float, float, float] | None = None,
    epsilon: float | None = None,
) -> Figure:
    """F1 and the AUC of the labels against ε (all readers), each ε's τ recalibrated on the same
    calibration scores: the sensitivity of the run's conclusion to its one free parameter.
    ``baselines``: the always-1 and random F1 (horizontal lines); ``ceiling_f1``: the humans'
    half-panel F1 (point, CI low, CI high: a band); ``epsilon`` marks the run's ε."""
    fig, ax = plt.subplots(figsize=(8, 5))
    overall = frame[frame["group"] == "all"].sort_values("epsilon")
    ax.plot(overall["epsilon"], overall["f1"], "o-", color="C0", label="F1")
    ax.plot(overall["epsilon"], overall["auc_binary"], "s--", color="C3", label="AUC of the labels")
    for name, colour, style in (("always-1", "black", (0, (1, 2))), ("random", "grey", (0, (4, 2)))):
        value = (baselines or {}).get(name)
        if value is not None and np.isfinite(value):
            ax.axhline(value, color=colour, lw=0.9, ls=style, label=f"F1 of {name} ({value:.1%})")
    if ceiling_f1 is not None and all(np.isfinite(v) for v in ceiling_f1):
        point, low, high = ceiling_f1
        ax.axhspan(low, high, color="C2", alpha=0.12, label=f"humans' half-panel F1 {point:.1%} (95 % CI)")
    if epsilon is not None:
        ax.axvline(float(epsilon), color="grey", lw=0.8, ls="--", label=f"this run's ε = {float(epsilon):g}")
    ax.set_xlabel("ε (target miscoverage; τ is the (1 − ε) quantile of the calibration scores)")
    ax.set_ylabel("F1 (share) and AUC of the labels")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    ax.set_title(title or "F1 against ε", fontsize=10)
    fig.subplots_adjust(left=0.09, right=0.97, bottom=0.28, top=0.92)
    return fig


def plot_coverage(frame: pd.DataFrame, path: Path) -> Path:
    """Empirical test coverage against nominal 1 − ε (the diagonal is perfect calibration)."""
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    overall = frame[frame["group"] == "all"]
    ax.plot(overall["nominal"], overall["coverage"], "o-", label="empirical coverage")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="nominal")
    ax.set_xlabel("nominal coverage 1 − ε")
    ax.set_ylabel("fraction of programs with α_test ≤ τ")
    ax.set_xlim(0.45, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.12, top=0.96)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
