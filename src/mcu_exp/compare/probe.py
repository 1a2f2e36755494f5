"""The paired analysis of ``mcu-exp compare RUN_A RUN_B`` when one run ran under a probe
(``probe=<edit>``) and the other on the programs as written (``probe=none``), on one dataset.

Each program is its own control: Δ = score under the edit − score as written (``score`` of
``per_program.csv``: higher = the model understands more), paired by program id; the humans'
direction is −1 (edited code is understood less: docs/counterfactuals.md). The statistics are
:func:`mcu_exp.evaluation.probe_pairs.paired_analysis`'s; no per-pair human effect exists for an
edit, so only the direction is tested, not a calibrated magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mcu_exp.compare.sides import Source
from mcu_exp.evaluation.probe_pairs import PairedAnalysis, paired_analysis, render, sentence
from mcu_exp.names import SCORE

PROBE_KEY, DATASET_KEY, PROXY_KEY = "probe.edit", "dataset.name", "proxy.name"
NO_PROBE = "none"
PROBE_PAIRS_FILE = "probe_pairs.csv"
PROBE_PAIRS_FIGURE = "probe_pairs.png"


@dataclass(frozen=True)
class ProbeComparison:
    """The analysis, its edit and proxy, and which side (``A``/``B``) ran the edit."""

    result: PairedAnalysis
    edit: str
    proxy: str
    edited_side: str

    def text(self, confidence: float = 0.95) -> str:
        """The printed analysis and its closing sentence."""
        control = "B" if self.edited_side == "A" else "A"
        title = f"Paired analysis, {self.edit}: Δ = score of {self.edited_side} (edited) − score of {control}"
        return (
            render(self.result, title, confidence)
            + sentence(self.result, self.proxy, f"after {self.edit}", "programs")
            + "\n"
        )

    def write(self, out: Path) -> Path:
        """``probe_pairs.csv`` (per program: Δ and whether it moved as humans do) and its figure in ``out``."""
        from mcu_exp.compare.pairs_figure import plot_pairs

        out.mkdir(parents=True, exist_ok=True)
        self.result.pairs.to_csv(out / PROBE_PAIRS_FILE, index_label="program_id")
        plot_pairs(self.result, f"{self.proxy}: {self.edit} (each program its own control)", out / PROBE_PAIRS_FIGURE)
        return out / PROBE_PAIRS_FILE


def probe_of(source: Source) -> str:
    """The probe a run ran under (``none`` for one without, or one older than probes)."""
    return str(source.params.get(PROBE_KEY) or NO_PROBE)


def probe_comparison(a: Source, b: Source, resamples: int, seed: int) -> tuple[ProbeComparison | None, str]:
    """The paired analysis when exactly one of ``a``, ``b`` ran under a probe, else (None, why
    not: empty when neither did)."""
    edits = probe_of(a), probe_of(b)
    if edits == (NO_PROBE, NO_PROBE):
        return None, ""
    if NO_PROBE not in edits:
        return None, (
            f"Paired analysis: both runs ran under a probe ({edits[0]}, {edits[1]}); "
            "compare each with the run of probe=none"
        )
    datasets = a.params.get(DATASET_KEY), b.params.get(DATASET_KEY)
    if datasets[0] != datasets[1]:
        return None, f"Paired analysis: the runs are on different datasets ({datasets[0]}, {datasets[1]})"
    edited, control, side = (a, b, "A") if edits[0] != NO_PROBE else (b, a, "B")
    if SCORE not in edited.frame or SCORE not in control.frame:
        return None, f"Paired analysis: a run has no {SCORE} column in its per-program table"
    proxy = str(edited.params.get(PROXY_KEY) or control.params.get(PROXY_KEY) or "the proxy")
    edit = edits[0] if side == "A" else edits[1]
    return probe_pairs(edited.frame, control.frame, edit, proxy, side, resamples, seed), ""


def probe_pairs(
    edited: pd.DataFrame, control: pd.DataFrame, edit: str, proxy: str, side: str, resamples: int, seed: int
) -> ProbeComparison:
    """The paired analysis of two per-program tables (index program id, column ``score``): the
    run under the probe ``edit`` and the run without, on the programs both scored."""
    common = edited.index.intersection(control.index)
    delta = edited.loc[common, SCORE].astype(float) - control.loc[common, SCORE].astype(float)
    kind = pd.Series(edit, index=common)
    result = paired_analysis(delta, -1, kind=kind, resamples=resamples, seed=seed)
    return ProbeComparison(result, edit, proxy, side)
