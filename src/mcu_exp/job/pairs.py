"""A job's paired designs: the probe it runs under (``probe=<edit>``) and, on a dataset whose
programs have twins (atoms, a custom dataset with ``pair``/``variant``), the twins analysis.

:func:`probe_dataset` edits the loaded dataset (:mod:`mcu_exp.counterfactual.probe`) and says
how many programs passed their edit's check; :func:`write_probe` records the pairing
(``probe.csv``: program id → original and edited code, the probe, excluded programs and why).
:func:`twins_analysis` compares each pair's twins within the run: Δ of the proxy's score
against the humans' Δ (:mod:`mcu_exp.evaluation.probe_pairs`), written to ``pairs.csv`` (and
``pairs.png``), logged as ``twins.*`` metrics and printed with its closing sentence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.config import EvaluationConfig, LabelsConfig, ProbeConfig
from mcu_exp.counterfactual.probe import NO_PROBE, UNCHANGED, Probed, apply_probe
from mcu_exp.data import Dataset, DatasetError
from mcu_exp.data.pairs import human_pair_effects, twin_pairs
from mcu_exp.evaluation.probe_pairs import paired_analysis, render, sentence

PROBE_FILE = "probe.csv"
PAIRS_FILE = "pairs.csv"
PAIRS_FIGURE = "pairs.png"
TWINS_PREFIX = "twins."


def probe_dataset(dataset: Dataset, probe: ProbeConfig) -> tuple[Dataset, Probed | None]:
    """The dataset the job runs on: ``dataset`` itself without a probe, else its edited programs
    (one line printed: how many passed the edit's check, which were excluded and why)."""
    if probe.edit == NO_PROBE:
        return dataset, None
    probed = apply_probe(dataset, str(probe.edit), int(probe.seed))
    print(probed.describe())
    if not probed.dataset.programs:
        out = probed.excluded
        same = int((out["problem"] == UNCHANGED).sum())
        raise DatasetError(
            f"probe.edit={probe.edit}: no program of dataset {dataset.name} is left to run ({same} unchanged by "
            f"the edit, {len(out) - same} failing its check); expected at least one edited program"
        )
    return probed.dataset, probed


def write_probe(probed: Probed | None, results: Path) -> dict[str, float]:
    """Write ``probe.csv`` (the pairing) into ``results``; the ``probe.*`` metrics (none without a
    probe): programs edited, excluded for failing the check, left out unchanged."""
    if probed is None:
        return {}
    probed.pairing.to_csv(results / PROBE_FILE, index=False)
    out = probed.excluded
    unchanged = int((out["problem"] == UNCHANGED).sum())
    return {
        "probe.edited": float(len(probed.pairing) - len(out)),
        "probe.excluded": float(len(out) - unchanged),
        "probe.unchanged": float(unchanged),
    }


def direction_of(delta_human: pd.Series) -> int:
    """The humans' direction in the data: the sign of the mean human Δ (−1 when it is 0 or
    unknown: a treatment is taken to be harder)."""
    mean = float(delta_human.mean()) if len(delta_human.dropna()) else float("nan")
    return 1 if mean > 0 else -1


def twins_analysis(
    dataset: Dataset,
    scores: pd.Series,
    proxy: str,
    labels: LabelsConfig,
    ev: EvaluationConfig,
    results: Path,
) -> tuple[dict[str, float], str]:
    """The twins analysis of one run (``scores``: the proxy's per-program score, higher = more
    understood): its ``twins.*`` metrics and its text; ({}, "") on a dataset without twins."""
    pairs = twin_pairs(dataset)
    if not pairs:
        return {}, ""
    human = human_pair_effects(
        dataset, pairs, labels.group, labels.readers, ev.bootstrap_resamples, ev.seed, ev.confidence
    )
    human["score_control"] = scores.reindex(human["control"]).to_numpy(dtype=float)
    human["score_treatment"] = scores.reindex(human["treatment"]).to_numpy(dtype=float)
    delta = human["score_treatment"] - human["score_control"]
    direction = direction_of(human["delta_human"])
    result = paired_analysis(
        delta, direction, human["delta_human"], human["kind"], ev.bootstrap_resamples, ev.seed, ev.confidence
    )
    table = human.join(result.pairs[["delta_proxy", "moved"]], how="left")
    table.to_csv(results / PAIRS_FILE)
    if result.n == 0:
        return {
            f"{TWINS_PREFIX}n": 0.0
        }, f"Twins of {dataset.name}: no pair with both twins scored and read ({PAIRS_FILE})\n"
    if ev.plots and result.n:
        from mcu_exp.compare.pairs_figure import plot_pairs

        plot_pairs(result, f"{proxy}: twins of {dataset.name}", results / PAIRS_FIGURE)
    harder = "less" if direction < 0 else "more"
    text = render(result, f"Twins of {dataset.name}: Δ = treatment − control ({PAIRS_FILE})", ev.confidence)
    text += sentence(result, proxy, f"on the treatment twin (humans understand it {harder})") + "\n"
    metrics = result.metrics(TWINS_PREFIX)
    metrics[f"{TWINS_PREFIX}direction"] = float(direction)
    metrics[f"{TWINS_PREFIX}mean_delta_human"] = float(np.nanmean(human["delta_human"])) if len(human) else np.nan
    return metrics, text


def score_series(table: pd.DataFrame) -> pd.Series:
    """The proxy's per-program score column of its outcome table (NaN when it has none)."""
    if names.SCORE not in table:
        return pd.Series(np.nan, index=table.index, dtype=float)
    return table[names.SCORE].astype(float)
