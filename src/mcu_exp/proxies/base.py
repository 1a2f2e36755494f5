"""What a proxy is: a small class with its own config, generation stages and a decision.

A proxy class is found by its section's ``_target_`` (``package.module.Class``, or a name
in :data:`~mcu_exp.proxies.registry.PROXIES`) or, without one, by ``proxy.name`` in that
registry (adding P4 = one module that registers it; ``conf/proxy/p4.yaml`` is optional). The
class declares

- ``Config``: the dataclass its config section is checked against and turned into;
- :meth:`Proxy.stages`: the generation requests it makes, stage by stage (a stage may use
  what earlier stages produced). The job runs them through the cache and the request
  preview estimates them: both read the same code;
- :meth:`Proxy.outcome`: scoring and the decision, from what the stages produced;
- for a ``calibrated`` proxy, ``offers``: the score arrays (:class:`~mcu_exp.calibration.Scores`
  names) it hands its decision rule. :func:`build_proxy` checks ``decision.rule`` (known, its
  ``needs`` offered, its ``decision.params`` valid) against every calibrated proxy it builds,
  whatever base class the proxy derives from, so a rule the proxy cannot feed stops the job
  before anything is generated.

Proxies receive their own typed section and the typed sections they use (model, scorer,
experts, decision) in a :class:`ProxyContext`, never the whole Hydra config.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from mcu_exp.calibration import Scores, check_rule
from mcu_exp.config import DecisionConfig, ExpertsConfig, ModelConfig, ScorerConfig
from mcu_exp.data import Dataset
from mcu_exp.proxies.registry import PROXIES
from mcu_exp.settings import typed

if TYPE_CHECKING:
    from mcu_exp.proxies.stages import Stage, StageResults

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProxyContext:
    """The data and the typed config sections a proxy may use, and where its caches live."""

    dataset: Dataset
    program_ids: list[str]  # the programs to label (those with human labels), in order
    model: ModelConfig
    scorer: ScorerConfig
    experts: ExpertsConfig
    decision: DecisionConfig
    cache_dir: Path
    progress: bool = True
    cache_url: str | None = None  # cache.url: a shared PostgreSQL cache instead of SQLite files in cache_dir

    @property
    def score_cache(self) -> str | Path:
        """Where scorers keep their scores: the shared store, else the cache folder."""
        return self.cache_url or self.cache_dir


@dataclass
class ProxyOutcome:
    """A proxy's result.

    ``table`` is indexed by program id and has at least ``label`` (1 = High) and ``score``
    (continuous, higher = more understandable, for the threshold-free AUC). Calibrated
    proxies also give the ``scores`` their rule decided on (the sensitivity grids sweep
    them) and the ``quantile`` rule of their τ; ``records`` are extra tables written as
    artifacts (summaries, verdicts…); ``report`` holds the proxy's own lines, printed at the end
    of the job below its results (p0_output's error alignment).
    """

    table: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    records: dict[str, pd.DataFrame] = field(default_factory=dict)
    specs: dict[str, Any] = field(default_factory=dict)
    scores: Scores | None = None
    quantile: str = "empirical"
    report: list[str] = field(default_factory=list)


OPTIONAL_SECTIONS = ("scorer", "experts", "decision")  # config sections not every proxy reads


class Proxy(ABC):
    """A behavioural proxy: model behaviour on each program → a High/Low label.

    Subclasses set ``Config`` (a dataclass with at least ``name``) and implement
    :meth:`stages` and :meth:`outcome`; :meth:`problems` checks values before anything loads.
    """

    Config: ClassVar[type]
    calibrated: ClassVar[bool] = False  # whether ε, the quantile rule and decision.rule matter
    offers: ClassVar[tuple[str, ...]] = ()  # the Scores arrays a calibrated proxy hands its rule
    # Which of the optional config sections (scorer, experts, decision) can change this proxy's
    # results; the others are left out of the run's MLflow params (and so of what tells
    # configurations apart). By default all of them, so a new proxy loses nothing.
    sections: ClassVar[frozenset[str]] = frozenset(OPTIONAL_SECTIONS)

    def __init__(self, cfg: Any, ctx: ProxyContext) -> None:
        self.cfg = cfg
        self.ctx = ctx

    @property
    def name(self) -> str:
        """The proxy's name in tables and run names (``proxy.name``)."""
        return str(self.cfg.name)

    def problems(self) -> Iterator[str]:
        """Out-of-range values of this proxy's config, as ``key=value: expected …`` lines."""
        return iter(())

    def decision_problems(self) -> Iterator[str]:
        """For a calibrated proxy, what is wrong with ``decision.rule`` for it (unknown, needing
        arrays it does not :attr:`offers`, or given parameters it does not take), as one-line
        messages; nothing for an uncalibrated one."""
        if not self.calibrated:
            return
        try:
            check_rule(self.ctx.decision.rule, self.name, self.offers, self.ctx.decision)
        except ValueError as exc:
            yield str(exc)

    def applies(self) -> bool:
        """Whether the proxy can label any of the context's programs (P0 needs questions)."""
        return True

    @abstractmethod
    def stages(self, done: StageResults) -> Iterator[Stage]:
        """The generation stages, in order; ``done`` holds each yielded stage's texts once the
        caller has run (or, in the preview, estimated) it."""

    @abstractmethod
    def outcome(self, done: StageResults) -> ProxyOutcome:
        """Scores, decision and records from the texts of every stage."""


def typed_section(config_class: type, section: Mapping[str, Any], key: str) -> Any:
    """``section`` checked against ``config_class`` and turned into an instance of it.

    A wrong type is a one-line error naming ``key``. Keys the class lacks are dropped with a
    warning naming them, not an error: shared overrides such as ``debug=quick``'s ``proxy.k``
    then still let P0 (which has no ``k``) run, and a typo in a YAML file is still shown.
    """
    return typed(config_class, section, key, config_class.__name__)


def proxy_class(target: str, key: str = "proxy") -> type[Proxy]:
    """The :class:`Proxy` subclass ``target`` names: a registered proxy name, else
    ``package.module.Class`` (a class outside the registry)."""
    import importlib

    target = str(target)
    if target in PROXIES or "." not in target:
        try:
            cls: object = PROXIES[target]
        except ImportError as exc:
            raise ValueError(f"{key}: {exc}") from None
    else:
        module, _, attr = target.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"{key}._target_: cannot load {target!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Proxy)):
        raise ValueError(f"{key}._target_={target!r}: expected a mcu_exp.proxies.base.Proxy subclass")
    return cls


def build_proxy(section: Mapping[str, Any], ctx: ProxyContext, key: str = "proxy") -> Proxy:
    """The proxy a config section names (``_target_``, else ``name`` in the proxy registry),
    with its typed config; a calibrated proxy's decision rule is checked here (a one-line
    ValueError), for every proxy class alike."""
    target = section.get("_target_") or section.get("name")
    if not target:
        raise ValueError(
            f"{key}: name the proxy: {key}=<name> (registered: {', '.join(PROXIES)}) or "
            f"{key}._target_=package.module.Class"
        )
    cls = proxy_class(str(target), key)
    proxy = cls(typed_section(cls.Config, section, key), ctx)
    for problem in proxy.decision_problems():
        raise ValueError(problem)
    return proxy
