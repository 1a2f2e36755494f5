"""``mcu-exp bundle export|replay|show``: publish a job's table with the samples that made it,
and reproduce it on any machine (docs/reproducibility.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from mcu_exp.interrupts import raise_if_interrupted

PROG = "mcu-exp bundle"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "A run bundle is one file holding everything a job's table depends on: the resolved config, the "
            "dataset's digest (and with --with-data its files), every sample and score the job read, its results "
            "and metrics, and the environment. Replaying it loads no model and sends no request; it needs no "
            "network where the bundle holds the data (--with-data) or the data is in place (dataset.root, "
            "$MCU_EXP_DATA, or the user cache, where every run that found the data keeps a checksummed copy); "
            "otherwise it downloads the pinned data once."
        ),
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="write the bundle of a finished MLflow run (a sweep: all its jobs)")
    export.add_argument("run_id", metavar="RUN_ID", help="an MLflow run id (a job, or a sweep's parent run)")
    export.add_argument("--out", type=Path, default=None, help="the bundle file (default: run-bundle-<RUN_ID>.zip)")
    export.add_argument(
        "--with-data", action="store_true", help="also store the dataset's files (only where their licence allows)"
    )
    export.add_argument(
        "--tracking-uri", default=None, help="the MLflow store (default: $MLFLOW_TRACKING_URI, else outputs/mlflow.db)"
    )
    export.add_argument(
        "--cache-dir",
        default=None,
        help="the jobs' cache folder, when it moved since they ran (read only for jobs logged without their bundle)",
    )
    export.add_argument("--cache-url", default=None, help="the jobs' PostgreSQL cache, when it moved")
    replay = actions.add_parser("replay", help="run a bundle's jobs again from its samples and check their results")
    replay.add_argument("file", metavar="FILE", type=Path, help="a bundle written by mcu-exp bundle export")
    replay.add_argument("--keep", type=Path, default=None, help="replay in this folder and keep it (cache, outputs)")
    show = actions.add_parser("show", help="print a bundle's manifest and headline metrics")
    show.add_argument("file", metavar="FILE", type=Path, help="a bundle written by mcu-exp bundle export")
    return parser


def export_run(
    run_id: str,
    out: Path,
    uri: str,
    with_data: bool = False,
    cache_dir: str | None = None,
    cache_url: str | None = None,
) -> int:
    """Write the bundle of MLflow run ``run_id`` (a sweep's parent run: of its children) to
    ``out``; its size in bytes."""
    from mcu_exp.bundle.archive import BundleError
    from mcu_exp.bundle.export import write_bundle
    from mcu_exp.tracking.artifacts import RunLookupError, fetch_run

    try:
        client, run = fetch_run(uri, run_id)
    except RunLookupError as exc:
        raise BundleError(
            f"{exc} (pass --tracking-uri or set MLFLOW_TRACKING_URI)"
            if exc.missing_store
            else f"unknown run {run_id!r} in {uri} ({exc})"
        ) from None
    children = client.search_runs(
        [run.info.experiment_id], f"tags.mlflow.parentRunId = '{run_id}'", order_by=["attributes.start_time ASC"]
    )
    jobs = [child for child in children if child.info.status == "FINISHED"] if children else [run]
    if not jobs:
        raise BundleError(f"run {run_id} is a sweep with no finished job")
    with tempfile.TemporaryDirectory(prefix="mcu-exp-bundle-") as tmp:
        parts = [_part(client, job, Path(tmp) / job.info.run_id, with_data, cache_dir, cache_url) for job in jobs]
        return write_bundle(out, parts)


def _part(client: Any, run: Any, folder: Path, with_data: bool, cache_dir: str | None, cache_url: str | None) -> Any:
    """One finished job's part of a bundle: from the bundle it logged, else from the keys it
    logged and its cache."""
    from omegaconf import OmegaConf

    from mcu_exp.bundle import archive
    from mcu_exp.bundle.archive import BundleError, RowSet
    from mcu_exp.bundle.export import BUNDLE_DIR, BUNDLE_FILE, READS_FILE, JobPart, job_part, keys_from_record
    from mcu_exp.tracking.artifacts import RunArtifacts
    from mcu_exp.yaml_limits import check_yaml_file

    run_id = run.info.run_id
    artifacts = RunArtifacts(client, run_id, run.info.artifact_uri)
    folder.mkdir(parents=True, exist_ok=True)
    logged = artifacts.get(f"{BUNDLE_DIR}/{BUNDLE_FILE}", folder)
    if logged is not None:
        manifest, members = archive.read(logged)
        entry = manifest["jobs"][0]
        part = JobPart(
            entry["name"],
            run_id,
            archive.job_files(members, 0),
            RowSet.from_jsonl(members),
            manifest.get("pins", {}),
            entry["dataset"],
        )
    else:
        record_path = artifacts.get(f"{BUNDLE_DIR}/{READS_FILE}", folder)
        if record_path is None:
            raise BundleError(
                f"run {run_id} logged neither {BUNDLE_DIR}/{BUNDLE_FILE} nor {BUNDLE_DIR}/{READS_FILE}: "
                "it predates run bundles; run its job again to log one"
            )
        record = json.loads(record_path.read_text())
        results = folder / "results"
        results.mkdir()
        for name in sorted(artifacts.list()):
            found = artifacts.get(name, folder) if name.endswith((".csv", ".json", ".yaml")) else None
            if found is not None:
                shutil.copyfile(found, results / Path(name).name)
        config = None
        if (results / "config.yaml").is_file():
            check_yaml_file(results / "config.yaml")  # an alias bomb would hang OmegaConf
            config = OmegaConf.load(results / "config.yaml")
        if config is None:
            raise BundleError(f"run {run_id} has no config.yaml artifact")
        part = job_part(
            record["name"],
            run_id,
            results,
            keys_from_record(record),
            record.get("pins", {}),
            record["dataset"],
            cache_dir or str(config.cache.dir),
            cache_url or config.cache.get("url"),
        )
    if with_data:
        part.data = _data(part)
    return part


def _data(part: Any) -> dict[str, bytes]:
    """The dataset files of a job (from its config), checked against the digest it read."""
    from omegaconf import OmegaConf

    from mcu_exp.bundle.archive import BundleError
    from mcu_exp.bundle.export import dataset_files
    from mcu_exp.config import Config
    from mcu_exp.config.schema import load_written_config
    from mcu_exp.data import load_dataset
    from mcu_exp.tracking.conventions import dataset_digest

    raw = OmegaConf.merge(OmegaConf.structured(Config), load_written_config(part.files["config.yaml"].decode()))
    typed = cast(Config, OmegaConf.to_object(raw))
    dataset = load_dataset(typed.dataset)
    if dataset_digest(dataset) != part.dataset.get("digest"):
        raise BundleError(
            f"job {part.name}: the dataset here differs from the one it read (digest "
            f"{dataset_digest(dataset)}, the job read {part.dataset.get('digest')}); --with-data refused"
        )
    return dataset_files(dataset, typed.dataset.questions)


def show(path: Path) -> str:
    """The manifest of a bundle in words: its jobs and headline metrics, counts and environment
    (control characters escaped: the manifest may be a stranger's)."""
    from mcu_exp.bundle import archive
    from mcu_exp.bundle.safety import shown

    manifest, _ = archive.read(path)
    env = manifest.get("environment", {})
    packages = env.get("packages", {})
    lines = [
        f"{path}: {manifest['format']}, {len(manifest['jobs'])} job(s)",
        "  rows: " + ", ".join(f"{v:,} {k}" for k, v in manifest.get("counts", {}).items()),
        f"  made on: {env.get('cpu_model', '?')}, {env.get('cpu_count', '?')} CPUs, Python {env.get('python', '?')}, "
        + ", ".join(f"{k} {packages[k]}" for k in ("mcu_exp", "torch", "transformers", "numpy") if k in packages)
        + (f", commit {env['git_commit'][:12]}" if env.get("git_commit") else ""),
    ]
    plugins = plugins_line(env)
    if plugins:
        lines.append(f"  {plugins}")
    for job in manifest["jobs"]:
        head, data = job.get("headline", {}), job.get("dataset", {})
        lines.append(
            f"  job {job['name']} (run {job.get('run_id') or '-'}): dataset {data.get('name')} "
            f"digest {data.get('digest')}{' (files included)' if job.get('with_data') else ''}"
        )
        if "f1" in head:
            lines.append("    " + _headline(head))
    return "\n".join(shown(line) for line in lines)


def plugins_line(env: dict[str, Any]) -> str | None:
    """The plugin packages a bundle's job loaded (its manifest's ``environment.plugins``) and
    what they replaced, in one line; None when it loaded none."""
    found = env.get("plugins") or []
    if not found:
        return None
    parts = []
    for plugin in found:
        replaced = plugin.get("replaced") or []
        parts.append(
            f"{plugin.get('distribution')}=={plugin.get('version')}"
            + (f" (replaced {', '.join(replaced)})" if replaced else "")
        )
    return f"plugins: {', '.join(parts)}"


def _bundle_plugins(path: Path) -> str | None:
    """:func:`plugins_line` of the bundle at ``path``, read from its manifest alone (the replay
    reads and checks the whole bundle); None when there is none or it cannot be read."""
    import zipfile

    from mcu_exp.bundle.archive import MANIFEST

    try:
        with zipfile.ZipFile(path) as bundle:
            manifest = json.loads(bundle.read(MANIFEST))
        return plugins_line(manifest.get("environment", {}))
    except (OSError, KeyError, ValueError, AttributeError, zipfile.BadZipFile):
        return None


def _headline(head: dict[str, Any]) -> str:
    def num(key: str, fmt: str) -> str:
        value = head.get(key)
        return "undefined" if value is None else format(value, fmt)

    text = f"F1 {num('f1', '.1%')} [{num('f1_ci_low', '.1%')}, {num('f1_ci_high', '.1%')}], AUC (score) {num('auc_score', '.3f')}"
    if "tau" in head:
        text += f", τ {num('tau', '.4f')}, coverage {num('coverage', '.2f')}"
    return text + f", tn/fp {num('tn', '.0f')}/{num('fp', '.0f')}, n {num('n', '.0f')}"


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry: ``mcu-exp bundle export|replay|show``."""
    args = build_parser().parse_args(argv)
    from mcu_exp.redact import mask_known

    try:
        if args.action == "show":
            print(show(args.file))
        elif args.action == "export":
            from mcu_exp.report.build import default_tracking_uri

            out = args.out or Path(f"run-bundle-{args.run_id}.zip")
            size = export_run(
                args.run_id,
                out,
                args.tracking_uri or default_tracking_uri(),
                args.with_data,
                args.cache_dir,
                args.cache_url,
            )
            print(f"wrote {out} ({size / 1024:.0f} KiB); check it anywhere with: mcu-exp bundle replay {out}")
        else:
            _replay(args.file, args.keep)
    except (ValueError, OSError, ImportError) as exc:
        raise_if_interrupted(exc)
        from mcu_exp.bundle.safety import shown

        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        print(f"{PROG} {args.action}: error: {shown(mask_known(message))}", file=sys.stderr)
        raise SystemExit(1) from None


def _replay(path: Path, keep: Path | None) -> None:
    """Replay, print each job's check, exit 1 when one differs."""
    from mcu_exp.bundle.replay import replay
    from mcu_exp.bundle.safety import shown
    from mcu_exp.pipeline import run_job

    plugins = _bundle_plugins(path)
    if plugins:  # a replay loads no plugin: what they computed or replaced can differ
        print(f"The bundle's run had {plugins}; this replay runs without them")
    checks = replay(path, run_job, keep)
    print(f"Replay of {shown(str(path))}:")
    for check in checks:
        print(f"  {shown(check.line())}")
    if any(check.difference is not None for check in checks):
        raise SystemExit(1)
