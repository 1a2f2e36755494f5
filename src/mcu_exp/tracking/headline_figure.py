"""A job's headline as one figure: F1 beside the baselines it is read against on one axis, the
AUCs beside chance on another.

MLflow draws each single-value metric as its own one-bar chart on its own axis, so F1 and the
always-1 baseline it must beat never share a scale in the UI. This figure (``headline.png``
among the run's artifacts, drawn beside the job's other figures when ``evaluation.plots`` is
on) puts each family on one axis, with the 95 % intervals the job computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FILE = "headline.png"
# (label, value key, interval key prefix or None), per panel
F1_FAMILY = (
    ("F1", "f1", "f1"),
    ("always-1\nbaseline", "baseline_always_f1", None),
    ("random\nbaseline", "baseline_random_f1", None),
)
AUC_FAMILY = (("AUC (score)", "auc_score", "auc_score"), ("AUC (labels)", "auc_binary", "auc_binary"))
CHANCE = 0.5


def _value(metrics: Mapping[str, Any], key: str) -> float:
    value = metrics.get(key)
    return math.nan if value is None else float(value)


def draw(metrics: Mapping[str, Any], path: Path, title: str = "") -> Path:
    """Draw the two panels from a job's ``metrics`` (``metrics.json``'s keys) into ``path``;
    a value the job did not compute (or that is undefined) is left as an empty slot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    for ax, family, name in ((axes[0], F1_FAMILY, "F1 and its baselines"), (axes[1], AUC_FAMILY, "AUC and chance")):
        for i, (_, key, ci) in enumerate(family):
            value = _value(metrics, key)
            if math.isnan(value):
                ax.text(i, 0.03, "undefined", ha="center", va="bottom", fontsize=8, color="0.4")
                continue
            low, high = (_value(metrics, f"{ci}_ci_low"), _value(metrics, f"{ci}_ci_high")) if ci else (value, value)
            colour = "C0" if ci else "0.7"
            ax.bar(i, value, color=colour, width=0.6)
            if ci and not (math.isnan(low) or math.isnan(high)):
                ax.errorbar(i, value, yerr=[[value - low], [high - value]], color="black", capsize=4, lw=1)
            ax.text(i, 0.03, f"{value:.3f}", ha="center", va="bottom", fontsize=8, color="white" if ci else "black")
        if family is F1_FAMILY and not math.isnan(_value(metrics, "baseline_always_f1")):
            ax.axhline(_value(metrics, "baseline_always_f1"), color="0.4", ls=":", lw=1)
        if family is AUC_FAMILY:
            ax.axhline(CHANCE, color="0.4", ls=":", lw=1, label="chance")
        ax.set_xticks(range(len(family)), [label for label, _, _ in family], fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.set_title(name, fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.text(0.01, 0.01, "bars: value; whiskers: 95 % bootstrap CI; dotted: the baseline to beat", fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
