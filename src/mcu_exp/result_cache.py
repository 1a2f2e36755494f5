"""Decision-independent results, computed once per input and reused from disk.

Much of what a job computes does not depend on ε, the threshold or the reader group: the
measure table's bootstraps and permutation tests, the code-metric baselines, the PRR's
interval, the humans' ceiling. A decision-only sweep would recompute them in every job.
:func:`cached_result` computes such a value once and stores it under
``<cache.dir>/results/``, beside the generation and score caches, keyed by a SHA-256 of
everything the value is a function of:

- the caller's ``key_parts`` (the inputs: frames, arrays, numbers, strings), hashed by content
  (:func:`content_hash`: values, dtypes, index and column names, in order);
- the source of the modules named in ``code`` (so editing the computation invalidates its
  entries without a version to bump) and the installed versions of the libraries those
  modules compute with (:data:`LIBRARIES`);
- the format of the entries (:data:`FORMAT`).

A value is stored pickled (the user's own cache folder, as trusted as the SQLite caches
beside it), so a hit returns exactly what the computation returned: the same float64 bits,
dtypes, index and ``attrs``, hence byte-identical CSVs. A miss, an unreadable entry, an entry
of the wrong kind (``kind``: a dict where a frame is expected, a pair where a triple is) or a
folder that cannot be written just computes (the entry is replaced; a write failure is
logged, never raised).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import math
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

log = logging.getLogger("mcu_exp")

T = TypeVar("T")
Kind = type | tuple[type, ...] | Callable[[Any], bool]  # what a stored value must be
RESULTS_DIR = "results"  # under cache.dir
FORMAT = "mcu-exp-result/1"
# Their versions are part of every key: every third-party library a cached value is computed
# with (the imports of the modules the callers name in ``code``: NumPy, pandas and SciPy for the
# statistics, krippendorff for the humans' ceiling, lizard for the code-metric baselines).
LIBRARIES = ("numpy", "pandas", "scipy", "krippendorff", "lizard")


@cache
def _library_versions() -> tuple[str, ...]:
    found = []
    for name in LIBRARIES:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=absent")
    return tuple(found)


@cache
def source_digest(module: str) -> str:
    """SHA-256 of a module's source file (found without importing it); raises ValueError for
    a module with no source file."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise ValueError(f"result cache: module {module!r} has no source file to key on")
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def _feed(h: Any, value: Any) -> None:
    """Add ``value`` to hash ``h`` with a type tag, so different types never collide."""
    if value is pd.NA:  # a missing value of a nullable column (evaluations' perceived, group)
        h.update(b"NA:")
    elif value is None or isinstance(value, (bool, str, int, bytes)):
        h.update(f"{type(value).__name__}:{len(value) if isinstance(value, (str, bytes)) else ''}:".encode())
        h.update(value if isinstance(value, bytes) else str(value).encode())
    elif isinstance(value, (float, np.floating)):
        h.update(b"float:" + ("nan" if math.isnan(value) else float(value).hex()).encode())
    elif isinstance(value, np.integer):
        h.update(f"int:{int(value)}".encode())
    elif isinstance(value, np.ndarray):
        h.update(f"ndarray:{value.dtype.str}:{value.shape}:".encode())
        if value.dtype.kind == "O":
            items = value.ravel().tolist()
            if all(type(item) is str for item in items):  # ids, names: the bytes _feed gives each, at once
                h.update(b"".join(b"str:%d:%s" % (len(item), item.encode()) for item in items))
            else:
                for item in items:
                    _feed(h, item)
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, pd.Index):
        h.update(f"index:{value.names}:".encode())
        _feed(h, value.to_numpy())
    elif isinstance(value, pd.Series):
        h.update(f"series:{value.name!r}:{value.dtype}:".encode())
        _feed(h, value.index)
        _feed(h, value.to_numpy())
    elif isinstance(value, pd.DataFrame):
        h.update(b"frame:")
        _feed(h, value.index)
        _feed(h, value.columns)
        for column in range(value.shape[1]):
            series = value.iloc[:, column]
            h.update(f"{series.dtype}:".encode())
            _feed(h, series.to_numpy())
        _feed(h, dict(value.attrs))
    elif isinstance(value, Mapping):
        h.update(f"map:{len(value)}:".encode())
        for key, item in value.items():
            _feed(h, key)
            _feed(h, item)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}:{len(value)}:".encode())
        for item in value:
            _feed(h, item)
    else:
        raise TypeError(
            f"result cache: cannot key on a {type(value).__name__}; pass its content "
            "(numbers, strings, arrays, frames, lists or dicts of them)"
        )


