"""Both runs' human noise ceiling and their share of it, for ``mcu-exp compare``.

A job with a reliability estimate logs, for its own label set, ``ceiling.<figure>`` (the
humans' split-half AUC (score), the ρ ceiling, …, each with an interval over splits) and
``share.auc_score`` / ``share.spearman`` (the proxy's share of its ceiling, with intervals)
to MLflow's headline metrics and to ``metrics.json``, and the ceiling alone to
``reliability.csv`` (row ``group = all``: the run's own label set, figures without the
``ceiling.`` prefix). Each is read where present, ``metrics.json`` over MLflow's metrics over
``reliability.csv``; a run that logged none shows "—". Two runs with different label
settings (``labels.rule``, ``min_fraction``, ``group``, ``readers``) stand against different
ceilings, and the notes say so: each share is read against its own run's ceiling.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcu_exp.names import ALL_READERS, UNDEFINED

CEILING, SHARE = "ceiling.", "share."
SHOWN = {"auc_score": "AUC (score)", "spearman": "ρ"}  # measures with a ceiling and a share, as named in rows
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
    return name.startswith((CEILING, SHARE))


def from_reliability(path: Path | None) -> dict[str, float]:
    """``ceiling.<figure>`` of the run's own label set from its ``reliability.csv`` (row
    ``group = all``); empty, with a warning when unreadable, when the file is absent."""
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
    """The ``ceiling.*`` and ``share.*`` entries of a run's ``metrics.json`` (``null``: NaN)."""
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
    """A run's ceiling and share figures: ``reliability.csv``, then its MLflow metrics
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


def _text(x: float | None, share: bool) -> str:
    if x is None:
        return MISSING
    if math.isnan(x):
        return UNDEFINED
    return f"{100 * x:.1f}%" if share else f"{x:.3f}"


def cell(found: Mapping[str, float], key: str) -> str:
    """One figure with its interval ("0.650 [0.560, 0.750]", shares as percentages), or "—"."""
    share = key.startswith(SHARE)
    value = found.get(key)
    text = _text(value, share)
    if value is None or math.isnan(value) or (f"{key}{LOW}" not in found and f"{key}{HIGH}" not in found):
        return text
    return f"{text} [{_text(found.get(f'{key}{LOW}'), share)}, {_text(found.get(f'{key}{HIGH}'), share)}]"


def rows(a: Mapping[str, float], b: Mapping[str, float]) -> list[list[str]]:
    """The rows (name, A, B) of the ceiling table under the comparison, none when neither run
    logged a ceiling."""
    if not any(_ours(k) for k in (*a, *b)):
        return []
    out = []
    for name, short in SHOWN.items():
        out.append([f"{short} ceiling", cell(a, CEILING + name), cell(b, CEILING + name)])
        out.append([f"{short} share of ceiling", cell(a, SHARE + name), cell(b, SHARE + name)])
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
        "Ceilings: the humans' own alignment on each run's labels, mean over seeded splits of each program's "
        "readers into halves [interval over the splits]; the AUC (score) ceiling is half-panel, the ρ ceiling "
        "extrapolated to the full panel (√ of the Spearman–Brown reliability). Share of ceiling: "
        "(AUC − 0.5)/(ceiling − 0.5) and ρ/ρ ceiling, as each run logged them; '—': not logged."
    ]
    if has_a != has_b:
        lines.append(f"Only {'A' if has_a else 'B'} logged a ceiling.")
        return lines
    differ = [
        f"{short} ceiling {cell(a, CEILING + n)} vs {cell(b, CEILING + n)}"
        for n, short in SHOWN.items()
        if not all(_same(a.get(CEILING + n + s), b.get(CEILING + n + s)) for s in ("", LOW, HIGH))
    ]
    if not differ:
        lines.append("Both runs stand against the same ceiling (the same human label settings).")
        return lines
    changed = [
        f"labels.{k}: {labels_a.get(k, '?')} vs {labels_b.get(k, '?')}"
        for k in LABEL_SETTINGS
        if labels_a.get(k) != labels_b.get(k) and (k in labels_a or k in labels_b)
    ]
    why = f"different label settings ({'; '.join(changed)})" if changed else "different label settings"
    lines.append(
        f"The runs' ceilings differ ({'; '.join(differ)}): {why}, so each share is against its own "
        "run's ceiling, not a common one."
    )
    return lines


def csv_columns(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """The ceiling and share figures of both runs for ``comparison.csv`` (``<key>_a``, ``<key>_b``)."""
    out: dict[str, float] = {}
    for name in SHOWN:
        for key in (CEILING + name, SHARE + name):
            for suffix in ("", LOW, HIGH):
                for side, found in (("a", a), ("b", b)):
                    if key + suffix in found:
                        out[f"{key}{suffix}_{side}"] = found[key + suffix]
    return out
