"""A crossed reader × program model of every evaluation: each program's latent understandability.

The model. Reader ``r`` answered ``c`` of the ``t`` questions on program ``p`` right::

    c ~ Binomial(t, expit(μ + u_p + a_r)),    u_p ~ N(0, σ_u²),    a_r ~ N(0, σ_a²)

``u_p`` is the program's **understandability** (positive: its readers answer more questions
right than on the average program, whoever reads it) and ``a_r`` the reader's **ability**;
both effects are random and crossed (a reader reads many programs, a program is read by many
readers), so a program read by weak readers is not mistaken for a hard one.

The fit is statsmodels' :class:`~statsmodels.genmod.bayes_mixed_glm.BinomialBayesMixedGLM`
with mean-field variational Bayes (``fit_vb``): independent Gaussian posteriors for ``μ``,
every ``u_p`` and ``a_r``, and the log standard deviations ``log σ_u`` and ``log σ_a``, under
the library's default priors (``μ ~ N(0, 2²)``, ``log σ ~ N(0, 1)``). Mean-field VB is known to
understate posterior variances, so the posterior SDs and the reliability below lean
optimistic.

**Binomial as Bernoulli rows.** The model takes one 0/1 outcome per row and has neither a
number of trials nor weights, so each evaluation becomes ``t`` rows (one per question asked):
``c`` ones, then ``t − c`` zeros. Their Bernoulli likelihood equals the binomial one up to
the constant ``C(t, c)``, so the posterior is exactly the binomial model's. The rows keep the
order of the evaluations; the random-effect columns are the programs, then the readers, each
in sorted order of their ids (what ``from_formula`` with ``0 + C(...)`` builds). A count that
is not whole (a repeated evaluation averaged on loading, see :mod:`mcu_exp.data.duplicates`)
is rounded half to even and counted in ``LatentFit.rounded``.

**Untested evaluations** (``total`` 0: the reader said they did not understand and was asked
nothing; 135 of Scalabrino's 444) are a choice, ``untested``:

* ``"drop"`` (default): a binomial with 0 trials has no likelihood; the model describes the
  answers, as the brief "right out of the number asked" says;
* ``"wrong"``: 0 right out of the number of questions the program's tested readers were asked
  (their most common ``total``), the labels' convention (``labels.readers=all`` scores such an
  evaluation as not understood).

**Reliability of the program scores**: ``var(m) / (var(m) + mean(s²))`` over the programs,
``m`` the posterior means of ``u_p`` and ``s`` their posterior SDs (population variances):
the share of the scores' spread that is signal rather than posterior uncertainty (the
empirical-Bayes counterpart of the split-half reliability of :mod:`mcu_exp.ceiling.split_half`).

**Alignment** (:func:`latent_alignment`) of a proxy's per-program score (higher = more
understandable) with the latent understandability: Spearman's ρ, and the score's ROC AUC
against the **latent label**, 1 when a program's posterior mean is above the median of the
programs' (``rule="median"``: balanced classes) or above 0, the average program
(``rule="sign"``). Intervals are percentile intervals over resamples of the programs (the
dominant uncertainty); the latent scores are held at their posterior means (the model is not
refitted per resample), so the intervals do not carry the model's own uncertainty.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse

from mcu_exp.data.labels import tested
from mcu_exp.evaluation.bootstrap import percentile_interval
from mcu_exp.evaluation.definitions import auc_score, spearman
from mcu_exp.evaluation.registry import Ranking

Untested = Literal["drop", "wrong"]
UNTESTED: tuple[str, ...] = ("drop", "wrong")
Rule = Literal["median", "sign"]
RULES: tuple[str, ...] = ("median", "sign")
MIN_PROGRAMS = 3
"""Fewest programs (with at least one question asked) for which the model is fitted."""


@dataclass(frozen=True)
class Design:
    """The Bernoulli rows of a crossed binomial model, as ``BinomialBayesMixedGLM`` takes them.

    ``endog`` (0/1 per question), ``exog`` (the intercept column), ``exog_vc`` (sparse
    indicators: the programs' columns, then the readers'), ``ident`` (0 for a program column, 1
    for a reader column); ``programs`` and ``readers`` name the columns in order.
    """

    endog: np.ndarray
    exog: np.ndarray
    exog_vc: sparse.csr_matrix
    ident: np.ndarray
    programs: list[str]
    readers: list[str]
    rounded: int
    dropped: int
    counts: pd.DataFrame


@dataclass(frozen=True, eq=False)
class LatentFit:
    """A fitted crossed model.

    ``programs`` (index ``program_id``, in the order of first appearance in the evaluations):
    ``understandability`` (posterior mean of ``u_p``), ``sd`` (its posterior SD),
    ``evaluations`` and ``questions`` (rows that entered the fit). ``readers`` (index
    ``participant_id``): ``ability``, ``sd``, ``evaluations``, ``questions``. ``intercept`` is
    the posterior mean of ``μ``; ``program_sd`` and ``reader_sd`` are ``exp`` of the posterior
    means of ``log σ_u`` and ``log σ_a``. ``result`` is statsmodels' results object.
    """

    programs: pd.DataFrame
    readers: pd.DataFrame
    intercept: float
    program_sd: float
    reader_sd: float
    reliability: float
    untested: str
    questions: int
    rounded: int
    dropped: int
    seconds: float
    converged: bool
    result: Any = field(repr=False)

    @property
    def understandability(self) -> pd.Series:
        """The programs' latent understandability (posterior means), by program id."""
        return self.programs["understandability"]

    def labels(self, rule: str = "median") -> pd.Series:
        """The latent label of each program (1 = understandable) under ``rule``."""
        return latent_labels(self.understandability, rule)

    def figures(self) -> dict[str, float]:
        """Flat figures for a metrics table: ``latent.<name>`` → value."""
        return {
            "latent.reliability": self.reliability,
            "latent.program_sd": self.program_sd,
            "latent.reader_sd": self.reader_sd,
            "latent.intercept": self.intercept,
            "latent.programs": float(len(self.programs)),
            "latent.readers": float(len(self.readers)),
            "latent.questions": float(self.questions),
            "latent.seconds": self.seconds,
        }


