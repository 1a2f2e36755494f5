"""Replaying a run bundle: its samples and scores imported into a fresh cache, every job
run again from them (no model loaded, no request sent), and its metrics and per-program
CSVs checked against the bundle's.

Values are compared as written. A CSV or metric that differs in bytes is compared again
number by number with a relative tolerance of :data:`RTOL` (the bootstrap, rank statistics
and calibration are floating-point; another BLAS build or numpy may round the last digit
differently); anything else is a difference, and the first one is named. A metric only the
replay writes (added to the jobs after the bundle was made) is not compared. Each check says
how this machine's floating-point kernels differ from the bundle's
(:func:`mcu_exp.bundle.machine.kernel_differences`): only where none does are the numbers
expected bit for bit.
"""

from __future__ import annotations

import csv
import io
import math
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcu_exp import names
from mcu_exp.bundle import archive, shape
from mcu_exp.bundle.archive import GENERATION_TABLES, SCORE_TABLES, BundleError, RowSet
from mcu_exp.bundle.safety import shown, target_under
from mcu_exp.store import reads

RTOL = 1e-9  # relative tolerance for floating-point values that differ in their last digits
# Metrics that describe the job's run, not its result: time, cache hits, whether a model loaded, usage.
VOLATILE = ("job_seconds", "generation_cache_hits", "generation_cache_misses", "model_loaded", "scorer_loaded")
_COMPARED = (".csv", ".json")
_NOT_COMPARED = ("results/specs.json",)  # library versions and paths: the environment, not the result


@dataclass
class JobCheck:
    """How one replayed job compares with the bundle's: ``difference`` is None when every
    compared value agrees; ``tolerated`` counts values equal only within :data:`RTOL`;
    ``kernels`` says how this machine's floating-point kernels differ from the bundle's (empty:
    the same, and bit-identical values are expected)."""

    name: str
    files: int
    metrics: int
    tolerated: int
    difference: str | None
    kernels: tuple[str, ...] = ()

    def line(self) -> str:
        """The check's one-line verdict."""
        if self.difference is not None:
            return f"job {self.name}: DIFFERS from the bundle: {self.difference}"
        how = "identical to the bundle's"
        if self.tolerated:
            how += f", {self.tolerated} value(s) equal within a relative {RTOL:g}"
            if self.kernels:
                how += f" (this machine's floating-point kernels differ from the bundle's: {self.kernels[0]})"
        return f"job {self.name}: {self.metrics} metrics and {self.files} files {how}"


def replay(path: Path, run_job: Callable[[Any], Any], work: Path | None = None, quiet: bool = True) -> list[JobCheck]:
    """Replay every job of the bundle at ``path`` with ``run_job`` (the pipeline's, which
    receives each job's composed config; printing each job's tables as it runs) in ``work`` (a
    temporary folder by default); the checks, one per job."""
    manifest, members = archive.read(path)
    if work is None:
        with tempfile.TemporaryDirectory(prefix="mcu-exp-replay-") as tmp:
            return _replay(path, manifest, members, Path(tmp), quiet, run_job)
    return _replay(path, manifest, members, work, quiet, run_job)


def _replay(
    path: Path,
    manifest: Mapping[str, Any],
    members: Mapping[str, bytes],
    work: Path,
    quiet: bool,
    run_job: Callable[[Any], Any],
) -> list[JobCheck]:
    from mcu_exp.bundle.export import environment
    from mcu_exp.bundle.machine import kernel_differences

    cache_dir = work / "cache"
    import_rows(RowSet.from_jsonl(members), cache_dir)
    checks = []
    with reads.pin(manifest.get("pins", {}), str(path)):
        for index, entry in enumerate(manifest.get("jobs", [])):
            files = archive.job_files(members, index)
            outputs = work / "outputs" / str(index)
            raw = job_config(
                files,
                entry,
                cache_dir,
                outputs,
                work / "data" / str(index),
                archive.data_files(members, index),
                quiet,
                index,
            )
            check_dataset(raw, entry)
            run_job(raw)
            found = sorted(outputs.glob(f"runs/*/*/{names.RESULTS_DIR}"))
            if len(found) != 1:
                raise BundleError(
                    f"job {shown(str(entry.get('name')))}: expected one results folder under {outputs}, "
                    f"found {len(found)}"
                )
            check = compare(entry.get("name", str(index)), files, found[0], f"jobs/{index}/")
            check.kernels = kernel_differences(manifest.get("environment", {}), environment())
            checks.append(check)
    return checks


