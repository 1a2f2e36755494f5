"""Programs, human evaluations and comprehension questions, and the human labels built on them.

``load_dataset(cfg.dataset)`` gives a :class:`Dataset` whatever the format;
``human_labels(dataset, cfg.labels)`` turns its evaluations into one label per program.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp.data.custom import load_custom, read_questions
from mcu_exp.data.duplicates import Duplicates
from mcu_exp.data.labels import (
    LABEL_RULES,
    READERS,
    RULES,
    HumanLabels,
    abu50,
    human_labels,
    share_correct,
    subgroup_labels,
)
from mcu_exp.data.scalabrino import load_scalabrino, resolve_root, strip_wrapper
from mcu_exp.data.types import (
    GROUPS,
    Dataset,
    DatasetError,
    DatasetWarning,
    Program,
    Question,
    natural_key,
)
from mcu_exp.registry import PluginError, Registry, import_attr

if TYPE_CHECKING:
    from mcu_exp.config import DatasetConfig

__all__ = [
    "FORMATS",
    "GROUPS",
    "READERS",
    "LABEL_RULES",
    "RULES",
    "Dataset",
    "DatasetError",
    "DatasetWarning",
    "Duplicates",
    "HumanLabels",
    "Program",
    "Question",
    "abu50",
    "human_labels",
    "load_custom",
    "load_dataset",
    "loader",
    "load_scalabrino",
    "natural_key",
    "read_questions",
    "resolve_root",
    "share_correct",
    "strip_wrapper",
    "subgroup_labels",
]


def _load_custom_cfg(cfg: DatasetConfig) -> Dataset:
    if not cfg.root:
        raise DatasetError("dataset.root is unset; the custom format needs the dataset folder")
    return load_custom(cfg.root, name=cfg.name or "custom")


Loader = Callable[[Any], Dataset]  # the dataset config -> the dataset

# Dataset formats by name (``dataset.format=<name>``); a plugin package registers its own,
# e.g. ``FORMATS.add_lazy("mine", "pkg.formats:load")``.
FORMATS: Registry[Loader] = Registry("dataset format", key="dataset.format")
FORMATS.add("scalabrino", load_scalabrino)
FORMATS.add_lazy("stakelab", "mcu_exp.data.stakelab:load_stakelab")
FORMATS.add_lazy("atoms", "mcu_exp.data.atoms:load_atoms")
FORMATS.add("custom", _load_custom_cfg)


def loader(fmt: str) -> Loader:
    """The loader of ``dataset.format``: a registered name, or ``package.module:function``
    taking the dataset config and returning a :class:`Dataset` (a new format is one module)."""
    fmt = str(fmt)
    if fmt in FORMATS:
        try:
            return FORMATS[fmt]
        except PluginError as exc:
            raise DatasetError(str(exc)) from None
    if ":" not in fmt:
        raise DatasetError(f"{FORMATS.unknown_message(fmt)}, or package.module:function")
    try:
        found = import_attr(fmt)
    except (ImportError, AttributeError, ValueError) as exc:
        raise DatasetError(f"dataset.format={fmt!r}: cannot load the loader: {exc}") from None
    if not callable(found):
        raise DatasetError(f"dataset.format={fmt!r}: expected a function of the dataset config, got {found!r}")
    return found


def load_dataset(cfg: DatasetConfig) -> Dataset:
    """Load the dataset a ``dataset`` config names, with its questions, in natural id order.

    ``cfg.format`` picks the loader (:func:`loader`); ``cfg.questions`` (a JSONL file) adds
    questions, checked against the dataset's program ids; ``cfg.limit`` keeps the first N programs.
    """
    limit = cfg.limit
    if limit is not None and int(limit) <= 0:
        raise DatasetError(f"dataset.limit is {limit}, expected a positive number or null")
    dataset = loader(cfg.format)(cfg)
    key = (_file_state(cfg.questions), None if limit is None else int(limit))
    known = _FINISHED.get(dataset)
    if known is not None and known[0] == key:  # the loader served its memo: so do we
        return known[1]
    finished = _finish(dataset, cfg.questions, limit)
    _FINISHED[dataset] = (key, finished)
    return finished


# The dataset load_dataset finished from each loaded one, while the loader keeps that alive
# (the Scalabrino loader's memo): the same object to every job of a sweep, so the label memo
# (:mod:`mcu_exp.data.labels`) applies too.
_FINISHED: weakref.WeakKeyDictionary[Dataset, tuple[Any, Dataset]] = weakref.WeakKeyDictionary()


def _file_state(path: str | None) -> tuple[Any, ...] | None:
    """A questions file's path, size and mtime (None without one; the path alone when missing:
    reading it reports that)."""
    if not path:
        return None
    try:
        found = Path(path).stat()
    except OSError:
        return (str(path),)
    return (str(Path(path).resolve()), found.st_size, found.st_mtime_ns, found.st_ino)


def _finish(dataset: Dataset, extra_path: str | None, limit: Any) -> Dataset:
    """The loaded dataset with the extra questions, in natural id order, first ``limit`` kept."""
    questions = list(dataset.questions)
    if extra_path:
        seen = {(q.program_id, q.question_id) for q in questions}
        for q in read_questions(Path(extra_path), set(dataset.program_ids)):
            if (q.program_id, q.question_id) in seen:
                raise DatasetError(
                    f"{extra_path}: question {q.question_id!r} of program {q.program_id!r} "
                    "is already in the dataset folder's questions"
                )
            questions.append(q)
    order = sorted(dataset.programs, key=lambda p: natural_key(p.id))
    kept = order if limit is None else order[: int(limit)]
    merged = replace(dataset, programs=order, questions=questions)
    return merged.subset(p.id for p in kept)