def _counts(evaluations: pd.DataFrame, untested: str) -> tuple[pd.DataFrame, int]:
    """Program, reader and whole (correct, total) per evaluation that enters the fit."""
    if untested not in UNTESTED:
        raise ValueError(f"untested is {untested!r}, expected one of: {', '.join(UNTESTED)}")
    frame = pd.DataFrame(
        {
            "program_id": evaluations["program_id"].astype(str).to_numpy(),
            "participant_id": evaluations["participant_id"].astype(str).to_numpy(),
            "correct": evaluations["correct"].astype(float).to_numpy(),
            "total": evaluations["total"].astype(float).to_numpy(),
            "tested": tested(evaluations).to_numpy(),
        }
    )
    frame = frame[frame["correct"].notna() & frame["total"].notna()]
    whole = frame[["correct", "total"]].round()
    rounded = int((whole != frame[["correct", "total"]]).any(axis=1).sum())
    frame[["correct", "total"]] = whole
    if untested == "wrong":
        asked = frame[frame["tested"]]
        usual = asked.groupby("program_id")["total"].agg(lambda s: s.mode().max())
        fallback = float(asked["total"].mode().max()) if len(asked) else 0.0
        missing = ~frame["tested"]
        frame.loc[missing, "total"] = frame.loc[missing, "program_id"].map(usual).fillna(fallback).to_numpy()
        frame.loc[missing, "correct"] = 0.0
    frame = frame[frame["total"] > 0]
    return frame.astype({"correct": int, "total": int}).reset_index(drop=True), rounded


def design(evaluations: pd.DataFrame, untested: str = "drop") -> Design:
    """The Bernoulli rows of the evaluations (see the module doc: order, rounding, untested)."""
    frame, rounded = _counts(evaluations, untested)
    total = frame["total"].to_numpy()
    correct = frame["correct"].to_numpy()
    source = np.repeat(np.arange(len(frame)), total)
    position = np.arange(source.size) - np.repeat(np.cumsum(total) - total, total)
    endog = (position < correct[source]).astype(float)
    programs = sorted(frame["program_id"].unique())
    readers = sorted(frame["participant_id"].unique())
    p_col = pd.Index(programs).get_indexer(frame["program_id"])[source]
    r_col = len(programs) + pd.Index(readers).get_indexer(frame["participant_id"])[source]
    rows = np.concatenate([np.arange(source.size)] * 2)
    cols = np.concatenate([p_col, r_col])
    exog_vc = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(source.size, len(programs) + len(readers)))
    return Design(
        endog=endog,
        exog=np.ones((source.size, 1)),
        exog_vc=exog_vc,
        ident=np.repeat([0, 1], [len(programs), len(readers)]),
        programs=programs,
        readers=readers,
        rounded=rounded,
        dropped=int(len(evaluations) - len(frame)),
        counts=frame,
    )


