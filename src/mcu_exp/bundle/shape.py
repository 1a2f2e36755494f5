"""The shape of what a run bundle holds as JSON (its manifest, its cache rows), checked once
right after it is read, so that a forged or damaged bundle is one line naming the member and
what was expected there, never a traceback from the code that uses it later.

The manifest is parsed only when its nesting stays within :data:`MAX_DEPTH` levels (a real one
nests six): a document nested 200,000 deep would otherwise exhaust Python's recursion.
"""

from __future__ import annotations

import json
import string
from typing import Any

from mcu_exp.bundle.safety import BundleError

MAX_DEPTH = 64  # nested arrays and objects in the manifest (or a cache row)
_HEX = frozenset(string.hexdigits)


def kind(value: Any) -> str:
    """What ``value`` is, in JSON's words ("an array", "a number"…), for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests arrays and objects (a scalar: 0), counted without recursion
    and up to ``limit + 1``."""
    deepest = 0
    todo = [(value, 1)]
    while todo and deepest <= limit:
        item, level = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            todo.extend((child, level + 1) for child in children)
    return deepest


def parse_json(blob: str | bytes, where: str) -> Any:
    """``blob`` parsed as JSON, refused (naming ``where``) when it is not JSON or nests deeper
    than :data:`MAX_DEPTH`."""
    try:
        found = json.loads(blob)
    except RecursionError:
        found = None
        nested = True
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise BundleError(f"{where}: not JSON ({message})") from None
    else:
        nested = depth(found) > MAX_DEPTH
    if nested:
        raise BundleError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; refused")
    return found


def _need(value: Any, types: tuple[type, ...], where: str, expected: str) -> None:
    """Refuse ``value`` unless it is one of ``types`` (a boolean only where ``bool`` is)."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise BundleError(f"{where} is {kind(value)}; expected {expected}")


def _mapping_of(value: Any, types: tuple[type, ...], where: str, expected: str) -> None:
    """Refuse ``value`` unless it is an object whose values are all ``types`` (each one
    ``expected``, in words)."""
    _need(value, (dict,), where, f"an object whose every value is {expected}")
    for key, item in value.items():
        _need(item, types, f"{where}[{json.dumps(key)}]", expected)


def check_manifest(manifest: Any, where: str) -> None:
    """Refuse a manifest (parsed) whose parts the tool reads are not of the shape export
    writes: an object; ``jobs`` an array of job objects (``name`` a string, ``dataset`` and
    ``headline`` objects, ``headline`` of numbers); ``members`` and ``sample_digests``
    objects of strings; ``counts`` of whole numbers; ``pins`` and ``environment`` objects."""
    _need(manifest, (dict,), where, "an object (a bundle's manifest)")
    if "jobs" not in manifest:
        raise BundleError(f"{where} has no jobs; expected an array of job objects")
    _need(manifest["jobs"], (list,), f"{where}: jobs", "an array of job objects")
    for index, job in enumerate(manifest["jobs"]):
        _check_job(job, f"{where}: jobs[{index}]")
    optional: dict[str, tuple[tuple[type, ...], str]] = {
        "members": ((str,), "a string (a sha256 digest)"),
        "sample_digests": ((str,), "a string (a digest)"),
        "counts": ((int,), "a whole number"),
        "pins": ((dict,), "an object"),
    }
    for key, (types, expected) in optional.items():
        if key in manifest:
            _mapping_of(manifest[key], types, f"{where}: {key}", expected)
    env = manifest.get("environment", {})
    _need(env, (dict,), f"{where}: environment", "an object")
    if "packages" in env:
        _mapping_of(env["packages"], (str,), f"{where}: environment.packages", "a string (a version)")
    _need(env.get("git_commit"), (str, type(None)), f"{where}: environment.git_commit", "a string or null")


def _check_job(job: Any, where: str) -> None:
    _need(job, (dict,), where, "a job object")
    _need(job.get("name"), (str,), f"{where}.name", "a string")
    _need(job.get("run_id"), (str, type(None)), f"{where}.run_id", "a string or null")
    _need(job.get("with_data", False), (bool,), f"{where}.with_data", "true or false")
    dataset = job.get("dataset", {})
    _need(dataset, (dict,), f"{where}.dataset", "an object")
    for key in ("name", "digest"):
        _need(dataset.get(key), (str, type(None)), f"{where}.dataset.{key}", "a string or null")
    _mapping_of(job.get("headline", {}), (int, float, type(None)), f"{where}.headline", "a number or null")
    files = job.get("files", [])
    _need(files, (list,), f"{where}.files", "an array of strings")
    for index, name in enumerate(files):
        _need(name, (str,), f"{where}.files[{index}]", "a string")


def row_problem(row: Any, hex_key: bool, columns: int, exact: bool = True) -> str | None:
    """Why ``row`` (one parsed line of a ``cache/<table>.jsonl`` member) is not a cache row of
    ``columns`` values (at least that many unless ``exact``) whose first is a string key
    (hexadecimal with ``hex_key``) and whose others are strings or numbers (the cache's columns
    are all NOT NULL); None when it is one."""
    if not isinstance(row, list):
        return f"is {kind(row)}; expected an array (one cache row)"
    if len(row) < columns or (exact and len(row) != columns):
        return f"has {len(row)} value(s); expected {columns}"
    if not isinstance(row[0], str):
        return f"its key is {kind(row[0])}; expected a string"
    if hex_key and (len(row[0]) % 2 or not _HEX.issuperset(row[0])):
        return "its key is not hexadecimal; expected the hex of the cache's bytes key"
    for index, value in enumerate(row):
        if value is None or isinstance(value, (list, dict)):
            return f"its value {index} is {kind(value)}; expected a string or a number"
    return None
