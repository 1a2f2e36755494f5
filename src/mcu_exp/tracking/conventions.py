"""What MLflow's UI expects of a run beyond params and metrics: the dataset it read (an
input with a digest), a one-paragraph description, the code version that produced it.

The dataset's digest hashes the programs (id, language, code) and the evaluations as the job
read them, so two runs on the same data show the same digest in the UI, and a run on a
changed file a different one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import weakref
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from mcu_exp.data.types import Dataset
from mcu_exp.markdown import md_text

NOTE_TAG = "mlflow.note.content"  # the run's description in the UI
GIT_COMMIT_TAG = "mlflow.source.git.commit"
VERSION_TAG = "mcu.version"


def dataset_digest(dataset: Dataset) -> str:
    """A short hex digest of the programs and the evaluations (once per dataset object, which
    is frozen: a sweep's jobs share one)."""
    found = _DIGESTS.get(dataset)
    if found is None:
        found = _DIGESTS[dataset] = _digest(dataset)
    return found


_DIGESTS: weakref.WeakKeyDictionary[Dataset, str] = weakref.WeakKeyDictionary()


def _digest(dataset: Dataset) -> str:
    import pandas as pd

    h = hashlib.sha256()
    for program in sorted(dataset.programs, key=lambda p: p.id):
        h.update(json.dumps([program.id, program.language, program.code]).encode())
    evaluations = dataset.evaluations.sort_values(["program_id", "participant_id"]).reset_index(drop=True)
    h.update(pd.util.hash_pandas_object(evaluations.astype(str), index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def dataset_input(dataset: Dataset) -> Any:
    """The dataset as an MLflow input (name, digest, source, size profile, columns)."""
    from mlflow.entities import Dataset as MlflowDataset
    from mlflow.entities import DatasetInput, InputTag

    profile = {
        "programs": len(dataset.programs),
        "evaluations": len(dataset.evaluations),
        "questions": len(dataset.questions),
    }
    schema = {"evaluations": [str(c) for c in dataset.evaluations.columns]}
    source = dataset.source
    entity = MlflowDataset(
        name=dataset.name,
        digest=dataset_digest(dataset),
        source_type="http" if source.startswith(("http://", "https://")) else "local",
        source=json.dumps({"uri": source}),
        schema=json.dumps(schema),
        profile=json.dumps(profile),
    )
    return DatasetInput(entity, tags=[InputTag("mlflow.data.context", "evaluation")])


def source_tags() -> dict[str, str]:
    """``mcu.version`` (the installed package's version) and, when the code runs from a git
    checkout, MLflow's ``mlflow.source.git.commit`` (with ``-dirty`` never guessed: the
    commit only)."""
    tags = {}
    with contextlib.suppress(metadata.PackageNotFoundError):
        tags[VERSION_TAG] = metadata.version("mcu_exp")
    commit = _git_commit()
    if commit:
        tags[GIT_COMMIT_TAG] = commit
    return tags


def plugin_tags() -> dict[str, str]:
    """``mcu.plugins`` (each loaded plugin distribution as ``dist==version``) and
    ``mcu.plugins.replaced`` (the entries they replaced, allowed by ``plugins.allow_replace``);
    none when no plugin is installed, so a plugin-free run's tags stay as they were."""
    from mcu_exp.names import TAG_PLUGINS, TAG_PLUGINS_REPLACED
    from mcu_exp.registry import loaded_plugins, replacements

    tags = {}
    plugins = loaded_plugins()
    if plugins:
        tags[TAG_PLUGINS] = ", ".join(map(str, plugins))
    replaced = replacements()
    if replaced:
        tags[TAG_PLUGINS_REPLACED] = ", ".join(f"{r.registry}:{r.name} ({r.plugin})" for r in replaced)
    return tags


@cache
def _git_commit() -> str | None:
    """The commit of the checkout this code runs from (None outside git), asked of git once per
    process: every job of a sweep tags it, and its bundle names it."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return commit.stdout.strip() if commit.returncode == 0 and commit.stdout.strip() else None


def description(title: str, verdict: str, facts: dict[str, Any]) -> str:
    """The run's description: its name, the verdict sentence, then the configuration that
    shaped it in one paragraph, and how to read its charts. MLflow renders it as Markdown, so
    the name, the verdict and the facts (a model's or dataset's name is user data) are escaped."""
    config = "; ".join(f"{md_text(k)} {md_text(v)}" for k, v in facts.items() if v not in (None, ""))
    return (
        f"**{md_text(title)}**\n\n{md_text(verdict)}\n\nConfiguration: {config}.\n\n"
        "Sort the runs by `mcc_ci_low` (Matthews' correlation with the human labels, lower bound: "
        "a labeller that marks nearly every program alike cannot win it), then `auc_score_ci_low`; "
        "`labelled_high` is the share of programs labelled High; ΔF1 against always-1 is "
        "`f1_minus_always`; ✓/✗ in the tags `mcu.beats_always` and `mcu.beats_chance`. "
        "Charts `sensitivity/<metric>_vs_<grid>_milli[.<scorer>]` plot a metric against the threshold "
        "(of that scorer), ε or θ in thousandths (step 596 = 0.596); the artifacts `sensitivity_*.csv` "
        "hold the exact grid."
    )