def content_hash(*parts: Any) -> str:
    """SHA-256 (hex) of ``parts`` by content: equal inputs give equal hashes across processes
    and machines; a different value, dtype, order, index or column name gives another."""
    h = hashlib.sha256()
    for part in parts:
        _feed(h, part)
    return h.hexdigest()


def result_path(cache_dir: str | Path, key: str) -> Path:
    """Where the entry of ``key`` lives: ``<cache_dir>/results/<2 hex>/<key>.pkl``."""
    return Path(cache_dir) / RESULTS_DIR / key[:2] / f"{key}.pkl"


def cached_result(
    cache_dir: str | Path | None,
    name: str,
    key_parts: Sequence[Any] | Mapping[str, Any],
    compute: Callable[[], T],
    code: Sequence[str] = (),
    kind: Kind | None = None,
) -> T:
    """``compute()``, stored under ``cache_dir`` the first time and read back afterwards.

    Use it for a value that a sweep's jobs share because it does not depend on what the
    sweep varies. ``name`` says what the value is (part of the key, and logged);
    ``key_parts`` must hold *every* input ``compute`` reads (frames, arrays, numbers,
    strings; see :func:`content_hash`), settings such as seeds and resample counts
    included; ``code`` names the modules whose source defines the computation (e.g.
    ``("mcu_exp.ceiling.split_half",)``): editing one starts new entries; ``kind`` is what a
    value read back must be (a type, types, or a test of the value), else it is recomputed and
    replaced. ``cache_dir`` None computes without storing. Example, a human ceiling per dataset and label rule::

        ceiling = cached_result(cfg.cache.dir, "ceiling", [evaluations, rule, splits, seed],
                                lambda: split_half(evaluations, rule, splits, seed),
                                code=("mcu_exp.ceiling.split_half",))

    The value must pickle; what comes back from the cache is an equal copy (same bits).
    """
    if cache_dir is None:
        return compute()
    key = content_hash(FORMAT, name, _library_versions(), [(m, source_digest(m)) for m in code], key_parts)
    path = result_path(cache_dir, key)
    try:
        with path.open("rb") as handle:
            value = pickle.load(handle)
        if kind is None or _of_kind(value, kind):
            log.debug("result cache: %s from %s", name, path)
            return value  # type: ignore[no-any-return]
        log.debug("result cache: %s holds a %s, not a %s; recomputing", path, type(value).__name__, name)
    except FileNotFoundError:
        pass
    except Exception as exc:  # noqa: BLE001 (a truncated or foreign file: recompute and replace it)
        log.debug("result cache: %s unreadable (%s); recomputing", path, exc)
    value = compute()
    _store(path, value, name)
    return value


def _of_kind(value: Any, kind: Kind) -> bool:
    """Whether ``value`` is of ``kind`` (a type or types: an instance; else the test's answer)."""
    if isinstance(kind, (type, tuple)):
        return isinstance(value, kind)
    try:
        return bool(kind(value))
    except Exception:  # noqa: BLE001 (a test that fails on a foreign value: not of the kind)
        return False


def floats(count: int) -> Callable[[Any], bool]:
    """A :data:`Kind`: a tuple of ``count`` floats (NumPy's included)."""
    return lambda value: (
        isinstance(value, tuple) and len(value) == count and all(isinstance(v, (float, np.floating)) for v in value)
    )


def mapping_of(kind: type | tuple[type, ...]) -> Callable[[Any], bool]:
    """A :data:`Kind`: a dict with string keys whose values are of ``kind``."""
    return lambda value: (
        isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, kind) for k, v in value.items())
    )


def _store(path: Path, value: Any, name: str) -> None:
    """Write one entry atomically (a temp file renamed into place); failures only logged."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("result cache: could not store %s in %s (%s); it is recomputed next time", name, path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
