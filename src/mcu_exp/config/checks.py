"""Value checks the typed schema cannot express, run before any data or model is loaded.

Types and key names are Hydra's job (the structured config); ranges and choices of the
shared sections are checked here so a bad value fails in the first second with the key it
concerns. A proxy checks its own section (:meth:`mcu_exp.proxies.base.Proxy.problems`).
"""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.calibration import QUANTILE_RULES
from mcu_exp.calibration import RULES as DECISION_RULES
from mcu_exp.config import Config
from mcu_exp.config.paths import path_problems
from mcu_exp.data import GROUPS, READERS, RULES
from mcu_exp.evaluation.report import CI_METHODS
from mcu_exp.evaluation.significance import MIN_PERMUTATIONS
from mcu_exp.registry import replacement_problems
from mcu_exp.scoring.factory import SCORERS

MIN_RESAMPLES = 1000
BASELINES = ("none", "code", "all")  # evaluation.baselines: which code metrics the measure table scores


def check_config(cfg: Config) -> None:
    """Raise ``ValueError`` naming the first key whose value is out of range."""
    problems = list(config_problems(cfg))
    if problems:
        raise ValueError(problems[0])


def config_problems(cfg: Config) -> Iterator[str]:
    """Every out-of-range value, as ``key=value: what is expected`` messages."""
    d, ev, lab = cfg.decision, cfg.evaluation, cfg.labels
    if not 0.0 < d.epsilon < 1.0:
        yield f"decision.epsilon={d.epsilon}: expected a value in (0, 1)"
    if d.quantile not in QUANTILE_RULES:
        yield f"decision.quantile={d.quantile!r}: expected one of {', '.join(QUANTILE_RULES)}"
    if d.rule not in DECISION_RULES:
        yield DECISION_RULES.unknown_message(d.rule)
    if cfg.scorer.kind not in SCORERS:
        yield SCORERS.unknown_message(cfg.scorer.kind)
    if ev.baselines not in BASELINES:
        yield f"evaluation.baselines={ev.baselines!r}: expected one of {', '.join(BASELINES)}"
    if not 0.0 <= d.theta <= 1.0:
        yield f"decision.theta={d.theta}: expected a value in [0, 1]"
    if ev.bootstrap_resamples < MIN_RESAMPLES:
        yield f"evaluation.bootstrap_resamples={ev.bootstrap_resamples}: expected at least {MIN_RESAMPLES}"
    if ev.ci not in CI_METHODS:
        yield f"evaluation.ci={ev.ci!r}: expected one of {', '.join(CI_METHODS)}"
    if ev.permutations < MIN_PERMUTATIONS:
        yield f"evaluation.permutations={ev.permutations}: expected at least {MIN_PERMUTATIONS}"
    if ev.min_per_class < 1:
        yield f"evaluation.min_per_class={ev.min_per_class}: expected at least 1"
    if not 0.0 < ev.confidence < 1.0:
        yield f"evaluation.confidence={ev.confidence}: expected a value in (0, 1)"
    if ev.ceiling_splits < 1:
        yield f"evaluation.ceiling_splits={ev.ceiling_splits}: expected at least 1 split of the readers"
    if ev.threshold_grid < 2:
        yield f"evaluation.threshold_grid={ev.threshold_grid}: expected at least 2 points"
    bad_eps = [e for e in ev.epsilon_grid if not 0.0 < e < 1.0]
    if bad_eps or not ev.epsilon_grid:
        yield f"evaluation.epsilon_grid={list(ev.epsilon_grid)}: expected a non-empty list of values in (0, 1)"
    bad_groups = [g for g in ev.subgroups if g not in GROUPS]
    if bad_groups:
        yield f"evaluation.subgroups: unknown {bad_groups}; expected some of {', '.join(GROUPS)}"
    if lab.rule not in RULES:
        yield RULES.unknown_message(lab.rule)
    if lab.group != "all" and lab.group not in GROUPS:
        yield f"labels.group={lab.group!r}: expected all or one of {', '.join(GROUPS)}"
    if lab.readers not in READERS:
        yield f"labels.readers={lab.readers!r}: expected one of {', '.join(READERS)}"
    if not 0.0 <= lab.min_fraction <= 1.0:
        yield f"labels.min_fraction={lab.min_fraction}: expected a value in [0, 1]"
    if cfg.dataset.limit is not None and cfg.dataset.limit < 1:
        yield f"dataset.limit={cfg.dataset.limit}: expected a positive number of programs (or null)"
    yield from path_problems(cfg.paths.outputs, cfg.cache.dir, cfg.paths.allow_system)
    if cfg.cache.url:
        yield from _cache_url_problems(str(cfg.cache.url))
    yield from _model_problems(cfg)
    yield from _plugin_problems(cfg)


def _model_problems(cfg: Config) -> Iterator[str]:
    """A ``model.name``/``model.model_id`` (of the target or an expert) that does not name what
    would run: the run would be logged under another model's name (mcu_exp.llm.labels)."""
    from mcu_exp.llm.labels import label_problem

    found = label_problem(cfg.model)
    if found:
        yield found
    for key, member in cfg.experts.members.items():
        found = label_problem(member.model, key=f"experts.members.{key}.model")
        if found:
            yield found


def _plugin_problems(cfg: Config) -> Iterator[str]:
    """An entry a plugin replaced that ``plugins.allow_replace`` does not name, and a name
    there that no registry has. Plugins load before the config is composed, so a replacement
    is recorded then and refused here, when the job starts, before any data is read."""
    import mcu_exp.llm.providers
    import mcu_exp.measures
    import mcu_exp.proxies.registry  # noqa: F401 (every registry's names, for the did-you-mean)

    yield from replacement_problems([str(name) for name in cfg.plugins.allow_replace])


def _cache_url_problems(url: str) -> Iterator[str]:
    """What is wrong with ``cache.url`` (its scheme, a password in it, psycopg missing)."""
    from mcu_exp.store.postgres import StoreError, check_url
    from mcu_exp.store.sql import is_url

    if not is_url(url):
        yield f"cache.url={url}: expected postgresql://user@host:port/database (or null for SQLite files in cache.dir)"
        return
    try:
        check_url(url)
    except StoreError as exc:
        yield str(exc)
