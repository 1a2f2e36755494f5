"""The plugin example of docs/architecture.md runs: its files, taken from the document, are
built and installed as a package (``pip install --target``), a ``debug=quick`` job asks the
fake chat API of :mod:`support.fake_api` for its samples through the plugin's backend and
reports the plugin's metric, ``model.batch=true`` is refused as the backend declares, and
``mcu-exp list`` names the plugin's entries with its distribution and version."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_api import PLANTED_KEY, FakeServer
from support.mlflow_store import seed_store
from support.plugin_packages import install_plugin, with_site
from support.sweeps import REPO, app_env

DOC = REPO / "docs" / "architecture.md"
SECTION = "### A complete plugin"
FILE_BLOCK = re.compile(r"```python\n# file: (\S+)\n(.*?)```", re.S)
ENTRY_POINT = re.compile(r'^(\w+) = "(mcu_chat_plugin:\w+)"$', re.M)


def example() -> tuple[dict[str, str], tuple[str, str]]:
    """The example's files (name → text) and its entry point (name, target), from the doc."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n### ", len(SECTION))]
    files = dict(FILE_BLOCK.findall(section))
    (entry,) = ENTRY_POINT.findall(section)
    return files, entry


@pytest.fixture(scope="module")
def chat_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files, (name, target) = example()
    assert set(files) == {"__init__.py", "backend.py"}
    return install_plugin(tmp_path_factory, "mcu-chat-plugin", "0.3.0", name, target, files)


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_the_example_imports_only_the_public_plugin_module() -> None:
    files, _ = example()
    imported = set(re.findall(r"(?:from|import) (mcu_exp[\w.]*)", "\n".join(files.values())))
    assert imported == {"mcu_exp.plugin"}


def run_job(site: Path, outputs: Path, server: FakeServer, *extra: str) -> subprocess.CompletedProcess[str]:
    """The job in a process of its own (plugins load from entry points when the command starts),
    its outputs folder holding a ready MLflow store (a fresh one costs MLflow's schema migrations)."""
    env = with_site(app_env(seed_store(outputs), CHAT_API_KEY=PLANTED_KEY), site)
    args = [
        "model=gpt-4o",
        "model.backend=chat",
        f"model.base_url={server.url}/v1",
        "+model.settings.max_n=4",
        "model.requests_per_minute=null",
        "model.tokens_per_minute=null",
        "debug=quick",
        "scorer=rougel",
        "dataset.limit=4",
        "proxy.k=4",
        "proxy.k_cal=2",
        "quiet=true",
        "evaluation.plots=false",
        *extra,
    ]
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # two jobs in subprocesses (~20 s of CPU)
def test_the_documented_backend_and_metric_run_a_job(chat_site: Path, fake_server: FakeServer, tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    res = run_job(chat_site, outputs, fake_server, f"cache.dir={tmp_path / 'cache'}")
    assert res.returncode == 0, res.stderr[-3000:]
    answered = fake_server.answered()
    assert len(answered) == 4  # 4 programs, their 4 samples in one request each (max_n=4)
    assert all(r.path == "/v1/chat/completions" and r.body["n"] == 4 for r in answered)
    (metrics_file,) = outputs.glob("runs/*/*/results/metrics.json")
    metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
    tn, fp = metrics["tn"], metrics["fp"]
    assert tn + fp > 0 and metrics["chat_specificity"] == pytest.approx(tn / (tn + fp))  # the plugin's metric

    refused = run_job(chat_site, tmp_path / "batch", fake_server, "model.batch=true", f"cache.dir={tmp_path / 'c2'}")
    assert refused.returncode != 0
    assert "model.batch=true but backend 'chat' declares no batch API" in refused.stderr
    assert len(fake_server.answered()) == 4  # refused before any request


def test_mcu_exp_list_names_each_entry_and_its_package(chat_site: Path, tmp_path: Path) -> None:
    env = with_site(app_env(tmp_path / "outputs"), chat_site)
    res = subprocess.run(
        [sys.executable, "-m", "mcu_exp", "list"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    rows = {tuple(line.split()) for line in res.stdout.splitlines() if line.startswith("  ")}
    assert {("openai", "mcu_exp"), ("f1", "mcu_exp"), ("bertscore", "mcu_exp"), ("mean_abu50", "mcu_exp")} <= rows
    assert ("rename_identifiers", "mcu_exp") in rows and "counterfactual edit (probe.edit):" in res.stdout
    assert {("chat", "mcu-chat-plugin==0.3.0"), ("chat_specificity", "mcu-chat-plugin==0.3.0")} <= rows
    assert "scorer kind (scorer.kind):" in res.stdout and "label rule (labels.rule):" in res.stdout
