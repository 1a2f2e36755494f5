"""User data (program ids, a model's name) shown as written in the Markdown the tool writes: the
MLflow run description (``mlflow.note.content``) and ``report.md``, like the HTML page does."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.markdown import md_text
from mcu_exp.pipeline import run_job
from mcu_exp.report.build import make_report
from mcu_exp.tracking.conventions import NOTE_TAG
from support.datasets import write_csv
from support.hydra_job import hydra_job
from support.mlflow_store import seed_store
from support.sweeps import STANDIN

HOSTILE_IDS = ["<img src=x onerror=alert(1)>", "**bold**|pipe", "</script><script>alert(2)</script>"]
HOSTILE_MODEL = "**Evil**|<img src=x onerror=alert(1)></script>"


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)>"),
        ("**bold**|pipe", "\\*\\*bold\\*\\*\\|pipe"),
        ("[a](javascript:alert(3)) ![i](x.png)", "[a\\](javascript:alert(3)) ![i\\](x.png)"),
        ("`code` ~~gone~~ _it_ &lt; a\\b\nnext", "\\`code\\` \\~\\~gone\\~\\~ \\_it\\_ &amp;lt; a\\\\b next"),
        ("88.9% [33.3%, 100.0%]; mean_abu50 ≥ 0.5; AUC > 0.5", "88.9% [33.3%, 100.0%]; mean_abu50 ≥ 0.5; AUC > 0.5"),
    ],
    ids=["html", "emphasis-and-pipe", "links", "code-strike-underscore-entity-backslash-newline", "left-alone"],
)
def test_md_text_escapes_what_renders_and_leaves_the_rest(text: str, escaped: str) -> None:
    assert md_text(text) == escaped


def hostile_dataset(root: Path) -> Path:
    """Six programs, three with hostile ids, four readers each with mixed answers."""
    ids = [*HOSTILE_IDS, "p1", "p2", "p3"]
    write_csv(root / "programs.csv", [["program_id", "language", "code"]] + [[p, "java", "int f() {}"] for p in ids])
    rows = [[p, f"r{r}", (i + r) % 4, 3] for i, p in enumerate(ids) for r in range(4)]
    write_csv(root / "evaluations.csv", [["program_id", "participant_id", "correct", "total"], *rows])
    return root


@pytest.mark.slow  # a job (in this process, inside a Hydra job) and a report
def test_program_ids_and_model_name_are_escaped_in_the_run_description_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    outputs = seed_store(tmp_path / "outputs")
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(outputs))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with hydra_job(
        STANDIN,
        "dataset=custom",
        f"dataset.root={hostile_dataset(data)}",
        "model=gpt-4o",
        f"model.name='{HOSTILE_MODEL}'",
        "model.model_id=evil-1",  # another model than gpt-4o's: a name of its own is allowed
        "debug=quick",
        "quiet=true",
    ) as cfg:
        run_job(cfg)
    uri = f"sqlite:///{outputs / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("mcu_exp-debug").experiment_id])
    assert run.data.tags["mcu.model"] == HOSTILE_MODEL  # the tag keeps the name as it is
    note = run.data.tags[NOTE_TAG]
    report = make_report(uri, experiments=["mcu_exp-debug"], out=tmp_path / "report", log=False, include_debug=True)
    markdown = (report / "report.md").read_text(encoding="utf-8")
    page = (report / "report.html").read_text(encoding="utf-8")
    for where, text in (("the run description", note), ("report.md", markdown)):
        assert md_text(HOSTILE_MODEL) in text, where
        for raw in (HOSTILE_MODEL, *HOSTILE_IDS, "<img", "<script", "</script", "**Evil**"):
            assert raw not in text, f"{raw!r} unescaped in {where}"
    assert html.escape(HOSTILE_MODEL) in page and "<img src=x" not in page and "</script>" not in page
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "Evil" in line]
    assert rows and all("\\*\\*Evil\\*\\*\\|&lt;img" in line for line in rows)  # the pipe stays in its cell
