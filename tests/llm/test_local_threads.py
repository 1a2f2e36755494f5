"""torch's thread count at model load: ``model.num_threads`` always wins; the automatic rule
(the CPU budget when that many CPUs are free now, half of it on a busy machine) never raises a
count the process has set."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import BackendError, LocalBackend
from mcu_exp.llm.threads import busy_cpus, thread_count


@pytest.mark.parametrize(
    ("requested", "current", "budget", "busy", "cpus", "expected"),
    [
        (1, 2, 2, 0.0, 2, 1),  # explicit, on an idle machine that could give 2
        (1, 1, 2, 0.1, 2, 1),
        (3, 1, 2, 9.0, 2, 3),  # explicit beats a busy machine and the current count
        (None, 2, 2, 0.3, 2, 2),  # a free 2-core machine now (whatever its 1-minute load average): both cores
        (None, 2, 2, 0.6, 2, 1),  # more than half a core in use by others: one thread
        (None, 2, 2, 1.8, 2, 1),
        (None, 1, 2, 0.0, 2, 1),  # the count the process set is never raised
        (None, 64, 4, 0.5, 64, 4),  # torch's default (every host core) comes down to the CPU quota
        (None, 64, 4, 61.0, 64, 2),  # halved when fewer CPUs than the quota are free
        (None, 2, 1, 9.0, 2, 1),  # never below one
    ],
)
def test_thread_count(requested: int | None, current: int, budget: int, busy: float, cpus: int, expected: int):
    assert thread_count(requested, current, budget, busy, cpus) == expected


def test_busy_cpus_is_a_share_of_this_machine_s_cpus():
    busy = busy_cpus(0.05)
    assert 0.0 <= busy <= (os.cpu_count() or 1)


def test_a_thread_count_below_one_is_a_config_error():
    with pytest.raises(BackendError, match="model.num_threads"):
        thread_count(0, 2, 2, 0.0, 2)


@pytest.fixture
def torch_threads() -> Iterator[Any]:
    """torch, its thread count restored after the test."""
    import torch

    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


def test_load_sets_exactly_model_num_threads(tiny_cfg: ModelConfig, torch_threads: Any):
    torch_threads.set_num_threads(2)
    LocalBackend(dataclasses.replace(tiny_cfg, num_threads=1)).load()
    assert torch_threads.get_num_threads() == 1


def test_load_without_num_threads_keeps_the_count_the_process_set(
    tiny_cfg: ModelConfig, torch_threads: Any, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    torch_threads.set_num_threads(1)
    LocalBackend(dataclasses.replace(tiny_cfg, num_threads=None)).load()
    assert torch_threads.get_num_threads() == 1