def reliability(means: np.ndarray, sds: np.ndarray) -> float:
    """``var(means) / (var(means) + mean(sds²))``; NaN for fewer than two values or no spread."""
    means, sds = np.asarray(means, dtype=float), np.asarray(sds, dtype=float)
    if means.size < 2:
        return float("nan")
    signal = float(np.var(means))
    noise = float(np.mean(sds**2))
    return signal / (signal + noise) if signal + noise > 0 else float("nan")


def _model_class() -> Any:
    """statsmodels' model, imported on first use (the import takes ~2 s)."""
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    return BinomialBayesMixedGLM


def _model(d: Design, fe_p: float, vcp_p: float) -> Any:
    return _model_class()(
        d.endog,
        d.exog,
        d.exog_vc,
        d.ident,
        vcp_p=vcp_p,
        fe_p=fe_p,
        fep_names=["Intercept"],
        vcp_names=["program", "reader"],
        vc_names=[*d.programs, *d.readers],
    )


def start_sd(size: int, seed: int) -> np.ndarray:
    """The starting posterior SDs of ``fit_vb``: the library's own draw, ``exp(-0.5 + 0.1 z)``
    with standard normal ``z``, from a seeded generator (the library draws them from fresh
    entropy, so two fits of the same data would differ in the last digits)."""
    return np.asarray(np.exp(-0.5 + 0.1 * np.random.default_rng(seed).normal(size=size)), dtype=float)


def fit_latent(
    evaluations: pd.DataFrame,
    untested: str = "drop",
    fe_p: float = 2.0,
    vcp_p: float = 1.0,
    seed: int = 0,
) -> LatentFit:
    """Fit the crossed reader × program model to the evaluations (``program_id``,
    ``participant_id``, ``correct``, ``total``; e.g. :func:`mcu_exp.data.labels.label_evaluations`
    of a dataset, for a reader subgroup). ``fe_p`` and ``vcp_p`` are the prior SDs of the
    intercept and of the log-SDs (the library's defaults); ``seed`` draws the starting
    posterior SDs (:func:`start_sd`). ``ValueError`` when fewer than
    :data:`MIN_PROGRAMS` programs have a question asked. ``seconds`` times the design and the
    fit, not statsmodels' import."""
    _model_class()  # not timed
    start = time.perf_counter()
    d = design(evaluations, untested)
    if len(d.programs) < MIN_PROGRAMS:
        raise ValueError(
            f"the latent model needs at least {MIN_PROGRAMS} programs with questions asked, got {len(d.programs)}"
        )
    model = _model(d, fe_p, vcp_p)
    result = model.fit_vb(sd=start_sd(model.k_fep + model.k_vcp + model.k_vc, seed))
    seconds = time.perf_counter() - start
    vc_mean = np.asarray(result.vc_mean, dtype=float)
    vc_sd = np.asarray(result.vc_sd, dtype=float)
    n_p = len(d.programs)
    counts = d.counts
    order = list(pd.unique(counts["program_id"]))
    programs = pd.DataFrame(
        {"understandability": vc_mean[:n_p], "sd": vc_sd[:n_p]}, index=pd.Index(d.programs, name="program_id")
    ).reindex(order)
    readers = pd.DataFrame(
        {"ability": vc_mean[n_p:], "sd": vc_sd[n_p:]}, index=pd.Index(d.readers, name="participant_id")
    )
    for frame, key in ((programs, "program_id"), (readers, "participant_id")):
        grouped = counts.groupby(key)
        frame["evaluations"] = grouped.size().reindex(frame.index).astype(int)
        frame["questions"] = grouped["total"].sum().reindex(frame.index).astype(int)
    vcp_mean = np.asarray(result.vcp_mean, dtype=float)
    return LatentFit(
        programs=programs,
        readers=readers,
        intercept=float(np.asarray(result.fe_mean)[0]),
        program_sd=float(np.exp(vcp_mean[0])),
        reader_sd=float(np.exp(vcp_mean[1])),
        reliability=reliability(programs["understandability"].to_numpy(), programs["sd"].to_numpy()),
        untested=untested,
        questions=int(d.endog.size),
        rounded=d.rounded,
        dropped=d.dropped,
        seconds=seconds,
        converged=bool(result.optim_retvals.success),
        result=result,
    )


