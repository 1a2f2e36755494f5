"""Both runs' human noise ceiling and where each run lies against it, for ``mcu-exp compare``.

A job logs, for its own label set, the humans' two bounds on AUC (score) with their intervals
over programs (``ceiling.auc_score``: lower, half panel against half panel;
``ceiling.upper_auc_score``: upper, the beta-binomial reader model), the ρ ceiling
(``ceiling.spearman``, Spearman–Brown), the run's paired differences to the bounds on the same
programs (``vs_ceiling.lower``, ``vs_ceiling.upper``) and its disattenuated ρ
(``disattenuated.spearman``), each with ``_ci_low``/``_ci_high``: every key in ``metrics.json``,
a few in MLflow's headline metrics, the ceiling's in ``reliability.csv`` (row ``group = all``:
the run's own label set, each key with its prefix). Each is read where present,
``metrics.json`` over MLflow's metrics over ``reliability.csv``; a run that logged none shows "—".

Runs logged before the bounds hold ``ceiling.*`` with intervals over reader splits (in
``reliability.csv`` without the ``ceiling.`` prefix) and ``share.auc_score`` / ``share.spearman``
(a share of that ceiling): their ceiling reads as the lower bound (the same half-panel
estimate), and their share is shown in rows labelled "(old run)" when either run is one. Two
runs with different label settings (``labels.rule``, ``min_fraction``, ``group``, ``readers``)
stand against different ceilings, and the notes say so.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcu_exp.names import ALL_READERS, UNDEFINED

CEILING, VS, DISATTENUATED, SHARE = "ceiling.", "vs_ceiling.", "disattenuated.", "share."
PREFIXES = (CEILING, VS, DISATTENUATED, SHARE)  # the keys this module reads (share.: old runs only)
SHOWN = (
    ("AUC (score) lower bound", CEILING + "auc_score", False),
    ("AUC (score) upper bound", CEILING + "upper_auc_score", False),
    ("AUC (score) − lower bound", VS + "lower", True),
    ("AUC (score) − upper bound", VS + "upper", True),
    ("ρ ceiling", CEILING + "spearman", False),
    ("disattenuated ρ", DISATTENUATED + "spearman", False),
)
"""The rows of the ceiling table: name, key, whether it is a signed difference."""
OLD_SHOWN = (
    ("AUC (score) share of ceiling (old run)", SHARE + "auc_score"),
    ("ρ share of ceiling (old run)", SHARE + "spearman"),
)
BOUNDS = {
    "lower bound": CEILING + "auc_score",
    "upper bound": CEILING + "upper_auc_score",
    "ρ ceiling": CEILING + "spearman",
}
"""The humans' figures two runs stand against the same of when their label settings agree."""
NEW_KEYS = (VS + "auc_score", VS + "lower", VS + "upper", DISATTENUATED + "spearman", CEILING + "upper_auc_score")
CSV_EXTRA = (VS + "auc_score", VS + "second_panel", CEILING + "second_panel_auc_score")
LOW, HIGH = "_ci_low", "_ci_high"
LABEL_SETTINGS = ("rule", "min_fraction", "group", "readers")  # labels.* that change the human labels
MISSING = "—"


def warn(message: str) -> None:
    """One line on stderr: a file the comparison left out, and why."""
    print(f"mcu-exp compare: warning: {message}", file=sys.stderr)


def _finite_or_nan(value: Any) -> float | None:
    """A JSON or CSV value as a float (None and empty → NaN); None when it is no number."""
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _ours(name: str) -> bool:
    return name.startswith(PREFIXES)


def old_run(found: Mapping[str, float]) -> bool:
    """Whether a run's figures are from before the bounds: a ceiling or a share of it, and neither
    the program bootstrap's count (``ceiling.resamples``) nor any key of the proxy against the bounds."""
    if CEILING + "resamples" in found or any(k in found for k in NEW_KEYS):
        return False
    return any(k.startswith((CEILING, SHARE)) for k in found)


def from_reliability(path: Path | None) -> dict[str, float]:
    """The figures of the run's own label set from its ``reliability.csv`` (row ``group = all``),
    by their keys (an old file's unprefixed columns as ``ceiling.<figure>``); empty, with a
    warning when unreadable, when the file is absent."""
    import pandas as pd

    if path is None:
        return {}
    try:
        frame = pd.read_csv(path, dtype={"group": str})
    except (OSError, ValueError) as exc:
        warn(f"{path} unreadable ({str(exc).splitlines()[0]}); its ceiling is left out")
        return {}
    rows = frame[frame["group"] == ALL_READERS] if "group" in frame.columns else frame.iloc[:0]
    if rows.empty:
        warn(f"{path} has no row with group = {ALL_READERS}; its ceiling is left out")
        return {}
    out = {}
    for column, raw in rows.iloc[0].items():
        number = _finite_or_nan(raw)
        if column not in ("group", "splits", "confidence") and number is not None:
            out[str(column) if _ours(str(column)) else f"{CEILING}{column}"] = number
    return out


def from_metrics_json(path: Path | None) -> dict[str, float]:
    """The entries of a run's ``metrics.json`` under :data:`PREFIXES` (``null``: NaN)."""
    if path is None:
        return {}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        warn(f"{path} unreadable ({str(exc).splitlines()[0]}); its ceiling is left out")
        return {}
    if not isinstance(saved, dict):
        warn(f"{path} is not a JSON object; its ceiling is left out")
        return {}
    found = {name: _finite_or_nan(value) for name, value in saved.items() if _ours(str(name))}
    return {name: value for name, value in found.items() if value is not None}


