"""The paired analysis' figure: each pair's Δ of the proxy's score against the humans' Δ (where
per-pair human effects exist: atoms twins, paired custom data), else against 0 (a probe, whose
human effect is known only in direction): the pairs in the humans' direction filled."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from mcu_exp.evaluation.probe_pairs import DELTA_HUMAN, DELTA_PROXY, MOVED, PairedAnalysis


def plot_pairs(result: PairedAnalysis, title: str, path: Path) -> Path:
    """Draw the figure of ``result`` into ``path`` (PNG) and return the path."""
    table = result.pairs
    fig, ax = plt.subplots(figsize=(6.0, 4.4))
    moved = table[MOVED].to_numpy(dtype=bool)
    d = table[DELTA_PROXY].to_numpy(dtype=float)
    if DELTA_HUMAN in table:
        x = table[DELTA_HUMAN].to_numpy(dtype=float)
        ax.axvline(0.0, color="0.6", lw=0.8)
        ax.set_xlabel("Δ human mean correctness (treatment − control)")
    else:
        order = np.argsort(d, kind="stable")
        x, d, moved = np.arange(len(d)), d[order], moved[order]
        ax.set_xlabel("pairs, by Δ score")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.scatter(x[moved], d[moved], s=22, color="tab:blue", label="in the humans' direction")
    ax.scatter(x[~moved], d[~moved], s=22, facecolors="none", edgecolors="tab:red", label="not")
    ax.set_ylabel("Δ proxy score (treatment − control)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
