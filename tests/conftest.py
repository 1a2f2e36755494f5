"""Test-wide settings: the shared data copy, offline hubs, outputs in a temp folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from mcu_exp import collector

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("MCU_EXP_DATA", str(SHARED_DATA))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The test processes collect garbage as the command's processes do (mcu_exp.collector): over
# tests/report, ceiling and evaluation in one process, the collector ran 6.7 s (18 full passes) at
# Python's defaults and 2.0 s (1 full pass) at these thresholds.
collector.tune()


def pytest_configure(config: pytest.Config) -> None:
    """Under ``--dist loadfile`` xdist hands out files in the order collected below, not re-sorted
    by how many tests each holds (its default, which sends the slowest files, a sweep of one or
    two tests, last, so one worker ends alone)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding slow tests (subprocess jobs, sweeps, servers) first: under `-n 2 --dist
    loadfile` they start at once on both workers and the many quick tests fill in around them,
    instead of one long file finishing alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("llm")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The folder holding ``scalabrino/`` (``$MCU_EXP_DATA``)."""
    root = Path(os.environ["MCU_EXP_DATA"])
    if not (root / "scalabrino" / "evaluations.csv").is_file():
        pytest.fail(f"MCU_EXP_DATA={root} holds no scalabrino/evaluations.csv; point it at the data")
    return root


@pytest.fixture(scope="session", autouse=True)
def shared_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the result cache every seeded outputs folder links to
    (``support.mlflow_store.share_results``): under this session's temporary folder, above
    every xdist worker's own, so both workers share it and pytest removes it with old sessions."""
    from support.mlflow_store import RESULTS_ENV

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this session's folder, above every worker's own
    folder = root / "shared-results"
    folder.mkdir(exist_ok=True)
    os.environ[RESULTS_ENV] = str(folder)
    return folder


@pytest.fixture
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh outputs folder (run dirs, caches, the MLflow store) for one test; its result
    cache is the test run's shared one (``support.mlflow_store.share_results``)."""
    from support.mlflow_store import seed_store

    out = seed_store(tmp_path / "outputs")
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(out))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return out


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a tiny random Llama with SmolLM2's tokenizer, for jobs whose mechanics matter
    and whose text does not; see ``support.tiny_llama``. Built once per test session: under xdist
    the workers share it (the first builds it under a lock, the others wait and read it), since
    reading SmolLM2's tokenizer out of its GGUF alone takes seconds. Its weights come from a fixed
    seed, so every worker would build the same folder anyway."""
    from filelock import FileLock

    from support.tiny_llama import build

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this session's folder, above every worker's own
    folder = root / "tiny-llama"
    with FileLock(str(root / "tiny-llama.lock")):
        if not folder.is_dir():
            partial = Path(tempfile.mkdtemp(prefix="tiny-llama-", dir=root))
            folder = build(partial).rename(folder)
    return folder
