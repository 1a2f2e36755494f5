"""A new dataset format is one module: ``dataset.format=package.module:function`` loads it,
and what it returns goes through the same ordering, limit and questions as the built-ins."""

from __future__ import annotations

from typing import Any

import pytest

from mcu_exp.data import Dataset, DatasetError, Program, load_dataset
from mcu_exp.data.types import evaluations_frame


def load(cfg: Any) -> Dataset:
    """A format that makes its programs up: ``p10``, ``p9``, …, ``p1`` (out of natural order)."""
    programs = [Program(id=f"p{i}", language="python", code=f"def f{i}():\n    return {i}\n") for i in range(10, 0, -1)]
    return Dataset(
        name=cfg.name, programs=programs, evaluations=evaluations_frame([], [], [], []), questions=[], source="made up"
    )


def test_a_loader_named_by_module_and_function_is_used(dataset_cfg: Any) -> None:
    dataset = load_dataset(dataset_cfg(name="made-up", format="test_format_plugin:load", limit=3))
    assert dataset.name == "made-up"
    assert dataset.program_ids == ["p1", "p2", "p3"]  # natural order, then the limit


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        (
            "nonsense",
            r"^unknown dataset format 'nonsense' \(dataset.format\) \(known: scalabrino, stakelab, atoms, custom\), or package.module:function$",
        ),
        ("test_format_plugin:nowhere", r"dataset.format='test_format_plugin:nowhere': cannot load the loader"),
        ("no_such_module_xyz:load", r"cannot load the loader: No module named 'no_such_module_xyz'"),
    ],
)
def test_a_bad_format_is_one_line(dataset_cfg: Any, fmt: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_dataset(dataset_cfg(format=fmt))