def latent_labels(understandability: pd.Series, rule: str = "median") -> pd.Series:
    """1 where a program's latent understandability is above the programs' median
    (``median``) or above 0, the average program (``sign``); 0 otherwise (ties included)."""
    if rule not in RULES:
        raise ValueError(f"latent label rule is {rule!r}, expected one of: {', '.join(RULES)}")
    values = understandability.astype(float)
    cut = float(values.median()) if rule == "median" else 0.0
    return (values > cut).astype(int).rename("latent_label")


@dataclass(frozen=True)
class LatentAlignment:
    """A proxy's alignment with the latent understandability on ``programs`` programs:
    Spearman's ρ and the ROC AUC against the latent label (``rule``), each with the central
    ``confidence`` percentile interval over ``resamples`` program resamples."""

    spearman: float
    spearman_ci: tuple[float, float]
    auc: float
    auc_ci: tuple[float, float]
    programs: int
    positives: int
    rule: str
    resamples: int
    confidence: float
    seed: int

    def figures(self, prefix: str = "latent.") -> dict[str, float]:
        """Flat figures: ``<prefix>spearman``, ``…_ci_low``/``_ci_high``, ``<prefix>auc``, …"""
        out: dict[str, float] = {}
        for name, value, ci in (("spearman", self.spearman, self.spearman_ci), ("auc", self.auc, self.auc_ci)):
            out[f"{prefix}{name}"] = value
            out[f"{prefix}{name}_ci_low"], out[f"{prefix}{name}_ci_high"] = ci
        out[f"{prefix}programs"] = float(self.programs)
        out[f"{prefix}positives"] = float(self.positives)
        return out


def latent_alignment(
    score: pd.Series,
    latent: LatentFit | pd.Series,
    rule: str = "median",
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> LatentAlignment:
    """Spearman's ρ and AUC of ``score`` (per program id, higher = more understandable)
    against the latent understandability (a fit, or its ``understandability`` series), on the
    programs both define, with program-bootstrap intervals. The latent label is taken on
    those programs (``rule``: see :func:`latent_labels`)."""
    truth_scores = latent.understandability if isinstance(latent, LatentFit) else latent
    proxy = pd.Series(score, dtype=float).dropna()
    common = [p for p in truth_scores.index if p in proxy.index]
    latent_values = truth_scores.reindex(common).astype(float)
    labels = latent_labels(latent_values, rule).to_numpy()
    x = proxy.reindex(common).to_numpy(dtype=float)
    h = latent_values.to_numpy()
    n = len(common)
    point = Ranking.single(x, labels, human=h)
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, n, size=(resamples, n)) if n else np.zeros((resamples, 0), dtype=int)
    boot = Ranking(score=x, indices=indices, truth=labels[indices], human=h)
    rho, auc = (float(f(point)[0]) if n > 1 else float("nan") for f in (spearman, auc_score))
    return LatentAlignment(
        spearman=rho,
        spearman_ci=percentile_interval(spearman(boot), confidence) if n > 1 else _NAN2,
        auc=auc,
        auc_ci=percentile_interval(auc_score(boot), confidence) if n > 1 else _NAN2,
        programs=n,
        positives=int(labels.sum()),
        rule=rule,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )


_NAN2 = (float("nan"), float("nan"))


def simulate(
    program_effects: npt.ArrayLike,
    reader_effects: npt.ArrayLike,
    readers_per_program: int,
    questions: int,
    intercept: float,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Evaluations from the crossed model: each program is read by ``readers_per_program``
    readers drawn without replacement from the pool, each answering ``questions`` questions
    right with probability ``expit(intercept + program effect + reader effect)``; ids
    ``p<i>`` and ``r<j>``."""
    u = np.asarray(program_effects, dtype=float)
    a = np.asarray(reader_effects, dtype=float)
    program = np.repeat(np.arange(u.size), readers_per_program)
    reader = np.concatenate([rng.choice(a.size, readers_per_program, replace=False) for _ in range(u.size)])
    p = 1.0 / (1.0 + np.exp(-(intercept + u[program] + a[reader])))
    return pd.DataFrame(
        {
            "program_id": [f"p{i}" for i in program],
            "participant_id": [f"r{j}" for j in reader],
            "correct": rng.binomial(questions, p),
            "total": np.full(program.size, questions),
        }
    )
