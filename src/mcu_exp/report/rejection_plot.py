"""The prediction-rejection figure of one run: the share of human-Low programs among those the
proxy rejects first, and the kept programs' quality against the rejection rate, with the
random and oracle curves (:mod:`mcu_exp.evaluation.rejection`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd


def plot_rejection(curves: pd.DataFrame, prr: float, path: Path) -> Path:
    """Mean human label of the kept programs against the share rejected (lowest score first):
    the proxy, random rejection and the oracle (the humans' own order); PRR in the title."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    rate = curves["rejection_rate"]
    ax.plot(rate, curves["proxy"], "-", label="proxy (reject lowest score first)")
    ax.plot(rate, curves["random"], "--", color="grey", label="random")
    ax.plot(rate, curves["oracle"], ":", color="black", label="oracle (human labels)")
    ax.set_xlabel("share of programs rejected")
    ax.set_ylabel("share understood among the kept programs")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(f"Prediction rejection: PRR = {prr:.3f}")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.25, top=0.92)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
