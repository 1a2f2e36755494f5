"""A run's sensitivity figures say what a reader needs: F1 against ε with the always-1 and random
baselines and the humans' band, the threshold plot with τ marked, its axes labelled, its run
named, and the grids logged as MLflow tables with their real x values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcu_exp.report.plots import epsilon_figure, threshold_figure


def grids() -> tuple[pd.DataFrame, pd.DataFrame]:
    eps = np.array([0.05, 0.1, 0.2, 0.3])
    eps_frame = pd.DataFrame(
        {"group": "all", "n": 50, "epsilon": eps, "f1": [0.69, 0.68, 0.6, 0.5], "auc_binary": [0.52, 0.55, 0.6, 0.58]}
    )
    thr = np.linspace(0.3, 0.7, 9)
    rows = [
        {"group": g, "n": 50, "threshold": t, "f1": t, "precision": 0.5, "recall": t, "auc_binary": 0.5}
        for g in ("all", "bachelor")
        for t in thr
    ]
    return eps_frame, pd.DataFrame(rows)


def legend(fig) -> list[str]:  # every legend entry of every axis
    return [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]


def test_f1_against_epsilon_has_its_baselines_band_and_the_runs_epsilon() -> None:
    eps_frame, _ = grids()
    fig = epsilon_figure(
        eps_frame,
        title="smollm2 · p1 · ε=0.1 · minilm: F1 against ε",
        baselines={"always-1": 0.684, "random": 0.518},
        ceiling_f1=(0.66, 0.598, 0.73),
        epsilon=0.1,
    )
    ax = fig.axes[0]
    entries = legend(fig)
    assert "F1 of always-1 (68.4%)" in entries and "F1 of random (51.8%)" in entries
    assert "humans' half-panel F1 66.0% (95 % CI)" in entries and "this run's ε = 0.1" in entries
    assert ax.get_xlabel().startswith("ε") and "F1" in ax.get_ylabel()
    (f1_line,) = [line for line in ax.get_lines() if line.get_label() == "F1"]
    assert list(f1_line.get_xdata()) == [0.05, 0.1, 0.2, 0.3] and list(f1_line.get_ydata()) == [0.69, 0.68, 0.6, 0.5]
    band = ax.patches[0].get_extents() if ax.patches else None
    assert band is not None  # the humans' band is drawn
    assert "minilm" in ax.get_title()


def test_threshold_plot_marks_tau_and_always_one_and_names_the_run() -> None:
    _, thr = grids()
    fig = threshold_figure(thr, tau=0.5959, title="smollm2 · p1 · ε=0.1 · minilm", always_f1=0.684)
    left = fig.axes[0]
    entries = legend(fig)
    assert "calibrated τ = 0.596" in entries and "F1 of always-1 (68.4%)" in entries
    assert left.get_ylabel() and left.get_xlabel().startswith("threshold on α_test")
    assert fig._suptitle is not None and "minilm" in fig._suptitle.get_text()
    assert len(left.get_xticks()) <= 8  # readable at 800 px
    untitled = threshold_figure(thr)
    assert untitled._suptitle is None and "F1 of always-1" not in " ".join(legend(untitled))
