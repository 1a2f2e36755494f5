"""Error alignment: when a model and the humans both get a program wrong, do they get it wrong
the same way?

Input: for each program, the model's wrong answers and the humans' wrong answers, each a
count per (normalised) answer text. Only programs where **both** have at least one wrong
answer are compared (``K`` of them). Per program:

- **top match**: whether the model's most frequent wrong answer is the humans' most frequent
  wrong answer. With ties for the top, it is the chance that one answer drawn at random from
  the model's tied top answers equals one drawn from the humans': ``#(T_m ∩ T_h) / (#T_m · #T_h)``
  (1 or 0 without ties);
- **JS divergence**: the Jensen–Shannon divergence (base 2, so in [0, 1]; 0 = the same
  distribution, 1 = no wrong answer in common) between the two wrong-answer distributions over
  the union of their answers: :func:`scipy.spatial.distance.jensenshannon`, which returns the
  distance, squared.

Each is averaged over the ``K`` programs, with a percentile interval from resampling the
programs with replacement (seeded ``numpy`` generator), and set beside a **shuffled-programs
null**: the model's wrong answers of each program paired with the humans' wrong answers of
another of the ``K`` programs (a random derangement, seeded), averaged the same way; the null
mean is the mean over those derangements. The one-sided permutation p is over permutations of
the pairing that may leave programs in place (the observed pairing is one of them): exact over
all ``K!`` when there are at most ``permutations`` of them, ``#{π: null ≥ observed} / K!``;
else ``(1 + #{null ≥ observed}) / (1 + permutations)`` over uniform random permutations; ≥ for
the top match (higher = more alike), ≤ for the divergence (lower = more alike). With ``K`` < 2
there is no other program to pair with: the null, p and the interval are NaN (printed
"undefined"); with ``K`` 0 everything is.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial.distance import jensenshannon

from mcu_exp.evaluation.bootstrap import percentile_interval

Counts = Mapping[str, int]
PREFIX = "errors."
COLUMNS = (
    "program_id",
    "model_wrong",
    "human_wrong",
    "model_top",
    "human_top",
    "top_match",
    "js_divergence",
    "model_wrong_answers",
    "human_wrong_answers",
)


def top_answers(counts: Counts) -> set[str]:
    """The answers given most often (several on a tie); empty for no answers."""
    positive = {answer: n for answer, n in counts.items() if n > 0}
    if not positive:
        return set()
    most = max(positive.values())
    return {answer for answer, n in positive.items() if n == most}


def top_match(model: Counts, human: Counts) -> float:
    """The chance that a random one of the model's top wrong answers is a random one of the
    humans' (1 or 0 without ties); NaN when either has none."""
    mine, theirs = top_answers(model), top_answers(human)
    if not mine or not theirs:
        return float("nan")
    return len(mine & theirs) / (len(mine) * len(theirs))


def js_divergence(model: Counts, human: Counts) -> float:
    """Jensen–Shannon divergence (base 2) between two answer-count distributions; NaN when either
    is empty."""
    support = sorted(set(model) | set(human))
    p = np.array([model.get(a, 0) for a in support], dtype=float)
    q = np.array([human.get(a, 0) for a in support], dtype=float)
    if p.sum() <= 0 or q.sum() <= 0:
        return float("nan")
    return float(jensenshannon(p, q, base=2.0) ** 2)


