"""A job's configuration checked before any data or model is loaded: every section by its owner.

Types and key names are Hydra's job (the structured config); ranges and choices are checked
by the folder that owns each section (``decision`` by calibration, ``dataset`` and ``labels`` by
data, ``probe`` by counterfactual, ``evaluation`` by evaluation, ``scorer`` by scoring, ``model`` by llm, ``cache.url`` by
store, the folders by :mod:`mcu_exp.job.paths`), reading the choices from their registries, so a
bad value fails in the first second with the key it concerns. A proxy checks its own section
(:meth:`mcu_exp.proxies.base.Proxy.problems`). This module only runs them all, in one order.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.calibration.checks import decision_problems
from mcu_exp.config import Config
from mcu_exp.data.checks import dataset_problems, labels_problems
from mcu_exp.evaluation.checks import evaluation_problems
from mcu_exp.job.paths import path_problems
from mcu_exp.llm.checks import model_problems
from mcu_exp.registry import replacement_problems
from mcu_exp.scoring.checks import scorer_problems
from mcu_exp.store.checks import cache_url_problems


def check_config(cfg: Config) -> None:
    """Raise ``ValueError`` naming the first key whose value is out of range."""
    problems = list(config_problems(cfg))
    if problems:
        raise ValueError(problems[0])


def config_problems(cfg: Config) -> Iterator[str]:
    """Every out-of-range value, as ``key=value: what is expected`` messages."""
    yield from decision_problems(cfg.decision)
    yield from scorer_problems(cfg.scorer)
    yield from evaluation_problems(cfg.evaluation)
    yield from labels_problems(cfg.labels)
    yield from dataset_problems(cfg.dataset)
    if str(cfg.probe.edit) != "none":  # tree-sitter's grammars load only for a probe
        from mcu_exp.counterfactual.probe import probe_problems

        yield from probe_problems(str(cfg.probe.edit))
    yield from path_problems(cfg.paths.outputs, cfg.cache.dir, cfg.paths.allow_system)
    if cfg.cache.url:
        yield from cache_url_problems(str(cfg.cache.url))
    yield from model_problems(cfg.model, cfg.experts)
    yield from _plugin_problems(cfg)


def _plugin_problems(cfg: Config) -> Iterator[str]:
    """An entry a plugin replaced that ``plugins.allow_replace`` does not name, and a name
    there that no registry has. Plugins load before the config is composed, so a replacement
    is recorded then and refused here, when the job starts, before any data is read."""
    import mcu_exp.llm.providers
    import mcu_exp.measures
    import mcu_exp.proxies.registry  # noqa: F401 (every registry's names, for the did-you-mean)

    yield from replacement_problems([str(name) for name in cfg.plugins.allow_replace])