def run_ceiling(logged: Mapping[str, float], metrics_json: Path | None, reliability: Path | None) -> dict[str, float]:
    """A run's ceiling figures (:data:`PREFIXES`): ``reliability.csv``, then its MLflow metrics
    (``logged``), then ``metrics.json`` over them."""
    out = from_reliability(reliability)
    out.update({name: float(value) for name, value in logged.items() if _ours(name)})
    out.update(from_metrics_json(metrics_json))
    return out


def label_settings(settings: Mapping[str, Any] | None, prefix: str = "") -> dict[str, str]:
    """The ``labels.*`` settings a run's human labels (and so its ceiling) depend on, as text:
    from MLflow params (``prefix="labels."``) or a config's ``labels`` section (no prefix)."""
    if not settings:
        return {}
    return {key: str(settings[f"{prefix}{key}"]) for key in LABEL_SETTINGS if f"{prefix}{key}" in settings}


def _text(x: float | None, share: bool, signed: bool = False) -> str:
    if x is None:
        return MISSING
    if math.isnan(x):
        return UNDEFINED
    if share:
        return f"{100 * x:.1f}%"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def cell(found: Mapping[str, float], key: str, signed: bool = False) -> str:
    """One figure with its interval ("0.650 [0.560, 0.750]", a difference signed, shares as
    percentages), or "—"."""
    share = key.startswith(SHARE)
    value = found.get(key)
    text = _text(value, share, signed)
    if value is None or math.isnan(value) or (f"{key}{LOW}" not in found and f"{key}{HIGH}" not in found):
        return text
    low, high = (_text(found.get(f"{key}{s}"), share, signed) for s in (LOW, HIGH))
    return f"{text} [{low}, {high}]"


def rows(a: Mapping[str, float], b: Mapping[str, float]) -> list[list[str]]:
    """The rows (name, A, B) of the ceiling table under the comparison (:data:`SHOWN`; an old
    run's share of ceiling when either run is one), none when neither run logged a ceiling."""
    if not any(_ours(k) for k in (*a, *b)):
        return []
    out = [[name, cell(a, key, signed), cell(b, key, signed)] for name, key, signed in SHOWN]
    old = [old_run(found) and any(k.startswith(SHARE) for k in found) for found in (a, b)]
    if any(old):
        out += [
            [name, *(cell(found, key) if was else MISSING for was, found in zip(old, (a, b), strict=True))]
            for name, key in OLD_SHOWN
        ]
    return out


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-9


def notes(
    a: Mapping[str, float], b: Mapping[str, float], labels_a: Mapping[str, str], labels_b: Mapping[str, str]
) -> list[str]:
    """The lines under the table on the ceilings: what they are, and whether the two runs'
    ceilings differ (and in which label settings); none when neither run logged one."""
    has_a, has_b = (any(k.startswith(CEILING) for k in side) for side in (a, b))
    if not (has_a or has_b):
        return []
    lines = [
        "Humans' ceiling on each run's labels, [ ] = 95 % CI over programs (program resamples, paired for the "
        "differences): lower bound = half panel against half panel (pessimistic), upper bound = the true "
        "understandability against a full panel's labels under the beta-binomial reader model; AUC (score) − "
        "bound = the run's AUC (score) on its ceiling's programs (two or more readers, of every program it "
        "scored) minus the bound on the same programs; ρ ceiling = √ of the Spearman–Brown reliability; "
        "disattenuated ρ = ρ/√reliability. '—': not logged."
    ]
    old = [side for side, found in (("A", a), ("B", b)) if old_run(found)]
    if old:
        lines.append(
            f"{' and '.join(old)} logged {'its' if len(old) == 1 else 'their'} ceiling before the bounds (old run): "
            "the half-panel ceiling with its interval over reader splits, and a share of it, (AUC − 0.5)/(ceiling − "
            "0.5) and ρ/ρ ceiling, as logged (no longer computed: its interval is meaningless)."
        )
    if has_a != has_b:
        lines.append(f"Only {'A' if has_a else 'B'} logged a ceiling.")
        return lines
    # Figures both runs logged; an old run's interval is over splits, so beside a new run only the values count.
    suffixes = ("",) if old_run(a) != old_run(b) else ("", LOW, HIGH)
    differ = [
        f"{name} {cell(a, key)} vs {cell(b, key)}"
        for name, key in BOUNDS.items()
        if key in a and key in b and not all(_same(a.get(key + s), b.get(key + s)) for s in suffixes)
    ]
    changed = [
        f"labels.{k}: {labels_a.get(k, '?')} vs {labels_b.get(k, '?')}"
        for k in LABEL_SETTINGS
        if labels_a.get(k) != labels_b.get(k) and (k in labels_a or k in labels_b)
    ]
    if not differ:
        lines.append(
            f"Both runs' ceilings have the same values, though their label settings differ ({'; '.join(changed)})."
            if changed
            else "Both runs stand against the same ceiling (the same human label settings)."
        )
        return lines
    why = f"different label settings ({'; '.join(changed)})" if changed else "different label settings"
    lines.append(
        f"The runs' ceilings differ ({'; '.join(differ)}): {why}, so each run is read against its own "
        "ceiling, not a common one."
    )
    return lines


def csv_columns(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """The ceiling figures of both runs for ``comparison.csv`` (``<key>_a``, ``<key>_b``; an old
    run's share too): each shown row's key with its bounds, a difference with ``_p_below``."""
    keys = [key for _, key, _ in SHOWN] + list(CSV_EXTRA) + [key for _, key in OLD_SHOWN]
    suffixes = ("", LOW, HIGH, "_p_below")
    out: dict[str, float] = {}
    for key in keys:
        for suffix in suffixes:
            for side, found in (("a", a), ("b", b)):
                if key + suffix in found:
                    out[f"{key}{suffix}_{side}"] = found[key + suffix]
    return out
