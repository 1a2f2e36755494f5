"""A job's end: its run bundle written beside its results and logged as an MLflow artifact
(``tracking.bundle``: on by default for non-debug runs), or, when off, the keys it read
(``bundle/reads.json``) so that ``mcu-exp bundle export RUN_ID`` can build it later."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from mcu_exp import console, names
from mcu_exp.bundle.export import (
    BUNDLE_DIR,
    BUNDLE_FILE,
    READS_FILE,
    dataset_facts,
    job_part,
    reads_record,
    write_bundle,
)
from mcu_exp.store import reads

log = logging.getLogger("mcu_exp")


def bundle_enabled(cfg: Any) -> bool:
    """``tracking.bundle``, or when unset (null) true for a non-debug run."""
    from mcu_exp.tracking.naming import is_debug

    chosen = getattr(cfg.tracking, "bundle", None)
    return (not is_debug(cfg)) if chosen is None else bool(chosen)


def finish_job(cfg: Any, tracker: Any, run_dir: Path, dataset: Any, title: str) -> str | None:
    """Write and log the job's bundle (or its reads record); the line the job prints about it,
    None when no bundle was written. A bundle that cannot be written is a warning: the job's
    results stand without it."""
    keys = reads.current() or {}
    pins = reads.identities()
    facts = dataset_facts(dataset)
    folder = run_dir / BUNDLE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    if not bundle_enabled(cfg):
        (folder / READS_FILE).write_text(json.dumps(reads_record(keys, pins, facts, title), sort_keys=True))
        tracker.log_artifacts(folder, BUNDLE_DIR)
        return None
    out = folder / BUNDLE_FILE
    try:
        part = job_part(
            title, tracker.run_id, run_dir / names.RESULTS_DIR, keys, pins, facts, cfg.cache.dir, cfg.cache.url or None
        )
        size = write_bundle(out, [part])
    except (OSError, ValueError) as exc:
        log.warning("run bundle not written: %s", exc)
        return None
    tracker.log_artifacts(folder, BUNDLE_DIR)
    where = f" (MLflow artifact {BUNDLE_DIR}/{BUNDLE_FILE})" if tracker.active else ""
    console.to_log_files(log, f"run bundle {out}: {size} bytes")  # the log file; the caller prints where it is
    return f"Run bundle: {out}{where}; `mcu-exp bundle replay FILE` prints this table again on any machine"
