"""The run bundle file: a zip archive with a manifest, the jobs' configs and results, and the
cache rows they read (JSON lines), written and checked here.

Layout::

    manifest.json                 format, jobs (name, run id, dataset digest, headline), the
                                  environment, pinned identities, a sha256 per member and a
                                  digest per sample text
    jobs/<i>/config.yaml          the resolved configuration (secrets masked)
    jobs/<i>/results/*.csv, metrics.json
    cache/<table>.jsonl           requests, samples, specs, pair_scores, text_lengths
    data/<i>/...                  the dataset's files (``--with-data`` only)

Rows are copied with :func:`mcu_exp.store.table_copy.copy_tables`, the code ``mcu-exp cache
export/import`` uses, from a cache (only the keys a job read) into a :class:`RowSet`, and from
a bundle's :class:`RowSet` into the SQLite caches of a replay.

A bundle is read as one from a stranger: its zip directory, member names and sizes are checked
before anything is inflated (:mod:`mcu_exp.bundle.safety`), its manifest and cache rows for
the shape export writes (:mod:`mcu_exp.bundle.shape`); every refusal is one line.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcu_exp.bundle import shape
from mcu_exp.bundle.safety import BundleError as BundleError
from mcu_exp.bundle.safety import open_checked, read_member, shown
from mcu_exp.recent import Recent

FORMAT = "mcu-exp-bundle/1"
MANIFEST = "manifest.json"
GENERATION_TABLES = ("requests", "samples")
SCORE_TABLES = ("specs", "pair_scores", "text_lengths")
_BINARY_KEYS = ("pair_scores", "text_lengths")  # first column is bytes: stored as hex
COLUMNS = {"requests": 2, "samples": 7, "specs": 2, "pair_scores": 2, "text_lengths": 3}  # values a row, by table
_RESULT_SUFFIXES = (".csv", ".json", ".yaml")


_ROW_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))  # json.dumps's text, one encoder
_JSONL_TEXTS: Recent[bytes] = Recent(2 * (len(GENERATION_TABLES) + len(SCORE_TABLES)))  # RowSet.jsonl's


@dataclass
class RowSet:
    """Cache rows by table, one row a key: what :func:`copy_tables` reads from and writes to."""

    tables: dict[str, dict[Any, tuple[Any, ...]]] = field(default_factory=dict)

    def rows(self, table: str, size: int = 5_000) -> Iterator[list[tuple[Any, ...]]]:
        found = list(self.tables.get(table, {}).values())
        for start in range(0, len(found), size):
            yield found[start : start + size]

    def count(self, table: str) -> int:
        return len(self.tables.get(table, {}))

    def add_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        kept = self.tables.setdefault(table, {})
        new = [row for row in rows if row[0] not in kept]
        kept.update((row[0], tuple(row)) for row in new)
        return len(new)

    def jsonl(self, table: str) -> bytes:
        """The table as JSON lines in key order (bytes keys as hex). The jobs of a sweep bundle
        the same rows: the text of the last few row sets is kept per process (compared by
        content, so another set of rows is encoded anew)."""
        found = self.tables.get(table, {})

        def encode() -> bytes:
            lines = []
            for key in sorted(found):
                row = list(found[key])
                if table in _BINARY_KEYS:
                    row[0] = bytes(row[0]).hex()
                lines.append(_ROW_ENCODER.encode(row))
            return ("\n".join(lines) + "\n").encode() if lines else b""

        return _JSONL_TEXTS.get((table, frozenset(found.items())), encode)

    @classmethod
    def from_jsonl(cls, members: Mapping[str, bytes]) -> RowSet:
        """The rows of a bundle's ``cache/<table>.jsonl`` members."""
        found = cls()
        for table in (*GENERATION_TABLES, *SCORE_TABLES):
            member = f"cache/{table}.jsonl"
            try:
                text = members.get(member, b"").decode()
            except UnicodeDecodeError:
                raise BundleError(f"{member}: not UTF-8 text; expected JSON lines") from None
            rows = []
            for number, line in enumerate(text.splitlines(), 1):
                row = shape.parse_json(line, f"{member} line {number}")
                problem = shape.row_problem(row, table in _BINARY_KEYS, COLUMNS[table])
                if problem is not None:
                    raise BundleError(f"{member} line {number} {problem}")
                if table in _BINARY_KEYS:
                    row[0] = bytes.fromhex(row[0])
                rows.append(tuple(row))
            found.add_rows(table, rows)
        return found


