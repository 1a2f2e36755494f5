"""Sensitivity figures (matplotlib, headless): metrics against threshold, coverage against ε."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd


def plot_threshold_curves(
    frame: pd.DataFrame,
    path: Path,
    tau: float | None = None,
    x: str = "threshold",
    xlabel: str = "threshold on α_test (High iff α_test ≤ threshold)",
) -> Path:
    """F1, precision, recall and binary AUC against the threshold (all readers), and F1 and
    AUC per human subgroup. ``x`` names the threshold column (``theta`` for P2's θ)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.5))
    overall = frame[frame["group"] == "all"]
    for col, style in (("f1", "-"), ("precision", "--"), ("recall", ":"), ("auc_binary", "-.")):
        left.plot(overall[x], overall[col], style, label=col)
    right_lines = 0
    for i, (group, sub) in enumerate(frame[frame["group"] != "all"].groupby("group", sort=False)):
        n, colour = int(sub["n"].iloc[0]), f"C{i}"
        right.plot(sub[x], sub["f1"], "-", color=colour, label=f"F1 {group} (n={n})")
        right.plot(sub[x], sub["auc_binary"], "--", color=colour, label=f"AUC {group}")
        right_lines += 1
    for ax, title in ((left, "All readers"), (right, "Per reader subgroup")):
        if tau is not None:
            ax.axvline(
                float(tau), color="grey", lw=0.8, ls="--", label="calibrated τ" if x == "threshold" else f"{x} used"
            )
        ax.set_xlabel(xlabel)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if ax is left or right_lines:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, frameon=False)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.26, top=0.94, wspace=0.15)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