def import_rows(rows: RowSet, cache_dir: Path) -> None:
    """The bundle's rows into fresh SQLite caches in ``cache_dir``, as ``mcu-exp cache import`` copies."""
    from mcu_exp.llm.cache import CACHE_FILE, GenerationCache
    from mcu_exp.scoring.score_cache import ScoreCache
    from mcu_exp.store.table_copy import copy_tables

    cache_dir.mkdir(parents=True, exist_ok=True)
    with GenerationCache(cache_dir / CACHE_FILE) as generations:
        copy_tables(rows, generations, list(GENERATION_TABLES), progress=False)
    with ScoreCache(cache_dir / "bertscore.sqlite") as scores:
        copy_tables(rows, scores, list(SCORE_TABLES), progress=False)


def job_config(
    files: Mapping[str, bytes],
    entry: Mapping[str, Any],
    cache_dir: Path,
    outputs: Path,
    data_dir: Path,
    data: Mapping[str, bytes],
    quiet: bool,
    index: int | None = None,
) -> Any:
    """The job's resolved config from the bundle, typed by the schema, pointed at the replay's
    cache and outputs (no MLflow run, no new bundle), and at the bundle's data when it holds it
    (written only inside ``data_dir``). ``index``, the job's in the bundle, names its members
    (``jobs/<i>/…``, ``data/<i>/…``) in errors."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.config import Config
    from mcu_exp.config.schema import load_written_config
    from mcu_exp.yaml_limits import YamlLimitError

    name = shown(str(entry.get("name")))
    prefix = "" if index is None else f"jobs/{index}/"
    if "config.yaml" not in files:
        raise BundleError(f"job {name}: the bundle holds no config.yaml")
    try:
        text = files["config.yaml"].decode()
        raw = OmegaConf.merge(OmegaConf.structured(Config), load_written_config(text, f"{prefix}config.yaml"))
    except UnicodeDecodeError:
        raise BundleError(f"job {name}: its {prefix}config.yaml is not UTF-8 text; expected YAML") from None
    except YamlLimitError as exc:
        raise BundleError(f"job {name}: {exc}") from None
    except OmegaConfBaseException as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BundleError(f"job {name}: its config.yaml does not fit this version's schema ({first})") from None
    settings: dict[str, Any] = {
        "cache.dir": str(cache_dir),
        "cache.url": None,
        "paths.outputs": str(outputs),
        "tracking.enabled": False,
        "tracking.bundle": False,
        "quiet": quiet,
    }
    if data:
        where = "" if index is None else f"data/{index}/"
        targets = {member: target_under(data_dir, member, where) for member in data}  # every name, before a write
        for member, blob in data.items():
            targets[member].parent.mkdir(parents=True, exist_ok=True)
            targets[member].write_bytes(blob)
        settings["dataset.root"] = str(data_dir)
        questions = sorted(n for n in data if n.startswith("questions/"))
        if questions:
            settings["dataset.questions"] = str(data_dir / questions[0])
    for key, value in settings.items():
        OmegaConf.update(raw, key, value, merge=False)
    return raw


def check_dataset(raw: Any, entry: Mapping[str, Any]) -> None:
    """Refuse a replay whose dataset differs from the one the job read (by digest)."""
    from mcu_exp.config.schema import typed_config
    from mcu_exp.data import load_dataset
    from mcu_exp.tracking.conventions import dataset_digest

    wanted = entry.get("dataset", {})
    with warnings.catch_warnings():  # the job itself prints the dataset's warnings
        warnings.simplefilter("ignore")
        dataset = load_dataset(typed_config(raw).dataset)
    found = dataset_digest(dataset)
    if wanted.get("digest") and found != wanted["digest"]:
        raise BundleError(
            f"job {shown(str(entry.get('name')))}: dataset {dataset.name} here ({dataset.source}) has digest "
            f"{found}, the job read {wanted['digest']}: put the same data in place "
            "(dataset.root or $MCU_EXP_DATA), or export the bundle with --with-data"
        )


def compare(name: str, files: Mapping[str, bytes], results: Path, prefix: str = "") -> JobCheck:
    """Compare the bundle's result files of one job with the replay's ``results`` folder;
    ``prefix`` (``jobs/<i>/``) names the job's members in errors."""
    compared = [
        f for f in sorted(files) if f.startswith("results/") and f.endswith(_COMPARED) and f not in _NOT_COMPARED
    ]
    tolerated = metrics = 0
    for member in compared:
        here = results / member.split("/", 1)[1]
        if not here.is_file():
            return JobCheck(name, len(compared), metrics, tolerated, f"{member} was not written by the replay")
        if here.read_bytes() == files[member]:
            if member.endswith("metrics.json"):
                metrics = len(_metrics(files[member], prefix + member))
            continue
        if member.endswith(".json"):
            before, after = _metrics(files[member], prefix + member), _metrics(here.read_bytes(), str(here))
            metrics = len(before)
            # Every metric the bundle holds must come back; one only the replay has is a metric
            # added after the bundle was written (its version did not compute it), not a difference.
            cells = [(key, before[key], after.get(key)) for key in sorted(before)]
        else:
            try:
                cells = _csv_cells(files[member], here.read_bytes())
            except (UnicodeDecodeError, csv.Error) as exc:
                raise BundleError(f"{shown(prefix + member)}: not a CSV table this version reads ({exc})") from None
        for where, a, b in cells:
            same, close = _agree(a, b)
            if not same and not close:
                return JobCheck(
                    name, len(compared), metrics, tolerated, f"{member} {where}: bundle {a!r}, replay {b!r}"
                )
            tolerated += int(close and not same)
    return JobCheck(name, len(compared), metrics, tolerated, None)


