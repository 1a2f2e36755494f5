"""The human target a job scores its proxy against (``labels.target``).

``observed`` (the default): the label rule on the readers' answers
(:func:`mcu_exp.data.labels.human_labels`), per reader subgroup too. ``latent``: a crossed
reader × program model of every evaluation (:func:`mcu_exp.ceiling.latent.fit_latent`), fitted
to each label set's evaluations; a program's human label is 1 when its latent understandability
lies above the programs' median (``labels.latent_rule=median``) or above 0 (``sign``), and the
continuous human value a proxy's ρ is computed against is the latent understandability itself.
Reader ability is what makes a program read by weak readers look hard; the model takes it out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mcu_exp.data.labels import LATENT, HumanLabels, human_labels, label_evaluations, subgroup_labels

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mcu_exp.config import LabelsConfig
    from mcu_exp.data.types import Dataset

log = logging.getLogger("mcu_exp")


def latent_human_labels(dataset: Dataset, group: str, readers: str, rule: str) -> HumanLabels:
    """One label set under the latent target: the model fitted to ``group``'s evaluations
    (``readers``: all, or those asked questions), its posterior means as the continuous value,
    the latent label under ``rule``, the model's figures in ``model``."""
    from mcu_exp.ceiling.latent import fit_latent, latent_labels

    fit = fit_latent(label_evaluations(dataset, group, readers))
    found = fit.understandability
    kept = [pid for pid in dataset.program_ids if pid in found.index]
    values = found.reindex(kept).astype(float)
    figures = {**fit.figures(), "latent.converged": float(fit.converged)}
    figures["latent.sd_mean"] = float(fit.programs["sd"].mean())
    return HumanLabels(
        labels=latent_labels(values, rule).rename("label"),
        fraction=values.rename("fraction"),
        n_evaluators=fit.programs["evaluations"].reindex(kept).astype(int).rename("n_evaluators"),
        dropped=[pid for pid in dataset.program_ids if pid not in found.index],
        group=group,
        correctness=values.rename("correctness"),
        rule=f"above the {'median' if rule == 'median' else 'average program'}",
        min_fraction=float("nan"),
        readers=readers,
        target=LATENT,
        model=figures,
    )


def job_labels(
    dataset: Dataset, cfg: LabelsConfig, subgroups: Iterable[str]
) -> tuple[HumanLabels, dict[str, HumanLabels]]:
    """The label set of all readers (``cfg.group``) and of each reader subgroup the dataset
    has, under ``cfg.target``."""
    if cfg.target != LATENT:
        return human_labels(dataset, cfg), subgroup_labels(dataset, cfg, subgroups)
    present = set(dataset.evaluations["group"].dropna())
    main = latent_human_labels(dataset, cfg.group, cfg.readers, cfg.latent_rule)
    groups = {}
    for g in subgroups:
        if g not in present:
            continue
        try:
            groups[g] = latent_human_labels(dataset, g, cfg.readers, cfg.latent_rule)
        except ValueError as exc:  # too few programs with questions for this group's model
            log.info("reader subgroup %s not evaluated under labels.target=latent: %s", g, exc)
    return main, groups