def derangements(k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` random permutations of ``range(k)`` with no fixed point (rejection sampling;
    about e draws each), as rows; ``k`` ≥ 2."""
    if k < 2:
        raise ValueError(f"a derangement needs at least 2 items, got {k}")
    rows = np.empty((count, k), dtype=int)
    for row in range(count):
        while True:
            perm = rng.permutation(k)
            if not np.any(perm == np.arange(k)):
                rows[row] = perm
                break
    return rows


@dataclass(frozen=True)
class ErrorAlignment:
    """Per-program table (:data:`COLUMNS`) and the ``errors.*`` metrics."""

    table: pd.DataFrame
    metrics: dict[str, float] = field(default_factory=dict)

    def lines(self, confidence: float = 0.95) -> list[str]:
        """A few lines for the end of a job."""
        m = self.metrics
        k, model_err, human_err = (int(m[f"{PREFIX}{key}"]) for key in ("programs", "model_err", "human_err"))
        head = (
            f"Error alignment: {k} programs where the model and the humans both err "
            f"(model errs on {model_err}, humans on {human_err})"
        )
        if k == 0:
            return [head]
        pct = f"{confidence:.0%}"

        def shown(key: str, spec: str = ".3f") -> str:
            value = m[f"{PREFIX}{key}"]
            return format(value, spec) if math.isfinite(value) else "undefined"

        def interval(name: str) -> str:
            if not math.isfinite(m[f"{PREFIX}{name}_ci_low"]):
                return "(no interval from one program)"
            return f"[{pct}: {shown(name + '_ci_low')}, {shown(name + '_ci_high')}]"

        return [
            head,
            f"  same most frequent wrong answer: {shown('top_match')} {interval('top_match')}; "
            f"shuffled programs {shown('top_match_null')}, p = {shown('top_match_p', '.3g')}",
            f"  JS divergence of wrong answers: {shown('js')} {interval('js')}; "
            f"shuffled programs {shown('js_null')}, p = {shown('js_p', '.3g')} (lower = more alike)",
        ]


def _counts_json(counts: Counts) -> str:
    return json.dumps(dict(sorted(counts.items())), ensure_ascii=False)


def error_alignment(
    model_wrong: Mapping[str, Counts],
    human_wrong: Mapping[str, Counts],
    resamples: int = 2000,
    permutations: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ErrorAlignment:
    """Error alignment over the programs of ``model_wrong`` (in its order) where both the model
    and the humans have a wrong answer (see the module docstring)."""
    if resamples < 1 or permutations < 1:
        raise ValueError(f"resamples={resamples}, permutations={permutations}: expected at least 1 each")
    ids = [pid for pid, counts in model_wrong.items() if sum(counts.values()) > 0]
    human_ids = [pid for pid, counts in human_wrong.items() if sum(counts.values()) > 0]
    both = [pid for pid in ids if pid in set(human_ids)]
    models = [dict(model_wrong[pid]) for pid in both]
    humans = [dict(human_wrong[pid]) for pid in both]
    rows = [
        {
            "program_id": pid,
            "model_wrong": sum(m.values()),
            "human_wrong": sum(h.values()),
            "model_top": " | ".join(sorted(top_answers(m))),
            "human_top": " | ".join(sorted(top_answers(h))),
            "top_match": top_match(m, h),
            "js_divergence": js_divergence(m, h),
            "model_wrong_answers": _counts_json(m),
            "human_wrong_answers": _counts_json(h),
        }
        for pid, m, h in zip(both, models, humans)
    ]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    metrics = {f"{PREFIX}programs": float(len(both)), f"{PREFIX}model_err": float(len(ids))}
    metrics[f"{PREFIX}human_err"] = float(len(set(human_ids) & set(model_wrong)))
    rng = np.random.default_rng(seed)
    k = len(both)
    pairs = {
        "top_match": (np.array([[top_match(m, h) for h in humans] for m in models]).reshape(k, k), 1),
        "js": (np.array([[js_divergence(m, h) for h in humans] for m in models]).reshape(k, k), -1),
    }
    draws = (
        rng.integers(k, size=(resamples, k)) if k else None
    )  # drawn for k = 1 too: the streams after stay as they were
    shuffles = derangements(k, permutations, rng) if k >= 2 else None
    tested = reference_permutations(k, permutations, rng) if k >= 2 else None
    for name, (matrix, direction) in pairs.items():
        observed = np.diag(matrix)
        mean = float(observed.mean()) if k else float("nan")
        low, high = (  # one program: resampling it gives itself, no interval
            percentile_interval(observed[draws].mean(axis=1), confidence) if k >= 2 else (float("nan"), float("nan"))
        )
        metrics.update({f"{PREFIX}{name}": mean, f"{PREFIX}{name}_ci_low": low, f"{PREFIX}{name}_ci_high": high})
        null_mean, p = float("nan"), float("nan")
        if shuffles is not None and tested is not None:
            null_mean = float(matrix[np.arange(k), shuffles].mean(axis=1).mean())
            perms, exact = tested
            null = matrix[np.arange(k), perms].mean(axis=1)
            as_extreme = (null >= mean - 1e-12 if direction > 0 else null <= mean + 1e-12).sum()
            p = float(as_extreme / len(perms) if exact else (1 + as_extreme) / (1 + permutations))
        metrics.update({f"{PREFIX}{name}_null": null_mean, f"{PREFIX}{name}_p": p})
    return ErrorAlignment(table=table, metrics=metrics)


def reference_permutations(k: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """The permutations the p-value is taken over, and whether they are all of them: every
    permutation of ``range(k)`` when there are at most ``count`` (the exact p, the observed
    pairing among them), else ``count`` uniform random ones (identity and fixed points
    allowed, as the ``(1 + b) / (1 + B)`` p needs). Derangements alone leave the observed
    pairing out of the reference set: with two programs the p was 0.0005 where it is 0.5."""
    if math.factorial(k) <= count:
        return np.array(list(itertools.permutations(range(k))), dtype=int), True
    return rng.permuted(np.tile(np.arange(k), (count, 1)), axis=1), False