def _metrics(blob: bytes, where: str) -> dict[str, Any]:
    """A metrics.json (named ``where`` in errors: an object of metrics) without the values that
    describe the run rather than its result."""
    found = shape.parse_json(blob, shown(where))
    if not isinstance(found, dict):
        raise BundleError(f"{shown(where)} is {shape.kind(found)}; expected an object of metrics")
    return {
        k: v for k, v in found.items() if not k.endswith(VOLATILE) and not k.startswith("usage.") and ".usage." not in k
    }


def _csv_cells(before: bytes, after: bytes) -> list[tuple[str, str | None, str | None]]:
    """Every cell of two CSV files, named by row (its first column) and column."""
    a = list(csv.reader(io.StringIO(before.decode())))
    b = list(csv.reader(io.StringIO(after.decode())))
    if a[:1] != b[:1]:
        return [("header", ",".join(a[0]) if a else None, ",".join(b[0]) if b else None)]
    header = a[0] if a else []
    cells: list[tuple[str, str | None, str | None]] = []
    for number in range(1, max(len(a), len(b))):
        row_a = a[number] if number < len(a) else []
        row_b = b[number] if number < len(b) else []
        label = (row_a or row_b or [""])[0]
        for col in range(max(len(row_a), len(row_b))):
            column = header[col] if col < len(header) else str(col)
            cells.append(
                (
                    f"row {number} ({label}) column {column}",
                    row_a[col] if col < len(row_a) else None,
                    row_b[col] if col < len(row_b) else None,
                )
            )
    return cells


def _agree(a: Any, b: Any) -> tuple[bool, bool]:
    """(equal as written, equal as numbers within :data:`RTOL`)."""
    if a == b:
        return True, True
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False, False
    if math.isnan(x) and math.isnan(y):
        return True, True
    return False, math.isclose(x, y, rel_tol=RTOL, abs_tol=0.0)