def text_digest(text: str) -> str:
    """A sample text's digest in the manifest (tamper check)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def write(
    out: Path,
    manifest: dict[str, Any],
    jobs: Sequence[Mapping[str, bytes]],
    rows: RowSet,
    data: Sequence[Mapping[str, bytes]] = (),
) -> int:
    """Write the bundle file ``out``: ``jobs[i]`` maps a job's file names (``config.yaml``,
    ``results/…``) to their bytes, ``data[i]`` its dataset's files; the manifest gets the
    member digests. Returns the file's size in bytes."""
    members: dict[str, bytes] = {}
    for i, files in enumerate(jobs):
        members.update({f"jobs/{i}/{name}": blob for name, blob in files.items()})
    for i, files in enumerate(data):
        members.update({f"data/{i}/{name}": blob for name, blob in files.items()})
    for table in (*GENERATION_TABLES, *SCORE_TABLES):
        members[f"cache/{table}.jsonl"] = rows.jsonl(table)
    manifest = {
        **manifest,
        "format": FORMAT,
        "members": {name: hashlib.sha256(blob).hexdigest() for name, blob in sorted(members.items())},
        "sample_digests": {row[0]: text_digest(row[1]) for row in sorted(rows.tables.get("samples", {}).values())},
    }
    text = json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=True)
    _refuse_secrets({MANIFEST: text.encode(), **members})
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr(MANIFEST, text)
        for name, blob in sorted(members.items()):
            archive.writestr(name, blob)
    partial.replace(out)
    return out.stat().st_size


def _refuse_secrets(members: Mapping[str, bytes]) -> None:
    """Raise when a member holds a secret this process was given (an API key, a password in a
    URL: :func:`mcu_exp.redact.remember`), after the redaction every writer applies."""
    from mcu_exp.redact import mask_known

    for name, blob in members.items():
        text = blob.decode("utf-8", "replace")
        if mask_known(text) != text:
            raise BundleError(f"{name} would hold a secret this job was given; no bundle written")


def read(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and the members of the bundle at ``path``, checked against the manifest:
    a member or a sample changed after export is named in a :class:`BundleError`, and so is
    any member, size or manifest :mod:`mcu_exp.bundle.safety` and :mod:`~mcu_exp.bundle.shape`
    refuse (checked before the member is inflated, or before it is used)."""
    try:
        archive, entries = open_checked(path, MANIFEST)
        with archive:
            members = {info.filename: read_member(path, archive, info) for info in entries}
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(
            f"{path}: not a run bundle (expected a zip archive written by mcu-exp bundle export: {exc})"
        ) from None
    if MANIFEST not in members:
        raise BundleError(f"{path}: no readable {MANIFEST}; expected a file written by mcu-exp bundle export")
    where = f"{path}: {MANIFEST}"
    manifest = shape.parse_json(members.pop(MANIFEST), where)
    if isinstance(manifest, dict) and manifest.get("format") != FORMAT:
        raise BundleError(f"{path}: bundle format {shown(repr(manifest.get('format')))}, expected {FORMAT!r}")
    shape.check_manifest(manifest, where)  # an object of the shape export writes, else refused
    check(path, manifest, members)
    return manifest, members


def check(path: Path, manifest: Mapping[str, Any], members: Mapping[str, bytes]) -> None:
    """Raise :class:`BundleError` naming the first sample, then member, that differs from the manifest."""
    digests = manifest.get("sample_digests", {})
    for number, line in enumerate(members.get("cache/samples.jsonl", b"").decode(errors="replace").splitlines(), 1):
        row = shape.parse_json(line, f"{path}: cache/samples.jsonl line {number}")
        problem = shape.row_problem(row, False, 2, exact=False)  # show reads a sample's key and text
        if problem is None and not isinstance(row[1], str):
            problem = f"its text is {shape.kind(row[1])}; expected a string"
        if problem is not None:
            raise BundleError(f"{path}: cache/samples.jsonl line {number} {problem}")
        key, text = row[:2]
        if digests.get(key) != text_digest(text):
            raise BundleError(
                f"{path}: sample {shown(key)} (cache/samples.jsonl line {number}) differs from the "
                "one exported: the bundle was edited; replay refuses it"
            )
    listed = manifest.get("members", {})
    for name in sorted(set(listed) | set(members)):
        if name not in members:
            raise BundleError(f"{path}: member {shown(name)} is missing: the bundle was edited; replay refuses it")
        if listed.get(name) != hashlib.sha256(members[name]).hexdigest():
            raise BundleError(
                f"{path}: member {shown(name)} differs from the one exported: the bundle was edited; replay refuses it"
            )


def job_files(members: Mapping[str, bytes], index: int) -> dict[str, bytes]:
    """The files of job ``index`` (``config.yaml``, ``results/…``) by their name inside the job."""
    prefix = f"jobs/{index}/"
    return {name[len(prefix) :]: blob for name, blob in members.items() if name.startswith(prefix)}


def data_files(members: Mapping[str, bytes], index: int) -> dict[str, bytes]:
    """The dataset files stored for job ``index`` (empty without ``--with-data``)."""
    prefix = f"data/{index}/"
    return {name[len(prefix) :]: blob for name, blob in members.items() if name.startswith(prefix)}


def results_files(folder: Path) -> dict[str, bytes]:
    """The files of a job's results folder a bundle keeps: its tables, metrics and config
    (not the figures)."""
    return {
        f"results/{p.name}": p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.suffix in _RESULT_SUFFIXES
    }
