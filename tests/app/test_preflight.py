"""The lines a command says before and during its first job: a new, empty default store names
the store it would have reused (and only then), and the share of samples the cache served."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.job.preflight import covering_jobs, store_notice
from mcu_exp.job.screen import cache_line


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """Two working folders and the state file that remembers the last default store."""
    first, other = tmp_path / "first", tmp_path / "other"
    first.mkdir()
    other.mkdir()
    return first, other, tmp_path / "state" / "last_outputs"


def test_a_new_store_elsewhere_names_the_last_one_once_it_holds_runs(
    places: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, other, state = places
    monkeypatch.chdir(first)
    assert store_notice("outputs", state) is None  # nothing remembered yet
    assert state.read_text().strip() == str(first / "outputs")
    monkeypatch.chdir(other)
    assert store_notice("outputs", state) is None  # the last store holds nothing: nothing lost
    monkeypatch.chdir(first)
    (first / "outputs" / "cache").mkdir(parents=True)
    assert store_notice("outputs", state) is None  # the same store again
    monkeypatch.chdir(other)
    line = store_notice("outputs", state)
    assert line is not None and "\n" not in line
    assert line.startswith(f"mcu-exp: note: starting a new, empty store {other / 'outputs'} ")
    assert line.endswith(f"pass paths.outputs={first / 'outputs'} to reuse its cache and runs")
    (other / "outputs").mkdir()
    (other / "outputs" / "mlflow.db").touch()
    assert store_notice("outputs", state) is None  # a store of its own now: no note


def test_an_explicit_store_is_neither_announced_nor_recorded(
    places: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, other, state = places
    monkeypatch.chdir(first)
    (first / "outputs" / "cache").mkdir(parents=True)
    store_notice("outputs", state)
    monkeypatch.chdir(other)
    assert store_notice(str(other / "mine"), state) is None
    assert state.read_text().strip() == str(first / "outputs")


@pytest.mark.parametrize(
    ("hits", "misses", "expected"),
    [
        (1000, 0, "1,000 of 1,000 samples from the cache"),
        (40, 960, "40 of 1,000 samples from the cache"),
        (0, 1000, None),
        (0, 0, None),
    ],
)
def test_the_cache_line_counts_the_samples_it_served(hits: int, misses: int, expected: str | None) -> None:
    stats = {"generation_cache_hits": float(hits), "generation_cache_misses": float(misses), "model_loaded": 0.0}
    assert cache_line(stats) == expected


def test_the_covering_jobs_hold_every_swept_value_in_few_jobs() -> None:
    """A product of 3 and 2 values takes 3 jobs, the first job first; every override appears."""
    jobs = [[f"a={a}", f"b={b}", "c=1"] for a in (1, 2, 3) for b in (1, 2)]
    chosen = covering_jobs(jobs)
    assert chosen[0] == jobs[0] and len(chosen) == 3
    assert {line for job in chosen for line in job} == {line for job in jobs for line in job}
    assert all(job in jobs for job in chosen)
    single = [["x=1"], ["x=2"], ["x=3"]]
    assert covering_jobs(single) == single
    assert covering_jobs([]) == []
